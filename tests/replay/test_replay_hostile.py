"""Recordings a replay misread or crashed on (an audit's findings).

Each failed before its fix: a NaN or Infinity price or size escaped from
``int()`` (ValueError, OverflowError), a null one or a null ``recv_ns`` as
TypeError, a ``min_order_size`` of NaN likewise; rows of no listed market
loaded as an empty backtest without a word; and ``step(updates=N)`` counted
updates where its docs say update times.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clobkit.errors import ValidationError
from clobkit.record import BOOK, RecordedMarket, RecordingWriter
from clobkit.record.frames import schema
from clobkit.sandbox.replay import Replay

from .conftest import config, sandbox_module
from .test_replay import T0, shown, write


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "sNaN"])
def test_a_level_that_is_not_a_number_is_refused(tmp_path: Path, bad: str) -> None:
    engine = sandbox_module.Engine(config())
    books = [(0.0, [("0.47", "20")], [("0.53", "30")])]
    books.append((1.0, [("0.47", "20")], [("0.53", "30"), ("0.54", bad)]))
    write(tmp_path, engine, books)
    with pytest.raises(ValidationError, match=r"^asks\[1\]\.size: .* row 1\)"):
        Replay(engine, tmp_path)


def _rows(directory: Path, engine: Any, rows: list[dict[str, Any]]) -> None:
    """A recording of one market written row by row in the recorder's own schema."""
    fx = sorted((m for m in engine.markets.values() if m.active), key=lambda m: m.id)[0].fx
    market = RecordedMarket(fx.id, fx.event_id, fx.question, fx.token_id_a, fx.token_id_b)
    RecordingWriter(directory, [market]).write_markets()
    for r in rows:
        r.setdefault("token_id", fx.token_id_a)
        r.setdefault("market_id", fx.id)
    columns = {f.name: [r.get(f.name) for r in rows] for f in schema()}
    table = pa.Table.from_pydict(columns, schema=schema())
    pq.write_table(table, directory / "book-000000000000-20251201T000000.parquet")


def _row(seq: int, **changes: Any) -> dict[str, Any]:
    level = {"price": "0.48", "size": "10"}
    row = {"seq": seq, "recv_ns": T0, "kind": BOOK, "bids": [level], "asks": []}
    return row | changes


