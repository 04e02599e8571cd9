"""The sandbox replays a recording: the books it publishes are the recorded ones at every
recorded time (at any speed, or stepped by hand), and users trade with the recorded
liquidity by the sandbox's rules on every exchange version."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clobkit.errors import ValidationError
from clobkit.record import BOOK, RecordedMarket, RecordingWriter, read_events, read_markets
from clobkit.record.frames import schema
from clobkit.sandbox.replay import Replay, attach, parse_time

from .conftest import (
    VERSIONS,
    books,
    client,
    config,
    move_prices,
    moving_market,
    record_while,
    sandbox_module,
)

T0 = 1_764_547_200_000_000_000  # ns


def write(
    directory: Path,
    engine: Any,
    books_at: list[tuple[float, list[Any], list[Any]]],
    outcome: str = "a",
) -> str:
    """A recording of one market of ``engine``: (seconds, bids, asks) as (price, USDC size)
    of one outcome's token."""
    market = sorted((m for m in engine.markets.values() if m.active), key=lambda m: m.id)[0]
    fx = market.fx
    writer = RecordingWriter(
        directory, [RecordedMarket(fx.id, fx.event_id, fx.question, fx.token_id_a, fx.token_id_b)]
    )
    writer.write_markets()
    for at, bids, asks in books_at:
        data = {
            "bids": [{"price": p, "size": s} for p, s in bids],
            "asks": [{"price": p, "size": s} for p, s in asks],
        }
        token = fx.token_id_a if outcome == "a" else fx.token_id_b
        writer.add(BOOK, token, data, T0 + int(at * 1e9))
    asyncio.run(writer.flush())
    return str(fx.id)


def shown(engine: Any, token: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    book = engine.orderbook(token, allow_empty=True)
    return (
        [(str(lv.price), str(lv.size)) for lv in book.bids],
        [(str(lv.price), str(lv.size)) for lv in book.asks],
    )


BOOKS = [
    (0.0, [("0.48", "100"), ("0.47", "200")], [("0.52", "100"), ("0.53", "200")]),
    (1.0, [("0.49", "50")], [("0.51", "60"), ("0.55", "300")]),
    (2.5, [("0.45", "10")], [("0.46", "100")]),
    (4.0, [], []),
]


@pytest.mark.parametrize("speed", [pytest.param(1, marks=pytest.mark.slow), 20])
async def test_replay_publishes_the_recorded_books_at_speed(tmp_path: Path, speed: int) -> None:
    """The target: a recording of the sandbox's own moving market, replayed into a fresh
    sandbox at speed 1 and 20, publishes the same sequence of books, level by level."""
    original, replayed = tmp_path / "a", tmp_path / "b"
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)
        await record_while(sb, original, [market], lambda: move_prices(sb, market), outcomes="a")
    token = sb.engine.markets[market].fx.token_id_a
    with sandbox_module.serve_in_thread(config()) as sb:
        replay = Replay(sb.engine, original)

        async def run() -> None:
            future = attach(sb, replay, speed)
            assert future is not None
            await asyncio.wrap_future(future)

        await record_while(sb, replayed, [market], run, outcomes="a")
        assert replay.done
        assert sb.engine.check_invariants() == []
    recorded = books(original, token)
    assert len(recorded) > 20
    assert books(replayed, token) == recorded


@pytest.mark.parametrize("version", VERSIONS)
def test_stepping_shows_each_recorded_book(tmp_path: Path, version: int) -> None:
    engine = sandbox_module.Engine(config(version))
    market_id = write(tmp_path, engine, BOOKS)
    token = engine.markets[market_id].fx.token_id_a
    replay = Replay(engine, tmp_path)
    assert shown(engine, token) == (BOOKS[0][1], BOOKS[0][2])  # the book at the start
    for _, bids, asks in BOOKS[1:]:
        assert replay.step(updates=1) == 1
        assert shown(engine, token) == (bids, asks)
    assert replay.done
    assert replay.step(updates=1) == 0
    assert engine.check_invariants() == []


