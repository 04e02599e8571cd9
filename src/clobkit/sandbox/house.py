"""The house liquidity provider and the take-profit / stop-loss exits.

After every operation the house requotes each touched market around its mid
price (``HOUSE_LEVELS`` levels a side, buying only, from an unlimited
ledger) and armed orders whose exit price was reached sell through a FOK.
The book stays two-sided whatever users rest: a house level that would cross
a user's resting order (the house's price moved through it: ``set_price``, the
walk) trades with it at that order's price, as a recorded level does in a
replay, and rests in full beside it. The admin's ``house_fill`` and
``set_price`` and the walk's steps (``walk.py``) act through here too.
"""

from __future__ import annotations

import uuid
from decimal import ROUND_DOWN, Decimal

from .. import new_salt
from ..core.spec import CANCELLED, ERROR_ORDER_NOT_FOUND, LIVE, MATCHED, OUTCOME_A, OUTCOME_B
from .book import Book
from .errors import Rejected, bad_body
from .parse import OrderSpec, cents, decimal, fok_price, scaled
from .state import ASK, BID, BUY, FOK, GTC, HOUSE, SELL, UNIT, EngineEvent, MarketState, Order
from .walk import Walk

__all__ = ["HOUSE_LEVELS", "House"]

HOUSE_LEVELS = 5  # price levels the house quotes on each side of its mid


