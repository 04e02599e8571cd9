"""The sandbox's state: its records (orders, positions, accounts, markets) and their base.

Pure data and the hooks every job shares (lookups, change tracking); no
locking, no parsing, no JSON. The money model is told in ``engine.py``.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from .. import OrderHasher, WalletInfo
from ..core.spec import (
    ERROR_MARKET_NOT_FOUND,
    OPEN_STATUSES,
    ORDER_TYPES,
    OUTCOME_A,
    OUTCOME_B,
    PENDING,
    UNIT,
    OrderStatus,
)
from ..core.wallet import EXCHANGES_OF_VERSION
from ..order_id import checksum_address, keccak256
from .config import SandboxConfig, UserConfig
from .errors import Rejected, bad_body
from .fixtures import EventFixture, MarketFixture, build_fixtures
from .records import OrderRecord

__all__ = [
    "ASK",
    "BID",
    "BUY",
    "FOK",
    "GTC",
    "GTD",
    "HOUSE",
    "SELL",
    "UNIT",
    "Account",
    "EngineEvent",
    "EngineState",
    "MarketState",
    "Order",
    "Position",
    "dec",
    "derive_wallet",
    "own_levels",
    "uuid_key",
]

HOUSE = "house"
BID, ASK = 0, 1  # sides of a market's book, in the price space of outcome a
BUY, SELL = 0, 1  # the exchange's uint8 side
FOK, GTC, GTD = ORDER_TYPES


def derive_wallet(user: UserConfig, exchange_version: int = 1) -> WalletInfo:
    """The user's wallet: maker/signer derived from user_id unless configured.

    Its exchange addresses are those of ``exchange_version`` (the config's;
    1, the API text's flow, by default).
    """
    ctf, neg_risk = EXCHANGES_OF_VERSION[exchange_version]
    maker = user.maker or checksum_address(
        keccak256(f"clobkit-sandbox:maker:{user.user_id}".encode())[12:]
    )
    signer = user.signer or checksum_address(
        keccak256(f"clobkit-sandbox:signer:{user.user_id}".encode())[12:]
    )
    return WalletInfo(
        maker=maker,
        signer=signer,
        chain_id=137,
        signature_type=2,
        ctf_exchange=ctf,
        neg_risk_exchange=neg_risk,
    )


# ---------------------------------------------------------------------------
# State


@dataclass(eq=False)
class Position:
    id: int
    user_id: str
    market: MarketState
    outcome: str
    shares: int = 0
    reserved: int = 0
    cost: int = 0
    realized: int = 0
    is_bonus: bool = False
    updated_ms: int = 0

    @property
    def token_id(self) -> str:
        return self.market.token(self.outcome)


@dataclass(eq=False)
class Order:
    """One order (a user's, or a house quote when ``user_id`` is ``HOUSE``)."""

    id: str
    user_id: str
    market: MarketState
    outcome: str  # "a" or "b"
    side: int  # BUY / SELL
    order_type: str
    limit_cents: int  # own-token limit on the 0.01 grid (BUY: floor, SELL: ceil)
    size: int  # shares (units); an amount-based FOK BUY holds its estimate until filled
    maker_amount: int = 0
    taker_amount: int = 0
    amount_based: bool = False  # FOK BUY: spends its USDC, receives what it buys
    reserved: int = 0  # BUY: USDC reserved at acceptance; SELL: shares reserved
    funding: str = ""  # BUY: "cash" or "bonus"
    matched: int = 0  # shares filled
    usdc: int = 0  # USDC paid (BUY) or received (SELL) so far
    status: OrderStatus = PENDING
    seq: int = 0
    price_text: str = ""  # exact limit / implied price, for clob_price
    source: str = "manual"
    source_id: str | None = None
    clob_order_id: str = ""
    salt: int = 0
    nonce: int = 0
    fee_rate_bps: int = 0
    expiration: int = 0  # Unix seconds (0: never)
    notification_id: str = ""
    client_order_id: str | None = None
    is_bonus: bool = False
    take_profit: int | None = None
    stop_loss: int | None = None
    tx_hashes: list[str] = field(default_factory=list)
    created_ms: int = 0
    updated_ms: int = 0
    submitted_ms: int | None = None
    matched_ms: int | None = None
    settled_ms: int | None = None
    settlement_status: OrderStatus | None = None  # WON or LOST
    settlement_units: int = 0
    cancel_reason: str | None = None
    resting: bool = False
    next_step_ms: int = 0

    @property
    def house(self) -> bool:
        return self.user_id == HOUSE

    @property
    def token_id(self) -> str:
        return self.market.token(self.outcome)

    @property
    def a_side(self) -> int:
        buy = self.side == BUY
        return BID if buy == (self.outcome == OUTCOME_A) else ASK

    @property
    def a_price(self) -> int:
        return self.limit_cents if self.outcome == OUTCOME_A else 100 - self.limit_cents

    @property
    def open_shares(self) -> int:
        return self.size - self.matched

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


#: A book's level: the orders resting at one A-space price, in time priority. A price
#: no order has rested at holds the shared empty tuple, made a deque of its own by the
#: first order to rest there (``rest_at``): a sandbox builds 202 levels for each of its
#: markets at start (72 by default), and most of them stay empty.
Level = deque["Order"] | tuple[()]


def empty_side() -> list[Level]:
    """A side of a book with nothing resting: a level for each price, 0 to 100 cents."""
    return [()] * 101


def rest_at(side: list[Level], price: int, order: Order) -> None:
    """``order`` rests last at ``price`` on ``side``."""
    level = side[price]
    if isinstance(level, tuple):
        level = side[price] = deque()
    level.append(order)


def leave(side: list[Level], price: int, order: Order) -> None:
    """``order``, resting at ``price`` on ``side``, leaves it (ValueError: it rests not there)."""
    level = side[price]
    if isinstance(level, tuple):
        raise ValueError(f"order {order.id} does not rest at {price}")
    level.remove(order)


class MarketState:
    """A market's fixture plus its live book, collateral and trade statistics."""

    def __init__(self, fx: MarketFixture, event: EventFixture) -> None:
        self.fx = fx
        self.event = event
        self.bids = empty_side()
        self.asks = empty_side()
        self.mid: int | None = fx.price_a_cents if fx.house_liquidity else None
        self.collateral = 0
        self.last_trade: int | None = None
        self.traded_units = 0
        self.traders: set[str] = set()
        self.house_quotes: dict[tuple[int, int], Order] = {}
        self.book_ms = fx.updated_ms
        self.updated_ms = fx.updated_ms
        self.replayed = False  # its liquidity follows a recording (replay.py), not the house

    @property
    def id(self) -> str:
        return self.fx.id

    @property
    def active(self) -> bool:
        return self.fx.status == "active"

    def token(self, outcome: str) -> str:
        return self.fx.token_id_a if outcome == OUTCOME_A else self.fx.token_id_b

    def best_bid(self) -> int | None:
        for p in range(99, 0, -1):
            if self.bids[p]:
                return p
        return None

    def best_ask(self) -> int | None:
        for p in range(1, 100):
            if self.asks[p]:
                return p
        return None

    def has_book(self) -> bool:
        return self.active and (self.best_bid() is not None or self.best_ask() is not None)

    def price_a_cents(self) -> int:
        """The market's displayed price of outcome a (cents)."""
        if not self.active:
            return 99 if self.fx.winner == OUTCOME_A else 1
        if self.mid is not None:
            return self.mid
        if self.last_trade is not None:
            return self.last_trade
        return self.fx.price_a_cents

    def own_best(self, outcome: str) -> tuple[int | None, int | None]:
        """Best bid and ask of one outcome's token (cents)."""
        bid, ask = self.best_bid(), self.best_ask()
        if outcome == OUTCOME_A:
            return bid, ask
        return (None if ask is None else 100 - ask), (None if bid is None else 100 - bid)

    def level_sizes(self, side: int) -> list[tuple[int, int]]:
        """(A-space price, open shares) of each non-empty level of one side."""
        book = self.bids if side == BID else self.asks
        return [(p, sum(o.open_shares for o in book[p])) for p in range(1, 100) if book[p]]


@dataclass(eq=False)
class Account:
    config: UserConfig
    wallet: WalletInfo
    hasher: OrderHasher
    cash: int
    bonus: int
    deposits: int
    cash_reserved: int = 0
    bonus_reserved: int = 0
    payouts: int = 0
    positions: dict[str, Position] = field(default_factory=dict)
    orders: list[Order] = field(default_factory=list)
    client_ids: dict[str, Order] = field(default_factory=dict)
    minute: deque[int] = field(default_factory=deque)
    day_key: int = -1
    day_units: int = 0
    month_key: int = -1
    month_units: int = 0

    @property
    def user_id(self) -> str:
        return self.config.user_id


@dataclass(frozen=True)
class EngineEvent:
    """What changed: ``kind`` "order" (key: user id, data: a snapshot of the order)
    or "book" (key: market id)."""

    kind: str
    key: str
    data: OrderRecord | None = None


def uuid_key(value: object) -> str:
    """The canonical (lower-case, hyphenated) spelling of a UUID path or body id, as
    ``uuid.UUID`` reads it (upper case, no hyphens, braces, ``urn:uuid:``); ``""`` when
    it is no UUID. Every id lookup (events, markets, orders) goes through it, so each
    route accepts the same spellings."""
    if not isinstance(value, str):
        return ""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return ""


def dec(units: int) -> Decimal:
    """Exact decimal of 6-decimal units, without exponent or trailing zeros."""
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), UNIT)
    text = f"{whole}.{frac:06d}".rstrip("0").rstrip(".")
    return Decimal(sign + text)


