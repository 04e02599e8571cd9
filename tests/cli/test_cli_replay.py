"""``clobkit sandbox --replay``'s numbers through the real command line (issue #42):
a start, end or speed past every range is one line naming its option, never a
traceback (``--start 1e999999999`` ended in ``decimal.Overflow``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import import_extra
from .conftest import Result, one_line_error

import_extra("pyarrow", "data")
import_extra("starlette", "sandbox")

from clobkit.record import BOOK, RecordedMarket, RecordingWriter  # noqa: E402

T0 = 1_764_547_200_000_000_000  # ns


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """Two books of a market the sandbox does not have, a second apart."""
    market = RecordedMarket("00000000-0000-4000-8000-00000000000b", None, "Q", "31", "32")
    writer = RecordingWriter(tmp_path / "rec", [market])
    writer.write_markets()
    for k in range(2):
        book = {"bids": [{"price": "0.48", "size": "10"}], "asks": [{"price": "0.52", "size": "9"}]}
        writer.add(BOOK, market.token_id_a, book, T0 + k * 10**9)
    asyncio.run(writer.flush())
    return tmp_path / "rec"


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--start", "1e999999999", "start: must be a number in [-10,000,000,000, 10,000,000,000]"),
        ("--start", "-1e999999999", "start: must be a number in [-10,000,000,000,"),
        ("--end", "1e999999999", "end: must be a number in [-10,000,000,000, 10,000,000,000]"),
        ("--end", "NaN", "end: must be a number in"),
        ("--speed", "1e999999999", "--speed: must be a number in [0.001, 1,000,000]"),
        ("--speed", "1e-999999999", "--speed: must be a number in [0.001, 1,000,000]"),
    ],
)
def test_replay_numbers_past_their_range_are_one_line(
    proc: Callable[..., Result], recording: Path, flag: str, value: str, said: str
) -> None:
    got = proc("sandbox", "--port", "0", "--replay", str(recording), f"{flag}={value}")
    assert got.code == 2
    line = one_line_error(got.err)
    assert line.startswith("error: ")
    assert said in line
    assert value in line


@pytest.mark.slow
def test_record_warns_about_a_directory_others_can_write(
    proc: Callable[..., Result], sandbox: Any, env: dict[str, str], tmp_path: Path
) -> None:
    """clobkit record into a directory anyone may write (no sticky bit): one warning line
    on stderr before it records, then the recording as usual, its files written safely."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    market = min(m.id for m in sandbox.engine.markets.values() if m.active)
    got = proc(
        "record", "--market", market, "--out", str(shared / "rec"), "--duration", "1", env=env
    )
    assert got.code == 0, got.err
    warning = [line for line in got.err.splitlines() if "unsafe directory" in line]
    assert warning == [f"recording into an unsafe directory: {shared} can be written by other "
                       "users (mode drwxrwxrwx)"]  # fmt: skip
    assert (shared / "rec" / "markets.json").is_file()