def test_start_end_and_time_steps(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    market_id = write(tmp_path, engine, BOOKS)
    token = engine.markets[market_id].fx.token_id_a
    replay = Replay(engine, tmp_path, start="1.5", end="3")
    assert shown(engine, token) == (BOOKS[1][1], BOOKS[1][2])  # last book at or before start
    assert replay.step(ms=900) == 0  # 2.4 s: nothing due
    assert replay.step(ms=200) == 1  # 2.6 s
    assert shown(engine, token) == (BOOKS[2][1], BOOKS[2][2])
    assert replay.step(ms=10_000) == 0
    assert replay.done
    assert parse_time("2025-12-01T00:00:02Z", 0) == T0 // 1_000_000 + 2000
    for bad in ("soon", "2025-12-01T00:00:02"):
        with pytest.raises(ValidationError):
            parse_time(bad, 0)
    with pytest.raises(ValidationError, match="end"):
        Replay(sandbox_module.Engine(config()), tmp_path, start="3", end="1")
    with pytest.raises(ValidationError):
        replay.step(updates=0)


@pytest.mark.parametrize("version", VERSIONS)
def test_users_trade_with_the_recorded_liquidity(tmp_path: Path, version: int) -> None:
    """A taker takes recorded asks at their price and the level stays reduced until the next
    recorded update puts it back; a resting bid crossed by a new recorded ask trades at the
    bid's price."""
    engine = sandbox_module.Engine(config(version))
    market_id = write(
        tmp_path,
        engine,
        [
            (0.0, [("0.48", "100")], [("0.52", "52")]),  # 100 shares at 0.52
            (1.0, [("0.48", "100")], [("0.52", "52")]),  # the same book again
            (2.0, [("0.45", "100")], [("0.47", "47")]),  # the ask drops through 0.50
        ],
    )
    token = engine.markets[market_id].fx.token_id_a
    replay = Replay(engine, tmp_path)
    user = engine.config.users[0].user_id
    cash = engine.balances(user).cash
    placed = engine.place_order(
        user,
        {
            "market_id": market_id,
            "side": "BUY",
            "outcome": "a",
            "order_type": "GTC",
            "token_option": "yes",
            "limit_price": "0.52",
            "amount": "20.8",
        },
    )
    assert engine.order(placed.order_id).status == "matched"
    assert engine.balances(user).cash == cash - Decimal("20.8")  # 40 x 0.52
    assert shown(engine, token)[1] == [("0.52", "31.2")]  # 60 shares left until the update
    replay.step(updates=1)
    assert shown(engine, token)[1] == [("0.52", "52")]  # the recording knows nothing of it
    resting = engine.place_order(
        user,
        {
            "market_id": market_id,
            "side": "BUY",
            "outcome": "a",
            "order_type": "GTC",
            "token_option": "yes",
            "limit_price": "0.50",
            "amount": "15",
        },
    )
    assert engine.order(resting.order_id).status == "live"
    replay.step(updates=1)
    record = engine.order(resting.order_id)
    assert record.status == "matched"
    assert record.size_matched == Decimal(30)
    assert engine.balances(user).cash == cash - Decimal("20.8") - Decimal("15")  # at 0.50
    assert shown(engine, token) == ([("0.45", "100")], [("0.47", "32.9")])  # 70 left
    assert engine.check_invariants() == []


def test_crossed_levels_are_left_out(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    market_id = write(
        tmp_path,
        engine,
        [(0.0, [("0.48", "97"), ("0.47", "47")], [("0.48", "95"), ("0.52", "103")])],
    )
    token = engine.markets[market_id].fx.token_id_a
    replay = Replay(engine, tmp_path)
    assert replay.crossed == 1  # the ask at the best bid is left out
    bids, asks = shown(engine, token)
    assert [p for p, _ in bids] == ["0.48", "0.47"]
    assert [p for p, _ in asks] == ["0.52"]
    assert engine.check_invariants() == []


def test_an_off_grid_price_is_refused_naming_its_row_and_field(tmp_path: Path) -> None:
    # it was moved onto the grid (and counted): the API's prices are on the 0.01 grid,
    # and a recording holding another is none of its books
    engine = sandbox_module.Engine(config())
    books = [(0.0, [("0.48", "97")], [("0.52", "95")])]
    books.append((1.0, [("0.48", "97"), ("0.475", "47")], [("0.52", "95")]))
    write(tmp_path, engine, books)
    with pytest.raises(ValidationError) as info:
        Replay(engine, tmp_path)
    said = str(info.value)
    assert said.startswith("bids[1].price: must be a number in [0.01, 0.99] with at most 2")
    assert "book-000000000000-20251201T000000.parquet row 1)" in said
    assert "'0.475'" in said
    assert not engine.markets[next(iter(engine.markets))].replayed  # nothing was served


def test_token_b_alone_is_mirrored(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    b_book = ([("0.40", "40"), ("0.38", "77")], [("0.45", "45")])
    market_id = write(tmp_path, engine, [(0.0, *b_book)], outcome="b")
    fx = engine.markets[market_id].fx
    Replay(engine, tmp_path)
    assert shown(engine, fx.token_id_b) == ([("0.40", "40"), ("0.38", "77")], [("0.45", "45")])
    bids_a, asks_a = shown(engine, fx.token_id_a)
    assert [p for p, _ in bids_a] == ["0.55"]
    assert [p for p, _ in asks_a] == ["0.60", "0.62"]


def test_a_recorded_market_id_must_be_a_uuid(tmp_path: Path) -> None:
    writer = RecordingWriter(tmp_path, [RecordedMarket("m-1", None, None, "1", "2")])
    writer.write_markets()
    with pytest.raises(ValidationError, match="must be a UUID"):
        Replay(sandbox_module.Engine(config()), tmp_path)


async def test_a_recording_of_markets_the_sandbox_never_had_replays(tmp_path: Path) -> None:
    """Recorded from a sandbox of another seed (as from the real service: markets, events
    and tokens the replaying sandbox does not know), replayed in a fresh sandbox with the
    default fixtures: the recorded markets are served from markets.json, with their event,
    and their books are the recorded ones; users trade with them."""
    with sandbox_module.serve_in_thread({**config(), "seed": 5}) as sb:
        market = moving_market(sb)
        source = sb.engine.markets[market]
        fx, event = source.fx, source.event
        await record_while(sb, tmp_path, [market], lambda: move_prices(sb, market))
    recorded = books(tmp_path, fx.token_id_a)
    assert len(recorded) > 20
    (info,) = read_markets(tmp_path)
    assert (info.outcome_a, info.outcome_b, info.neg_risk) == (
        fx.outcome_a,
        fx.outcome_b,
        fx.neg_risk,
    )
    assert Decimal(info.min_order_size or "") * 1_000_000 == fx.min_order_size_units
    assert info.fee_rate_bps == fx.fee_rate_bps
    (ev,) = read_events(tmp_path)
    assert (ev.event_id, ev.title, ev.league_id) == (event.id, event.title, event.league.id)
    with sandbox_module.serve_in_thread(config()) as sb:
        assert market not in sb.engine.markets  # the default fixtures do not have it
        replay = Replay(sb.engine, tmp_path)
        attach(sb, replay)
        assert replay.added == [market]
        async with client(sb, user=0) as c:
            served = await c.get_market(market)
            assert (served.question, served.token_id_a, served.token_id_b) == (
                fx.question,
                fx.token_id_a,
                fx.token_id_b,
            )
            assert (served.outcome_a, served.neg_risk) == (fx.outcome_a, fx.neg_risk)
            served_event = await c.get_event(event.id)
            assert (served_event.title, served_event.league_id) == (event.title, event.league.id)
            assert served_event.home_team is not None
            assert served_event.home_team.name == event.home_team.name
            assert market in [m.id for m in await c.get_event_markets(event.id)]
            seen: list[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = []
            while True:
                book = await c.get_orderbook(fx.token_id_a)
                levels = (
                    tuple((str(lv.price), str(lv.size)) for lv in book.bids),
                    tuple((str(lv.price), str(lv.size)) for lv in book.asks),
                )
                if not seen or seen[-1] != levels:
                    seen.append(levels)
                if replay.done:
                    break
                replay.step(updates=1)
            assert seen == recorded  # the snapshot at the start, then every update
            placed = await c.place_order(market, side="BUY", outcome="a", amount="2")
            assert (await c.get_order(placed.order_id)).status == "matched"
        assert sb.engine.check_invariants() == []


def test_admin_route_steps_the_clock(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        url = f"{sb.base_url}/admin/replay/step"
        assert httpx.post(url, json={"updates": 1}).status_code == 404  # no replay
        market_id = write(tmp_path, sb.engine, BOOKS)
        token = sb.engine.markets[market_id].fx.token_id_a
        attach(sb, Replay(sb.engine, tmp_path))
        answer = httpx.post(url, json={"updates": 2}).json()
        assert answer["success"]
        assert answer["data"]["applied"] == 3
        assert shown(sb.engine, token) == (BOOKS[2][1], BOOKS[2][2])
        bad = httpx.post(url, json={"updates": 1, "ms": 5})
        assert bad.status_code == 400
        assert not bad.json()["success"]
        status = httpx.get(f"{sb.base_url}/admin/replay").json()["data"]
        assert status["elapsed_ms"] == 2500
        assert not status["done"]
        assert not status["running"]


def test_a_running_clock_is_not_stepped_by_hand(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        write(tmp_path, sb.engine, BOOKS)
        replay = Replay(sb.engine, tmp_path)
        future = attach(sb, replay, speed=0.001)  # 1 ms of the recording a second
        assert future is not None
        try:
            for _ in range(100):
                if replay.running:
                    break
                time.sleep(0.01)
            answer = httpx.post(f"{sb.base_url}/admin/replay/step", json={"ms": 1})
            assert answer.status_code == 400
            assert "--step" in answer.json()["detail"]
        finally:
            future.cancel()


def test_sandbox_command_refusals(tmp_path: Path, capsys: Any) -> None:
    from clobkit.sandbox.__main__ import main

    assert main(["--replay", str(tmp_path), "--state", str(tmp_path / "s.db")]) == 2
    assert main(["--replay", str(tmp_path), "--speed", "0"]) == 2
    assert main(["--replay", str(tmp_path / "none"), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "cannot be combined" in err
    assert "--speed" in err
    assert "markets.json" in err
    # the replay's options without --replay were taken and did nothing; so was an
    # infinite speed, and --host "" bound every interface
    assert main(["--port", "0", "--step", "--speed", "5"]) == 2
    assert "--speed, --step need --replay" in capsys.readouterr().err
    assert main(["--port", "0", "--start", "5"]) == 2
    assert "--start needs --replay" in capsys.readouterr().err
    assert main(["--replay", str(tmp_path), "--speed", "inf"]) == 2
    assert "--speed: must be a number in [0.001, 1,000,000]" in capsys.readouterr().err
    assert main(["--port", "0", "--host", ""]) == 2
    assert "--host must name an address" in capsys.readouterr().err


@pytest.mark.slow
def test_clobkit_sandbox_replay_command(tmp_path: Path) -> None:
    """clobkit sandbox --replay DIR --step serves the recording (of a market its default
    fixtures lack: recorded from a sandbox of another seed); the admin route steps it;
    SIGINT stops it (exit 0)."""
    import os
    import signal
    import subprocess
    import sys

    market_id = write(tmp_path, sandbox_module.Engine({**config(), "seed": 5}), BOOKS)
    assert market_id not in sandbox_module.Engine(config()).markets
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    argv = ["--port", "0", "--replay", str(tmp_path), "--step", "--start", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "clobkit", "sandbox", *argv],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().split()[-1]
        lines = [proc.stdout.readline() for _ in range(4)]
        shown = "4 updates (2 to come) of the 4 recorded"  # --start 1: 2 shown at once
        assert any("replaying" in line and shown in line for line in lines), lines
        status = httpx.post(f"{base_url}/admin/replay/step", json={"ms": 3000}).json()["data"]
        assert status["applied"] == 4
        assert status["done"]
        assert status["markets"] == [market_id]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_token_a_wins_over_token_b(tmp_path: Path) -> None:
    """A recording of both tokens (clobkit record's default): the replay follows token a."""
    engine = sandbox_module.Engine(config())
    market = sorted((m for m in engine.markets.values() if m.active), key=lambda m: m.id)[0]
    fx = market.fx
    writer = RecordingWriter(
        tmp_path, [RecordedMarket(fx.id, fx.event_id, fx.question, fx.token_id_a, fx.token_id_b)]
    )
    writer.write_markets()
    a_book = {"bids": [{"price": "0.40", "size": "40"}], "asks": [{"price": "0.45", "size": "45"}]}
    b_book = {"bids": [{"price": "0.10", "size": "1"}], "asks": [{"price": "0.90", "size": "9"}]}
    writer.add(BOOK, fx.token_id_a, a_book, T0)
    writer.add(BOOK, fx.token_id_b, b_book, T0 + 1)  # inconsistent on purpose: ignored
    asyncio.run(writer.flush())
    replay = Replay(engine, tmp_path)
    assert replay.update_count == 1
    assert shown(engine, fx.token_id_a) == ([("0.40", "40")], [("0.45", "45")])


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
