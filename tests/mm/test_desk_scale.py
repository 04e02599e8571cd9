"""A desk over a whole slate of markets: what it costs and what it keeps, counted (the
requests the sandbox was sent, the records handed to quoters), never timed.

The sandbox's ``extra_games`` makes the slate (docs/sandbox.md): 40 games per league
give 206 markets with a two-sided house book, 412 quoters over both outcomes.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.errors import QuoteRefused
from clobkit.mm import Budget, Desk, Quote

from .conftest import Counted, assert_same, eventually, options, service_view
from .test_desk import two_sided

GUARD = 20.0  # s: a hang guard only
POST = ("POST", "/api/ext/v1/orders/raw")


def ladder(first: int, n: int = 3, size: int = 20) -> list[Quote]:
    """``n`` BUYs from ``first`` cents up, a cent apart."""
    return [Quote("BUY", Decimal(first + k) / 100, size) for k in range(n)]


async def test_a_halt_does_not_wait_behind_places_queued_for_the_budget(sb: Any, user: Any) -> None:
    # the places of a requote waited in the budget's window (a minute on the service)
    # holding their quoters' locks, and halt()'s cancels waited behind them: the desk
    # stopped only once every queued place had been sent, to cancel it then
    transport = Counted(sb)
    async with (
        AsyncClient(**options(sb, user)) as client,
        Desk(client, user_id=user.user_id) as desk,
    ):
        quoters = [desk.quoter(m, o) for m in two_sided(sb, 5) for o in ("a", "b")]
        await desk.open()
        # room for 40 requests in an hour: 30 kept to cancel what the requote admits,
        # so some of its 30 places wait
        desk.gate.budget = Budget(40, window=3600)
        requote = asyncio.ensure_future(desk.requote({q: ladder(5) for q in quoters}))
        try:
            await eventually(lambda: desk.budget.queued > 0 or requote.done(), GUARD)
            assert not requote.done()
            cancelled = await asyncio.wait_for(desk.halt(), GUARD)
            # the sandbox counts what arrived: every place that arrived is cancelled
            # (nothing is placed once halted: the final check finds nothing resting)
            assert len(cancelled) == transport.count(*POST) < 30
            with pytest.raises(QuoteRefused, match="halted"):
                await asyncio.wait_for(requote, GUARD)
        finally:  # a failure leaves no request waiting an hour for the exit
            requote.cancel()
            desk.gate.budget = Budget(6_000)
        for q in quoters:
            assert service_view(sb, user, q.market_id, q.outcome) == []
            assert q.pending == 0
            assert_same(sb, user, q)


async def test_a_place_of_unknown_outcome_that_lands_after_a_halt_is_cancelled(
    sb: Any, user: Any
) -> None:
    # a place held by the service before it took effect, cut short: of unknown outcome.
    # The halt sends nothing new (not even that place again, which would place it): its
    # sweep keeps it tracked, and when the held copy lands its record makes the order
    # live, which a halted desk cancels at once. (Before, it was sent again and, refused
    # as a new place by the halt, forgotten: the first copy then rested untracked.)
    hold = {"latency_ms": 60_000, "latency_at": "before"}
    async with (
        AsyncClient(**options(sb, user)) as client,
        Desk(client, user_id=user.user_id) as desk,
    ):
        (market,) = two_sided(sb, 1)
        q = desk.quoter(market, "a")
        await desk.open()
        sb.faults.configure(hold)
        requote = asyncio.ensure_future(desk.requote({q: ladder(5, n=1)}))
        await eventually(lambda: sb.faults.held == 1 or requote.done(), GUARD)
        requote.cancel()
        with pytest.raises(asyncio.CancelledError):
            await requote
        sb.faults.configure(None)  # the first place stays held
        assert q.pending == 1  # of unknown outcome: tracked
        await asyncio.wait_for(desk.halt(), GUARD)
        assert desk.metrics()["halted"] is not None
        sb.faults.release()  # the first place reaches the service now
        await eventually(lambda: sb.faults.held == 0, GUARD)
        await eventually(lambda: service_view(sb, user, market, "a") == [], GUARD)
        await eventually(lambda: q.pending == 0, GUARD)
        assert len(orders_on(sb, user, market)) == 1  # the one copy that landed
        assert_same(sb, user, q)


def orders_on(sb: Any, user: Any, market_id: str) -> list[Any]:
    records = sb.engine.list_orders(user.user_id, page_size=10_000).items
    return [r for r in records if r.market_id == market_id]


async def test_each_quoter_is_handed_its_own_orders_of_the_shared_listing(
    sb: Any, user: Any
) -> None:
    # a resync handed every quoter the whole listing to filter: quoters x orders on a
    # big desk (7 M records at 600 quoters of 20 levels); grouped once now
    async with (
        AsyncClient(**options(sb, user)) as client,
        Desk(client, user_id=user.user_id) as desk,
    ):
        quoters = [desk.quoter(m, o) for m in two_sided(sb, 3) for o in ("a", "b")]
        await desk.open()
        await desk.requote({q: ladder(5, n=2) for q in quoters})
        for q in quoters:
            own = await desk.listed(q)
            assert {(o.market_id, o.outcome) for o in own} == {(q.market_id, q.outcome)}
            assert len(own) == 2
        await desk.reconcile()  # the re-read through the grouped listing
        for q in quoters:
            assert_same(sb, user, q)
