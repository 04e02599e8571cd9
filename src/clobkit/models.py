"""Typed resources of the External Trading API (msgspec Structs).

Every model follows the API text field for field. Decoding is tolerant:
unknown fields are ignored, optional fields that are missing read as ``None``
(or an empty list), timestamps are timezone-aware ``datetime`` objects (a
naive timestamp is read as UTC), and every price, amount, size, share count,
volume and odds value is an exact ``Decimal`` (money in USDC, shares in
outcome shares). The simplified shapes shown by the API guides (a market with
an ``outcomes`` array, a list response whose ``data`` is a bare array, a
cancel answered by ``success`` alone) decode into the same models. An order
named by an empty or blank id is refused (``ServerError``): nothing could
cancel, read or track it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from .core.resource import RawOrderResult as RawOrderResult
from .core.resource import Resource as _Model
from .core.spec import (
    FINAL_STATUSES,
    OPEN_STATUSES,
    ORDER_STATUSES,
    OUTCOME_A,
    OUTCOME_B,
    OrderStatus,
    OrderTypeName,
    OutcomeName,
    SideName,
)
from .core.wallet import V1_CTF_EXCHANGE, V1_NEG_RISK_EXCHANGE
from .errors import OrderFieldError, ValidationError

# An order's status, side and order type arrive as the service's string, kept
# as sent: a value the API text does not name (the exchange adds a status)
# arrives intact, never as None. Type checkers see the known names and that
# another string may come (``order.status in ORDER_STATUSES`` tells which);
# msgspec reads the field as ``str``, as it allows one str-like type per union.
if TYPE_CHECKING:
    StatusText = OrderStatus | str
    SideText = SideName | str
    OrderTypeText = OrderTypeName | str
else:
    StatusText = SideText = OrderTypeText = str

__all__ = [
    "FINAL_STATUSES",
    "OPEN_STATUSES",
    "ORDER_STATUSES",
    "CancelResult",
    "EnrichedMarket",
    "EnrichedMarkets",
    "Event",
    "EventPage",
    "Market",
    "MarketList",
    "MarketOutcome",
    "Order",
    "OrderPage",
    "Orderbook",
    "OrderbookLevel",
    "Pagination",
    "PlacedOrder",
    "PortfolioOrder",
    "PortfolioOrderPage",
    "Position",
    "PositionPage",
    "RawOrderResult",
    "Reconnected",
    "StreamMessage",
    "Team",
    "WalletInfo",
]


def _blank(field: str, order_id: str) -> None:
    """An order's id is what it is cancelled, read and tracked by: a record naming an
    order by an empty or blank id is no answer (in a decode msgspec makes this
    ValueError its ValidationError, and the client a ``ServerError``)."""
    raise ValidationError(field, order_id, "must not be blank")


def _aware(struct: msgspec.Struct, *names: str) -> None:
    """Read naive timestamps as UTC (the API text says every timestamp is UTC)."""
    for name in names:
        value = getattr(struct, name)
        if value is not None and value.tzinfo is None:
            msgspec.structs.force_setattr(struct, name, value.replace(tzinfo=UTC))


class WalletInfo(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /wallet``: the addresses an order is built and hashed with.

    ``maker`` is the smart-contract wallet (EIP-712 maker), ``signer`` the EOA,
    ``signature_type`` 2 for the service's smart-contract wallets (0 to 3:
    EOA, POLY_PROXY, POLY_GNOSIS_SAFE, POLY_1271); ``chain_id`` 137 (Polygon)
    or 80002 (Amoy); the two exchange addresses are the EIP-712 verifying
    contracts, and their version (V1, V2 or V3) is the order format
    ``OrderHasher`` uses (see docs/exchange-versions.md).
    """

    maker: str
    signer: str
    chain_id: int = 137
    signature_type: int = 2
    ctf_exchange: str = V1_CTF_EXCHANGE
    neg_risk_exchange: str = V1_NEG_RISK_EXCHANGE


class Team(_Model, kw_only=True):
    """A team (section 2.2). Portfolio records carry only ``name`` and ``logo``."""

    id: int | None = None
    name: str | None = None
    short_name: str | None = None
    name_zh: str | None = None
    short_name_zh: str | None = None
    abbreviation: str | None = None
    logo: str | None = None
    recent_form: Any = None


