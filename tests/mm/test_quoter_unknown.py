"""Unknown stays unknown until it is known, in the market maker's loop.

The first copy of a quote's order is held by the service before it takes effect
(``faults``, as a request queued at a slow service) and the client's retry is refused
for balance: the outcome is unknown, and stays so until the copy is seen or ruled out.
The requote reports it (``unknown``) and places nothing beside it, the quoter keeps
tracking it by its key, and when the held copy lands it is taken into the ladder:
kept when its level is still wanted, else cancelled; never left resting untracked.
Before, the refusal of the retry made the quoter forget the order (never placed), and
the copy rested untracked when it landed.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.mm import Quote, Quoter

from .conftest import assert_same, eventually, options, service_view

GUARD = 30.0  # s: a hang guard only
HELD = {"routes": {"POST /orders/raw": {"latency_ms": 60_000, "latency_at": "before"}}}
PRICE = Decimal("0.02")  # under any bid of the house: the order rests, never takes
LOWEST = Decimal("0.01")
SIZE = 60  # 1.20 USDC: over the market's minimum
WANTED = [Quote("BUY", PRICE, SIZE)]


async def hog(sb: Any, user: Any, client: AsyncClient, market_id: str) -> str:
    """A resting BUY of the other outcome at the lowest price (nothing sells that low)
    reserving all but half an order's cost."""
    balances = sb.engine.balances(user.user_id)
    free = balances.cash - balances.cash_reserved - PRICE * SIZE / 2
    shares = (free / LOWEST).quantize(Decimal("0.01"), ROUND_DOWN)
    placed = await client.place_raw_order(market_id, "b", "BUY", LOWEST, shares)
    return placed.order_id


async def a_quote_of_unknown_outcome(sb: Any, user: Any, q: Quoter, market_id: str) -> Any:
    """``WANTED`` requoted while its first copy is held and its retry refused for balance:
    the report of that requote."""
    sb.faults.configure(HELD)
    requote = asyncio.ensure_future(q.requote(WANTED))
    await eventually(lambda: sb.faults.held >= 1 or requote.done(), GUARD)
    sb.faults.configure(None)  # the retry (and the quoter's resend) is refused for balance
    report = await asyncio.wait_for(requote, GUARD)
    assert report.placed == []
    assert report.unknown == WANTED
    assert q.pending == 1
    assert service_view(sb, user, market_id) == []
    return report


@pytest.mark.parametrize("still_wanted", [True, False])
async def test_a_place_of_unknown_outcome_is_tracked_until_it_lands(
    sb: Any, user: Any, market_id: str, still_wanted: bool
) -> None:
    async with (
        AsyncClient(**options(sb, user, timeout=0.3, max_retries=1)) as client,
        Quoter(client, market_id, "a", user_id=user.user_id) as q,
    ):
        big = await hog(sb, user, client, market_id)
        await a_quote_of_unknown_outcome(sb, user, q, market_id)
        later = WANTED if still_wanted else []
        report = await q.requote(later)  # nothing placed beside the order in flight
        if still_wanted:
            assert report.unknown == WANTED
            assert report.placed == []
        assert len([r for r in sb.engine.list_orders(user.user_id).items if r.outcome == "a"]) == 0
        await client.cancel_order(big)  # the balance is free: the held copy lands now
        sb.faults.release()
        await eventually(lambda: sb.faults.held == 0, GUARD)
        await eventually(lambda: q.pending == 0, GUARD)
        prices = sorted(row[3] for row in service_view(sb, user, market_id))
        if still_wanted:  # kept: its level is wanted
            assert prices == [PRICE]
        else:  # cancelled once it landed: the ladder wants another level
            await eventually(lambda: PRICE not in [r[3] for r in service_view(sb, user, market_id)])
        await q.requote(later)
        assert sorted(row[3] for row in service_view(sb, user, market_id)) == [
            Decimal(quote.price) for quote in later
        ]
        assert_same(sb, user, q)
        assert q.execution.cache.refused == 0
    assert service_view(sb, user, market_id) == []


PLACES, CANCELS = "POST /orders/raw", "DELETE /orders/{id}"
HELD_CANCELS = {"routes": {CANCELS: {"latency_ms": 60_000, "latency_at": "before"}}}
OTHER = Quote("BUY", Decimal("0.03"), SIZE)  # a second level, resting as the first


