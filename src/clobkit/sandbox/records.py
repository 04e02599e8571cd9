"""What the engine's public methods answer: frozen typed snapshots, never JSON.

Orders, balances, books and prices come back as snapshots taken under the
engine lock (later changes do not reach them); money and shares as exact
``Decimal`` USDC / shares, times as milliseconds since the epoch. Markets,
events and positions come back as the engine's own records (``state``,
``fixtures``), to be read under ``Engine.reading()``. Only the HTTP layer
(``views``) turns any of them into the API's JSON shapes.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Generic, TypeVar

import msgspec

from ..core.spec import CANCELLED, SIDES, UNIT_QUANTUM, OrderStatus
from .state import ASK, BID, BUY, MarketState, Order, dec, own_levels

__all__ = [
    "Balances",
    "Cancelled",
    "Level",
    "OrderBook",
    "OrderRecord",
    "Page",
    "Placed",
    "PriceSnapshot",
    "Settlement",
    "Totals",
    "book_snapshot",
    "order_record",
    "plain",
    "price",
    "price_of",
    "price_snapshot",
    "ratio",
]

T = TypeVar("T")


def plain(d: Decimal) -> Decimal:
    """``d`` without trailing zeros and without an exponent (100, not 1E+2)."""
    d = d.normalize()
    exponent = d.as_tuple().exponent
    return d.quantize(Decimal(1)) if isinstance(exponent, int) and exponent > 0 else d


def ratio(num: int, den: int) -> Decimal:
    """num / den to 6 decimals (half even), plain; 0 when ``den`` is 0."""
    if den == 0:
        return Decimal(0)
    return plain((Decimal(num) / Decimal(den)).quantize(UNIT_QUANTUM, rounding=ROUND_HALF_EVEN))


class Placed(msgspec.Struct, frozen=True):
    """An accepted placement (``notification_id`` is empty for raw orders)."""

    order_id: str
    notification_id: str


class Cancelled(msgspec.Struct, frozen=True):
    """A cancelled order."""

    order_id: str
    status: OrderStatus = CANCELLED


class Settlement(msgspec.Struct, frozen=True):
    """A resolved market: USDC paid to users, and how many orders got won/lost."""

    market_id: str
    winner: str
    payouts: Decimal
    orders_settled: int


class Balances(msgspec.Struct, frozen=True):
    """A user's exact balances (USDC)."""

    cash: Decimal
    cash_reserved: Decimal
    bonus: Decimal
    bonus_reserved: Decimal
    payouts: Decimal
    deposits: Decimal


class Totals(msgspec.Struct, frozen=True):
    """Money totals in 6-decimal units: users, house ledger, collateral, deposits, payouts."""

    users: int
    house: int
    collateral: int
    deposits: int
    payouts: int


class Page(msgspec.Struct, Generic[T], frozen=True):
    """One page of a listing, and the time (ms) it was read at."""

    items: list[T]
    total_count: int
    page: int
    page_size: int
    at_ms: int


class OrderRecord(msgspec.Struct, frozen=True):
    """One order as it stood when read: amounts in USDC / shares, times in ms (None: not yet)."""

    id: str
    user_id: str
    market_id: str
    outcome: str
    token_id: str
    side: str  # "BUY" / "SELL"
    order_type: str
    status: OrderStatus
    order_source: str
    order_source_id: str | None
    clob_order_id: str
    making_amount: Decimal
    taking_amount: Decimal
    potential_profit: Decimal  # shares a BUY would win beyond its stake (0 for a SELL)
    original_size: Decimal
    size_matched: Decimal
    clob_price: Decimal  # the limit (or implied) price the order was signed at
    avg_fill_price: Decimal | None
    expiration: int  # Unix seconds (0: never)
    tx_hashes: tuple[str, ...]
    settlement_status: OrderStatus | None
    settlement_amount: Decimal
    settled_ms: int | None
    submitted_ms: int | None
    matched_ms: int | None
    created_ms: int
    updated_ms: int
    is_bonus: bool  # funded from the bonus balance (portfolio view)

    @property
    def amount(self) -> Decimal:
        """What the order stakes: USDC of a BUY, shares of a SELL."""
        return self.making_amount if self.side == "BUY" else self.taking_amount


