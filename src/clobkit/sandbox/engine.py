"""The sandbox engine: books, matching, order lifecycle, balances, positions, risk, settlement.

Pure Python, no I/O. One re-entrant lock guards all state and every public
method takes it, so the HTTP app, admin calls and test threads can share one
engine. Time comes from an injectable ``clock`` (seconds, like ``time.time``).

Money model (the exchange's conditional-token model)
----------------------------------------------------
Amounts are integers in 6-decimal units (1 USDC = 1 share = 1_000_000).
Each market has one book, kept in the price space of outcome ``a``: a BUY of
``a`` at p and a SELL of ``b`` at 1-p are bids at p; a SELL of ``a`` at p and
a BUY of ``b`` at 1-p are asks at p. A fill of n share units at price P (cents):

* BUY a vs SELL a, or BUY b vs SELL b: shares and USDC change hands;
* BUY a vs BUY b: n complete sets are minted; both buyers pay and the market's
  collateral grows by n;
* SELL a vs SELL b: n sets are merged; the collateral pays both sellers.

A party's USDC of a fill is floor(n * its price / 100); the house absorbs the
sub-unit remainder of a mint or merge. The house liquidity provider only ever
buys (bids on ``a`` are BUY a, asks are BUY b), from an unlimited ledger.
Settlement pays 1 USDC per winning share out of the collateral. Hence, always:

    sum(user cash + bonus, available + reserved) + house ledger + sum(collateral) == deposits
    per market: shares of a held == shares of b held == collateral

``check_invariants`` verifies both, every reservation and every book.
"""

from __future__ import annotations

import heapq
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from clobkit import OrderHasher, WalletInfo, limit_amounts, market_amounts, market_price, new_salt
from clobkit._wallet import EXCHANGES_OF_VERSION
from clobkit.errors import InsufficientLiquidity, ValidationError
from clobkit.order_id import checksum_address, keccak256

from . import views
from .config import SINGLE_ORDER_MAX, SandboxConfig, UserConfig, load_config
from .errors import Rejected, bad_body, risk
from .fixtures import EventFixture, MarketFixture, build_fixtures

if TYPE_CHECKING:
    from .store import StateStore

__all__ = ["HOUSE", "Engine", "EngineEvent", "Order", "Rejected"]

UNIT = 1_000_000
HOUSE = "house"
BID, ASK = 0, 1
BUY, SELL = 0, 1
FOK, GTC, GTD = "FOK", "GTC", "GTD"
ORDER_TYPES = (FOK, GTC, GTD)
OPEN_STATUSES = ("pending", "signing", "submitted", "live")
LIST_STATUSES = ("pending", "signing", "submitted", "live", "matched")
HOUSE_LEVELS = 5
RISK_MINUTE_MS = 60_000  # the window of the per-minute order limit
SALT_MAX = 10**12
UINT256_MAX = (1 << 256) - 1


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
    status: str = "pending"
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
    settlement_status: str | None = None
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
        return BID if buy == (self.outcome == "a") else ASK

    @property
    def a_price(self) -> int:
        return self.limit_cents if self.outcome == "a" else 100 - self.limit_cents

    @property
    def open_shares(self) -> int:
        return self.size - self.matched

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


class MarketState:
    """A market's fixture plus its live book, collateral and trade statistics."""

    def __init__(self, fx: MarketFixture, event: EventFixture) -> None:
        self.fx = fx
        self.event = event
        self.bids: list[deque[Order]] = [deque() for _ in range(101)]
        self.asks: list[deque[Order]] = [deque() for _ in range(101)]
        self.mid: int | None = fx.price_a_cents if fx.house_liquidity else None
        self.collateral = 0
        self.last_trade: int | None = None
        self.traded_units = 0
        self.traders: set[str] = set()
        self.house_quotes: dict[tuple[int, int], Order] = {}
        self.book_ms = fx.updated_ms
        self.updated_ms = fx.updated_ms

    @property
    def id(self) -> str:
        return self.fx.id

    @property
    def active(self) -> bool:
        return self.fx.status == "active"

    def token(self, outcome: str) -> str:
        return self.fx.token_id_a if outcome == "a" else self.fx.token_id_b

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
            return 99 if self.fx.winner == "a" else 1
        if self.mid is not None:
            return self.mid
        if self.last_trade is not None:
            return self.last_trade
        return self.fx.price_a_cents

    def own_best(self, outcome: str) -> tuple[int | None, int | None]:
        """Best bid and ask of one outcome's token (cents)."""
        bid, ask = self.best_bid(), self.best_ask()
        if outcome == "a":
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
    """What changed: ``kind`` "order" (key: user id, data: the Order record)
    or "book" (key: market id)."""

    kind: str
    key: str
    data: dict[str, Any] | None = None


@dataclass
class _Spec:
    """A validated order, before admission."""

    market: MarketState
    outcome: str
    side: int
    order_type: str
    limit_cents: int
    price_text: str
    size: int
    maker_amount: int
    taker_amount: int
    amount_based: bool
    value: int  # USDC value for limits and risk
    expiration: int = 0
    salt: int = 0
    nonce: int = 0
    fee_rate_bps: int = 0
    source: str = "manual"
    source_id: str | None = None
    client_order_id: str | None = None
    take_profit: int | None = None
    stop_loss: int | None = None
    notification_id: str = ""


def _utc_keys(ms: int) -> tuple[int, int]:
    t = time.gmtime(ms // 1000)
    return t.tm_year * 10000 + t.tm_mon * 100 + t.tm_mday, t.tm_year * 100 + t.tm_mon


# ---------------------------------------------------------------------------
# Request parsing helpers (bodies are JSON-decoded with floats as Decimal)


#: A number as a string: ASCII digits, an optional sign, point and exponent. Decimal()
#: alone would also take " 5", "1_000", full-width digits, "NaN" and "Infinity".
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,4})?", re.ASCII)


def _decimal(body: Mapping[str, Any], name: str) -> Decimal | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str, float)):
        raise bad_body(f"{name} must be a number")
    if isinstance(value, str) and not (len(value) <= 64 and _NUMBER_TEXT.fullmatch(value)):
        raise bad_body(f"{name} must be a decimal number, got {value[:64]!r}")
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise bad_body(f"{name} must be a number") from None
    if not number.is_finite() or abs(number.adjusted()) > 40:
        raise bad_body(f"{name} must be a finite number of sensible size")
    return number


def _positive(body: Mapping[str, Any], name: str) -> Decimal:
    number = _decimal(body, name)
    if number is None:
        raise bad_body(f"{name} is required")
    if number <= 0:
        raise bad_body(f"{name} must be positive")
    return number


def _cents(number: Decimal, name: str) -> int:
    """A price on the 0.01 grid within [0.01, 0.99], in cents."""
    scaled = number * 100
    if scaled != scaled.to_integral_value():
        raise bad_body(f"{name} must be a multiple of 0.01 (the tick size)")
    cents = int(scaled)
    if not 1 <= cents <= 99:
        raise bad_body(f"{name} must lie between 0.01 and 0.99")
    return cents


