"""The Desk against a real sandbox on V1, V2 and V3 wallets: one stream for many quoters
(each frame decoded once), limits over the whole desk refused before anything is sent,
the kill switch (by hand, heartbeat, stream down, error rate), the request budget and
the metrics."""

from __future__ import annotations

import asyncio
import contextlib
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.client import orders_topic
from clobkit.errors import (
    ClobkitError,
    QuoteRefused,
    ServerError,
    TransportError,
    ValidationError,
)
from clobkit.mm import Budget, Desk, Quote, Quoter, Slots
from clobkit.mm.ladder import Level
from clobkit.mm.risk import exposure

from .conftest import (
    Counted,
    assert_same,
    eventually,
    options,
    quoter_view,
    service_view,
)

UNIT = 1_000_000


def two_sided(sb: Any, n: int) -> list[str]:
    """``n`` active markets whose books the house quotes on both sides (outcome a)."""
    found = []
    for market_id, state in sb.engine.markets.items():
        book = sb.engine.orderbook(state.fx.token_id_a)
        if state.active and book is not None and book.bids and book.asks:
            found.append(str(market_id))
    assert len(found) >= n
    return found[:n]


def ladder(first: int, n: int = 3, size: int = 20) -> list[Quote]:
    """``n`` BUYs from ``first`` cents up, a cent apart (20 shares: over any minimum)."""
    return [Quote("BUY", Decimal(first + k) / 100, size) for k in range(n)]


def posts(desk: Desk) -> int:
    return sum(
        row["count"] for row in desk.metrics()["requests"] if row["endpoint"] == "POST /orders"
    )


def all_same(sb: Any, user: Any, desk: Desk) -> bool:
    return all(
        quoter_view(q) == service_view(sb, user, q.market_id, q.outcome)
        for q in desk.quoters
        if q.market is not None
    )


async def test_one_stream_each_frame_decoded_once(sb: Any, user: Any, client: AsyncClient) -> None:
    markets = two_sided(sb, 3)
    async with Desk(client) as desk:
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.open()
        reports = await desk.requote({q: ladder(5 + i) for i, q in enumerate(quoters)})
        assert {q: len(r.placed) for q, r in reports.items()} == dict.fromkeys(quoters, 3)
        await eventually(lambda: all_same(sb, user, desk))
        for q in quoters:
            assert_same(sb, user, q)
        # one connection of the user on the service, subscribed to the order topic once
        hub = sb._state.hub
        assert len(hub.subscribers[orders_topic(user.user_id)]) == 1
        conns = {c for topic, subs in hub.subscribers.items() for c in subs}
        assert len(conns) == 1
        snap = desk.metrics()
        assert snap["frames"] == snap["messages"] > 18  # each frame decoded once, routed once
        assert snap["open_orders"] == 18
        assert snap["rate_limited"] == 0
        assert snap["retries"] == 0
        # the quoters see their own updates only
        fill = quoters[0].open_orders[0]
        sb.house_fill(fill.id, 5)
        await eventually(lambda: quoters[0].position == 5)
        assert all(q.position == 0 for q in quoters[1:])
        assert snap["markets"][markets[0]]["open_orders"] == 6
    assert all(service_view(sb, user, m, o) == [] for m in markets for o in "ab")


