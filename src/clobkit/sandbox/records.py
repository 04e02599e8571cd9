"""What the engine's public methods answer: frozen typed snapshots, never JSON.

Orders, balances, books and prices come back as snapshots taken under the
engine lock (later changes do not reach them); money and shares as exact
``Decimal`` USDC / shares, times as milliseconds since the epoch. Markets,
events and positions come back as the engine's own records (``state``,
``fixtures``), to be read under ``Engine.reading()``. Only the HTTP layer
(``views``) turns any of them into the API's JSON shapes. Taking a snapshot of the
engine's state is ``snapshots``' job: these records know nothing of that state.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Generic, TypeVar

import msgspec

from ..core.spec import CANCELLED, UNIT_QUANTUM, OrderStatus

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
    "plain",
    "price",
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


class PriceSnapshot(msgspec.Struct, frozen=True):
    """A token's price, best bid and ask and last trade (USDC a share), as of ``at_ms``."""

    asset_id: str
    market_id: str
    price: Decimal
    best_bid: Decimal | None
    best_ask: Decimal | None
    last_trade_price: Decimal | None
    at_ms: int
