"""A replay reads its recording in bounded memory, in arrival order (issue #42).

A recording's files are counted from their metadata before anything is decoded (a
45 KB file claimed 20 million levels and took the replay past 1.5 GB), read a row
group at a time, and put in arrival order with a bounded wait; a replay holds the
books it serves, not the file. Each bound is named when it refuses.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clobkit.errors import ValidationError
from clobkit.record import BOOK, GAP, SNAPSHOT, RecordedMarket, RecordingWriter
from clobkit.record.frames import schema
from clobkit.sandbox import replay_read
from clobkit.sandbox.replay import MAX_STEP_UPDATES, Replay
from clobkit.sandbox.replay_read import check, index, updates

from .conftest import config, sandbox_module

MARKET = RecordedMarket("00000000-0000-4000-8000-00000000000c", None, "Q", "41", "42")
T0 = 1_764_547_200_000_000_000  # ns
LEVELS = schema().field("bids").type


def _markets(directory: Path) -> None:
    RecordingWriter(directory, [MARKET]).write_markets()


def _level_column(n: int, price: str = "0.47", size: str = "10") -> pa.Array:
    """One row whose side holds ``n`` equal levels (dictionary encoded: a few bytes)."""
    values = pa.StructArray.from_arrays(
        [pa.array([price] * n, pa.string()), pa.array([size] * n, pa.string())],
        fields=list(LEVELS.value_type),
    )
    return pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), values, type=LEVELS)


def _one_row(bids: pa.Array, **values: Any) -> pa.Table:
    row = {"seq": 0, "recv_ns": T0, "service_ms": None, "kind": BOOK}
    row |= {"market_id": MARKET.market_id, "token_id": MARKET.token_id_a} | values
    columns = {k: pa.array([v], schema().field(k).type) for k, v in row.items()}
    return pa.table({**columns, "bids": bids, "asks": pa.array([[]], LEVELS)}).cast(schema())


def write_bomb(directory: Path, levels: int, per_group: int = 500_000) -> Path:
    """A recording whose one file holds ``levels`` equal bid levels, in row groups of
    ``per_group`` (each a single row): a few KB on disk."""
    _markets(directory)
    path = directory / "book-000000000000-20251201T000000.parquet"
    bids = _level_column(per_group)
    with pq.ParquetWriter(path, schema(), compression="zstd") as out:
        for _ in range(levels // per_group):
            out.write_table(_one_row(bids))
    return path


def test_a_file_claiming_more_levels_than_the_bound_is_refused_before_decoding(
    tmp_path: Path,
) -> None:
    path = write_bomb(tmp_path, 1_000_000)
    assert path.stat().st_size < 100_000
    engine = sandbox_module.Engine(config())
    with pytest.raises(ValidationError) as info:
        Replay(engine, tmp_path)
    said = str(info.value)
    assert said.startswith(
        f"recording: {path.name} counts 1,000,002 levels in its metadata: a file holds at most "
        "500,000"
    )
    assert MARKET.market_id not in engine.markets  # nothing served


_REFUSALS = """
import json, sys
from pathlib import Path
import clobkit.sandbox
from clobkit.errors import ClobkitError
from clobkit.sandbox.replay import Replay
said = []
for directory in sys.argv[1:]:
    try:
        Replay(clobkit.sandbox.Engine({}), directory)
        said.append(None)
    except ClobkitError as exc:
        said.append(str(exc))
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"said": said, "peak_kb": peak}))
"""


def replayed_in_child(*directories: Path) -> tuple[list[str | None], int]:
    """What a fresh process says of a replay of each recording (a refusal, or None),
    and its peak resident memory (KB, VmHWM: Linux)."""
    done = subprocess.run(
        [sys.executable, "-c", _REFUSALS, *map(str, directories)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    return got["said"], got["peak_kb"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is Linux's")
def test_the_bomb_is_refused_within_a_memory_bound(tmp_path: Path) -> None:
    """The issue's file (20 million levels, tens of KB) is refused in one line, the
    replaying process staying near what the sandbox itself takes (about 90 MB here)."""
    write_bomb(tmp_path, 20_000_000, per_group=1_000_000)
    (said,), peak_kb = replayed_in_child(tmp_path)
    assert said is not None
    assert "counts 20,000,020 levels in its metadata: a file holds at most" in said
    assert peak_kb < 200 * 1024  # reading it whole took over 1.5 GB


def test_a_book_past_its_level_bound_is_refused_naming_the_row(tmp_path: Path) -> None:
    _markets(tmp_path)
    path = tmp_path / "book-000000000000-20251201T000000.parquet"
    table = pa.concat_tables([_one_row(_level_column(3)), _one_row(_level_column(1_001))])
    pq.write_table(table, path)
    with pytest.raises(ValidationError, match=r"row 1: bids holds 1,001 levels: a book holds at"):
        Replay(sandbox_module.Engine(config()), tmp_path)


def test_a_file_past_its_row_or_byte_bound_is_refused(tmp_path: Path) -> None:
    _markets(tmp_path / "rows")
    n = 250_001
    gaps = {
        "seq": pa.array(range(n), pa.int64()),
        "recv_ns": pa.array(range(T0, T0 + n), pa.int64()),
        "service_ms": pa.nulls(n, pa.int64()),
        "kind": pa.array([GAP] * n).dictionary_encode(),
        "market_id": pa.nulls(n, pa.string()).dictionary_encode(),
        "token_id": pa.nulls(n, pa.string()).dictionary_encode(),
        "bids": pa.nulls(n, LEVELS),
        "asks": pa.nulls(n, LEVELS),
    }
    pq.write_table(pa.table(gaps).cast(schema()), tmp_path / "rows" / "book-0.parquet")
    with pytest.raises(ValidationError, match="holds 250,001 rows: a file holds at most 250,000"):
        Replay(sandbox_module.Engine(config()), tmp_path / "rows")
    _markets(tmp_path / "bytes")
    huge = "4" * (17 << 20)  # one token id of 17 MiB: a few KB compressed, not decoded
    table = _one_row(_level_column(1), token_id=huge)
    pq.write_table(table, tmp_path / "bytes" / "book-0.parquet", use_dictionary=False)
    with pytest.raises(ValidationError, match=r"decodes to [0-9,]+ bytes: a file decodes to at"):
        Replay(sandbox_module.Engine(config()), tmp_path / "bytes")


# -- arrival order ------------------------------------------------------------------------------


def _write_rows(
    directory: Path, rows: list[tuple[int, str]], per_file: int, per_group: int
) -> None:
    """Rows of (recv_ns, kind) in files of ``per_file`` rows, row groups of ``per_group``;
    each book a one-level bid whose price says the row's place (0.01 + place % 99)."""
    _markets(directory)
    for f in range(0, len(rows), per_file):
        chunk = rows[f : f + per_file]
        tables = []
        for k, (recv, kind) in enumerate(chunk):
            place = f + k
            price = f"0.{place % 99 + 1:02d}"
            bids = _level_column(0 if kind == GAP else 1, price=price)
            token = None if kind == GAP else MARKET.token_id_a
            tables.append(_one_row(bids, seq=place, recv_ns=recv, kind=kind, token_id=token))
        path = directory / f"book-{f:012d}-20251201T000000.parquet"
        pq.write_table(pa.concat_tables(tables), path, row_group_size=per_group)