def test_a_null_level_and_a_null_time_are_refused(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    for k, level in enumerate([{"price": None, "size": "10"}, {"price": "0.47", "size": None}]):
        _rows(tmp_path / str(k), engine, [_row(0, bids=[{"price": "0.48", "size": "1"}, level])])
        with pytest.raises(ValidationError, match=r"^bids\[1\]\.(price|size): .*\(got None\)"):
            Replay(engine, tmp_path / str(k))
    _rows(tmp_path / "null", engine, [_row(0, bids=[None])])
    with pytest.raises(ValidationError, match=r"^bids\[0\]\.price: .* row 0\) \(got None\)"):
        Replay(engine, tmp_path / "null")
    _rows(tmp_path / "b", engine, [_row(0), _row(1, recv_ns=None)])
    with pytest.raises(ValidationError, match=r"recv_ns: must be an int in every row .* row 1"):
        Replay(sandbox_module.Engine(config()), tmp_path / "b")


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-1", "abc"])
def test_a_min_order_size_that_is_not_a_size_is_refused(tmp_path: Path, bad: str) -> None:
    market = RecordedMarket(str(uuid.uuid4()), None, "Q", "111", "222", min_order_size=bad)
    RecordingWriter(tmp_path, [market]).write_markets()
    with pytest.raises(ValidationError, match="min_order_size"):
        Replay(sandbox_module.Engine(config()), tmp_path)


@pytest.mark.parametrize("bad", [-1, 1_001, 10**30])
def test_a_fee_rate_past_the_exchanges_maximum_is_refused(tmp_path: Path, bad: int) -> None:
    # it was served by /fee-rate, where every client refuses it
    market = RecordedMarket(str(uuid.uuid4()), None, "Q", "111", "222", fee_rate_bps=bad)
    RecordingWriter(tmp_path, [market]).write_markets()
    with pytest.raises(ValidationError, match=r"fee_rate_bps.*\[0, 1000\]"):
        Replay(sandbox_module.Engine(config()), tmp_path)


def test_rows_of_no_listed_market_are_refused(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    listed, other = sorted((m for m in engine.markets.values() if m.active), key=lambda m: m.id)[:2]
    fx = listed.fx
    writer = RecordingWriter(
        tmp_path, [RecordedMarket(fx.id, fx.event_id, fx.question, fx.token_id_a, fx.token_id_b)]
    )
    writer.write_markets()
    book = {"bids": [{"price": "0.48", "size": "10"}], "asks": []}
    for i in range(3):  # markets.json of another recording, say
        writer.add(BOOK, other.fx.token_id_a, book, T0 + i * 10**9)
    asyncio.run(writer.flush())
    with pytest.raises(ValidationError, match=r"no book row of a market its markets\.json lists"):
        Replay(engine, tmp_path)


def test_stepping_by_updates_counts_update_times(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    asks = [("0.60", "10")]
    books = [(0.0, [("0.40", "10")], asks)]
    books += [(1.0, [(price, "10")], asks) for price in ("0.41", "0.42", "0.43")]
    books += [(2.0, [("0.44", "10")], asks), (3.0, [("0.45", "10")], asks)]
    market_id = write(tmp_path, engine, books)
    token = engine.markets[market_id].fx.token_id_a
    replay = Replay(engine, tmp_path)
    assert replay.step(updates=2) == 4  # the three updates at 1 s, and the one at 2 s
    assert replay.now_ms - replay.first_ms == 2000
    assert shown(engine, token)[0] == [("0.44", "10")]
    assert replay.step(updates=5) == 1  # only one time is left
    assert replay.done


@pytest.mark.parametrize("content", [b"", b"garbage", b"PAR1" + b"\x00" * 64])
def test_a_damaged_file_is_named(tmp_path: Path, content: bytes) -> None:
    # pyarrow's ArrowInvalid (or a KeyError of a column) escaped: clobkit sandbox
    # --replay printed a traceback
    engine = sandbox_module.Engine(config())
    write(tmp_path, engine, [(0.0, [("0.48", "10")], [("0.52", "10")])])
    (tmp_path / "book-000000000001-20251201T000001.parquet").write_bytes(content)
    with pytest.raises(ValidationError, match="is no recording file of clobkit record"):
        Replay(engine, tmp_path)


def test_a_file_of_other_columns_is_named(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    write(tmp_path, engine, [(0.0, [("0.48", "10")], [("0.52", "10")])])
    pq.write_table(pa.table({"x": [1]}), tmp_path / "book-000000000001-20251201T000001.parquet")
    with pytest.raises(ValidationError, match="is no recording file") as info:
        Replay(engine, tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("start_time_ms", "soon"), ("home_team", [1, 2]), ("is_future", 1), ("title", 5)],
)
def test_a_markets_json_value_of_the_wrong_type_is_named(
    tmp_path: Path, field: str, value: Any
) -> None:
    engine = sandbox_module.Engine(config())
    write(tmp_path, engine, [(0.0, [("0.48", "10")], [("0.52", "10")])])
    info = json.loads((tmp_path / "markets.json").read_text())
    event_id = info["markets"][0]["event_id"]
    info["events"] = [{"event_id": event_id, field: value}]
    (tmp_path / "markets.json").write_text(json.dumps(info))
    with pytest.raises(ValidationError, match=field):
        Replay(engine, tmp_path)


def test_odd_start_times_are_named(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    write(tmp_path, engine, [(0.0, [("0.48", "10")], [("0.52", "10")])])
    for bad in ("nan", "inf", "-inf", "1e999999999", "-1e999999999"):
        with pytest.raises(ValidationError, match=r"^start: must be a number in \[-10,000,"):
            Replay(sandbox_module.Engine(config()), tmp_path, start=bad)
    with pytest.raises(ValidationError, match="lies after the recording's last update"):
        Replay(engine, tmp_path, start="100")
    # before the first update there is nothing to serve: the clock would idle through it
    for early in ("-1", "1970-01-01T00:00:00Z"):
        with pytest.raises(ValidationError, match="lies before the recording's first update"):
            Replay(sandbox_module.Engine(config()), tmp_path, start=early)