async def test_limits_over_the_desk_are_refused_before_anything_is_sent(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    m1, m2 = two_sided(sb, 2)
    event = sb.engine.markets[m1].fx.event_id
    async with Desk(
        client,
        max_open_orders=8,
        max_notional=10,
        max_position_per_market=150,
        max_position_per_event=200,
    ) as desk:
        a, b, c = desk.quoter(m1, "a"), desk.quoter(m1, "b"), desk.quoter(m2, "a")
        await desk.requote({a: ladder(5), b: ladder(5)})
        assert posts(desk) == 6
        with pytest.raises(QuoteRefused) as refused:  # 6 + 3 > 8
            await desk.requote({c: ladder(5)})
        assert refused.value.field == "max_open_orders"
        assert "9 open orders" in str(refused.value)
        assert "max_open_orders 8" in str(refused.value)
        with pytest.raises(QuoteRefused) as refused:  # BUYs at 0.05-0.07 x 20: 7.2 + 3 > 10
            await desk.requote({c: [Quote("BUY", "0.15", 20)]})
        assert refused.value.field == "max_notional"
        assert "10.2 USDC" in str(refused.value)
        assert "max_notional 10 USDC" in str(refused.value)
        with pytest.raises(QuoteRefused) as refused:  # 120 + 60 shares on m1 > 150
            await desk.requote({a: ladder(2, n=2, size=60)})
        assert refused.value.field == "max_position_per_market"
        assert "180 shares" in str(refused.value)
        with pytest.raises(QuoteRefused):  # the quoter's own requote is checked alike
            await a.requote(ladder(2, n=2, size=60))
        assert posts(desk) == 6  # nothing sent for any refused requote
        await eventually(lambda: all_same(sb, user, desk))
        for q in (a, b):
            assert_same(sb, user, q)
        # the event limit spans the event's markets and outcomes
        await desk.requote({a: ladder(5, n=1, size=40), b: ladder(5, n=1, size=40)})
        assert desk.gate.planned.event[event] == 80 * UNIT
    # a SELL risks 1 - price per share: 20 x (1 - 0.90) = 2 USDC
    assert exposure([Level(1, 900_000, 20 * UNIT, 0, 0)], 20 * UNIT).notional == 2 * UNIT


async def test_a_requote_that_fits_only_after_its_cancels_cancels_first(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (m1,) = two_sided(sb, 1)
    async with Desk(client, max_open_orders=3) as desk:
        q = desk.quoter(m1, "a")
        await desk.requote({q: ladder(5)})
        # 3 old and 3 new would be 6: the old ones go before the new ones are sent
        report = (await desk.requote({q: ladder(10)}))[q]
        assert len(report.cancelled) == 3
        assert len(report.placed) == 3
        await eventually(lambda: all_same(sb, user, desk))
        assert desk.metrics()["open_orders"] == 3
        records = sb.engine.list_orders(user.user_id, page_size=100).items
        old = [r for r in records if r.status == "cancelled"]
        new = [r for r in records if r.status == "live"]
        assert max(r.updated_ms for r in old) <= min(r.created_ms for r in new)


async def test_halt_cancels_everything_and_refuses_until_resume(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 2)
    async with Desk(client) as desk:
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.requote({q: ladder(5) for q in quoters})
        cancelled = await desk.halt()
        assert len(cancelled) == 12
        assert all(service_view(sb, user, m, o) == [] for m in markets for o in "ab")
        assert desk.halted == "halt() called"
        assert desk.metrics()["halts"] == 1
        with pytest.raises(QuoteRefused) as refused:
            await desk.requote({quoters[0]: ladder(5)})
        assert "halted" in str(refused.value)
        with pytest.raises(QuoteRefused):
            await quoters[0].requote(ladder(5))
        await desk.requote({quoters[0]: []})  # quoting nothing stays allowed
        desk.resume()
        await desk.requote({quoters[0]: ladder(5)})
        await eventually(lambda: all_same(sb, user, desk))


async def test_a_halt_sends_every_cancel_at_once(sb: Any, user: Any) -> None:
    markets = two_sided(sb, 2)
    route = "DELETE /orders/{id}"
    async with (
        AsyncClient(**options(sb, user)) as client,
        Desk(client, user_id=user.user_id, max_in_flight=2) as desk,
    ):
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.requote({q: ladder(5) for q in quoters})
        sb.faults.configure({"routes": {route: {"latency_ms": 100}}})
        sb.requests.reset()
        await desk.requote({q: ladder(9) for q in quoters})  # 12 cancels, 2 at a time
        assert sb.requests.most_in_flight("DELETE") == 2
        # the halt's cancels held by the service until all 12 are there: all at once
        sb.faults.configure({"routes": {route: {"latency_ms": 60_000}}})
        halting = asyncio.ensure_future(desk.halt())
        await eventually(lambda: sb.faults.held == 12 or halting.done())
        sb.faults.release()
        cancelled = await halting
        assert len(cancelled) == 12
        assert sb.requests.most_in_flight("DELETE") == 12  # not held to max_in_flight
        assert all(service_view(sb, user, m, o) == [] for m in markets for o in "ab")
        sb.faults.configure(None)


async def test_a_stale_heartbeat_fires_the_kill_switch(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (m1,) = two_sided(sb, 1)
    async with Desk(client, heartbeat_timeout=0.2) as desk:
        q = desk.quoter(m1, "a")
        await desk.requote({q: ladder(5)})
        await asyncio.sleep(0.3)
        assert desk.halted is None  # not armed before the first heartbeat
        desk.heartbeat()
        await eventually(lambda: desk.halted is not None)
        assert "heartbeat" in (desk.halted or "")
        await eventually(lambda: service_view(sb, user, m1) == [])


async def test_a_stream_down_too_long_fires_the_kill_switch(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (m1,) = two_sided(sb, 1)
    async with Desk(client, stream_timeout=0.001) as desk:
        desk.watch_interval = 0.001
        q = desk.quoter(m1, "a")
        await desk.requote({q: ladder(5)})
        sb.drop_streams()  # the stream reconnects after 25 ms at least
        await eventually(lambda: desk.halted is not None)
        assert "stream down" in (desk.halted or "")
        await eventually(lambda: service_view(sb, user, m1) == [])


async def test_an_error_rate_past_the_threshold_fires_the_kill_switch(sb: Any, user: Any) -> None:
    """(Leaving cannot confirm that nothing rests: places of unknown outcome may land
    for the client's ``landing_time``, 60 s; it says so.)"""
    with pytest.raises(ClobkitError, match="showed nothing of the desk resting"):
        await _an_error_rate_past_the_threshold(sb, user)
    assert service_view(sb, user, two_sided(sb, 1)[0]) == []


async def _an_error_rate_past_the_threshold(sb: Any, user: Any) -> None:
    (m1,) = two_sided(sb, 1)
    async with (
        AsyncClient(**options(sb, user, max_retries=0)) as client,
        Desk(client, error_window=10, max_error_rate=0.3) as desk,
    ):
        desk.exit_timeout = 0.5
        q = desk.quoter(m1, "a")
        await desk.open()
        q.execution.resolver.attempts = 3
        sb.faults.configure({"error_rate": 1.0, "after_commit": 0.5, "seed": 1})
        with pytest.raises((ServerError, TransportError)):  # whatever failed last
            await desk.requote({q: ladder(5, n=10)})
        sb.faults.configure(None)
        await eventually(lambda: desk.halted is not None)
        assert "error rate" in (desk.halted or "")
        await desk.halt()  # the faults are gone: the cancels go through now
        await q.reconcile()
        assert service_view(sb, user, m1) == []
        assert_same(sb, user, q)


async def test_a_halt_whose_cancels_fail_keeps_cancelling(sb: Any, user: Any) -> None:
    """The kill switch fires through the faults that fail its cancels: the watchdog
    sends them again, backing off, until nothing of the desk rests on the service."""
    (m1,) = two_sided(sb, 1)
    async with (
        AsyncClient(**options(sb, user, max_retries=0)) as client,
        Desk(client, error_window=10, max_error_rate=0.3) as desk,
    ):
        desk.watch_interval = 0.01
        desk.halt_retry = 0.02
        q = desk.quoter(m1, "a")
        await desk.requote({q: ladder(5, n=4)})
        q.execution.resolver.attempts = 2
        sb.faults.configure({"error_rate": 1.0, "after_commit": 0.0, "seed": 1})
        with pytest.raises((ServerError, TransportError)):
            await desk.halt("by hand, through the faults")
        assert len(service_view(sb, user, m1)) == 4
        # (generous waits: each failed try walks the quoter's resolution first)
        await eventually(lambda: desk.metrics()["halt_retries"] >= 2, timeout=60)
        assert len(service_view(sb, user, m1)) == 4  # every DELETE failed before the service
        sb.faults.configure(None)
        await eventually(lambda: service_view(sb, user, m1) == [], timeout=60)
        await eventually(lambda: not q.resting(), timeout=60)
        # the sweep under way when the faults went ends once a listing shows nothing
        await eventually(lambda: desk.execution.kill.flat is True, timeout=60)
        assert desk.halted == "by hand, through the faults"
        retries = desk.metrics()["halt_retries"]
        await asyncio.sleep(0.1)  # nothing left to cancel: no more retries
        assert desk.metrics()["halt_retries"] == retries
        assert_same(sb, user, q)


async def test_a_resume_before_a_retry_begins_leaves_the_desk_resumed(sb: Any, user: Any) -> None:
    # the retry called halt(reason): begun after resume(), it halted the desk again and
    # cancelled the orders the strategy had just been allowed to keep. Now resume() ends
    # the kill switch's background sweep, and a sweep looks at the halt before each try
    (m1,) = two_sided(sb, 1)
    async with (
        AsyncClient(**options(sb, user, max_retries=0)) as client,
        Desk(client) as desk,
    ):
        q = desk.quoter(m1, "a")
        await desk.requote({q: ladder(5, n=4)})
        desk.halt_retry = 0.01
        sb.faults.configure({"error_rate": 1.0, "after_commit": 0.0, "seed": 1})
        with pytest.raises((ServerError, TransportError)):
            await desk.halt()  # its sweep goes on in the background, retrying
        desk.resume()  # before its next try
        sb.faults.configure(None)
        await asyncio.sleep(0.2)
        assert desk.halted is None
        assert desk.halts == 1
        assert len(service_view(sb, user, m1)) == 4
        await q.reconcile()
        assert_same(sb, user, q)


async def test_requotes_after_a_dropped_stream_resync_every_quoter(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 2)
    async with Desk(client) as desk:
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.requote({q: ladder(5) for q in quoters})
        sb.drop_streams()
        for q in quoters:  # filled while the stream is away
            sb.house_fill(q.open_orders[0].id, 20)
        await eventually(lambda: desk.reconnects >= 1)
        await eventually(lambda: all(q.position == 20 for q in quoters))
        await eventually(lambda: all_same(sb, user, desk))
        assert all(q.reconnects >= 1 for q in quoters)
        await desk.requote({q: ladder(6) for q in quoters})
        await eventually(lambda: all_same(sb, user, desk))
        for q in quoters:
            assert_same(sb, user, q)


def listings(desk: Desk) -> int:
    return sum(
        row["count"] for row in desk.metrics()["requests"] if row["endpoint"] == "GET /orders?open"
    )


async def test_reconcile_reads_the_live_orders_once_for_the_whole_desk(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 3)
    async with Desk(client, user_id=user.user_id) as desk:  # no resync of a late user
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.requote({q: ladder(5) for q in quoters})
        for q in quoters[:3]:  # one order filled whole (gone from the listing), one in part
            sb.house_fill(q.open_orders[0].id, 20)
            sb.house_fill(q.open_orders[1].id, 7)
        before = listings(desk)
        await desk.reconcile()
        assert listings(desk) == before + 1  # one listing for six quoters
        for q in quoters:  # equal at once: every fill up to now counted
            assert_same(sb, user, q)
        assert [q.position for q in quoters] == [27, 27, 27, 0, 0, 0]


async def test_metrics_snapshot_and_prometheus(sb: Any, user: Any, client: AsyncClient) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    (m1,) = two_sided(sb, 1)
    async with Desk(client) as desk:
        q = desk.quoter(m1, "a")
        await desk.requote({q: ladder(5)})
        first = min(q.open_orders, key=lambda o: o.limit_price or 0)
        sb.house_fill(first.id, 20)
        await eventually(lambda: q.position == 20)
        snap = desk.metrics()
        assert {"endpoint": "POST /orders", "outcome": "ok", "count": 3} in snap["requests"]
        hist = snap["latency"]["POST /orders"]
        assert hist["count"] == 3
        assert hist["buckets"]["+Inf"] == 3
        assert snap["lag"]["count"] >= 1
        row = snap["markets"][q.market_id]
        assert row["fills"] == 1
        assert row["position"] == {"a": Decimal(20)}
        assert row["open_orders"] == 2
        assert row["notional"] == Decimal("2.6")
        registry = CollectorRegistry()
        registry.register(desk.collector())
        text = generate_latest(registry).decode()
        assert 'clobkit_desk_requests_total{endpoint="POST /orders",outcome="ok"} 3.0' in text
        assert 'clobkit_desk_request_seconds_count{endpoint="POST /orders"} 3.0' in text
        assert f'clobkit_desk_position{{market_id="{q.market_id}",outcome="a"}} 20.0' in text
        assert "clobkit_desk_halted 0.0" in text
        assert "clobkit_desk_halt_retries_total 0.0" in text
        assert "clobkit_desk_streams 1.0" in text
        assert "clobkit_desk_refused_topics 0.0" in text
        assert "clobkit_desk_deaf 0.0" in text


async def test_quoters_of_the_desk_are_checked(sb: Any, client: AsyncClient) -> None:
    (m1,) = two_sided(sb, 1)
    async with Desk(client) as desk, Desk(client) as other:
        q = desk.quoter(m1, "a")
        with pytest.raises(ValidationError):
            desk.quoter(m1, "a")
        with pytest.raises(ValidationError):
            await other.requote({q: ladder(5)})
        standalone = Quoter(client, m1, "b")
        with pytest.raises(ValidationError):
            await desk.requote({standalone: ladder(5)})
    bads: list[dict[str, Any]] = [
        {"max_open_orders": 0},
        {"heartbeat_timeout": -1},
        {"max_error_rate": 2},
        # NaN never compares past a limit: that switch would never fire
        {"heartbeat_timeout": float("nan")},
        {"stream_timeout": float("inf")},  # None is "never"; inf said it silently
        {"room_timeout": 10**400},
        {"stream_timeout": "5"},
        {"max_error_rate": float("nan")},
        {"max_error_rate": "0.5"},
    ]
    for bad in bads:
        with pytest.raises(ValidationError, match=next(iter(bad))):
            Desk(client, **bad)


async def test_the_budget_is_a_sliding_window() -> None:
    loop = asyncio.get_running_loop()
    budget = Budget(3, window=0.2)
    sent = []
    for _ in range(4):
        await budget.take()
        sent.append(loop.time())
    assert sent[3] >= sent[0] + 0.2  # the fourth waited for the first to leave the window
    assert budget.queued == 1
    budget = Budget(3, window=0.2)
    await budget.take(keep=1)
    await budget.take(keep=1)  # 2 sent + 1 kept
    await budget.take()  # the kept room is there for a request that keeps none
    assert budget.queued == 0


async def test_slots_bound_the_requests_in_flight_and_let_cancels_first() -> None:
    slots = Slots(1)
    await slots.acquire(urgent=False)
    order: list[str] = []

    async def take(name: str, urgent: bool) -> None:
        await slots.acquire(urgent)
        order.append(name)
        slots.release()

    waiting = [asyncio.create_task(take("place", False)), asyncio.create_task(take("cancel", True))]
    await asyncio.sleep(0)
    assert order == []  # the one slot is taken
    slots.release()
    await asyncio.gather(*waiting)
    assert order == ["cancel", "place"]
    assert slots.free == 1


def test_the_desk_does_not_import_prometheus() -> None:
    import subprocess
    import sys

    probe = "import clobkit.mm, sys; print('prometheus_client' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"  # the metrics extra is optional


async def test_a_fresh_account_is_learnt_once_for_the_whole_desk(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    """No order yet names the user: the desk looks once, subscribes to the order topic
    with the first order, and re-reads what it missed in one read for every quoter."""
    markets = two_sided(sb, 4)
    async with Desk(client) as desk:
        assert desk.user_id is None
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.requote({q: ladder(5) for q in quoters})
        assert desk.user_id == user.user_id
        await eventually(lambda: all_same(sb, user, desk))
        counts = {(r["endpoint"]): r["count"] for r in desk.metrics()["requests"]}
        assert counts["GET /orders"] <= 2  # the desk's enter and open, never per quoter
        assert counts["GET /orders?open"] <= 4  # open, the late subscription, its quoter
        await desk.requote({q: ladder(6) for q in quoters})
        await eventually(lambda: all_same(sb, user, desk))
        for q in quoters:
            assert_same(sb, user, q)


async def test_the_budget_counts_every_request_the_desk_sends(sb: Any, user: Any) -> None:
    # a listing of the open orders is a request per open status, a quoter's prepare up
    # to four, and the positions were read past the budget: a desk counted a quarter of
    # what it sent, met the service's 429s and left orders live on exit
    transport = Counted(sb)
    async with (
        AsyncClient(**options(sb, user)) as client,
        Desk(client, user_id=user.user_id) as desk,
    ):
        quoters = [desk.quoter(m, "a") for m in two_sided(sb, 2)]
        await desk.requote({q: ladder(5) for q in quoters})
        for _ in range(3):
            await desk.reconcile()
        await desk.held(quoters[0])  # the positions, read once for the desk
        sent = sum(transport.sent.values())
        counted = desk.budget.used(asyncio.get_running_loop().time())
        assert transport.count("GET", "/api/ext/v1/portfolio/positions") >= 1
        assert sent <= counted, (sent, counted, transport.sent)


async def test_the_budget_counts_the_clients_own_retries(sb: Any, user: Any) -> None:
    # the client sends a GET again after a 5xx or a timeout, within the one call the
    # desk counted: a desk through an outage sent past its budget, into the 429s
    transport = Counted(sb)
    async with (
        AsyncClient(**options(sb, user, max_retries=3)) as client,
        Desk(client, user_id=user.user_id, max_error_rate=1.0) as desk,
    ):
        quoters = [desk.quoter(m, "a") for m in two_sided(sb, 2)]
        await desk.open()
        sb.faults.configure({"error_rate": 0.5, "after_commit": 0.0, "seed": 7})
        try:
            for _ in range(6):
                with contextlib.suppress(ServerError, TransportError):
                    await desk.reconcile()
        finally:
            sb.faults.configure(None)
        assert sum(sb.faults.injected.values()) > 0
        sent = sum(transport.sent.values())
        counted = desk.budget.used(asyncio.get_running_loop().time())
        assert sent <= counted, (sent, counted, transport.sent)
        assert all(q.market is not None for q in quoters)