def test_rows_are_replayed_in_arrival_order_across_files_and_row_groups(tmp_path: Path) -> None:
    """The oracle: a stable sort of every row by recv_ns (in the order written within a
    ns), as the replay did before reading in bounded memory."""
    import random

    rng = random.Random(7)
    rows: list[tuple[int, str]] = []
    for k in range(600):  # mostly in order, some late, some early, some at the same ns
        jitter = rng.choice([0, 0, 0, -3, 5, -40, 1]) * 1_000_000
        rows.append((T0 + k * 1_000_000 + jitter, rng.choice([BOOK, BOOK, SNAPSHOT])))
    rows[100] = (T0 + 50 * 1_000_000, BOOK)  # written in a later file than its peers
    expected = [place for place, _ in sorted(enumerate(rows), key=lambda item: item[1][0])]
    _write_rows(tmp_path, rows, per_file=97, per_group=13)
    got = [
        next(iter(u.bids)) - 1 for u in updates(index(tmp_path, [MARKET]))
    ]  # the price's cents say the row's place (mod 99)
    assert got == [place % 99 for place in expected]


def test_rows_in_no_arrival_order_are_refused_naming_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_read, "MAX_HELD", 50)
    rows = [(T0 + (300 - k) * 1_000_000, BOOK) for k in range(300)]  # newest first
    _write_rows(tmp_path, rows, per_file=30, per_group=10)
    with pytest.raises(ValidationError, match="more than 50 rows and levels wait for rows"):
        check(index(tmp_path, [MARKET]))
    monkeypatch.setattr(replay_read, "MAX_HELD", 1_000)  # within the bound: served in order
    got = [u.at_ms for u in updates(index(tmp_path, [MARKET]))]
    assert got == sorted(got)
    assert len(got) == 300


