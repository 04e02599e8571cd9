"""Money is conserved: a hypothesis state machine drives random order flows through the engine.

After every step: no balance, reservation or share count is negative; every
reservation equals what the open orders hold; the books are sane and uncrossed;
and the sum of user balances and reservations, the house's ledger and the
markets' collateral equals the deposits (payouts included, since settlement
moves collateral to the winners).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from clobkit.sandbox import Engine, Rejected
from clobkit.sandbox.engine import MarketState

from .conftest import Clock

USERS = [
    {
        "user_id": f"00000000-0000-4000-8000-00000000010{i}",
        "api_key": f"k{i}",
        "api_secret": f"s{i}",
        "balance": "2000",
        "bonus_balance": "150" if i == 2 else "0",
    }
    for i in range(3)
]
USER_IDS = [u["user_id"] for u in USERS]
UNIT = 10**6

prices = st.integers(1, 99).map(lambda c: Decimal(c) / 100)
amounts = st.decimals(min_value=Decimal("0.5"), max_value=Decimal(400), places=2)
shares = st.decimals(min_value=Decimal("0.5"), max_value=Decimal(300), places=4)


class MoneyMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.engine: Engine | None = None
        self.markets: list[MarketState] = []
        self.order_ids: list[str] = []
        self.deposits = 0
        self.steps = 0

    @initialize(delay=st.sampled_from([0, 0, 250]), risk=st.booleans())
    def start(self, delay: int, risk: bool) -> None:
        config: dict[str, Any] = {"users": USERS, "processing_delay_ms": delay}
        if not risk:
            config["risk"] = None
        else:
            config["risk"] = {
                "per_order": "300",
                "per_minute": 20,
                "daily": "3000",
                "monthly": "6000",
            }
        self.engine = Engine(config, clock=self.clock)
        e = self.engine
        two_way = next(m for m in e.markets.values() if m.active and m.mid and not m.fx.neg_risk)
        neg = next(
            m
            for m in e.markets.values()
            if m.active and m.mid and m.fx.neg_risk and m.fx.min_order_size_units == UNIT
        )
        bare = next(
            m
            for m in e.markets.values()
            if m.active and not m.fx.house_liquidity and m.fx.min_order_size_units == UNIT
        )
        self.markets = [two_way, neg, bare]
        self.deposits = e.totals().deposits

    @property
    def e(self) -> Engine:
        assert self.engine is not None
        return self.engine

    def _try(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Rejected as rejected:
            status = rejected.status
        assert status in (400, 404, 500)
        return None

    def _placed(self, result: Any) -> None:
        if result is not None:
            self.order_ids.append(result.order_id)

    @rule(
        user=st.sampled_from(USER_IDS),
        m=st.integers(0, 2),
        outcome=st.sampled_from("ab"),
        amount=amounts,
        limit=st.none() | prices,
    )
    def fok_buy(
        self, user: str, m: int, outcome: str, amount: Decimal, limit: Decimal | None
    ) -> None:
        body: dict[str, Any] = {
            "market_id": self.markets[m].id,
            "outcome": outcome,
            "amount": amount,
        }
        if limit is not None:
            body["limit_price"] = limit
        self._placed(self._try(self.e.place_order, user, body))

    @rule(
        user=st.sampled_from(USER_IDS),
        m=st.integers(0, 2),
        outcome=st.sampled_from("ab"),
        fraction=st.sampled_from([Decimal("0.3"), Decimal("0.5"), Decimal(1)]),
    )
    def fok_sell(self, user: str, m: int, outcome: str, fraction: Decimal) -> None:
        market = self.markets[m]
        held, reserved = self.e.shares(user, market.token(outcome))
        qty = ((held - reserved) * fraction).quantize(Decimal("0.01"), rounding="ROUND_DOWN")
        body = {"market_id": market.id, "side": "SELL", "outcome": outcome, "shares": qty}
        self._placed(self._try(self.e.place_order, user, body))

    @rule(
        user=st.sampled_from(USER_IDS),
        m=st.integers(0, 2),
        option=st.sampled_from(["yes", "no"]),
        side=st.sampled_from(["BUY", "SELL"]),
        price=prices,
        amount=amounts,
        fraction=st.sampled_from([Decimal("0.2"), Decimal("0.5"), Decimal(1), Decimal(2)]),
        gtd=st.none() | st.integers(1, 30),
        exits=st.none() | st.tuples(prices, prices),
        which=st.sampled_from(["tp", "sl", "both"]),
    )
    def limit(
        self,
        user: str,
        m: int,
        option: str,
        side: str,
        price: Decimal,
        amount: Decimal,
        fraction: Decimal,
        gtd: int | None,
        exits: tuple[Decimal, Decimal] | None,
        which: str,
    ) -> None:
        market = self.markets[m]
        body: dict[str, Any] = {
            "market_id": market.id,
            "side": side,
            "token_option": option,
            "limit_price": price,
            "order_type": "GTC",
        }
        if side == "BUY":
            body["amount"] = amount
        else:  # a share of what is held (twice as much is refused: insufficient balance)
            held, reserved = self.e.shares(user, market.token("a" if option == "yes" else "b"))
            body["shares"] = max(
                Decimal("0.01"), ((held - reserved) * fraction).quantize(Decimal("0.01"))
            )
        if gtd is not None:
            body["order_type"] = "GTD"
            body["expiration"] = int(self.clock.t) + gtd
        if exits is not None and exits[0] != exits[1]:
            low, high = sorted(exits)
            if which in ("tp", "both"):
                body["take_profit_price"] = high
            if which in ("sl", "both"):
                body["stop_loss_price"] = low
        self._placed(self._try(self.e.place_order, user, body))

    @rule(
        user=st.sampled_from(USER_IDS),
        m=st.integers(0, 2),
        outcome=st.sampled_from("ab"),
        side=st.integers(0, 1),
        cents=st.integers(1, 99),
        qty=st.builds(
            lambda whole, part: whole * UNIT + part, st.integers(0, 300), st.integers(1, UNIT)
        ),
        tweak=st.integers(-3, 3),
        kind=st.sampled_from(["FOK", "GTC"]),
        salt=st.integers(0, 10**12),
    )
    def raw(
        self,
        user: str,
        m: int,
        outcome: str,
        side: int,
        cents: int,
        qty: int,
        tweak: int,
        kind: str,
        salt: int,
    ) -> None:
        # amounts near a grid price, sometimes a few units off it (off-grid implied prices)
        market = self.markets[m]
        usdc = max(1, qty * cents // 100 + tweak)
        maker, taker = (usdc, qty) if side == 0 else (qty, usdc)
        body = {
            "market_id": market.id,
            "outcome": outcome,
            "token_id": market.token(outcome),
            "maker_amount": str(maker),
            "taker_amount": str(taker),
            "side": side,
            "fee_rate_bps": market.fx.fee_rate_bps,
            "order_type": kind,
            "salt": str(salt),
        }
        self._placed(self._try(self.e.place_raw_order, user, body))

    def _open(self, resting: bool) -> list[str]:
        # in placement order: ids are random UUIDs, the draw must not depend on them
        found = [
            o for o in self.e.open_orders.values() if not o.house and (o.resting or not resting)
        ]
        return [o.id for o in sorted(found, key=lambda o: o.seq)]

    @precondition(lambda self: self.engine is not None and self._open(False))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        order_id = data.draw(st.sampled_from(self._open(False) + self.order_ids[-3:]))
        owner = self.e.order(order_id).user_id
        self._try(self.e.cancel_order, owner, order_id)

    @precondition(lambda self: self.engine is not None and self._open(True))
    @rule(data=st.data(), qty=shares)
    def house_fill(self, data: st.DataObject, qty: Decimal) -> None:
        order_id = data.draw(st.sampled_from(self._open(True)))
        self._try(self.e.house_fill, order_id, qty)

    @rule(seconds=st.sampled_from([0.1, 0.25, 1, 5, 40, 90_000]))
    def wait(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.e.tick()

    @rule(m=st.integers(0, 1), price=st.integers(3, 97))
    def move_price(self, m: int, price: int) -> None:
        self._try(self.e.set_price, self.markets[m].id, Decimal(price) / 100)

    @precondition(lambda self: len(self.order_ids) >= 10)
    @rule(m=st.integers(0, 2), winner=st.sampled_from("ab"))
    def settle(self, m: int, winner: str) -> None:
        self._try(self.e.settle, self.markets[m].id, winner)

    @rule(user=st.sampled_from(USER_IDS), amount=st.integers(1, 500), bonus=st.booleans())
    def deposit(self, user: str, amount: int, bonus: bool) -> None:
        self.e.deposit(user, amount, bonus=bonus)
        self.deposits += amount * UNIT

    @invariant()
    def conserved(self) -> None:
        if self.engine is None:
            return
        assert self.e.check_invariants() == []
        totals = self.e.totals()
        assert totals.deposits == self.deposits
        assert totals.users + totals.house + totals.collateral == self.deposits
        for user in USER_IDS:
            for value in msgspec.structs.astuple(self.e.balances(user)):
                assert value >= 0


MoneyMachine.TestCase.settings = settings(
    max_examples=70,  # 3,500 steps: about 90 s of one core in CI
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMoneyIsConserved = pytest.mark.slow(MoneyMachine.TestCase)
