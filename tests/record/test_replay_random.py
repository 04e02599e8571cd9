"""Random hostile recordings (issue #42): rows of every type, size, null and order,
written with random Parquet encodings (types of the columns, dictionaries or not,
codecs, row groups, page versions). A replay serves each faithfully (the updates
``random_recordings.expected`` works out from the rules, in arrival order, and a sandbox that
keeps its invariants) or refuses it in one line. The readers' bounds are set small
here, so that random recordings reach them; the memory test uses the real ones."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings

from clobkit.errors import ClobkitError
from clobkit.record import read as _record_read
from clobkit.sandbox.replay import Replay
from clobkit.sandbox.replay_read import index, updates

from ..conftest import examples
from .conftest import config, sandbox_module
from .random_recordings import MARKET, Encoding, Refused, expected, recordings, write

BOUNDS = {
    "MAX_BOOK_LEVELS": 4,
    "MAX_FILE_ROWS": 7,
    "MAX_FILE_LEVELS": 40,
}  # see random_recordings.py


@given(recordings)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_few_hostile_recordings(files: list[tuple[list[dict[str, Any]], Encoding]]) -> None:
    """The fast loop's share (a replay and a sandbox's engine an example: 0.4 s each)."""
    _served_faithfully_or_refused(files)


@pytest.mark.slow
@given(recordings)
@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_hostile_recordings_are_served_faithfully_or_refused_in_one_line(
    files: list[tuple[list[dict[str, Any]], Encoding]],
) -> None:
    _served_faithfully_or_refused(files)


def _served_faithfully_or_refused(files: list[tuple[list[dict[str, Any]], Encoding]]) -> None:
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
        for name, value in BOUNDS.items():
            patch.setattr(_record_read, name, value)
        write(Path(tmp), files)
        try:
            want: tuple[list[Any], int] | None = expected(files, BOUNDS)
        except Refused:
            want = None
        engine = sandbox_module.Engine(config())
        replay = _replay(engine, Path(tmp))
        event("refused" if want is None else "served")
        if isinstance(replay, ClobkitError):
            assert want is None, f"refused what it should serve: {replay}"
            assert "\n" not in str(replay)
            assert MARKET.market_id not in engine.markets  # a refusal changes nothing
            return
        assert want is not None, "served a recording that breaks the rules"
        got = [(u.at_ms, u.market_id, u.bids, u.asks) for u in updates(index(tmp, [MARKET]))]
        assert got == want[0]
        assert (replay.update_count, replay.stale) == (len(want[0]), want[1])
        replay.advance_to(replay.end_ms)
        assert replay.failed is None
        assert replay.done
        assert engine.check_invariants() == []


def _replay(engine: Any, directory: Path) -> Replay | ClobkitError:
    """The replay of ``directory``, or its refusal."""
    try:
        return Replay(engine, directory)
    except ClobkitError as exc:
        return exc


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is Linux's")
def test_the_worst_hostile_recordings_stay_within_a_memory_bound(tmp_path: Path) -> None:
    """With the real bounds, in a fresh process: a run-length bomb of levels, one text
    of 15 MB repeated by half a million levels (as a dictionary), a 15 MB token id, and a
    file of a million empty rows: each refused in one line, the process staying within
    300 MB (the sandbox itself takes about 90)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .test_replay_bounded import (
        _level_column,
        _markets,
        _one_row,
        replayed_in_child,
        write_bomb,
    )

    write_bomb(tmp_path / "a-levels", 20_000_000, per_group=1_000_000)
    _markets(tmp_path / "b-dictionary")
    text = "4" * (15 << 20)
    n = 490_000  # levels, each the same 15 MB price: 7 TB were it decoded text by text
    zeros = pa.array([0] * n, pa.int32())
    words = pa.DictionaryArray.from_arrays(zeros, pa.array([text]))
    small = pa.DictionaryArray.from_arrays(zeros, pa.array(["10"]))
    level = pa.StructArray.from_arrays([words, small], names=["price", "size"])
    bids = pa.ListArray.from_arrays(pa.array(range(0, n + 1, 1000), pa.int32()), level)
    rows = _one_row(_level_column(0)).take(pa.array([0] * (n // 1000)))  # books of 1,000
    pq.write_table(
        rows.set_column(rows.schema.get_field_index("bids"), "bids", bids),
        tmp_path / "b-dictionary" / "book-0.parquet",
    )
    _markets(tmp_path / "c-token")
    pq.write_table(
        _one_row(_level_column(1), token_id=text),
        tmp_path / "c-token" / "book-0.parquet",
        use_dictionary=False,
    )
    _markets(tmp_path / "d-rows")
    empty = _one_row(_level_column(0)).take(pa.array([0] * 1_000_000))
    pq.write_table(empty, tmp_path / "d-rows" / "book-0.parquet")
    said, peak_kb = replayed_in_child(*sorted(tmp_path.iterdir()))
    assert all(s is not None and "\n" not in s for s in said), said
    # read (within the bounds), its one price text refused, never made 490,000 strings
    assert str(said[1]).startswith("bids[0].price: must be a number in [0.01, 0.99]")
    assert peak_kb < 300 * 1024, (said, peak_kb)
