"""The one pre-trade gate, through the real client and sandbox: an order of one's own
passes the desk's limits and is tracked by its kill switch; the service's per-minute
risk control and rate limit slow the gate down (learnt from their refusals) instead
of crashing the loop."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.errors import ClobkitError, QuoteRefused, RiskControlError
from clobkit.mm import Desk, Paced, Quote, Quoter

from .conftest import config, eventually, options, sandbox_module, service_view
from .test_desk import two_sided

GUARD = 30.0  # s: a hang guard only


async def test_an_order_of_ones_own_passes_the_desks_gate_and_its_kill_switch(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (market,) = two_sided(sb, 1)
    async with Desk(client, user_id=user.user_id, max_notional=5) as desk:
        too_big = await client.prepare_raw_order(market, "a", "BUY", "0.10", 100)  # 10 USDC
        with pytest.raises(QuoteRefused, match="max_notional"):
            await desk.send_raw_order(too_big)
        assert service_view(sb, user, market) == []  # nothing sent
        small = await client.prepare_raw_order(market, "a", "BUY", "0.10", 20)
        placed = await desk.send_raw_order(small)
        assert placed is not None
        assert [row[0] for row in service_view(sb, user, market)] == [placed.order_id]
        tracked = desk.execution.cache.by_key(small.result.client_order_id)
        assert tracked is not None
        assert tracked.order_id == placed.order_id
        cancelled = await desk.halt()  # the kill switch knows it
        assert [o.id for o in cancelled] == [placed.order_id]
        assert service_view(sb, user, market) == []


@pytest.mark.parametrize("version", [1])
async def test_a_per_minute_risk_refusal_is_reported_and_learnt(version: int) -> None:
    limited = config(
        version, risk={"per_minute": 6, "per_order": None, "daily": None, "monthly": None}
    )
    with sandbox_module.serve_in_thread(limited) as sb:
        user = sb.users[1]
        (market,) = two_sided(sb, 1)
        async with (
            AsyncClient(**options(sb, user)) as client,
            Quoter(client, market, "a", user_id=user.user_id) as q,
        ):
            q.execution.gate.room_timeout = 0.05  # give up on room at once: reported
            refused: list[Any] = []
            for first in (5, 15, 25):  # 12 places wanted, the service takes 6 a minute
                report = await q.requote(
                    [Quote("BUY", Decimal(first + k) / 100, 20) for k in range(4)]
                )
                refused += [error for _, error in report.refused]
            assert any(isinstance(e, RiskControlError) for e in refused)
            assert q.execution.gate.places.learnt >= 1
            assert q.execution.gate.places.limit == 6  # what the service took in its minute
            # the next quotes are held back by the learnt pace, not sent to be refused
            report = await q.requote([Quote("BUY", Decimal("0.40"), 20)])
            assert [type(e) for _, e in report.refused] == [Paced]
            assert len(service_view(sb, user, market)) <= 6
            assert sb.engine.check_invariants() == []


async def test_a_429_pauses_the_budget_and_teaches_it_the_rate(version: int) -> None:
    """(Leaving cannot list while the service's Retry-After lasts: no listing confirms
    that nothing of the account rests, and leaving says so.)"""
    limited = config(version, rate_limit_per_minute=30)
    with (
        sandbox_module.serve_in_thread(limited) as sb,
        pytest.raises(ClobkitError, match="showed nothing of the desk resting"),
    ):
        await _a_429(sb)


async def _a_429(sb: Any) -> None:
    user = sb.users[1]
    (market,) = two_sided(sb, 1)
    async with (
        AsyncClient(**options(sb, user, max_retries=0)) as client,
        Desk(client, user_id=user.user_id, max_error_rate=1.0) as desk,
    ):
        desk.exit_timeout = 0.5
        q = desk.quoter(market, "a")
        await desk.open()
        gate = desk.gate
        for _ in range(40):  # the client's own reads spend the service's budget
            if gate.counters.rate_limited:
                break
            try:
                await gate.request("GET /wallet", client.get_wallet(refresh=True))
            except Exception:
                break
        await eventually(lambda: gate.counters.rate_limited >= 1, GUARD)
        assert gate.budget.learnt >= 1
        assert gate.budget.limit is not None
        assert gate.budget.limit < 6_000  # the configured rate, before it learnt
        assert gate.budget.delay() > 0  # paused: the service's Retry-After
        assert q.pending == 0