def own_levels(market: MarketState, outcome: str, own_side: int) -> list[tuple[int, int]]:
    """(own price in cents, open shares) of one side of a token's book, best first."""
    if outcome == OUTCOME_A:
        side = own_side
        levels = market.level_sizes(side)
        return levels[::-1] if side == BID else levels
    # token b: its bids are the A-space asks at 1 - p, its asks the A-space bids
    side = ASK if own_side == BID else BID
    levels = [(100 - p, n) for p, n in market.level_sizes(side)]
    levels.sort(key=lambda lv: lv[0], reverse=own_side == BID)
    return levels


class EngineState:
    """Everything one sandbox holds, and the hooks through which every change passes.

    The jobs (``ledger``, ``book``, ``house``) build on it in that order; the
    ``Engine`` facade adds the lock, the lifecycle and the public methods.
    """

    def __init__(self, config: SandboxConfig, clock: Callable[[], float]) -> None:
        self.config = config
        self._clock = clock
        self.instance_id = uuid.uuid4().hex
        now = self._now_ms()
        fx = build_fixtures(self.config.seed, now, self.config.extra_games)
        self.leagues = fx.leagues
        self.events: dict[str, EventFixture] = {e.id: e for e in fx.events}
        self.events_by_slug: dict[str, EventFixture] = {e.slug: e for e in fx.events}
        self.markets: dict[str, MarketState] = {}
        self.tokens: dict[str, tuple[MarketState, str]] = {}
        for m in fx.markets:
            state = MarketState(m, self.events[m.event_id])
            self.markets[m.id] = state
            self.tokens[m.token_id_a] = (state, OUTCOME_A)
            self.tokens[m.token_id_b] = (state, OUTCOME_B)
        self.accounts: dict[str, Account] = {}
        for user in self.config.users:
            wallet = derive_wallet(user, self.config.exchange_version)
            cash = int(user.balance * UNIT)
            bonus = int(user.bonus_balance * UNIT)
            self.accounts[user.user_id] = Account(
                config=user,
                wallet=wallet,
                hasher=OrderHasher(wallet),
                cash=cash,
                bonus=bonus,
                deposits=cash + bonus,
            )
        self.deposits = sum(a.deposits for a in self.accounts.values())
        self.house_usdc = 0
        self.house_shares: dict[str, int] = {}
        self.orders: dict[str, Order] = {}
        self.open_orders: dict[str, Order] = {}
        self.clob_ids: set[str] = set()
        self._seq = 0
        self._fill_seq = 0
        self._position_seq = 0
        self._due: list[tuple[int, int, Order]] = []  # processing steps (delay > 0)
        self._expiries: list[tuple[int, int, Order]] = []  # GTD expirations (ms)
        self._armed: dict[str, Order] = {}  # orders with take-profit / stop-loss
        self._touched: set[str] = set()
        self._ladders: dict[str, tuple[int, dict[tuple[int, int], int]]] = {}  # house._wanted
        # What the current operation changed, for the state store (see _persist)
        self._changed_orders: dict[str, Order] = {}
        self._changed_markets: set[str] = set()
        self._changed_users: set[str] = set()
        self._outbox: list[EngineEvent] = []  # published after the operation
        self._watched: dict[str, int] = {}  # user id -> live subscriptions to its orders
        self.stats = {
            "orders": 0,
            "fills": 0,
            "cancels": 0,
            "kills": 0,
            "expiries": 0,
            "settlements": 0,
        }

    def _now_ms(self) -> int:
        return round(self._clock() * 1000)

    def _order_record(self, order: Order) -> OrderRecord:
        """A snapshot of an order for its "order" event (the facade takes it)."""
        raise NotImplementedError

    def _emit_order(self, order: Order) -> None:
        """Every change of an order passes here (house quotes through _rest/_unrest/_finish)."""
        self._changed_orders[order.id] = order
        if not order.house and order.user_id in self._watched:
            self._outbox.append(EngineEvent("order", order.user_id, self._order_record(order)))

    def _touch(self, market: MarketState, now: int) -> None:
        self._changed_markets.add(market.id)
        market.book_ms = now
        self._touched.add(market.id)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    # -- lookups -----------------------------------------------------------

    def account(self, user_id: str) -> Account:
        try:
            return self.accounts[user_id]
        except KeyError:
            raise Rejected(404, "user not found") from None

    def _market(self, market_id: object) -> MarketState:
        key = uuid_key(market_id)
        if not key:
            raise bad_body("market_id must be a UUID string")
        market = self.markets.get(key)
        if market is None:
            raise Rejected(404, ERROR_MARKET_NOT_FOUND)
        return market

    def _position(self, account: Account, market: MarketState, outcome: str) -> Position:
        token = market.token(outcome)
        pos = account.positions.get(token)
        if pos is None:
            self._position_seq += 1
            pos = Position(self._position_seq, account.user_id, market, outcome)
            account.positions[token] = pos
        return pos