class EnrichedMarket(_Model, kw_only=True):
    """``home_win`` / ``away_win`` of an event list item: price (0.01-0.99) and odds."""

    id: str | None = None
    token_id: str | None = None
    token_id_a: str | None = None
    token_id_b: str | None = None
    outcome: str | None = None
    price: Decimal | None = None
    odds: Decimal | None = None


class EnrichedMarkets(_Model, kw_only=True):
    """``enriched_markets`` of an event list item (section 2.3)."""

    home_win: EnrichedMarket | None = None
    away_win: EnrichedMarket | None = None
    game_start_time: datetime | None = None

    def __post_init__(self) -> None:
        _aware(self, "game_start_time")


class MarketOutcome(_Model, kw_only=True):
    """One item of the guides' simplified ``outcomes`` array; ``price`` 0.01-0.99."""

    id: str | None = None
    name: str | None = None
    token_id: str | None = None
    price: Decimal | None = None


class Market(_Model, kw_only=True):
    """A market (section 2.4), in any of its shapes: search item, detail, event market.

    Fields a shape does not carry are ``None``. Prices are implied
    probabilities in 0.01-0.99; ``volume`` and ``liquidity`` are USDC.
    ``token_id_a`` / ``token_id_b`` are the outcome tokens (orderbook asset ids).
    """

    id: str
    external_id: str | None = None
    condition_id: str | None = None
    token_id_a: str | None = None
    token_id_b: str | None = None
    event_id: str | None = None
    question: str | None = None
    description: str | None = None
    category: str | None = None
    subcategory: str | None = None
    outcome_a: str | None = None
    outcome_b: str | None = None
    price_a: Decimal | None = None
    price_b: Decimal | None = None
    odds_a: Decimal | None = None
    odds_b: Decimal | None = None
    volume: Decimal | None = None
    liquidity: Decimal | None = None
    end_date: datetime | None = None
    game_start_time: datetime | None = None
    status: str | None = None
    market_type: str | None = None
    group_item_title: str | None = None
    neg_risk: bool | None = None
    is_featured: bool | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # the guides' simplified shape
    type: str | None = None
    outcomes: list[MarketOutcome] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        _aware(self, "end_date", "game_start_time", "created_at", "updated_at")

    def token_id(self, outcome: OutcomeName | str) -> str | None:
        """The token id of outcome ``"a"`` or ``"b"`` (from the simplified shape too)."""
        if outcome == OUTCOME_A:
            token = self.token_id_a
        elif outcome == OUTCOME_B:
            token = self.token_id_b
        else:
            raise OrderFieldError("outcome", outcome, f"must be {OUTCOME_A!r} or {OUTCOME_B!r}")
        if token is None and len(self.outcomes) == 2:
            token = self.outcomes[0 if outcome == OUTCOME_A else 1].token_id
        return token


class Event(_Model, kw_only=True):
    """A sports event (section 2.1), list or detail shape.

    ``start_time`` (detail only) is the kickoff to schedule by; ``start_date``
    is when its markets opened. ``volume`` is USDC. ``markets`` is filled on
    event detail, ``enriched_markets`` on list items.
    """

    id: str
    external_id: str | None = None
    slug: str | None = None
    title: str | None = None
    description: str | None = None
    category: str | None = None
    subcategory: str | None = None
    league_id: str | None = None
    series_id: str | None = None
    start_date: datetime | None = None
    start_time: datetime | None = None
    end_date: datetime | None = None
    volume: Decimal | None = None
    trader_count: int | None = None
    live: bool | None = None
    ended: bool | None = None
    is_featured: bool | None = None
    is_future: bool | None = None
    team_match_status: str | None = None
    home_team_id: int | None = None
    away_team_id: int | None = None
    game_id: int | None = None
    home_team: Team | None = None
    away_team: Team | None = None
    enriched_markets: EnrichedMarkets | None = None
    markets: list[Market] = msgspec.field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def __post_init__(self) -> None:
        _aware(self, "start_date", "start_time", "end_date", "created_at", "updated_at")


class EventPage(_Model, kw_only=True):
    """``GET /events``: one page of events; ``page_size`` items per page."""

    events: list[Event] = msgspec.field(default_factory=list)
    total_count: int | None = None
    page: int | None = None
    page_size: int | None = None


class MarketList(_Model, kw_only=True):
    """``GET /markets`` (search) and ``GET /events/:id/markets``."""

    markets: list[Market] = msgspec.field(default_factory=list)
    count: int | None = None


