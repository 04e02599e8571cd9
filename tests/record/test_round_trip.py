"""Record -> replay -> backtest, end to end: what a recording keeps, a replay serves and a
backtest reports (each test failed before its fix).

The recorder stamped a book with the time it took it off the stream, not the time it
arrived: books that arrived while it read a snapshot over REST after a reconnect were
stamped after that snapshot, and the replay applied them, older, over it. The replay
ordered rows by the millisecond (rows written out of arrival order within one ms kept
the written order) and applied a book the service had already superseded. A run at a
speed jumped its clock to ``--end`` once the last update was applied; attaching a second
replay left the first one running on the same sandbox; the admin step route took
unknown keys and answered Python reprs (``Decimal('1.5')``).
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

from clobkit.core.spec import book_topic
from clobkit.errors import ValidationError
from clobkit.models import StreamMessage
from clobkit.record import (
    BOOK,
    GAP,
    SNAPSHOT,
    RecordedMarket,
    Recorder,
    RecordingWriter,
    decode_book_frame,
    iter_rows,
    read_markets,
    resolve_markets,
)
from clobkit.sandbox.replay import Replay, attach

from .conftest import (
    client,
    config,
    example,
    move_prices,
    moving_market,
    record_while,
    sandbox_module,
)
from .test_replay import BOOKS, T0, shown, write


async def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait on this loop until ``check()`` is true."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("decoder", [None, decode_book_frame])
async def test_a_stream_message_carries_the_time_its_frame_arrived(decoder: Any) -> None:
    """Stamped as the stream reads the frame, also for a frame the stream's ``decode``
    makes: a consumer that reads it later still learns when it came."""
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)
        token = sb.engine.markets[market].fx.token_id_a
        async with client(sb) as c:
            stream = c.stream([book_topic(token)])
            stream.decode = decoder
            await stream.start()
            seen = stream.frames
            await asyncio.to_thread(sb.set_price, market, "0.31")
            await until(lambda: stream.frames > seen)  # read off the socket, not consumed
            before_read = time.time_ns()
            async for item in stream:
                if isinstance(item, StreamMessage) and item.type == "data":
                    break
            await stream.close()
    assert item.received_ns is not None
    assert 0 < item.received_ns <= before_read


BOOK_READS = "GET /orderbooks/{id}"


async def test_books_that_arrive_during_a_snapshot_are_stamped_before_it(
    tmp_path: Path,
) -> None:
    """After a reconnect the recorder reads every book over REST; books that arrive on the
    stream meanwhile are older than that snapshot. In arrival order (how the replay reads a
    recording) the service's times of a token's books never go back."""
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)
        async with client(sb) as c:
            markets = await resolve_markets(c, market_ids=[market])
            recorder = Recorder(c, tmp_path, markets, outcomes="a")
            task = asyncio.create_task(recorder.run())
            await until(lambda: (tmp_path / "markets.json").exists() or task.done())
            await move_prices(sb, market, 3)
            held = {"latency_ms": 60_000, "latency_at": "before"}
            sb.faults.configure({"routes": {BOOK_READS: held}})  # book reads wait
            await asyncio.to_thread(sb.drop_streams)
            await until(lambda: sb.faults.held > 0 or task.done())  # the snapshot waits
            stream = recorder.stream
            assert stream is not None
            frames, updates = stream.frames, recorder.stats.updates
            for price in ("0.41", "0.43", "0.45"):  # books arrive while it waits
                await asyncio.to_thread(sb.set_price, market, price)
                await asyncio.sleep(0.02)  # each book a service ms of its own
            await until(lambda: stream.frames >= frames + 3)  # read off the socket
            sb.faults.configure(None)
            sb.faults.release()
            await until(lambda: recorder.stats.updates >= updates + 3 or task.done())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    token = markets[0].token_id_a
    rows = [r for r in iter_rows(tmp_path) if r.token_id == token]
    snapshot = max(i for i, r in enumerate(rows) if r.kind == SNAPSHOT)
    during = [r for r in rows[snapshot + 1 :] if r.recv_ns < rows[snapshot].recv_ns]
    assert len(during) >= 3  # written after the snapshot, arrived before it
    by_arrival = sorted(rows, key=lambda r: (r.recv_ns, r.seq))
    service = [r.service_ms or 0 for r in by_arrival]
    assert all(service)  # the sandbox sends every book's time
    assert service == sorted(service)  # the snapshot came before 3 older books
    engine = sandbox_module.Engine(config())
    replay = Replay(engine, tmp_path)
    replay.step(ms=10**9)
    assert replay.stale == 0
    last = by_arrival[-1]
    assert shown(engine, token) == (last.bids, last.asks)


def _writer(directory: Path, engine: Any) -> tuple[RecordingWriter, Any]:
    fx = sorted((m for m in engine.markets.values() if m.active), key=lambda m: m.id)[0].fx
    market = RecordedMarket(fx.id, fx.event_id, fx.question, fx.token_id_a, fx.token_id_b)
    writer = RecordingWriter(directory, [market])
    writer.write_markets()
    return writer, fx


def _book(bid: str, service_ms: int | None = None) -> dict[str, Any]:
    book: dict[str, Any] = {"bids": [{"price": bid, "size": "10"}], "asks": []}
    if service_ms is not None:
        book["updated_at_ms"] = service_ms
    return book


def test_a_book_older_than_the_last_applied_is_skipped_and_counted(tmp_path: Path) -> None:
    """The exchange never goes back in time: a row whose service time is older than the
    last one taken (a book that arrived late) is left out; a row without one is taken."""
    engine = sandbox_module.Engine(config())
    writer, fx = _writer(tmp_path, engine)
    writer.add(BOOK, fx.token_id_a, _book("0.40", 1_000), T0)
    writer.add(SNAPSHOT, fx.token_id_a, _book("0.42", 3_000), T0 + 10**9)
    writer.add(BOOK, fx.token_id_a, _book("0.41", 2_000), T0 + 2 * 10**9)  # late: older
    writer.add(SNAPSHOT, fx.token_id_a, _book("0.43"), T0 + 3 * 10**9)  # no service time
    writer.add(BOOK, fx.token_id_a, _book("0.44", 3_000), T0 + 4 * 10**9)  # same ms: taken
    asyncio.run(writer.flush())
    replay = Replay(engine, tmp_path)
    assert replay.stale == 1
    assert replay.status()["stale"] == 1
    seen = [shown(engine, fx.token_id_a)[0][0][0]]
    while not replay.done:
        replay.step(updates=1)
        seen.append(shown(engine, fx.token_id_a)[0][0][0])
    assert seen == ["0.40", "0.42", "0.43", "0.44"]


def test_rows_are_replayed_in_arrival_order_to_the_nanosecond(tmp_path: Path) -> None:
    """Rows written out of arrival order within one millisecond (a book read off the
    stream after a snapshot that arrived later) are applied in arrival order."""
    engine = sandbox_module.Engine(config())
    writer, fx = _writer(tmp_path, engine)
    writer.add(SNAPSHOT, fx.token_id_a, _book("0.45"), T0 + 900_000)
    writer.add(BOOK, fx.token_id_a, _book("0.44"), T0 + 100_000)  # arrived first
    asyncio.run(writer.flush())
    Replay(engine, tmp_path)
    assert shown(engine, fx.token_id_a)[0] == [("0.45", "10")]


def test_a_run_whose_end_lies_past_the_last_update_stops_with_it(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        write(tmp_path, sb.engine, BOOKS)
        replay = Replay(sb.engine, tmp_path, end="1000")
        future = attach(sb, replay, speed=1000)
        assert future is not None
        future.result(30)
        assert replay.done
        assert replay.now_ms == replay.last_ms  # it was end: 996 s past the last update
        status = httpx.get(f"{sb.base_url}/admin/replay").json()["data"]
        assert status["now_ms"] == replay.last_ms


def test_a_run_keeps_its_pace_up_to_an_end_between_updates(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        write(tmp_path, sb.engine, [BOOKS[0], (100_000.0, *BOOKS[1][1:])])
        replay = Replay(sb.engine, tmp_path, end="50000")
        future = attach(sb, replay, speed=1)
        assert future is not None
        try:
            eventually(lambda: replay.running or future.done())
            assert not future.done()  # it ended at once, its clock at end
            assert replay.clock_ms() < replay.end_ms
        finally:
            future.cancel()


def test_attaching_a_replay_stops_the_one_attached_before(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        write(tmp_path, sb.engine, [BOOKS[0], (100_000.0, *BOOKS[1][1:])])
        first = Replay(sb.engine, tmp_path)
        running = attach(sb, first, speed=1)
        assert running is not None
        eventually(lambda: first.running)
        second = Replay(sb.engine, tmp_path, start="0")
        attach(sb, second)
        eventually(running.done)  # it ran on: two replays drove one sandbox
        assert running.cancelled()
        assert not first.running
        with pytest.raises(ValidationError, match="replaced"):
            first.step(ms=1)
        answer = httpx.post(f"{sb.base_url}/admin/replay/step", json={"ms": 200_000_000})
        assert answer.json()["data"]["applied"] == 2


def test_the_step_route_refuses_an_unknown_key_by_name(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        write(tmp_path, sb.engine, BOOKS)
        replay = Replay(sb.engine, tmp_path)
        attach(sb, replay)
        url = f"{sb.base_url}/admin/replay/step"
        for body in ({"ms": 5000, "speed": 2}, {"update": 1}):
            answer = httpx.post(url, json=body)
            assert answer.status_code == 400
            assert not answer.json()["success"]
            unknown = next(k for k in body if k not in ("ms", "updates"))
            assert f'"{unknown}"' in answer.json()["detail"]
        assert replay.index == 1  # nothing moved


def test_admin_details_show_values_as_sent(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        write(tmp_path, sb.engine, BOOKS)
        attach(sb, Replay(sb.engine, tmp_path))
        url = f"{sb.base_url}/admin/replay/step"
        for raw, sent in (
            (b'{"ms": 1.50}', "1.50"),
            (b'{"updates": "2"}', '"2"'),
            (b'{"updates": 1, "ms": 5}', '{"updates":1,"ms":5}'),
        ):
            answer = httpx.post(url, content=raw, headers={"content-type": "application/json"})
            assert answer.status_code == 400
            detail = answer.json()["detail"]
            assert sent in detail, detail
            assert "Decimal" not in detail
            assert "'" not in detail, detail


def test_the_announced_length_is_what_a_run_replays(tmp_path: Path) -> None:
    from clobkit.sandbox.__main__ import replay_line

    engine = sandbox_module.Engine(config())
    write(tmp_path, engine, BOOKS)  # updates at 0 to 4 s, the first shown at once
    replay = Replay(engine, tmp_path, end="1000")
    # a run stops with the last update (it said 1000 s); steps may go on to --end
    line = "1 markets, 4 updates (3 to come) of the 4 recorded, 4 s, speed 2"
    assert replay_line(replay, 2.0, False) == line
    assert replay_line(replay, 1.0, True).startswith(
        "1 markets, 4 updates (3 to come) of the 4 recorded, 1000 s"
    )
    assert replay.status()["updates"] == 4  # the figures of GET /admin/replay
    assert replay.status()["recorded"] == 4


async def test_a_snapshot_that_fails_after_a_reconnect_is_read_again_later(
    tmp_path: Path,
) -> None:
    """The books read over REST after a reconnect failed (past the client's retries): the
    recording ended with the error. It goes on, and reads them once the service answers."""
    with sandbox_module.serve_in_thread(config()) as sb:
        market = moving_market(sb)
        async with client(sb, max_retries=0) as c:
            markets = await resolve_markets(c, market_ids=[market])
            recorder = Recorder(c, tmp_path, markets, outcomes="a")
            task = asyncio.create_task(recorder.run())
            await until(lambda: (tmp_path / "markets.json").exists() or task.done())
            sb.faults.configure({"routes": {BOOK_READS: {"error_rate": 1.0}}})  # reads fail
            await asyncio.to_thread(sb.drop_streams)
            await until(lambda: recorder.stats.snapshot_failures > 0 or task.done())
            assert not task.done()  # it raised the TransportError and stopped recording
            read = recorder.stats.snapshots
            sb.faults.configure(None)
            await until(lambda: recorder.stats.snapshots > read or task.done())  # read again
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    rows = list(iter_rows(tmp_path))
    gap = max(i for i, r in enumerate(rows) if r.kind == GAP)
    assert [r.kind for r in rows[gap + 1 :]] == [SNAPSHOT]
    assert rows[gap + 1].recv_ns > rows[gap].recv_ns
    assert recorder.stats.snapshot_failures == 1


def test_a_gap_starts_the_service_clock_afresh(tmp_path: Path) -> None:
    """A service that restarted behind a reconnect may count its time afresh: the books
    after the gap are taken, not all left out as older than the last before it."""
    engine = sandbox_module.Engine(config())
    writer, fx = _writer(tmp_path, engine)
    writer.add(BOOK, fx.token_id_a, _book("0.40", 9_000), T0)
    writer.add(BOOK, fx.token_id_a, _book("0.39", 8_000), T0 + 10**9)  # late: left out
    writer.add(GAP, None, None, T0 + 2 * 10**9)
    writer.add(SNAPSHOT, fx.token_id_a, _book("0.41", 1_000), T0 + 3 * 10**9)
    writer.add(BOOK, fx.token_id_a, _book("0.42", 2_000), T0 + 4 * 10**9)
    asyncio.run(writer.flush())
    replay = Replay(engine, tmp_path)
    replay.step(ms=10**9)
    assert replay.stale == 1
    assert shown(engine, fx.token_id_a)[0] == [("0.42", "10")]


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