class House(Book):
    """The house's quotes and the exits, on top of the book; the ``Engine`` facade builds on it."""

    def _settle_touched(self, now: int) -> None:
        """After an operation: requote the house and fire take-profit / stop-loss exits."""
        for _ in range(1000):
            touched, self._touched = self._touched, set()
            if not touched:
                break
            for market_id in sorted(touched):
                market = self.markets[market_id]
                self._requote(market, now)
                self._outbox.append(EngineEvent("book", market_id))
            self._fire_triggers(touched, now)

    def _house_target(self, market: MarketState, k: int, price: int) -> int:
        """Shares the house shows at its k-th level (price in cents): about level USDC / price."""
        usdc = market.fx.house_level_units * (2 + k) // 3
        return usdc * 100 // price // 10_000 * 10_000

    def _wanted(self, market: MarketState, mid: int) -> dict[tuple[int, int], int]:
        """The house's ladder around ``mid``: (book side, A-price) -> shares (cached per mid)."""
        cached = self._ladders.get(market.id)
        if cached is not None and cached[0] == mid:
            return cached[1]
        wanted: dict[tuple[int, int], int] = {}
        for k in range(1, HOUSE_LEVELS + 1):
            if 1 <= mid - k <= 99:
                wanted[(BID, mid - k)] = self._house_target(market, k, mid - k)
            if 1 <= mid + k <= 99:
                wanted[(ASK, mid + k)] = self._house_target(market, k, mid + k)
        self._ladders[market.id] = (mid, wanted)
        return wanted

    def _requote(self, market: MarketState, now: int) -> None:
        if market.replayed:
            return  # the recording's levels are its quotes (replay.py)
        if market.mid is None or not market.active:
            for quote in list(market.house_quotes.values()):
                self._finish(quote, CANCELLED, now)
            return
        wanted = self._wanted(market, market.mid)
        quotes = market.house_quotes
        if len(quotes) == len(wanted) and all(
            q.open_shares >= wanted.get(key, 1 << 62) for key, q in quotes.items()
        ):
            return  # every level quoted in full: what follows would change nothing
        for key, quote in list(market.house_quotes.items()):
            if key not in wanted or quote.open_shares < wanted[key]:
                self._finish(quote, CANCELLED, now)
        for (side, price), shares in sorted(wanted.items()):
            if (side, price) in market.house_quotes or shares <= 0:
                continue
            # what users rest through this level (the price moved past them) is taken at
            # their prices first; the level then rests in full
            through = _crossed(market, side, price)
            outcome = OUTCOME_A if side == BID else OUTCOME_B
            own = price if side == BID else 100 - price
            quote = Order(
                id=f"house-{self._next_seq()}",
                user_id=HOUSE,
                market=market,
                outcome=outcome,
                side=BUY,
                order_type=GTC,
                limit_cents=own,
                size=shares + through,
                seq=self._seq,
                source="house",
                status=LIVE,
                created_ms=now,
                updated_ms=now,
            )
            market.house_quotes[(side, price)] = quote
            self.open_orders[quote.id] = quote
            if through:
                self._execute(quote, now)
            else:
                self._rest(quote, now)
            self._touched.discard(market.id)

    def _house_take(self, order_id: str, shares: object, now: int) -> Order:
        """The house takes the other side of ``shares`` of a resting order, at its price."""
        order = self.orders.get(str(order_id))
        if order is None or order.house:
            raise Rejected(404, ERROR_ORDER_NOT_FOUND)
        if order.status != LIVE or not order.resting:
            raise Rejected(400, "order is not resting on the book", detail=f"status {order.status}")
        number = decimal({"shares": shares}, "shares")
        if number is None:
            raise bad_body("shares is required")
        units = int(scaled(number, UNIT).to_integral_value(ROUND_DOWN))
        if units <= 0:
            raise bad_body("shares must be positive")
        n = min(units, order.open_shares)
        outcome = (
            (OUTCOME_B if order.outcome == OUTCOME_A else OUTCOME_A)
            if order.side == BUY
            else order.outcome
        )
        own = 100 - order.limit_cents if order.side == BUY else order.limit_cents
        counter = Order(
            id=f"house-{self._next_seq()}",
            user_id=HOUSE,
            market=order.market,
            outcome=outcome,
            side=BUY,
            order_type=FOK,
            limit_cents=own,
            size=n,
            seq=self._seq,
            source="house",
            status=LIVE,
        )
        self._fill(counter, order, n, order.a_price, now)
        counter.status = MATCHED
        return order

    def _set_mid(self, market_id: str, price: object, now: int) -> MarketState:
        """Move the house's mid price of a market (cents on the 0.01 grid) and requote."""
        market = self._market(market_id)
        number = decimal({"price": price}, "price")
        if number is None:
            raise bad_body("price is required")
        mid = cents(number, "price")
        if not market.active:
            raise bad_body("the market is not active")
        market.mid = mid
        market.updated_ms = now
        for quote in list(market.house_quotes.values()):
            self._finish(quote, CANCELLED, now)
        self._touch(market, now)
        self._settle_touched(now)  # requote now, so the answer shows the new book
        return market

    def _walk_step(self, walk: Walk, now: int) -> dict[str, int]:
        """One step of the walk: the markets the house quotes (active, not replayed) that
        move, to their new mid (cents); each requotes at once."""
        walking = (
            (m.id, m.mid, m.fx.price_a_cents)
            for m in self.markets.values()
            if m.fx.house_liquidity and m.active and not m.replayed and m.mid is not None
        )
        moved = walk.moves(walking)
        for market_id, mid in moved.items():
            market = self.markets[market_id]
            market.mid = mid
            market.updated_ms = now
            self._touch(market, now)
        return moved

    def _fire_triggers(self, touched: set[str], now: int) -> None:
        for order in sorted(self._armed.values(), key=lambda o: o.seq):
            if order.market.id not in touched or order.matched == 0:
                continue
            bid, _ = order.market.own_best(order.outcome)
            if bid is None:
                continue
            kind = None
            if order.take_profit is not None and bid >= order.take_profit:
                kind = "take_profit"
            elif order.stop_loss is not None and bid <= order.stop_loss:
                kind = "stop_loss"
            if kind is None:
                continue
            del self._armed[order.id]
            account = self.accounts[order.user_id]
            pos = account.positions.get(order.token_id)
            shares = 0 if pos is None else min(order.matched, pos.shares - pos.reserved)
            if shares <= 0 or not order.market.active:
                continue
            worst = fok_price(order.market, order.outcome, SELL, Decimal(shares) / UNIT, None)
            taker = shares * worst // 100
            spec = OrderSpec(
                market=order.market,
                outcome=order.outcome,
                side=SELL,
                order_type=FOK,
                limit_cents=worst,
                price_text=str(Decimal(worst) / 100),
                size=shares,
                maker_amount=shares,
                taker_amount=taker,
                amount_based=False,
                value=taker,
                salt=new_salt(),
                fee_rate_bps=order.market.fx.fee_rate_bps,
                source=kind,
                source_id=order.id,
                notification_id=str(uuid.uuid4()),
            )
            try:
                self._admit(account, spec, now, system=True)
            except Rejected:
                continue


def _crossed(market: MarketState, side: int, price: int) -> int:
    """Shares of users' orders resting through a house level at ``price`` (cents) on
    ``side``: asks at or under a bid, bids at or over an ask."""
    if side == BID:
        book, prices = market.asks, range(1, price + 1)
    else:
        book, prices = market.bids, range(price, 100)
    shares = 0
    for p in prices:  # (called for every level of every requote: most levels are empty)
        level = book[p]
        if level:
            shares += sum(o.open_shares for o in level if not o.house)
    return shares
