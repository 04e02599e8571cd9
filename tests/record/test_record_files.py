"""The files of a recording, written and read beside other local users (issue #42):
the recorder never writes through a link planted in its directory and warns about a
directory others can write; ``markets.json`` is read as a regular file within a
bound, its JSON no deeper than the bound and each field of its type. Real links,
FIFOs and devices in a temporary directory."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from clobkit.errors import ValidationError
from clobkit.record import (
    BOOK,
    RecordedMarket,
    RecordingWriter,
    iter_rows,
    read_events,
    read_markets,
    recording_files,
)
from clobkit.record.read import MARKETS_FILE_BYTES

T0 = 1_764_547_200_000_000_000  # 2025-12-01T00:00:00Z, in ns
MARKET = RecordedMarket("00000000-0000-4000-8000-00000000000a", None, "Q", "11", "22")
BOOK_DATA = {"bids": [{"price": "0.48", "size": "10"}], "asks": []}


def _writer(directory: Path) -> RecordingWriter:
    writer = RecordingWriter(directory, [MARKET])
    writer.write_markets()
    writer.add(BOOK, MARKET.token_id_a, BOOK_DATA, T0)
    return writer


def test_a_link_planted_at_the_next_files_name_is_not_written_through(tmp_path: Path) -> None:
    # the .part name was the final name plus ".part" (its sequence number and the UTC
    # second of its first row), opened following links: another user who can write
    # the directory made the recorder overwrite any file the recording user can write
    victim = tmp_path / "victim"
    victim.write_text("precious")
    rec = tmp_path / "rec"
    writer = _writer(rec)
    name = "book-000000000000-20251201T000000.parquet"
    (rec / f"{name}.part").symlink_to(victim)
    asyncio.run(writer.flush())
    assert victim.read_text() == "precious"
    assert not (rec / name).is_symlink()
    assert [r.token_id for r in iter_rows(rec)] == [MARKET.token_id_a]


def test_a_link_planted_at_a_files_final_name_is_replaced(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    rec = tmp_path / "rec"
    writer = _writer(rec)
    (rec / "book-000000000000-20251201T000000.parquet").symlink_to(victim)
    asyncio.run(writer.flush())
    assert victim.read_text() == "precious"
    assert [r.seq for r in iter_rows(rec)] == [0]
    assert [p.name for p in rec.iterdir() if p.name.endswith(".part")] == []


def test_a_dangling_markets_json_link_creates_nothing_where_it_points(tmp_path: Path) -> None:
    # write_text followed it: the recorder created a file wherever the link pointed
    rec = tmp_path / "rec"
    rec.mkdir()
    target = tmp_path / "elsewhere" / "planted"
    target.parent.mkdir()
    (rec / "markets.json").symlink_to(target)
    with pytest.raises(ValidationError, match="already holds a recording"):
        RecordingWriter(rec, [MARKET]).write_markets()
    assert not target.exists()


def test_markets_json_is_written_whole_under_a_new_name(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    RecordingWriter(rec, [MARKET]).write_markets()
    assert [p.name for p in rec.iterdir()] == ["markets.json"]
    assert not (rec / "markets.json").is_symlink()
    assert read_markets(rec) == [MARKET]


def test_a_directory_others_can_write_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec = tmp_path / "shared"
    rec.mkdir()
    rec.chmod(0o777)  # no sticky bit: anyone may rename or replace what is in it
    with caplog.at_level(logging.WARNING, logger="clobkit.record"):
        _writer(rec)
    (warning,) = [r for r in caplog.records if r.name == "clobkit.record"]
    assert "can be written by other users" in warning.getMessage()
    assert str(rec) in warning.getMessage()
    caplog.clear()
    safe = tmp_path / "mine"
    safe.mkdir(mode=0o700)
    with caplog.at_level(logging.WARNING, logger="clobkit.record"):
        _writer(safe)
    assert not [r for r in caplog.records if r.name == "clobkit.record"]


# -- markets.json read back ------------------------------------------------------------------


def _refusal_of(fifo: Path, read: Callable[[], object]) -> BaseException:
    """What ``read()`` raised, in a thread; a read blocked on ``fifo`` (waiting for a
    writer) is let go by opening it for writing, and fails the test."""
    done: list[BaseException] = []

    def run() -> None:
        try:
            read()
        except BaseException as exc:  # handed to the test's thread
            done.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():
        with open(fifo, "w"):
            pass
        pytest.fail(f"reading the FIFO {fifo.name} blocked")
    assert done, "read a FIFO"
    return done[0]


def test_a_fifo_named_markets_json_is_refused_at_once(tmp_path: Path) -> None:
    # read_text waited for a writer: the replay hung for ever
    os.mkfifo(tmp_path / "markets.json")
    refusal = _refusal_of(tmp_path / "markets.json", lambda: read_markets(tmp_path))
    assert isinstance(refusal, ValidationError)
    assert "not a regular file" in str(refusal)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero on this system")
def test_markets_json_pointing_at_a_device_is_refused(tmp_path: Path) -> None:
    # read_text read /dev/zero until memory ran out
    (tmp_path / "markets.json").symlink_to("/dev/zero")
    with pytest.raises(ValidationError, match="not a regular file"):
        read_markets(tmp_path)
    (tmp_path / "markets.json").unlink()
    (tmp_path / "markets.json").mkdir()
    with pytest.raises(ValidationError, match="not a regular file"):
        read_markets(tmp_path)


def test_markets_json_past_its_size_bound_is_refused(tmp_path: Path) -> None:
    info = {"markets": [MARKET._asdict()], "pad": "x" * MARKETS_FILE_BYTES}
    (tmp_path / "markets.json").write_text(json.dumps(info))
    with pytest.raises(ValidationError, match=f"larger than {MARKETS_FILE_BYTES} bytes"):
        read_markets(tmp_path)


def test_markets_json_nested_too_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"markets": [], "events": [{"event_id": "e", "home_team": {"a": ' + deep + "}}]}"
    (tmp_path / "markets.json").write_text(text)
    with pytest.raises(ValidationError, match="nests deeper than 256") as info:
        read_events(tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("where", "value", "named"),
    [
        ("market", {"token_id_a": 11}, r"markets\[0\]\.token_id_a"),
        ("market", {"neg_risk": 1}, r"markets\[0\]\.neg_risk"),
        ("market", {"fee_rate_bps": True}, r"markets\[0\]\.fee_rate_bps"),
        ("market", {"fee_rate_bps": 1.5}, r"markets\[0\]\.fee_rate_bps"),
        ("market", {"question": None, "surprise": 1}, "surprise"),
        ("event", {"start_time_ms": "soon"}, r"events\[0\]\.start_time_ms"),
        ("event", {"home_team": [1]}, r"events\[0\]\.home_team"),
        ("top", {"markets": {}}, "markets"),
    ],
)
def test_a_field_of_markets_json_of_another_type_is_named(
    tmp_path: Path, where: str, value: dict[str, object], named: str
) -> None:
    info: dict[str, object] = {"format": 2, "markets": [MARKET._asdict()]}
    if where == "market":
        info["markets"] = [{**MARKET._asdict(), **value}]
    elif where == "event":
        info["events"] = [{"event_id": "e", **value}]
    else:
        info.update(value)
    (tmp_path / "markets.json").write_text(json.dumps(info))
    read = read_events if where == "event" else read_markets
    with pytest.raises(ValidationError, match=named) as caught:
        read(tmp_path)
    assert "\n" not in str(caught.value)


def test_a_recording_file_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    asyncio.run(writer.flush())
    fifo = tmp_path / "book-000000000001-20251201T000001.parquet"
    os.mkfifo(fifo)
    assert len(recording_files(tmp_path)) == 2
    refusal = _refusal_of(fifo, lambda: list(iter_rows(tmp_path)))
    assert isinstance(refusal, ValidationError)
    assert "not a regular file" in str(refusal)


_THREADS_AFTER_READING = """
import os, sys
import pyarrow
from clobkit.record import iter_rows
before = len(os.listdir("/proc/self/task"))
rows = list(iter_rows(sys.argv[1]))
print(len(rows), before, len(os.listdir("/proc/self/task")))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_reading_a_recording_starts_no_thread_that_reads_its_file(tmp_path: Path) -> None:
    # ParquetFile pre-buffers by default: Arrow's I/O pool read the Python file object,
    # a thread that needs the GIL, and one still holding it at the interpreter's exit
    # ended `clobkit sandbox --replay ... --end=NaN` in "terminate called without an
    # active exception" (SIGABRT) instead of its exit status 2, once in a CI run
    import subprocess
    import sys

    writer = _writer(tmp_path)
    asyncio.run(writer.flush())
    got = subprocess.run(
        [sys.executable, "-c", _THREADS_AFTER_READING, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows, before, after = map(int, got.stdout.split())
    assert rows == 1
    assert after == before