async def test_a_copy_landing_while_the_tidy_cancels_another_is_tidied_too(
    sb: Any, user: Any, market_id: str
) -> None:
    """Two copies of unknown outcome, neither wanted any more, land one after the other:
    the first starts a tidy, and the second lands while that tidy's cancel is in flight
    (held by the service). The tidy had listed what was unwanted before the second
    landed, so it runs once more and cancels that one too. Before, a landing during a
    tidy started none: the second copy rested, unwanted, until the next requote."""
    # many retries, each cut short at 0.3 s: the held cancel stays in flight until
    # released (a place still becomes unknown: its retry is refused for balance)
    retries = {"timeout": 0.3, "max_retries": 60, "backoff_cap": 0.3}
    async with (
        AsyncClient(**options(sb, user, **retries)) as client,
        Quoter(client, market_id, "a", user_id=user.user_id) as q,
    ):
        big = await hog(sb, user, client, market_id)
        sb.faults.configure(HELD)  # both levels' first copies are held
        requote = asyncio.ensure_future(q.requote([*WANTED, OTHER]))
        await eventually(lambda: sb.faults.held_on(PLACES) == 2 or requote.done(), GUARD)
        sb.faults.configure(None)  # their retries are refused for balance
        report = await asyncio.wait_for(requote, GUARD)
        assert (report.placed, report.unknown, q.pending) == ([], [*WANTED, OTHER], 2)
        await q.requote([])  # neither is wanted now; nothing to cancel yet
        await client.cancel_order(big)  # the balance is free: held copies may land
        sb.faults.configure(HELD_CANCELS)

        def resting() -> list[Decimal]:
            return sorted(row[3] for row in service_view(sb, user, market_id))

        sb.faults.release(PLACES, 1)  # the first level's copy lands: a tidy cancels it
        await eventually(lambda: sb.faults.held_on(CANCELS) >= 1, GUARD, show=resting)
        sb.faults.release(PLACES)  # the second lands while that cancel is in flight
        await eventually(lambda: not q.execution.cache.unknown(q.owner), GUARD, show=resting)
        assert resting() == [PRICE, OTHER.price]  # the first tidy's cancel is still held
        sb.faults.configure(None)
        sb.faults.release(CANCELS)
        await eventually(lambda: resting() == [], 15.0, show=resting)
        await eventually(lambda: not q.execution.cache.cancellable(q.owner), GUARD)
        assert_same(sb, user, q)
    assert service_view(sb, user, market_id) == []


class Strategy(Exception):
    """The strategy's own error, raised in the quoter's block."""


@pytest.mark.parametrize("how", ["raised", "cancelled"])
async def test_leaving_that_cannot_confirm_keeps_the_blocks_own_exception(
    sb: Any, user: Any, market_id: str, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The block ends with an exception of its own, or is cancelled (``asyncio.timeout``,
    a task group), while a copy of unknown outcome is still held by the service: leaving
    cannot confirm that nothing rests. That exception goes on, a cancellation stays one,
    and what leaving could not do is said on it (a note) and logged. Before, the exit's
    stored failure was raised in its place, and hid it: raised ``from`` its own cause, its
    context (the block's exception) was not even shown."""

    quoting = asyncio.Event()

    async def body() -> None:
        async with (
            AsyncClient(**options(sb, user, timeout=0.3, max_retries=1)) as client,
            Quoter(client, market_id, "a", user_id=user.user_id) as q,
        ):
            q.exit_timeout = 0.5
            await hog(sb, user, client, market_id)
            await a_quote_of_unknown_outcome(sb, user, q, market_id)  # held: may land
            if how == "raised":
                raise Strategy("the model diverged")
            quoting.set()
            await asyncio.sleep(GUARD)  # cancelled here

    with caplog.at_level(logging.ERROR, logger="clobkit.mm"):
        task = asyncio.ensure_future(body())
        if how == "raised":
            with pytest.raises(Strategy, match="the model diverged") as info:
                await asyncio.wait_for(task, GUARD)
            notes = info.value.__notes__
        else:
            await asyncio.wait_for(quoting.wait(), GUARD)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, GUARD)
            assert task.cancelled()
            notes = None
    said = [r.getMessage() for r in caplog.records if "orders may still rest" in r.getMessage()]
    assert len(said) == 1
    assert "leaving Quoter(" in said[0]
    assert "outcome unknown" in said[0]
    if notes is not None:
        assert notes == said