def order_record(o: Order) -> OrderRecord:
    """A snapshot of an order (call with the engine lock held)."""
    buy = o.side == BUY
    return OrderRecord(
        id=o.id,
        user_id=o.user_id,
        market_id=o.market.id,
        outcome=o.outcome,
        token_id=o.token_id,
        side=SIDES[o.side],
        order_type=o.order_type,
        status=o.status,
        order_source=o.source,
        order_source_id=o.source_id,
        clob_order_id=o.clob_order_id,
        making_amount=dec(o.maker_amount),
        taking_amount=dec(o.taker_amount),
        potential_profit=dec(max(o.size - o.maker_amount, 0)) if buy else Decimal(0),
        original_size=dec(o.size),
        size_matched=dec(o.matched),
        clob_price=Decimal(o.price_text),
        avg_fill_price=ratio(o.usdc, o.matched) if o.matched else None,
        expiration=o.expiration,
        tx_hashes=tuple(o.tx_hashes),
        settlement_status=o.settlement_status,
        settlement_amount=dec(o.settlement_units),
        settled_ms=o.settled_ms,
        submitted_ms=o.submitted_ms,
        matched_ms=o.matched_ms,
        created_ms=o.created_ms,
        updated_ms=o.updated_ms,
        is_bonus=o.is_bonus,
    )


class Level(msgspec.Struct, frozen=True):
    """One price level of a token's book: price (USDC a share) and size (USDC at that price)."""

    price: Decimal
    size: Decimal


class OrderBook(msgspec.Struct, frozen=True):
    """A token's book, best levels first, as it stood at ``at_ms``."""

    asset_id: str
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]
    min_order_size: Decimal
    at_ms: int
    updated_at_ms: int

    @property
    def best_bid(self) -> Decimal | None:
        return self.bids[0].price if self.bids else None

    @property
    def best_ask(self) -> Decimal | None:
        return self.asks[0].price if self.asks else None


def price(cents: int) -> Decimal:
    """A price in cents as USDC a share (0.05, not 0.050)."""
    return Decimal(cents).scaleb(-2)


def _levels(market: MarketState, outcome: str, own_side: int) -> tuple[Level, ...]:
    return tuple(
        Level(price(p), dec(n * p // 100)) for p, n in own_levels(market, outcome, own_side)
    )


def book_snapshot(market: MarketState, outcome: str, now: int) -> OrderBook:
    """A snapshot of one outcome token's book (call with the engine lock held)."""
    return OrderBook(
        asset_id=market.token(outcome),
        bids=_levels(market, outcome, BID),
        asks=_levels(market, outcome, ASK),
        min_order_size=dec(market.fx.min_order_size_units),
        at_ms=now,
        updated_at_ms=market.book_ms,
    )


class PriceSnapshot(msgspec.Struct, frozen=True):
    """A token's price, best bid and ask and last trade (USDC a share), as of ``at_ms``."""

    asset_id: str
    market_id: str
    price: Decimal
    best_bid: Decimal | None
    best_ask: Decimal | None
    last_trade_price: Decimal | None
    at_ms: int


def price_of(market: MarketState, outcome: str) -> Decimal:
    """The displayed price of an outcome (USDC a share)."""
    a = market.price_a_cents()
    return price(a if outcome == "a" else 100 - a)


def price_snapshot(market: MarketState, outcome: str, now: int) -> PriceSnapshot:
    """A snapshot of one outcome token's prices (call with the engine lock held)."""
    bid, ask = market.own_best(outcome)
    last = market.last_trade
    if last is not None and outcome == "b":
        last = 100 - last
    return PriceSnapshot(
        asset_id=market.token(outcome),
        market_id=market.id,
        price=price_of(market, outcome),
        best_bid=None if bid is None else price(bid),
        best_ask=None if ask is None else price(ask),
        last_trade_price=None if last is None else price(last),
        at_ms=now,
    )