class OrderbookLevel(_Model, kw_only=True):
    """One price level: ``price`` (0.01-0.99) and ``size`` (USDC available at it)."""

    price: Decimal
    size: Decimal


class Orderbook(_Model, kw_only=True):
    """``GET /orderbooks/:asset_id``: bids best (highest) first, asks best (lowest) first.

    ``min_order_size`` is the market's minimum order in USDC; ``updated_at_ms``
    is milliseconds since the epoch.
    """

    asset_id: str = ""
    bids: list[OrderbookLevel] = msgspec.field(default_factory=list)
    asks: list[OrderbookLevel] = msgspec.field(default_factory=list)
    hash: str | None = None
    min_order_size: Decimal | None = None
    timestamp: datetime | None = None
    updated_at_ms: int | None = None

    def __post_init__(self) -> None:
        _aware(self, "timestamp")

    @property
    def best_bid(self) -> Decimal | None:
        """Highest bid price, or ``None`` on an empty side (a price that is no number, as
        a server may send "NaN", is left out)."""
        return max((lv.price for lv in self.bids if lv.price.is_finite()), default=None)

    @property
    def best_ask(self) -> Decimal | None:
        """Lowest ask price, or ``None`` on an empty side (a price that is no number is
        left out)."""
        return min((lv.price for lv in self.asks if lv.price.is_finite()), default=None)


class Order(_Model, kw_only=True):
    """An order record (section 2.5).

    ``amount``, ``making_amount``, ``taking_amount``, ``potential_profit`` and
    ``settlement_amount`` are USDC; ``original_size`` and ``size_matched`` are
    the order's size and its filled part; ``clob_price`` / ``limit_price`` /
    ``avg_fill_price`` are prices in 0.01-0.99. ``status`` is one of
    ``ORDER_STATUSES``, ``side`` ``BUY``/``SELL``, ``order_type`` FOK/GTC/GTD,
    or whatever other string the service sent (kept as sent, never dropped).
    """

    id: str
    user_id: str | None = None
    market_id: str | None = None
    outcome: str | None = None
    amount: Decimal | None = None
    making_amount: Decimal | None = None
    taking_amount: Decimal | None = None
    odds: Decimal | None = None
    potential_profit: Decimal | None = None
    status: StatusText | None = None
    side: SideText | None = None
    order_type: OrderTypeText | None = None
    order_source: str | None = None
    order_source_id: str | None = None
    clob_order_id: str | None = None
    original_size: Decimal | None = None
    size_matched: Decimal | None = None
    clob_price: Decimal | None = None
    tx_hashes: list[str] = msgspec.field(default_factory=list)
    settlement_status: str | None = None
    settlement_amount: Decimal | None = None
    settled_at: datetime | None = None
    submitted_at: datetime | None = None
    matched_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    limit_price: Decimal | None = None
    avg_fill_price: Decimal | None = None

    def __post_init__(self) -> None:
        if not self.id.strip():
            _blank("id", self.id)
        _aware(self, "settled_at", "submitted_at", "matched_at", "created_at", "updated_at")

    @property
    def is_open(self) -> bool:
        """True while the order can still trade (pending, signing, submitted, live)."""
        return self.status in OPEN_STATUSES


class OrderPage(_Model, kw_only=True):
    """``GET /orders``: one page of the caller's orders."""

    orders: list[Order] = msgspec.field(default_factory=list)
    total_count: int | None = None
    page: int | None = None
    page_size: int | None = None


class PlacedOrder(_Model, kw_only=True):
    """``POST /orders`` answer: the new order's id (status ``pending``)."""

    order_id: str
    notification_id: str | None = None

    def __post_init__(self) -> None:
        if not self.order_id.strip():
            _blank("order_id", self.order_id)


class CancelResult(_Model, kw_only=True):
    """``DELETE /orders/:id`` answer; ``status`` is ``cancelled``."""

    order_id: str | None = None
    status: StatusText | None = None


class Pagination(_Model, kw_only=True):
    """Portfolio paging: ``per_page`` items per page, pages counted from 1."""

    current_page: int | None = None
    total_pages: int | None = None
    total_count: int | None = None
    per_page: int | None = None