def test_a_file_changed_during_a_replay_stops_it_with_a_reason(tmp_path: Path) -> None:
    rows = [(T0 + k * 1_000_000_000, BOOK) for k in range(10)]
    _write_rows(tmp_path, rows, per_file=5, per_group=5)
    replay = Replay(sandbox_module.Engine(config()), tmp_path)
    assert replay.update_count == 10
    second = sorted(tmp_path.glob("book-*.parquet"))[1]
    os.utime(second, ns=(T0, T0))  # another program rewrote it, say
    assert replay.index == 1  # the first book, shown at the start
    assert replay.advance_to(replay.end_ms) == 4  # the rest of the first file's
    assert replay.index == 5
    assert replay.done
    status = replay.status()
    assert "changed since the replay read it first" in str(status["failed"])


def test_a_step_of_updates_past_its_bound_is_refused(tmp_path: Path) -> None:
    _write_rows(tmp_path, [(T0, BOOK), (T0 + 10**9, BOOK)], per_file=5, per_group=5)
    replay = Replay(sandbox_module.Engine(config()), tmp_path)
    with pytest.raises(ValidationError, match=r"^updates: must be a whole number in \[1, 10,000\]"):
        replay.step(updates=MAX_STEP_UPDATES + 1)
    with pytest.raises(ValidationError, match=r"^ms: must be a whole number in \[0, "):
        replay.step(ms=10**400)
    assert replay.step(updates=MAX_STEP_UPDATES) == 1


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is Linux's")
def test_a_long_recording_replays_in_the_memory_of_its_books(tmp_path: Path) -> None:
    """80,000 updates of 5-level books (the recorder's own files): the replaying process
    stays within 300 MB (it read the whole table into Python objects: 550 MB for
    100,000, 3.8 GB for 1,000,000; benchmarks/bench_replay.py measures 1,000,000)."""
    from benchmarks.bench_replay import replay_in_child, write_recording

    write_recording(tmp_path, 80_000)
    got = replay_in_child(tmp_path)
    assert got.get("applied") == 80_000 - 1, got  # the first one shown at the start
    assert float(str(got["peak_mb"])) < 300, got


def test_the_rows_of_a_recording_read_back_row_group_by_row_group(tmp_path: Path) -> None:
    # iter_rows read each file whole into Python objects
    rows = [(T0 + k, BOOK) for k in range(40)]
    _write_rows(tmp_path, rows, per_file=40, per_group=7)
    from clobkit.record import iter_rows

    assert [r.seq for r in iter_rows(tmp_path)] == list(range(40))
    asyncio.run(asyncio.sleep(0))
