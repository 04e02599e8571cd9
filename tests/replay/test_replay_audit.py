"""A quant's audit of record -> replay -> backtest (each test failed before its fix).

A settled market kept taking recorded books (house orders in a resolved market:
invariants broken); a refused replay (a start out of range, a bad fee rate) had
already added the recording's markets to the sandbox, and a retry then listed
none in ``added``; a start after the last update was taken when an end was
given; ``Replay.step`` moved a clock that ``run`` drives; the status of a
running clock stood still between updates; ``--outcomes b`` recorded no
minimum order size; and ``examples/backtest.py --interval 0`` never ended.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from clobkit.errors import ValidationError
from clobkit.record import BOOK, RecordedMarket, RecordingWriter, read_markets
from clobkit.sandbox.replay import Replay, attach

from .conftest import config, example, record_while, sandbox_module
from .test_replay import BOOKS, T0, shown, write


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``check()`` is true (the sandbox's loop runs in its own thread)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        time.sleep(0.01)


def order(engine: Any, user: str, market_id: str, side: str, price: str, qty: str) -> str:
    body = {
        "market_id": market_id,
        "side": side,
        "outcome": "a",
        "order_type": "GTC",
        "token_option": "yes",
        "limit_price": price,
        "amount" if side == "BUY" else "shares": qty,
    }
    return str(engine.place_order(user, body).order_id)


@pytest.mark.parametrize("version", [1, 3])
def test_a_settled_market_takes_no_more_recorded_books(tmp_path: Path, version: int) -> None:
    engine = sandbox_module.Engine(config(version))
    market_id = write(tmp_path, engine, BOOKS)
    token = engine.markets[market_id].fx.token_id_a
    replay = Replay(engine, tmp_path)
    user = engine.config.users[0].user_id
    resting = order(engine, user, market_id, "BUY", "0.40", "4")
    engine.settle(market_id, "a")
    assert engine.order(resting).status == "cancelled"
    assert replay.step(updates=2) == 2  # the recorded updates pass, and change nothing
    assert shown(engine, token) == ([], [])
    assert not [o for o in engine.open_orders.values() if o.market.id == market_id]
    assert engine.check_invariants() == []


def test_a_refused_replay_leaves_the_sandbox_as_it_was(tmp_path: Path) -> None:
    market_id = write(tmp_path, sandbox_module.Engine({**config(), "seed": 5}), BOOKS)
    engine = sandbox_module.Engine(config())
    markets, events, leagues = set(engine.markets), set(engine.events), engine.leagues
    for start in ("-1", "100"):
        with pytest.raises(ValidationError, match="start"):
            Replay(engine, tmp_path, start=start)
        assert (set(engine.markets), set(engine.events), engine.leagues) == (
            markets,
            events,
            leagues,
        )
    replay = Replay(engine, tmp_path)  # the retry adds, and says so
    assert replay.added == [market_id]
    assert engine.check_invariants() == []


def test_a_bad_second_market_adds_neither(tmp_path: Path) -> None:
    good = RecordedMarket(str(uuid.uuid4()), None, "Q1", "111", "222")
    bad = RecordedMarket(str(uuid.uuid4()), None, "Q2", "333", "444", fee_rate_bps=5000)
    RecordingWriter(tmp_path, [good, bad]).write_markets()
    engine = sandbox_module.Engine(config())
    with pytest.raises(ValidationError, match="fee_rate_bps"):
        Replay(engine, tmp_path)
    assert good.market_id not in engine.markets
    assert "111" not in engine.tokens


def test_a_start_after_the_last_update_is_refused_with_an_end_too(tmp_path: Path) -> None:
    write(tmp_path, sandbox_module.Engine(config()), BOOKS)  # 4 s of books
    for end in (None, "200"):
        with pytest.raises(ValidationError, match="start: lies after the recording's last update"):
            Replay(sandbox_module.Engine(config()), tmp_path, start="100", end=end)
    # an end past the last update is the last one: the replay ends there
    replay = Replay(sandbox_module.Engine(config()), tmp_path, start="4", end="200")
    assert replay.done


def test_the_edges_of_start_and_end_are_inclusive(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config())
    market_id = write(tmp_path, engine, BOOKS)
    token = engine.markets[market_id].fx.token_id_a
    replay = Replay(engine, tmp_path, start="1", end="2.5")  # both on an update's time
    assert shown(engine, token) == (BOOKS[1][1], BOOKS[1][2])
    assert replay.status()["elapsed_ms"] == 1000
    assert replay.step(ms=1500) == 1
    assert shown(engine, token) == (BOOKS[2][1], BOOKS[2][2])
    assert replay.done
    assert replay.step(ms=60_000) == 0  # the 4 s update lies past the end
    assert replay.status()["elapsed_ms"] == 2500


def _two_books_far_apart(directory: Path, engine: Any) -> None:
    write(
        directory,
        engine,
        [
            (0.0, [("0.48", "48")], [("0.52", "52")]),
            (100_000.0, [("0.40", "40")], [("0.60", "60")]),  # 100,000 s later
        ],
    )


def test_a_running_clock_is_not_stepped_from_python_either(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        _two_books_far_apart(tmp_path, sb.engine)
        replay = Replay(sb.engine, tmp_path)
        future = attach(sb, replay, speed=1)
        assert future is not None
        try:
            eventually(lambda: replay.running)
            with pytest.raises(ValidationError, match="the clock runs at a speed"):
                replay.step(ms=200_000_000)
            assert replay.index == 1  # the far update was not applied by hand
        finally:
            future.cancel()


def test_the_status_of_a_running_clock_moves_between_updates(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        _two_books_far_apart(tmp_path, sb.engine)
        replay = Replay(sb.engine, tmp_path)
        first = replay.first_ms
        future = attach(sb, replay, speed=1000)  # the gap takes 100 s of real time
        assert future is not None
        url = f"{sb.base_url}/admin/replay"
        try:
            eventually(lambda: httpx.get(url).json()["data"]["elapsed_ms"] > 0)
            status = httpx.get(url).json()["data"]
            assert first < status["now_ms"] < first + 100_000_000  # between the two
            assert status["applied"] == 1
            assert not status["done"]
        finally:
            future.cancel()


async def test_recording_token_b_alone_keeps_the_minimum_order_size(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread({**config(), "seed": 5}) as sb:
        market = sorted(
            m.id
            for m in sb.engine.markets.values()
            if m.mid is not None and m.active and m.fx.min_order_size_units == 5_000_000
        )[0]

        async def nothing() -> None:
            await asyncio.sleep(0)

        await record_while(sb, tmp_path, [market], nothing, outcomes="b")
    (recorded,) = read_markets(tmp_path)
    assert recorded.min_order_size == "5"  # it was None: the replay served 1 USDC
    engine = sandbox_module.Engine(config())  # a sandbox without the market
    Replay(engine, tmp_path)
    assert engine.markets[market].fx.min_order_size_units == 5_000_000


def test_two_markets_replay_each_its_own_book_and_money_is_kept(tmp_path: Path) -> None:
    engine = sandbox_module.Engine(config(2))
    one, two = sorted((m for m in engine.markets.values() if m.active), key=lambda m: m.id)[:2]
    writer = RecordingWriter(
        tmp_path,
        [
            RecordedMarket(m.id, m.fx.event_id, m.fx.question, m.fx.token_id_a, m.fx.token_id_b)
            for m in (one, two)
        ],
    )
    writer.write_markets()

    def book(bid: str, ask: str) -> dict[str, Any]:
        return {"bids": [{"price": bid, "size": "50"}], "asks": [{"price": ask, "size": "50"}]}

    for i, (market, bid, ask) in enumerate(
        [(one, "0.40", "0.45"), (two, "0.60", "0.65"), (one, "0.46", "0.50"), (two, "0.55", "0.58")]
    ):
        writer.add(BOOK, market.fx.token_id_a, book(bid, ask), T0 + i * 10**9)
    asyncio.run(writer.flush())
    replay = Replay(engine, tmp_path)
    assert shown(engine, one.fx.token_id_a)[0] == [("0.40", "50")]
    assert shown(engine, two.fx.token_id_a) == ([], [])  # no book of it recorded yet
    assert replay.step(updates=1) == 1
    assert shown(engine, two.fx.token_id_a)[0] == [("0.60", "50")]
    assert shown(engine, one.fx.token_id_a)[0] == [("0.40", "50")]  # each its own book
    user = engine.config.users[0].user_id
    cash = engine.balances(user).cash
    bought = order(engine, user, one.id, "BUY", "0.45", "9")  # 20 shares at 0.45
    assert engine.order(bought).status == "matched"
    ask = order(engine, user, one.id, "SELL", "0.45", "20")  # rests over the recorded bid
    assert engine.order(ask).status == "live"
    assert replay.step(updates=1) == 1  # market one's bid rises through the resting ask
    assert engine.order(ask).status == "matched"
    assert engine.balances(user).cash == cash  # bought at 0.45, sold at 0.45 (its price)
    assert shown(engine, two.fx.token_id_a)[0] == [("0.60", "50")]  # the other one waits
    replay.step(updates=1)
    assert shown(engine, two.fx.token_id_a)[0] == [("0.55", "50")]
    assert replay.done
    assert engine.check_invariants() == []


def test_backtest_refuses_a_step_that_cannot_move_the_clock(tmp_path: Path) -> None:
    backtest = example("backtest")
    day = backtest.synthetic_day(tmp_path / "day", markets=1, hours=0.01)
    for interval, speed in ((0, 0), (0.0001, 0), (-60, 0), (float("inf"), 0), (60, -1)):
        with pytest.raises(ValidationError, match="interval" if speed == 0 else "speed"):
            backtest.backtest(
                day, tmp_path / "out", interval=interval, speed=speed, plot=False
            )  # it hung (0) or failed on a KeyError (-60), a sandbox left running
    assert not (tmp_path / "out").exists()
