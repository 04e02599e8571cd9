"""A ``Quoter`` whose ``requote`` / ``cancel_all`` is cancelled while the service is slow
(the sandbox's ``faults.latency_ms``): afterwards every order the service may hold is in
its view, exit cancels them all, and no level gets two orders.

The cancellation points are controlled: a request is held by the sandbox until the
test releases it (``faults.held`` / ``faults.release()``), never raced by sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.mm import Quote, Quoter, State
from clobkit.sandbox.faults import FaultConfig, Faults

from .conftest import eventually, service_view

GUARD = 30.0  # s: a hang guard only
HOLD = 60_000  # ms: held until the test releases it
LADDER = [Quote("BUY", Decimal("0.10"), 20), Quote("BUY", Decimal("0.11"), 20)]


def orders_on(sb: Any, user: Any, market_id: str) -> list[Any]:
    """Every order the service ever created for the user on the market."""
    records = sb.engine.list_orders(user.user_id, page_size=10_000).items
    return [r for r in records if r.market_id == market_id]


async def cancelled_when_held(sb: Any, call: Awaitable[Any], held: int) -> None:
    """Run ``call`` until the sandbox holds ``held`` requests, then cancel it."""
    task = asyncio.ensure_future(call)
    await eventually(lambda: sb.faults.held >= held or task.done(), GUARD)
    assert not task.done(), task
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def second_request_held(at: str) -> dict[str, Any]:
    """A faults config whose first signed request is quick and whose second is held."""
    for seed in range(1000):
        config = {"latency_ms": HOLD, "latency_share": 0.5, "latency_at": at, "seed": seed}
        faults = Faults(FaultConfig.from_dict(config))
        if faults.delays() == (0, 0) and faults.delays() != (0, 0):
            return config
    raise AssertionError("no seed")


async def a_second_cancel_cut_short(sb: Any, q: Quoter, ladder: list[Quote]) -> None:
    """``ladder`` placed, a ``cancel_all`` cut short while its cancels are held, and the
    next one too, while the cancel it sends again at once (no read before: the kill
    switch's rule) is held."""
    await q.requote(ladder)
    sb.faults.configure({"latency_ms": HOLD, "latency_at": "before"})
    await cancelled_when_held(sb, q.cancel_all(), 1)
    await cancelled_when_held(sb, q.cancel_all(), 2)


@pytest.mark.parametrize("at", ["before", "after"])
async def test_requote_cancelled_while_places_are_held(
    sb: Any, user: Any, client: AsyncClient, market_id: str, at: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        sb.faults.configure({"latency_ms": HOLD, "latency_at": at})
        await cancelled_when_held(sb, q.requote(LADDER), len(LADDER))
        assert sorted(level.price for level in q.resting()) == [100_000, 110_000]
        if at == "before":  # else the stream may have told it they rest
            assert q.pending == len(LADDER)  # state unknown: resolved later
        sb.faults.configure(None)  # the held places stay held
        await q.requote(LADDER)
        assert len(service_view(sb, user, market_id)) == len(LADDER)
        sb.faults.release()
        await eventually(lambda: sb.faults.held == 0, GUARD)
        await q.reconcile()
        assert len(orders_on(sb, user, market_id)) == len(LADDER)  # one order per level
    assert service_view(sb, user, market_id) == []


@pytest.mark.parametrize("at", ["before", "after"])
async def test_requote_cancelled_while_a_place_sent_again_is_held(
    sb: Any, user: Any, client: AsyncClient, market_id: str, at: str
) -> None:
    """The place sent again while resolving an unknown one is cut short too: it stays
    an order of unknown outcome (never forgotten, never placed a second time)."""
    one = LADDER[:1]
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        sb.faults.configure({"latency_ms": HOLD, "latency_at": "before"})
        await cancelled_when_held(sb, q.requote(one), 1)
        # the next requote lists the orders (quick), finds none, sends the place again
        sb.faults.configure(second_request_held(at))
        await cancelled_when_held(sb, q.requote(one), 2)
        assert len(q.resting()) == 1
        if at == "before":  # else the stream may have told it the order rests
            assert q.pending == 1
        sb.faults.configure(None)
        await q.requote(one)
        sb.faults.release()
        await eventually(lambda: sb.faults.held == 0, GUARD)
        assert len(orders_on(sb, user, market_id)) == 1  # one order for the level
        assert len(service_view(sb, user, market_id)) == 1
    assert service_view(sb, user, market_id) == []


async def test_cancel_all_cancelled_while_cancels_are_held(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(LADDER)
        sb.faults.configure({"latency_ms": HOLD, "latency_at": "before"})
        await cancelled_when_held(sb, q.cancel_all(), len(LADDER))
        assert len(q.resting()) == len(LADDER)
        assert q.pending == len(LADDER)
        sb.faults.configure(None)
    # exit read both still live (their cancels are held) and cancelled them again
    assert service_view(sb, user, market_id) == []
    sb.faults.release()
    await eventually(lambda: sb.faults.held == 0, GUARD)


async def test_cancel_all_cancelled_while_a_cancel_sent_again_is_held(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    """The cancel sent again while resolving an unknown one is cut short too: exit
    still resolves it and cancels the order (none is left resting)."""
    one = LADDER[:1]
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await a_second_cancel_cut_short(sb, q, one)
        assert q.pending == 1
        assert len(q.resting()) == 1
        # of unknown outcome, as any request cut short (it stayed "cancelling": in
        # flight, though nothing was)
        assert [t.state for t in q.execution.cache.orders(q.owner)] == [State.CANCEL_UNKNOWN]
        sb.faults.configure(None)  # both cancels stay held: the order is live
    assert service_view(sb, user, market_id) == []  # exit cancelled it
    sb.faults.release()
    await eventually(lambda: sb.faults.held == 0, GUARD)


async def test_a_requote_after_a_cancel_sent_again_was_cut_short_keeps_one_order_a_level(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    """The cancel sent again while resolving was cut short and is still held (the order
    rests): the next requote of the same level must not place a second order beside it
    (a concern of the audit; it reads the order first and keeps it)."""
    one = LADDER[:1]
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await a_second_cancel_cut_short(sb, q, one)
        sb.faults.configure(None)  # both cancels stay held: the order rests
        await q.requote(one)
        assert len(service_view(sb, user, market_id)) == 1
        assert q.pending == 0
    sb.faults.release()
    await eventually(lambda: sb.faults.held == 0, GUARD)