class Position(_Model, kw_only=True):
    """An open position (section 2.6).

    ``shares`` / ``available_shares`` / ``reserved_shares`` are outcome
    shares; ``avg_cost``, ``best_bid``, ``best_ask`` prices in 0.01-0.99;
    ``bet_amount``, ``expected_win_amount``, ``current_value`` and ``pnl``
    USDC; ``pnl_percent`` percent. ``outcome`` is the display name,
    ``raw_outcome`` ``a`` or ``b``.
    """

    id: int | str | None = None
    market_id: str | None = None
    event_id: str | None = None
    market_name: str | None = None
    market_type: str | None = None
    group_item_title: str | None = None
    event_title: str | None = None
    event_slug: str | None = None
    category: str | None = None
    token_id: str | None = None
    outcome: str | None = None
    raw_outcome: str | None = None
    outcome_a: str | None = None
    outcome_b: str | None = None
    shares: Decimal | None = None
    available_shares: Decimal | None = None
    reserved_shares: Decimal | None = None
    avg_cost: Decimal | None = None
    bet_amount: Decimal | None = None
    expected_win_amount: Decimal | None = None
    initial_win_rate: Decimal | None = None
    current_win_rate: Decimal | None = None
    current_value: Decimal | None = None
    pnl: Decimal | None = None
    pnl_percent: Decimal | None = None
    best_bid: Decimal | None = None
    best_ask: Decimal | None = None
    home_team: Team | None = None
    away_team: Team | None = None
    ended: bool | None = None
    can_cashout: bool | None = None
    confirming: bool | None = None
    is_bonus: bool | None = None
    is_future: bool | None = None
    market_status: str | None = None
    updated_at: datetime | None = None

    def __post_init__(self) -> None:
        _aware(self, "updated_at")


class PositionPage(_Model, kw_only=True):
    """``GET /portfolio/positions``: one page of positions."""

    positions: list[Position] = msgspec.field(default_factory=list)
    pagination: Pagination = msgspec.field(default_factory=Pagination)


class PortfolioOrder(_Model, kw_only=True):
    """A portfolio order-history item (section 2.7); amounts in USDC / shares."""

    id: str
    market_id: str | None = None
    event_id: str | None = None
    event_slug: str | None = None
    market_name: str | None = None
    home_team: Team | None = None
    away_team: Team | None = None
    outcome: str | None = None
    side: SideText | None = None
    making_amount: Decimal | None = None
    taking_amount: Decimal | None = None
    status: StatusText | None = None
    tx_hashes: list[str] = msgspec.field(default_factory=list)
    is_bonus: bool | None = None
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        _aware(self, "created_at")


class PortfolioOrderPage(_Model, kw_only=True):
    """``GET /portfolio/orders``: one page of order history."""

    orders: list[PortfolioOrder] = msgspec.field(default_factory=list)
    pagination: Pagination = msgspec.field(default_factory=Pagination)


class StreamMessage(_Model, kw_only=True):
    """One WebSocket message (section 6).

    ``type`` is the message type (``data`` for updates), ``topic`` the topic
    it belongs to when the server names it, ``data`` the raw payload. For an
    order topic, ``order`` holds the payload read as an ``Order`` (fields it
    lacks are ``None``). ``received_ns`` is when its frame arrived (wall clock,
    ns since the epoch), stamped as the stream read it, however long it then
    waited for its consumer (``None`` for a message not read by a stream).
    ``error`` holds the server's words on a message of type ``error`` (the API
    text shows none; the sandbox sends one for each topic it refuses, naming it
    in ``topic``).
    """

    type: str
    topic: str | None = None
    data: Any = None
    order: Order | None = None
    received_ns: int | None = None
    error: str | None = None

    @property
    def order_id(self) -> str | None:
        """The order id an order update refers to (``id`` or ``order_id``)."""
        if isinstance(self.data, dict):
            value = self.data.get("id") or self.data.get("order_id")
            return str(value) if value is not None else None
        return None


class Reconnected(_Model, kw_only=True):
    """Yielded by a stream after it reconnected and resubscribed.

    Messages sent while it was down are lost: resynchronise from REST (for
    example with ``Client.open_orders()``). ``attempt`` counts reconnects;
    ``received_ns`` is when the subscription stood again (wall clock, ns since
    the epoch), however late its consumer reads it.
    """

    topics: list[str] = msgspec.field(default_factory=list)
    attempt: int = 1
    type: str = "reconnected"
    received_ns: int | None = None