def _price(body: Mapping[str, Any], name: str) -> int | None:
    number = _decimal(body, name)
    return None if number is None else _cents(number, name)


def _choice(
    body: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str | None
) -> str | None:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise bad_body(f"{name} must be one of {', '.join(allowed)}")
    return value


def _uint(value: object, name: str, code: str | None = None, *, strings_only: bool = False) -> int:
    """A uint256 from a decimal digit string (or an int unless ``strings_only``)."""
    if isinstance(value, int) and not isinstance(value, bool) and not strings_only:
        number = value
    elif isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 80:
        number = int(value)
    else:
        raise bad_body(f"{name} must be a non-negative integer string", code)
    if not 0 <= number <= UINT256_MAX:
        raise bad_body(f"{name} must fit in uint256", code)
    return number


def _units_text(units: int) -> str:
    return str(views.dec(units))


# ---------------------------------------------------------------------------


class Engine:
    """The whole service state of one sandbox. Thread-safe: every public method locks."""

    def __init__(
        self,
        config: SandboxConfig | Mapping[str, Any] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        store: StateStore | None = None,
    ) -> None:
        """``store``: a state file to restore from and commit every operation to (else memory)."""
        self.config = load_config(config)
        self._clock = clock
        self._lock = threading.RLock()
        self.instance_id = uuid.uuid4().hex
        now = self._now_ms()
        self.started_ms = now
        fx = build_fixtures(self.config.seed, now)
        self.leagues = fx.leagues
        self.events: dict[str, EventFixture] = {e.id: e for e in fx.events}
        self.events_by_slug: dict[str, EventFixture] = {e.slug: e for e in fx.events}
        self.markets: dict[str, MarketState] = {}
        self.tokens: dict[str, tuple[MarketState, str]] = {}
        for m in fx.markets:
            state = MarketState(m, self.events[m.event_id])
            self.markets[m.id] = state
            self.tokens[m.token_id_a] = (state, "a")
            self.tokens[m.token_id_b] = (state, "b")
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
        # What the current operation changed, for the state store (see _persist)
        self._changed_orders: dict[str, Order] = {}
        self._changed_markets: set[str] = set()
        self._changed_users: set[str] = set()
        self._depth = 0
        self._store: StateStore | None = None
        self._outbox: list[EngineEvent] = []
        self._listeners: list[Callable[[list[EngineEvent]], None]] = []
        self._watched: dict[str, int] = {}
        self.stats = {
            "orders": 0,
            "fills": 0,
            "cancels": 0,
            "kills": 0,
            "expiries": 0,
            "settlements": 0,
        }
        if store is not None and store.restore(self):
            self._store = store  # the book, house quotes included, is back as it was
            return
        with self._op():
            for market in self.markets.values():
                if market.fx.house_liquidity:
                    self._touched.add(market.id)
        if store is not None:
            store.save_all(self)
            self._store = store

    # -- plumbing --------------------------------------------------------

    def _now_ms(self) -> int:
        return round(self._clock() * 1000)

    @contextmanager
    def _op(self) -> Iterator[int]:
        """Lock, tick, run, then requote the house, fire triggers and publish events."""
        with self._lock:
            now = self._now_ms()
            self._depth += 1
            try:
                self._tick(now)
                yield now
            finally:
                self._depth -= 1
                self._settle_touched(now)
                if self._depth == 0:
                    self._persist()  # committed before any answer or event leaves
                self._flush()

    def _persist(self) -> None:
        """Hand what this operation changed to the state store: one transaction."""
        orders, self._changed_orders = self._changed_orders, {}
        markets, self._changed_markets = self._changed_markets, set()
        users, self._changed_users = self._changed_users, set()
        if self._store is not None:
            users.update(o.user_id for o in orders.values() if not o.house)
            self._store.save(self, orders.values(), markets, users)

    def _flush(self) -> None:
        if not self._outbox:
            return
        events, self._outbox = self._outbox, []
        for listener in list(self._listeners):
            listener(events)

    def add_listener(self, listener: Callable[[list[EngineEvent]], None]) -> None:
        """Call ``listener(events)`` after every operation that changed something.

        It runs with the engine lock held and must not block or call back in.
        """
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[list[EngineEvent]], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def watch_user(self, user_id: str, delta: int) -> None:
        """Count of live subscriptions to a user's order topic (records are built only then)."""
        with self._lock:
            count = self._watched.get(user_id, 0) + delta
            if count > 0:
                self._watched[user_id] = count
            else:
                self._watched.pop(user_id, None)

    def _emit_order(self, order: Order) -> None:
        """Every change of an order passes here (house quotes through _rest/_unrest/_finish)."""
        self._changed_orders[order.id] = order
        if not order.house and order.user_id in self._watched:
            self._outbox.append(
                EngineEvent("order", order.user_id, views.order_record(self, order))
            )

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

    def user_config(self, user_id: str) -> UserConfig:
        with self._lock:
            return self.account(user_id).config

    def _market(self, market_id: object) -> MarketState:
        if not isinstance(market_id, str):
            raise bad_body("market_id must be a UUID string")
        try:
            key = str(uuid.UUID(market_id))
        except ValueError:
            raise bad_body("market_id must be a UUID string") from None
        market = self.markets.get(key)
        if market is None:
            raise Rejected(404, "Market not found")
        return market

    def _position(self, account: Account, market: MarketState, outcome: str) -> Position:
        token = market.token(outcome)
        pos = account.positions.get(token)
        if pos is None:
            self._position_seq += 1
            pos = Position(self._position_seq, account.user_id, market, outcome)
            account.positions[token] = pos
        return pos

    # -- time ----------------------------------------------------------------

    def tick(self) -> None:
        """Advance processing and expire GTD orders whose time has come."""
        with self._op():
            pass

    def _tick(self, now: int) -> None:
        while self._due and self._due[0][0] <= now:
            due, _, order = heapq.heappop(self._due)
            if order.is_open and order.status != "live":
                self._step(order, due)  # steps that fell due while nobody looked catch up
        while self._expiries and self._expiries[0][0] <= now:
            _, _, order = heapq.heappop(self._expiries)
            if order.is_open:
                self._finish(order, "cancelled", now, reason="expired")
                self.stats["expiries"] += 1

    # -- placement -------------------------------------------------------------

    def place_order(self, user_id: str, body: Mapping[str, Any]) -> dict[str, str]:
        """POST /orders: validate, admit and process; ``{"order_id", "notification_id"}``."""
        with self._op() as now:
            account = self.account(user_id)
            spec = self._parse_order(body, now)
            order = self._admit(account, spec, now)
            return {"order_id": order.id, "notification_id": order.notification_id}

    def place_raw_order(self, user_id: str, body: Mapping[str, Any]) -> dict[str, str]:
        """POST /orders/raw; a used ``client_order_id`` returns its order and places nothing."""
        with self._op() as now:
            account = self.account(user_id)
            if not isinstance(body, Mapping):
                raise bad_body("the body must be a JSON object")
            client_id = body.get("client_order_id")
            if client_id is not None:
                if not isinstance(client_id, str) or not 1 <= len(client_id) <= 64:
                    raise bad_body("client_order_id must be a string of 1 to 64 characters")
                previous = account.client_ids.get(client_id)
                if previous is not None:
                    return {"order_id": previous.id, "notification_id": ""}
            spec = self._parse_raw(body, now)
            order = self._admit(account, spec, now)
            return {"order_id": order.id, "notification_id": ""}

    def _parse_order(self, body: Mapping[str, Any], now: int) -> _Spec:
        if not isinstance(body, Mapping):
            raise bad_body("the body must be a JSON object")
        market = self._market(body.get("market_id"))
        side_name = _choice(body, "side", ("BUY", "SELL"), "BUY")
        side = BUY if side_name == "BUY" else SELL
        order_type = _choice(body, "order_type", ORDER_TYPES, FOK)
        assert order_type is not None
        outcome = _choice(body, "outcome", ("a", "b"), None)
        option = _choice(body, "token_option", ("yes", "no"), None)
        option_outcome = None if option is None else ("a" if option == "yes" else "b")
        if order_type == FOK:
            if outcome is None and side == SELL:
                outcome = option_outcome
            if outcome is None:
                raise bad_body("outcome (a or b) is required for a FOK order")
        else:
            if option_outcome is None:
                raise bad_body("token_option (yes or no) is required for a limit order")
            outcome = outcome or option_outcome
        if option_outcome is not None and outcome != option_outcome:
            raise bad_body("outcome and token_option disagree")
        limit = _price(body, "limit_price")
        if order_type != FOK and limit is None:
            raise bad_body("limit_price is required for GTC and GTD orders")
        take_profit = _price(body, "take_profit_price")
        stop_loss = _price(body, "stop_loss_price")
        if take_profit is not None and stop_loss is not None and take_profit <= stop_loss:
            raise bad_body("take_profit_price must be above stop_loss_price")
        expiration = 0
        if order_type == GTD:
            raw = body.get("expiration")
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise bad_body("expiration (integer Unix seconds) is required for a GTD order")
            if raw <= now // 1000:
                raise bad_body("expiration must be in the future")
            expiration = raw
        if side == BUY:
            amount = _positive(body, "amount")
            quantity = amount
        else:
            quantity = _positive(body, "shares")
        if not market.active:
            raise bad_body(
                f"market {market.id} is not active (status {market.fx.status})", "MARKET_NOT_ACTIVE"
            )
        try:
            if order_type == FOK:
                worst = self._fok_price(market, outcome, side, quantity, limit)
                price = Decimal(worst) / 100
                amounts = market_amounts(side, price, quantity)
                limit_cents = worst
                amount_based = side == BUY
                size = amounts.taker_amount if side == BUY else amounts.maker_amount
            else:
                assert limit is not None
                price = Decimal(limit) / 100
                if side == BUY:
                    cents = int((quantity * 100).to_integral_value(ROUND_DOWN))
                    shares = Decimal(cents * 100 // limit) / 100
                    if shares <= 0:
                        raise bad_body("amount is too small to buy 0.01 shares at limit_price")
                    amounts = limit_amounts(BUY, price, shares)
                else:
                    amounts = limit_amounts(SELL, price, quantity)
                limit_cents = limit
                amount_based = False
                size = amounts.taker_amount if side == BUY else amounts.maker_amount
        except ValidationError as exc:
            raise bad_body(str(exc)) from None
        value = amounts.maker_amount if side == BUY else amounts.taker_amount
        return _Spec(
            market=market,
            outcome=outcome,
            side=side,
            order_type=order_type,
            limit_cents=limit_cents,
            price_text=str(price),
            size=size,
            maker_amount=amounts.maker_amount,
            taker_amount=amounts.taker_amount,
            amount_based=amount_based,
            value=value,
            expiration=expiration,
            salt=new_salt(),
            fee_rate_bps=market.fx.fee_rate_bps,
            take_profit=take_profit,
            stop_loss=stop_loss,
            notification_id=str(uuid.uuid4()),
        )

    def _fok_price(
        self, market: MarketState, outcome: str, side: int, quantity: Decimal, limit: int | None
    ) -> int:
        """Worst price (cents) a FOK must accept: the book walk, capped by limit_price."""
        levels = self._own_levels(market, outcome, ASK if side == BUY else BID)
        try:
            worst = int(market_price(levels, side, quantity, "FOK") * 100)
        except InsufficientLiquidity:
            # killed at execution; the worst price on the book (or the edge) still signs it
            worst = int(Decimal(levels[-1][0]) * 100) if levels else (99 if side == BUY else 1)
        if limit is not None:
            worst = min(worst, limit) if side == BUY else max(worst, limit)
        return worst

    def _own_levels(
        self, market: MarketState, outcome: str, own_side: int
    ) -> list[tuple[str, str]]:
        """One side of an outcome token's book, best first: (price, USDC size) strings."""
        out = []
        for price, size in views.own_levels(market, outcome, own_side):
            out.append((f"0.{price:02d}", _units_text(size * price // 100)))
        return out

    def _parse_raw(self, body: Mapping[str, Any], now: int) -> _Spec:
        market = self._market(body.get("market_id"))
        outcome = _choice(body, "outcome", ("a", "b"), None)
        if outcome is None:
            raise bad_body("outcome (a or b) is required")
        token = body.get("token_id")
        if isinstance(token, int) and not isinstance(token, bool):
            token = str(token)
        if not isinstance(token, str):
            raise bad_body("token_id is required (a decimal string)")
        if token != market.token(outcome):
            raise bad_body(
                f"token_id is not the token of outcome {outcome} of market {market.id}",
                "ORDER_INVALID_TOKEN",
            )
        maker = _uint(
            body.get("maker_amount"),
            "maker_amount",
            "ORDER_INVALID_MAKER_AMOUNT",
            strings_only=True,
        )
        taker = _uint(
            body.get("taker_amount"),
            "taker_amount",
            "ORDER_INVALID_TAKER_AMOUNT",
            strings_only=True,
        )
        if maker == 0:
            raise bad_body("maker_amount must be positive", "ORDER_INVALID_MAKER_AMOUNT")
        if taker == 0:
            raise bad_body("taker_amount must be positive", "ORDER_INVALID_TAKER_AMOUNT")
        side = body.get("side")
        if type(side) is not int or side not in (0, 1):  # not True, 0.0 or Decimal("1.0")
            raise bad_body("side must be 0 (BUY) or 1 (SELL)")
        fee = body.get("fee_rate_bps")
        if isinstance(fee, bool) or not isinstance(fee, int):
            raise bad_body("fee_rate_bps (integer) is required")
        if fee != market.fx.fee_rate_bps:
            raise bad_body(
                f"fee_rate_bps must equal the token's fee ({market.fx.fee_rate_bps})",
                "ORDER_INVALID_FEE_RATE",
            )
        order_type = _choice(body, "order_type", ORDER_TYPES, FOK)
        assert order_type is not None
        salt_raw = body.get("salt")
        if salt_raw is None:
            salt = new_salt()
        else:
            salt = _uint(salt_raw, "salt", "ORDER_INVALID_SALT")
            if salt > SALT_MAX:
                raise bad_body("salt must lie in [0, 10^12]", "ORDER_INVALID_SALT")
        nonce = 0 if body.get("nonce") is None else _uint(body.get("nonce"), "nonce")
        expiration = (
            0 if body.get("expiration") is None else _uint(body.get("expiration"), "expiration")
        )
        if order_type == GTD:
            if expiration <= now // 1000:
                raise bad_body("a GTD order needs an expiration in the future")
        elif expiration != 0:
            raise bad_body("expiration is only supported for GTD orders (use 0)")
        # implied price: USDC / shares, strictly between 0 and 1
        usdc, shares = (maker, taker) if side == BUY else (taker, maker)
        if not usdc < shares:
            raise bad_body(
                "maker_amount / taker_amount must lie between 0 and 1", "ORDER_INVALID_PRICE"
            )
        # onto the 0.01 grid, against the order: a BUY floors, a SELL ceils
        limit = usdc * 100 // shares if side == BUY else -(-usdc * 100 // shares)
        if not 1 <= limit <= 99:
            raise bad_body(
                "the implied price rounds outside 0.01-0.99 on the tick grid", "ORDER_INVALID_PRICE"
            )
        if not market.active:
            raise bad_body(
                f"market {market.id} is not active (status {market.fx.status})", "MARKET_NOT_ACTIVE"
            )
        return _Spec(
            market=market,
            outcome=outcome,
            side=side,
            order_type=order_type,
            limit_cents=limit,
            price_text=str(
                (Decimal(usdc) / Decimal(shares)).quantize(Decimal("0.000001")).normalize()
            ),
            size=shares,
            maker_amount=maker,
            taker_amount=taker,
            amount_based=order_type == FOK and side == BUY,
            value=usdc,
            expiration=expiration,
            salt=salt,
            nonce=nonce,
            fee_rate_bps=fee,
            source="raw",
            source_id=body.get("client_order_id"),
            client_order_id=body.get("client_order_id"),
        )

    @staticmethod
    def _clob_order_id(account: Account, spec: _Spec, now: int) -> str:
        """The exchange order hash the service stores for an order admitted at ``now`` (ms).

        V1 hashes what the request carried, so a client can precompute it; V2
        and V3 sign the service's own timestamp instead of fee, nonce and
        expiration, so only the service knows the id.
        """
        hasher = account.hasher
        order: dict[str, object] = {
            "token_id": int(spec.market.token(spec.outcome)),
            "maker_amount": spec.maker_amount,
            "taker_amount": spec.taker_amount,
            "side": spec.side,
            "salt": spec.salt,
            "neg_risk": spec.market.fx.neg_risk,
        }
        if hasher.version == 1:
            order.update(
                fee_rate_bps=spec.fee_rate_bps, nonce=spec.nonce, expiration=spec.expiration
            )
        else:
            order["timestamp"] = now
        return hasher.order_id(**order)

    def _admit(self, account: Account, spec: _Spec, now: int, *, system: bool = False) -> Order:
        """Limits, balance and risk; then reserve, record and process the order."""
        market = spec.market
        if not system and spec.value < market.fx.min_order_size_units:
            raise bad_body(
                f"order value {_units_text(spec.value)} USDC is below the market's min_order_size "
                f"{_units_text(market.fx.min_order_size_units)}"
            )
        if not system and spec.value > int(SINGLE_ORDER_MAX) * UNIT:
            raise risk(f"order value exceeds the single-order maximum of {SINGLE_ORDER_MAX} USDC")
        funding = ""
        if spec.side == BUY:
            if account.bonus >= spec.maker_amount:
                funding = "bonus"
            elif account.cash >= spec.maker_amount:
                funding = "cash"
        is_bonus = funding == "bonus"
        if not system and not is_bonus:
            self._check_risk(account, spec.value, now)
        if spec.side == BUY:
            if not funding:
                raise Rejected(
                    400, "insufficient balance", detail="the USDC balance does not cover the order"
                )
        else:
            pos = account.positions.get(market.token(spec.outcome))
            if pos is None or pos.shares - pos.reserved < spec.maker_amount:
                raise Rejected(
                    400, "insufficient balance", detail="not enough available shares to sell"
                )
        clob_order_id = self._clob_order_id(account, spec, now)
        if clob_order_id in self.clob_ids:
            raise bad_body(
                f"an order with clob_order_id {clob_order_id} already exists", "ORDER_DUPLICATE"
            )
        # accepted: reserve and record
        if not system and not is_bonus:
            self._record_risk(account, spec.value, now)
        if spec.side == BUY:
            if is_bonus:
                account.bonus -= spec.maker_amount
                account.bonus_reserved += spec.maker_amount
            else:
                account.cash -= spec.maker_amount
                account.cash_reserved += spec.maker_amount
            reserved = spec.maker_amount
        else:
            pos = self._position(account, market, spec.outcome)
            pos.reserved += spec.maker_amount
            reserved = spec.maker_amount
        order = Order(
            id=str(uuid.uuid4()),
            user_id=account.user_id,
            market=market,
            outcome=spec.outcome,
            side=spec.side,
            order_type=spec.order_type,
            limit_cents=spec.limit_cents,
            size=spec.size,
            maker_amount=spec.maker_amount,
            taker_amount=spec.taker_amount,
            amount_based=spec.amount_based,
            reserved=reserved,
            funding=funding,
            seq=self._next_seq(),
            price_text=spec.price_text,
            source=spec.source,
            source_id=spec.source_id,
            salt=spec.salt,
            nonce=spec.nonce,
            fee_rate_bps=spec.fee_rate_bps,
            expiration=spec.expiration,
            notification_id=spec.notification_id,
            client_order_id=spec.client_order_id,
            is_bonus=is_bonus,
            take_profit=spec.take_profit,
            stop_loss=spec.stop_loss,
            created_ms=now,
            updated_ms=now,
        )
        order.clob_order_id = clob_order_id
        self.clob_ids.add(order.clob_order_id)
        self.orders[order.id] = order
        self.open_orders[order.id] = order
        account.orders.append(order)
        if spec.client_order_id is not None:
            account.client_ids[spec.client_order_id] = order
        if order.side == BUY and (order.take_profit is not None or order.stop_loss is not None):
            self._armed[order.id] = order
        if order.expiration:
            heapq.heappush(self._expiries, (order.expiration * 1000, order.seq, order))
        self.stats["orders"] += 1
        self._emit_order(order)
        delay = self.config.processing_delay_ms
        if delay == 0:
            while order.is_open and order.status != "live":
                self._step(order, now)
        else:
            order.next_step_ms = now + delay
            heapq.heappush(self._due, (order.next_step_ms, order.seq, order))
        return order

    def _check_risk(self, account: Account, value: int, now: int) -> None:
        rc = self.config.risk
        if rc.per_order is not None and value > int(rc.per_order * UNIT):
            raise risk(f"order value exceeds the per-order limit of {rc.per_order} USDC")
        if rc.per_minute is not None:
            while account.minute and account.minute[0] <= now - RISK_MINUTE_MS:
                account.minute.popleft()
            if len(account.minute) >= rc.per_minute:
                raise risk(f"more than {rc.per_minute} orders in one minute")
        day, month = _utc_keys(now)
        day_units = account.day_units if account.day_key == day else 0
        month_units = account.month_units if account.month_key == month else 0
        if rc.daily is not None and day_units + value > int(rc.daily * UNIT):
            raise risk(f"the daily limit of {rc.daily} USDC would be exceeded")
        if rc.monthly is not None and month_units + value > int(rc.monthly * UNIT):
            raise risk(f"the monthly limit of {rc.monthly} USDC would be exceeded")

    def _record_risk(self, account: Account, value: int, now: int) -> None:
        account.minute.append(now)
        day, month = _utc_keys(now)
        if account.day_key != day:
            account.day_key, account.day_units = day, 0
        if account.month_key != month:
            account.month_key, account.month_units = month, 0
        account.day_units += value
        account.month_units += value

    # -- lifecycle -------------------------------------------------------------

    def _step(self, order: Order, now: int) -> None:
        """One processing step: pending -> signing -> submitted -> live (then execute)."""
        if order.expiration and now >= order.expiration * 1000:
            self._finish(order, "cancelled", now, reason="expired")
            self.stats["expiries"] += 1
            return
        if not order.market.active:
            self._finish(order, "cancelled", now, reason="market closed")
            return
        nxt = {"pending": "signing", "signing": "submitted", "submitted": "live"}[order.status]
        order.status = nxt
        order.updated_ms = now
        if nxt == "submitted":
            order.submitted_ms = now
        self._emit_order(order)
        if nxt == "live":
            self._execute(order, now)
        elif self.config.processing_delay_ms:
            order.next_step_ms = now + self.config.processing_delay_ms
            heapq.heappush(self._due, (order.next_step_ms, order.seq, order))

    def _plan(self, order: Order) -> tuple[list[tuple[Order, int, int]], bool]:
        """Fills (maker, shares, A-price) an incoming order would make, and whether it completes."""
        market = order.market
        limit = order.a_price
        if order.a_side == BID:
            prices: range = range(1, limit + 1)
            book = market.asks
        else:
            prices = range(99, limit - 1, -1)
            book = market.bids
        plan: list[tuple[Order, int, int]] = []
        shares_left = order.open_shares
        usdc_left = order.reserved - order.usdc
        done = False
        for p in prices:
            level = book[p]
            if not level:
                continue
            own = p if order.outcome == "a" else 100 - p
            for maker in level:
                if order.amount_based:
                    # the most shares whose exact cost fits what is left; once the
                    # amount (not the maker) limits a fill, the order is spent
                    # (at most 1 unit of dust remains, refunded)
                    cap = usdc_left * 100 // own
                    if cap == 0:
                        done = True
                        break
                    n = min(maker.open_shares, cap)
                    usdc_left -= n * own // 100
                    plan.append((maker, n, p))
                    if n == cap:
                        done = True
                        break
                    continue
                else:
                    n = min(maker.open_shares, shares_left)
                    shares_left -= n
                plan.append((maker, n, p))
                if not order.amount_based and shares_left == 0:
                    done = True
                    break
            if done:
                break
        complete = (done or usdc_left == 0) if order.amount_based else shares_left == 0
        return plan, complete

    def _execute(self, order: Order, now: int) -> None:
        """The order is live: take what crosses; FOK fills entirely or is killed, limits rest."""
        plan, complete = self._plan(order)
        if order.order_type == FOK and not complete:
            self.stats["kills"] += 1
            self._finish(order, "cancelled", now, reason="killed")
            return
        for maker, n, p in plan:
            self._fill(order, maker, n, p, now)
        if order.amount_based:
            order.size = order.matched
            self._finish(order, "matched", now)
        elif order.open_shares == 0:
            self._finish(order, "matched", now)
        else:
            self._rest(order, now)

    def _rest(self, order: Order, now: int) -> None:
        book = order.market.bids if order.a_side == BID else order.market.asks
        book[order.a_price].append(order)
        order.resting = True
        self._changed_orders[order.id] = order
        self._touch(order.market, now)

    def _unrest(self, order: Order) -> None:
        if order.resting:
            book = order.market.bids if order.a_side == BID else order.market.asks
            book[order.a_price].remove(order)
            order.resting = False
            self._changed_orders[order.id] = order
            self._changed_markets.add(order.market.id)

    def _fill(self, taker: Order, maker: Order, n: int, price: int, now: int) -> None:
        """n shares at A-price ``price`` between an incoming order and a resting one."""
        market = taker.market
        bid, ask = (taker, maker) if taker.a_side == BID else (maker, taker)
        a_val = n * price // 100
        b_val = n * (100 - price) // 100
        if bid.outcome == "a":  # BUY a
            self._buy_fill(bid, n, a_val, now)
            if ask.outcome == "a":  # SELL a: transfer
                self._sell_fill(ask, n, a_val, now)
            else:  # BUY b: mint n sets
                self._buy_fill(ask, n, b_val, now)
                market.collateral += n
                self.house_usdc -= n - a_val - b_val
        elif ask.outcome == "a":  # SELL b vs SELL a: merge n sets
            self._sell_fill(bid, n, b_val, now)
            self._sell_fill(ask, n, a_val, now)
            market.collateral -= n
            self.house_usdc += n - a_val - b_val
        else:  # SELL b vs BUY b: transfer
            self._buy_fill(ask, n, b_val, now)
            self._sell_fill(bid, n, b_val, now)
        market.last_trade = price
        market.traded_units += a_val if taker.outcome == "a" else b_val
        market.updated_ms = now
        for o in (taker, maker):
            if not o.house:
                market.traders.add(o.user_id)
        self._fill_seq += 1
        self.stats["fills"] += 1
        tx = "0x" + keccak256(f"{self.instance_id}:fill:{self._fill_seq}".encode()).hex()
        for o in (taker, maker):
            if not o.house:
                o.tx_hashes.append(tx)
                o.updated_ms = now
        self._touch(market, now)
        if maker.open_shares == 0:
            self._finish(maker, "matched", now)
        else:
            self._emit_order(maker)
        if not taker.amount_based and taker.open_shares == 0:
            return  # the caller finishes it
        self._emit_order(taker)

    def _buy_fill(self, order: Order, n: int, pay: int, now: int) -> None:
        order.matched += n
        order.usdc += pay
        token = order.token_id
        if order.house:
            self.house_usdc -= pay
            self.house_shares[token] = self.house_shares.get(token, 0) + n
            return
        account = self.accounts[order.user_id]
        if order.funding == "bonus":
            account.bonus_reserved -= pay
        else:
            account.cash_reserved -= pay
        pos = self._position(account, order.market, order.outcome)
        if pos.shares == 0:
            pos.is_bonus = order.is_bonus
        pos.shares += n
        pos.cost += pay
        pos.updated_ms = now

    def _sell_fill(self, order: Order, n: int, receive: int, now: int) -> None:
        order.matched += n
        order.usdc += receive
        account = self.accounts[order.user_id]
        pos = self._position(account, order.market, order.outcome)
        removed = pos.cost * n // pos.shares
        pos.cost -= removed
        pos.realized += receive - removed
        pos.shares -= n
        pos.reserved -= n
        pos.updated_ms = now
        account.cash += receive

    def _finish(self, order: Order, status: str, now: int, *, reason: str | None = None) -> None:
        """Terminal transition (matched / cancelled): unrest, release what is left, publish."""
        self._changed_orders[order.id] = order
        self._unrest(order)
        order.status = status
        order.updated_ms = now
        self.open_orders.pop(order.id, None)
        if order.house:
            order.market.house_quotes.pop((order.a_side, order.a_price), None)
            order.market.book_ms = now
            return
        if status == "matched":
            order.matched_ms = now
        else:
            order.cancel_reason = reason
        account = self.accounts[order.user_id]
        if order.side == BUY:
            left = order.reserved - order.usdc
            if order.funding == "bonus":
                account.bonus_reserved -= left
                account.bonus += left
            else:
                account.cash_reserved -= left
                account.cash += left
        else:
            pos = self._position(account, order.market, order.outcome)
            pos.reserved -= order.size - order.matched
        if order.matched == 0:
            self._armed.pop(order.id, None)
        self._touch(order.market, now)
        self._emit_order(order)

    # -- cancel ------------------------------------------------------------------

    def cancel_order(self, user_id: str, order_id: str) -> dict[str, str]:
        """DELETE /orders/:id: only a live limit order of the caller."""
        with self._op() as now:
            order = self._own_order(user_id, order_id, code=None)
            if order.order_type == FOK:
                raise Rejected(
                    400,
                    "order cannot be cancelled",
                    code="ORDER_NOT_CANCELLABLE",
                    detail="FOK orders cannot be cancelled",
                )
            if order.status != "live":
                raise Rejected(
                    400,
                    "order cannot be cancelled",
                    code="ORDER_NOT_CANCELLABLE",
                    detail=f"only live orders can be cancelled (status {order.status})",
                )
            self._finish(order, "cancelled", now, reason="user")
            self.stats["cancels"] += 1
            return {"order_id": order.id, "status": "cancelled"}

    def _own_order(self, user_id: str, order_id: str, code: str | None) -> Order:
        self.account(user_id)
        try:
            key = str(uuid.UUID(order_id))
        except (ValueError, TypeError):
            key = ""
        order = self.orders.get(key)
        if order is None or order.user_id != user_id:
            raise Rejected(404, "order not found", code=code)
        return order

    # -- house ---------------------------------------------------------------------

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

    def _requote(self, market: MarketState, now: int) -> None:
        if market.mid is None or not market.active:
            for quote in list(market.house_quotes.values()):
                self._finish(quote, "cancelled", now)
            return
        wanted: dict[tuple[int, int], int] = {}
        for k in range(1, HOUSE_LEVELS + 1):
            if 1 <= market.mid - k <= 99:
                wanted[(BID, market.mid - k)] = self._house_target(market, k, market.mid - k)
            if 1 <= market.mid + k <= 99:
                wanted[(ASK, market.mid + k)] = self._house_target(market, k, market.mid + k)
        for key, quote in list(market.house_quotes.items()):
            if key not in wanted or quote.open_shares < wanted[key]:
                self._finish(quote, "cancelled", now)
        best_ask, best_bid = market.best_ask(), market.best_bid()
        for (side, price), shares in sorted(wanted.items()):
            if (side, price) in market.house_quotes or shares <= 0:
                continue
            if side == BID and best_ask is not None and best_ask <= price:
                continue
            if side == ASK and best_bid is not None and best_bid >= price:
                continue
            outcome = "a" if side == BID else "b"
            own = price if side == BID else 100 - price
            quote = Order(
                id=f"house-{self._next_seq()}",
                user_id=HOUSE,
                market=market,
                outcome=outcome,
                side=BUY,
                order_type=GTC,
                limit_cents=own,
                size=shares,
                seq=self._seq,
                source="house",
                status="live",
                created_ms=now,
                updated_ms=now,
            )
            market.house_quotes[(side, price)] = quote
            self.open_orders[quote.id] = quote
            self._rest(quote, now)
            self._touched.discard(market.id)

    def house_fill(self, order_id: str, shares: object) -> dict[str, Any]:
        """The house takes the other side of ``shares`` of a resting order, at its price."""
        with self._op() as now:
            order = self.orders.get(str(order_id))
            if order is None or order.house:
                raise Rejected(404, "order not found")
            if order.status != "live" or not order.resting:
                raise Rejected(
                    400, "order is not resting on the book", detail=f"status {order.status}"
                )
            number = _decimal({"shares": shares}, "shares")
            if number is None:
                raise bad_body("shares is required")
            units = int((number * UNIT).to_integral_value(ROUND_DOWN))
            if units <= 0:
                raise bad_body("shares must be positive")
            n = min(units, order.open_shares)
            outcome = ("b" if order.outcome == "a" else "a") if order.side == BUY else order.outcome
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
                status="live",
            )
            self._fill(counter, order, n, order.a_price, now)
            counter.status = "matched"
            return views.order_record(self, order)

    def set_price(self, market_id: str, price: object) -> dict[str, Any]:
        """Move the house's mid price of a market (cents on the 0.01 grid); it requotes at once."""
        with self._op() as now:
            market = self._market(market_id)
            number = _decimal({"price": price}, "price")
            if number is None:
                raise bad_body("price is required")
            cents = _cents(number, "price")
            if not market.active:
                raise bad_body("the market is not active")
            market.mid = cents
            market.updated_ms = now
            for quote in list(market.house_quotes.values()):
                self._finish(quote, "cancelled", now)
            self._touch(market, now)
            self._settle_touched(now)  # requote now, so the answer shows the new book
            return views.market_detail(self, market)

    # -- take profit / stop loss ---------------------------------------------------

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
            worst = self._fok_price(order.market, order.outcome, SELL, Decimal(shares) / UNIT, None)
            taker = shares * worst // 100
            spec = _Spec(
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

    # -- settlement ------------------------------------------------------------------

    def settle(self, market_id: str, winner: str) -> dict[str, Any]:
        """Resolve a market: cancel its open orders, pay 1 USDC per winning share, mark won/lost."""
        with self._op() as now:
            market = self._market(market_id)
            if winner not in ("a", "b"):
                raise bad_body('winner must be "a" or "b"')
            if not market.active:
                raise Rejected(400, "market already settled", code="MARKET_NOT_ACTIVE")
            for order in sorted(self.open_orders.values(), key=lambda o: o.seq):
                if order.market is market:
                    self._finish(order, "cancelled", now, reason="market settled")
            market.fx.status = "resolved"
            market.fx.winner = winner
            market.mid = None
            market.updated_ms = now
            self._changed_users.update(self.accounts)
            win_token = market.token(winner)
            lose_token = market.token("b" if winner == "a" else "a")
            paid = 0
            for account in self.accounts.values():
                for token in (win_token, lose_token):
                    pos = account.positions.get(token)
                    if pos is None or pos.shares == 0:
                        continue
                    if token == win_token:
                        account.cash += pos.shares
                        account.payouts += pos.shares
                        market.collateral -= pos.shares
                        paid += pos.shares
                        pos.realized += pos.shares - pos.cost
                    else:
                        pos.realized -= pos.cost
                    pos.shares = pos.reserved = pos.cost = 0
                    pos.updated_ms = now
            house_win = self.house_shares.pop(win_token, 0)
            self.house_shares.pop(lose_token, None)
            self.house_usdc += house_win
            market.collateral -= house_win
            settled = 0
            for order in self.orders.values():
                if order.market is not market or order.house or order.matched == 0:
                    continue
                wins = (order.outcome == winner) == (order.side == BUY)
                order.settlement_status = "won" if wins else "lost"
                order.settlement_units = order.matched if order.side == BUY and wins else 0
                order.settled_ms = now
                order.updated_ms = now
                if order.status == "matched":
                    order.status = "won" if wins else "lost"
                settled += 1
                self._emit_order(order)
            self._armed = {k: o for k, o in self._armed.items() if o.market is not market}
            event = market.event
            if all(self.markets[mid].fx.status == "resolved" for mid in event.market_ids):
                event.ended = True
                event.live = False
                event.updated_ms = now
            self.stats["settlements"] += 1
            self._touch(market, now)
            return {
                "market_id": market.id,
                "winner": winner,
                "payouts": views.dec(paid),
                "orders_settled": settled,
            }

    # -- deposits ----------------------------------------------------------------------

    def deposit(self, user_id: str, amount: object, *, bonus: bool = False) -> dict[str, Any]:
        """Credit a user's cash (or bonus) balance; counted as a deposit."""
        with self._op():
            account = self.account(user_id)
            number = _decimal({"amount": amount}, "amount")
            if number is None:
                raise bad_body("amount is required")
            scaled = number * UNIT
            if scaled != scaled.to_integral_value():
                raise bad_body(f"amount has more than 6 decimals: {amount}")
            units = int(scaled)
            if units <= 0:
                raise bad_body("amount must be positive")
            if bonus:
                account.bonus += units
            else:
                account.cash += units
            account.deposits += units
            self.deposits += units
            self._changed_users.add(account.user_id)
            return views.balance_record(account)

    # -- reads -------------------------------------------------------------------------------

    def list_events(
        self,
        *,
        league: str | None = None,
        sport: str | None = None,
        category: str | None = None,
        subcategory: str | None = None,
        live: bool | None = None,
        ended: bool | None = None,
        is_featured: bool | None = None,
        is_future: bool | None = None,
        status: str | None = None,
        sort_by: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> dict[str, Any]:
        with self._op():
            return views.list_events(
                self,
                league=league,
                sport=sport,
                category=category,
                subcategory=subcategory,
                live=live,
                ended=ended,
                is_featured=is_featured,
                is_future=is_future,
                status=status,
                sort_by=sort_by,
                limit=limit,
                offset=offset,
            )

    def _event(self, event_id: str) -> EventFixture:
        event = self.events.get(event_id) or self.events_by_slug.get(event_id)
        if event is None:
            raise Rejected(404, "Event not found")
        return event

    def event_detail(self, event_id: str) -> dict[str, Any]:
        with self._op():
            return {"event": views.event_detail(self, self._event(event_id))}

    def event_markets(self, event_id: str) -> dict[str, Any]:
        with self._op():
            event = self._event(event_id)
            markets = [views.event_market(self, self.markets[mid]) for mid in event.market_ids]
            return {"markets": markets, "count": len(markets)}

    def search_markets(self, q: str, limit: int = 20) -> dict[str, Any]:
        with self._op():
            return views.search_markets(self, q, limit)

    def market_detail(self, market_id: str) -> dict[str, Any]:
        with self._op():
            try:
                key = str(uuid.UUID(market_id))
            except ValueError:
                key = ""
            market = self.markets.get(key)
            if market is None:
                raise Rejected(404, "Market not found")
            return {"market": views.market_detail(self, market)}

    def orderbook(self, asset_id: str, *, allow_empty: bool = False) -> dict[str, Any] | None:
        """The Orderbook of a token, or None when it has no active book (unknown token too)."""
        with self._op() as now:
            found = self.tokens.get(asset_id)
            if found is None:
                return None
            market, outcome = found
            if not allow_empty and not market.has_book():
                return None
            return views.orderbook(market, outcome, now)

    def price_snapshot(self, asset_id: str) -> dict[str, Any] | None:
        """The price-topic payload of a token (None for an unknown token)."""
        with self._op() as now:
            found = self.tokens.get(asset_id)
            if found is None:
                return None
            return views.price_payload(found[0], found[1], now)

    def has_token(self, asset_id: str) -> bool:
        with self._lock:
            return asset_id in self.tokens

    def fee_rate(self, token_id: str) -> int | None:
        with self._lock:
            found = self.tokens.get(token_id)
            return None if found is None else found[0].fx.fee_rate_bps

    def wallet(self, user_id: str) -> dict[str, Any]:
        with self._lock:
            w = self.account(user_id).wallet
            return {
                "maker": w.maker,
                "signer": w.signer,
                "chain_id": w.chain_id,
                "signature_type": w.signature_type,
                "ctf_exchange": w.ctf_exchange,
                "neg_risk_exchange": w.neg_risk_exchange,
            }

    def list_orders(
        self, user_id: str, *, status: str | None = None, page: int = 1, page_size: int = 20
    ) -> dict[str, Any]:
        with self._op():
            account = self.account(user_id)
            orders = [o for o in reversed(account.orders) if status is None or o.status == status]
            chunk = orders[(page - 1) * page_size : page * page_size]
            return {
                "orders": [views.order_record(self, o) for o in chunk],
                "total_count": len(orders),
                "page": page,
                "page_size": page_size,
            }

    def order_detail(self, user_id: str, order_id: str) -> dict[str, Any]:
        with self._op():
            order = self._own_order(user_id, order_id, code="ORDER_NOT_FOUND")
            return {"order": views.order_record(self, order)}

    def positions(self, user_id: str, *, page: int = 1, per_page: int = 10) -> dict[str, Any]:
        with self._op() as now:
            account = self.account(user_id)
            held = sorted(
                (p for p in account.positions.values() if p.shares > 0),
                key=lambda p: (-p.updated_ms, p.id),
            )
            chunk = held[(page - 1) * per_page : page * per_page]
            return {
                "positions": [views.position_record(self, account, p, now) for p in chunk],
                "pagination": views.pagination(page, per_page, len(held)),
            }

    def portfolio_orders(
        self, user_id: str, *, side: str | None = None, page: int = 1, per_page: int = 10
    ) -> dict[str, Any]:
        with self._op():
            account = self.account(user_id)
            wanted = None if side is None else (BUY if side == "BUY" else SELL)
            orders = [o for o in reversed(account.orders) if wanted is None or o.side == wanted]
            chunk = orders[(page - 1) * per_page : page * per_page]
            return {
                "orders": [views.portfolio_order(o) for o in chunk],
                "pagination": views.pagination(page, per_page, len(orders)),
            }

    # -- assertions (tests, admin) ----------------------------------------------------------

    def order(self, order_id: str) -> dict[str, Any]:
        """Any order's record (no ownership check)."""
        with self._lock:
            order = self.orders.get(order_id)
            if order is None:
                raise Rejected(404, "order not found")
            return views.order_record(self, order)

    def balances(self, user_id: str) -> dict[str, Decimal]:
        """Exact balances: cash, cash_reserved, bonus, bonus_reserved, payouts, deposits."""
        with self._lock:
            return views.balance_record(self.account(user_id))

    def shares(self, user_id: str, token_id: str) -> tuple[Decimal, Decimal]:
        """(shares, reserved shares) a user holds of a token."""
        with self._lock:
            pos = self.account(user_id).positions.get(token_id)
            if pos is None:
                return Decimal(0), Decimal(0)
            return views.dec(pos.shares), views.dec(pos.reserved)

    def totals(self) -> dict[str, int]:
        """Money totals in units: users, house ledger, collateral, deposits."""
        with self._lock:
            users = sum(
                a.cash + a.cash_reserved + a.bonus + a.bonus_reserved
                for a in self.accounts.values()
            )
            return {
                "users": users,
                "house": self.house_usdc,
                "collateral": sum(m.collateral for m in self.markets.values()),
                "deposits": self.deposits,
                "payouts": sum(a.payouts for a in self.accounts.values()),
            }

    def check_invariants(self) -> list[str]:
        """Every violated invariant, described (empty when all hold)."""
        with self._lock:
            return self._violations()

    def _violations(self) -> list[str]:
        errors: list[str] = []
        cash_res: dict[str, int] = {}
        bonus_res: dict[str, int] = {}
        share_res: dict[tuple[str, str], int] = {}
        for order in self.open_orders.values():
            if order.house:
                continue
            if order.side == BUY:
                bucket = bonus_res if order.funding == "bonus" else cash_res
                bucket[order.user_id] = bucket.get(order.user_id, 0) + order.reserved - order.usdc
                if order.usdc > order.reserved:
                    errors.append(
                        f"order {order.id}: spent {order.usdc} > reserved {order.reserved}"
                    )
            else:
                key = (order.user_id, order.token_id)
                share_res[key] = share_res.get(key, 0) + order.size - order.matched
        users_total = 0
        supply: dict[str, int] = {}
        for account in self.accounts.values():
            uid = account.user_id
            buckets = {
                "cash": account.cash,
                "cash_reserved": account.cash_reserved,
                "bonus": account.bonus,
                "bonus_reserved": account.bonus_reserved,
            }
            errors.extend(f"user {uid}: {k} is negative ({v})" for k, v in buckets.items() if v < 0)
            want_cash, want_bonus = cash_res.get(uid, 0), bonus_res.get(uid, 0)
            if account.cash_reserved != want_cash:
                errors.append(f"user {uid}: cash_reserved {account.cash_reserved} != {want_cash}")
            if account.bonus_reserved != want_bonus:
                errors.append(
                    f"user {uid}: bonus_reserved {account.bonus_reserved} != {want_bonus}"
                )
            users_total += sum(buckets.values())
            for token, pos in account.positions.items():
                where = f"user {uid} token {token[:12]}"
                if pos.shares < 0 or pos.reserved < 0 or pos.reserved > pos.shares or pos.cost < 0:
                    errors.append(
                        f"{where}: shares {pos.shares} reserved {pos.reserved} cost {pos.cost}"
                    )
                want = share_res.get((uid, token), 0)
                if pos.reserved != want:
                    errors.append(f"{where}: reserved {pos.reserved} != open SELL orders {want}")
                supply[token] = supply.get(token, 0) + pos.shares
        for token, n in self.house_shares.items():
            if n < 0:
                errors.append(f"house holds {n} of {token[:12]}")
            supply[token] = supply.get(token, 0) + n
        collateral = 0
        for market in self.markets.values():
            collateral += market.collateral
            errors.extend(self._market_violations(market, supply))
        errors.extend(
            f"order {o.id}: live limit order not on the book"
            for o in self.open_orders.values()
            if o.status == "live" and o.order_type != FOK and not o.resting
        )
        errors.extend(
            f"order {o.id}: size_matched {o.matched} vs size {o.size} ({o.status})"
            for o in self.orders.values()
            if o.matched > o.size or (o.status == "matched" and o.matched != o.size)
        )
        total = users_total + self.house_usdc + collateral
        if total != self.deposits:
            errors.append(
                f"money: users {users_total} + house {self.house_usdc} + collateral {collateral}"
                f" = {total} != deposits {self.deposits}"
            )
        return errors

    def _market_violations(self, market: MarketState, supply: dict[str, int]) -> list[str]:
        errors = []
        sa, sb = supply.get(market.fx.token_id_a, 0), supply.get(market.fx.token_id_b, 0)
        if not sa == sb == market.collateral:
            errors.append(
                f"market {market.id}: supply a {sa}, b {sb}, collateral {market.collateral}"
            )
        for side, book in ((BID, market.bids), (ASK, market.asks)):
            for price, level in enumerate(book):
                if not level:
                    continue
                errors.extend(
                    f"market {market.id}: bad resting order {o.id} ({o.status})"
                    for o in level
                    if not (
                        o.status == "live"
                        and o.resting
                        and o.open_shares > 0
                        and o.a_side == side
                        and o.a_price == price
                        and o.id in self.open_orders
                    )
                )
        bid, ask = market.best_bid(), market.best_ask()
        if bid is not None and ask is not None and bid >= ask:
            errors.append(f"market {market.id}: crossed book {bid} >= {ask}")
        if not market.active and (bid is not None or ask is not None):
            errors.append(f"market {market.id}: resolved but has a book")
        return errors
