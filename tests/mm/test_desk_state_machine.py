"""A hypothesis state machine drives a Desk over many markets (both outcomes) through a
sandbox that fails a fifth of the requests on purpose (half of them after commit) and
drops its streams: after every step the desk's execution cache equals the service's
live orders of the desk once it has caught up, no transition outside the order state
machine's table happened, no limit of the desk is exceeded on the service, no order
is duplicated, money is conserved, and after a halt nothing of the desk rests; on V1,
V2 and V3 wallets."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from clobkit import AsyncClient
from clobkit.errors import ApiError, QuoteRefused, TransportError
from clobkit.mm import Desk, Quote
from clobkit.mm.orders import LIVE

from .conftest import VERSIONS, config, eventually, held, options, quoter_view, sandbox_module
from .test_desk import two_sided

FAULTS = {"error_rate": 0.2, "after_commit": 0.5, "seed": 5}
MARKETS = 4
MAX_OPEN = 8
MAX_NOTIONAL = Decimal(10)
MAX_MARKET = Decimal(120)
OUTCOMES: Counter[str] = Counter()  # of the requotes, over all examples
OPEN = ("pending", "signing", "submitted", "live")


@pytest.fixture(scope="module", params=VERSIONS)
def faulty(request: pytest.FixtureRequest) -> Iterator[Any]:
    with sandbox_module.serve_in_thread(config(request.param, faults=FAULTS)) as sandbox:
        yield sandbox


class DeskMachine(RuleBasedStateMachine):
    sb: ClassVar[Any]
    markets: ClassVar[list[str]]

    def __init__(self) -> None:
        super().__init__()
        self.user = self.sb.users[1]
        self.loop = asyncio.new_event_loop()
        self.client = self.run(self._client())
        self.desk = Desk(
            self.client,
            max_open_orders=MAX_OPEN,
            max_notional=MAX_NOTIONAL,
            max_position_per_market=MAX_MARKET,
            max_error_rate=1.0,
            user_id=self.user.user_id,
        )
        self.run(self.desk.__aenter__())
        self.quoters = [self.desk.quoter(m, o) for m in self.markets for o in ("a", "b")]
        self.run(self._open())
        self.outcomes: Counter[str] = Counter()

    async def _client(self) -> AsyncClient:
        return AsyncClient(**options(self.sb, self.user, max_retries=5))

    async def _open(self) -> None:
        for _ in range(20):  # under faults an open may fail: the next try reads again
            try:
                await self.desk.open()
                return
            except (ApiError, TransportError):
                await asyncio.sleep(0.01)
        raise AssertionError("the quoters could not be opened")

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        OUTCOMES.update(self.outcomes)
        try:
            self.sb.faults.configure(None)
            self.run(self.desk.__aexit__(None, None, None))
            assert self.live() == []
        finally:
            self.sb.faults.configure(FAULTS)
            self.run(self.client.close())
            self.loop.close()

    def live(self) -> list[Any]:
        return [
            r
            for r in self.sb.engine.list_orders(self.user.user_id, page_size=10_000).items
            if r.status in OPEN and r.market_id in self.markets
        ]

    @rule(
        picks=st.lists(st.integers(0, 2 * MARKETS - 1), min_size=1, max_size=3),
        first=st.integers(5, 15),  # at 20 shares or more, every level is worth >= 1 USDC
        sizes=st.lists(st.integers(20, 30), min_size=0, max_size=3),
    )
    def requote(self, picks: list[int], first: int, sizes: list[int]) -> None:
        ladders = {
            self.quoters[i]: [
                Quote("BUY", Decimal(first + k) / 100, size) for k, size in enumerate(sizes)
            ]
            for i in picks
        }
        try:
            self.run(self.desk.requote(ladders))
            self.outcomes["ok"] += 1
        except QuoteRefused:  # before anything was sent
            self.outcomes["refused"] += 1
        except (ApiError, TransportError):  # a failure the next checks cover
            self.outcomes["failed"] += 1

    @rule(pick=st.integers(0, 10_000), part=st.integers(0, 10_000))
    def house_fills(self, pick: int, part: int) -> None:
        orders = sorted(self.live(), key=lambda r: r.id)
        if not orders:
            return
        order = orders[pick % len(orders)]
        remaining = int(order.original_size - order.size_matched)
        self.sb.house_fill(order.id, 1 + part % max(remaining, 1))

    @rule()
    def drop_streams(self) -> None:
        self.sb.drop_streams()

    @rule()
    def halt_and_resume(self) -> None:
        with contextlib.suppress(ApiError, TransportError):
            self.run(self.desk.halt())  # through the faults: cancels may fail
        self.sb.faults.configure(None)  # the kill switch's sweep goes on until flat
        try:
            self.run(eventually(lambda: self.live() == [], timeout=30.0))
            self.run(eventually(lambda: self.desk.execution.kill.flat is True, timeout=30.0))
        finally:
            self.sb.faults.configure(FAULTS)
        self.desk.resume()

    @invariant()
    def no_transition_outside_the_table(self) -> None:
        cache = self.desk.execution.cache
        assert cache.refused == 0, list(cache.refusals)

    @rule(whole=st.booleans())
    def reconcile(self, whole: bool) -> None:
        if whole:  # one listing for the desk
            with contextlib.suppress(ApiError, TransportError):
                self.run(self.desk.reconcile())
            return
        for q in self.quoters:
            with contextlib.suppress(ApiError, TransportError):
                self.run(q.reconcile())

    @invariant()
    def the_service_is_what_the_desk_says(self) -> None:
        sb, user = self.sb, self.user
        rows = self.live()
        # no limit of the desk exceeded on the service
        assert len(rows) <= MAX_OPEN
        notional = sum(r.clob_price * (r.original_size - r.size_matched) for r in rows)
        assert notional <= MAX_NOTIONAL
        for market_id in self.markets:
            worst = Decimal(0)
            for q in self.quoters:
                if q.market_id != market_id:
                    continue
                mine = [r for r in rows if r.outcome == q.outcome and r.market_id == market_id]
                bought = sum(r.original_size - r.size_matched for r in mine if r.side == "BUY")
                worst += held(sb, user, q) + bought
            assert worst <= MAX_MARKET
        # no duplicate: one order per client_order_id, one live order per level
        records = sb.engine.list_orders(user.user_id, page_size=10_000).items
        keys = Counter(r.order_source_id for r in records if r.order_source_id)
        assert max(keys.values(), default=1) == 1
        levels = Counter((r.market_id, r.outcome, r.side, r.clob_price) for r in rows)
        assert max(levels.values(), default=1) == 1
        assert sb.engine.check_invariants() == []  # money conserved

    def after_reconcile_same(self) -> bool:
        sb, user = self.sb, self.user
        rows = self.live()
        cached = {  # the execution cache: every order of the desk that may rest
            t.order_id
            for t in self.desk.execution.cache.orders()
            if t.state in LIVE and t.order_id is not None
        }
        if cached != {r.id for r in rows} or self.desk.execution.cache.unknown():
            return False
        for q in self.quoters:
            mine = sorted(
                (r.id, r.clob_order_id, r.side, r.clob_price, r.original_size - r.size_matched)
                for r in rows
                if r.market_id == q.market_id and r.outcome == q.outcome
            )
            if quoter_view(q) != mine or q.position != held(sb, user, q):
                return False
        return True

    @invariant()
    def after_reconcile_the_views_are_equal(self) -> None:
        self.sb.faults.configure(None)  # the check's own reads must not fail
        try:
            self.run(self.desk.reconcile())
            self.run(eventually(self.after_reconcile_same, timeout=30.0))
        finally:
            self.sb.faults.configure(FAULTS)


@pytest.mark.slow
def test_a_desk_through_faults(faulty: Any) -> None:
    DeskMachine.sb = faulty
    OUTCOMES.clear()
    DeskMachine.markets = two_sided(faulty, MARKETS)
    run_state_machine_as_test(
        DeskMachine,
        settings=settings(
            max_examples=8,
            stateful_step_count=10,
            deadline=None,
            database=None,  # the sandbox's timing makes replays differ
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
    assert sum(faulty.faults.injected.values()) > 0
    # Refusals are not required here: CI's whole slow run saw none in two runs (all
    # three versions each time) while every run of this module alone has some, cause
    # not yet found; the limits' refusals are tested one by one in test_desk.py.
    assert OUTCOMES["ok"] > 0, OUTCOMES  # ok, refused, failed: what ran
