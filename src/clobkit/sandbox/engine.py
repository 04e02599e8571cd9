"""The sandbox engine's facade: the lock, the lifecycle of an operation and the public methods.

The jobs live in their own modules, each building on the one before:
``state`` (the records), ``parse`` (request bodies into order specs),
``ledger`` (balances, positions, risk, settlement), ``book`` (admission and
matching), ``house`` (the house liquidity provider and the exits) and
``invariants`` (the checks). The public methods answer typed values
(``records``: frozen snapshots; or live records to read under ``reading()``);
only the HTTP layer's ``views`` turns them into the API's JSON.

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

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from threading import RLock
from typing import TYPE_CHECKING, Any

from .. import WalletInfo
from ..core.spec import (
    CANCELLED,
    CODE_MARKET_NOT_ACTIVE,
    CODE_ORDER_NOT_FOUND,
    ERROR_EVENT_NOT_FOUND,
    ERROR_MARKET_NOT_FOUND,
    ERROR_ORDER_NOT_FOUND,
    LIST_STATUSES,
    OPEN_STATUSES,
    OUTCOME_A,
    OUTCOME_B,
    OUTCOMES,
    SALT_MAX,
)
from .config import SandboxConfig, UserConfig, load_config
from .errors import Rejected, bad_body
from .fixtures import EventFixture
from .house import House
from .invariants import violations
from .parse import check_client_order_id, parse_order, parse_raw
from .queries import search, select_events
from .records import (
    Balances,
    Cancelled,
    OrderBook,
    OrderRecord,
    Page,
    Placed,
    PriceSnapshot,
    Settlement,
    Totals,
)
from .snapshots import book_snapshot, order_record, price_snapshot
from .state import (
    BUY,
    HOUSE,
    SELL,
    Account,
    EngineEvent,
    MarketState,
    Order,
    Position,
    dec,
    derive_wallet,
    uuid_key,
)
from .walk import Walk

if TYPE_CHECKING:
    from .store import StateStore

__all__ = [
    "HOUSE",
    "LIST_STATUSES",
    "OPEN_STATUSES",
    "SALT_MAX",
    "Engine",
    "EngineEvent",
    "MarketState",
    "Order",
    "Rejected",
    "derive_wallet",
]


class Engine(House):
    """The whole service state of one sandbox. Thread-safe: every public method locks."""

    def __init__(
        self,
        config: SandboxConfig | Mapping[str, Any] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        store: StateStore | None = None,
    ) -> None:
        """``config``: loaded once here unless already a SandboxConfig; ``store``: a state
        file to restore from and commit every operation to (else memory)."""
        super().__init__(load_config(config), clock)
        self._lock = RLock()
        self._depth = 0
        self._store: StateStore | None = None  # set once restored or first saved
        self._listeners: list[Callable[[list[EngineEvent]], None]] = []
        walk = self.config.walk
        self._walk = None if walk is None else Walk(walk, self.config.seed)
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

    def _order_record(self, order: Order) -> OrderRecord:
        return order_record(order)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the lock while reading records the engine returned live (markets, positions)."""
        with self._lock:
            yield

    def user_config(self, user_id: str) -> UserConfig:
        with self._lock:
            return self.account(user_id).config

    # -- time ----------------------------------------------------------------

    def tick(self) -> None:
        """Advance processing and expire GTD orders whose time has come."""
        with self._op():
            pass

    def next_due(self) -> float | None:
        """Seconds of the engine's clock until its next processing step or GTD expiry
        falls due (0 when one is due now), ``None`` when none is waiting."""
        with self._lock:
            dues = [heap[0][0] for heap in (self._due, self._expiries) if heap]
            if not dues:
                return None
            return max(0, min(dues) - self._now_ms()) / 1000

    # -- placement -------------------------------------------------------------

    def place_order(self, user_id: str, body: Mapping[str, Any]) -> Placed:
        """POST /orders: validate, admit and process the order."""
        with self._op() as now:
            account = self.account(user_id)
            spec = parse_order(self, body, now)
            order = self._admit(account, spec, now)
            return Placed(order.id, order.notification_id)

    def place_raw_order(self, user_id: str, body: Mapping[str, Any]) -> Placed:
        """POST /orders/raw; a used ``client_order_id`` returns its order and places nothing."""
        with self._op() as now:
            account = self.account(user_id)
            if not isinstance(body, Mapping):
                raise bad_body("the body must be a JSON object")
            client_id = body.get("client_order_id")
            if client_id is not None:
                previous = account.client_ids.get(check_client_order_id(client_id))
                if previous is not None:
                    return Placed(previous.id, "")
            spec = parse_raw(self, body, now)
            order = self._admit(account, spec, now)
            return Placed(order.id, "")

    def cancel_order(self, user_id: str, order_id: str) -> Cancelled:
        """DELETE /orders/:id: only a live limit order of the caller."""
        with self._op() as now:
            return Cancelled(self._cancel(user_id, order_id, now).id)

    # -- admin: the house, prices, settlement, deposits ---------------------------------

    def house_fill(self, order_id: str, shares: object) -> OrderRecord:
        """The house takes the other side of ``shares`` of a resting order, at its price."""
        with self._op() as now:
            return order_record(self._house_take(order_id, shares, now))

    def set_price(self, market_id: str, price: object) -> MarketState:
        """Move the house's mid price of a market (cents on the 0.01 grid); it requotes at once.

        The market comes back live: read it under :meth:`reading`.
        """
        with self._op() as now:
            return self._set_mid(market_id, price, now)

    def walk(self) -> dict[str, Decimal]:
        """One step of the house's price walk (config ``walk``, ``walk.py``; a serving
        sandbox takes one every ``walk.every_seconds``): the markets that moved, to their
        new mid (USDC). Nothing moves when the walk is off (``walk: null``)."""
        with self._op() as now:
            if self._walk is None:
                return {}
            moved = self._walk_step(self._walk, now)
            return {market_id: Decimal(mid) / 100 for market_id, mid in moved.items()}

    def settle(self, market_id: str, winner: str) -> Settlement:
        """Resolve a market: cancel its open orders, pay 1 USDC per winning share, mark won/lost."""
        with self._op() as now:
            market = self._market(market_id)
            if winner not in OUTCOMES:
                raise bad_body(f'winner must be "{OUTCOME_A}" or "{OUTCOME_B}"')
            if not market.active:
                raise Rejected(400, "market already settled", code=CODE_MARKET_NOT_ACTIVE)
            for order in sorted(self.open_orders.values(), key=lambda o: o.seq):
                if order.market is market:
                    self._finish(order, CANCELLED, now, reason="market settled")
            market.fx.status = "resolved"
            market.fx.winner = winner
            market.mid = None
            market.updated_ms = now
            paid, settled = self._pay_out(market, winner, now)
            event = market.event
            if all(self.markets[mid].fx.status == "resolved" for mid in event.market_ids):
                event.ended = True
                event.live = False
                event.updated_ms = now
            self.stats["settlements"] += 1
            self._touch(market, now)
            return Settlement(market.id, winner, dec(paid), settled)

    def deposit(self, user_id: str, amount: object, *, bonus: bool = False) -> Balances:
        """Credit a user's cash (or bonus) balance; counted as a deposit."""
        with self._op():
            account = self.account(user_id)
            self._credit(account, amount, bonus=bonus)
            return _balances(account)

    # -- reads -------------------------------------------------------------------------------
    # Events, markets and positions come back as live records: read them under reading().

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
    ) -> Page[EventFixture]:
        """The events passing the filters, sorted; ``limit`` of them from ``offset``."""
        with self._op() as now:
            events = select_events(
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
            )
            chunk = events[offset : offset + limit]
            return Page(chunk, len(events), offset // limit + 1, limit, now)

    def event(self, event_id: str) -> EventFixture:
        """An event by id (any spelling ``uuid_key`` reads) or by its exact slug."""
        with self._op():
            event = (
                self.events.get(event_id)
                or self.events_by_slug.get(event_id)
                or self.events.get(uuid_key(event_id))  # the spellings markets/:id reads
            )
            if event is None:
                raise Rejected(404, ERROR_EVENT_NOT_FOUND)
            return event

    def event_markets(self, event_id: str) -> list[MarketState]:
        """An event's markets, in its order."""
        with self._op():
            return [self.markets[mid] for mid in self.event(event_id).market_ids]

    def search_markets(self, q: str, limit: int = 20) -> list[MarketState]:
        """Markets matching every word of ``q``, active and busiest first."""
        with self._op():
            return search(self, q, limit)

    def market(self, market_id: str) -> MarketState:
        """A market by id (404 ``market not found`` otherwise)."""
        with self._op():
            market = self.markets.get(uuid_key(market_id))
            if market is None:
                raise Rejected(404, ERROR_MARKET_NOT_FOUND)
            return market

    def orderbook(self, asset_id: str, *, allow_empty: bool = False) -> OrderBook | None:
        """A token's book, or None when it has no active book (unknown token too)."""
        with self._op() as now:
            found = self.tokens.get(asset_id)
            if found is None:
                return None
            market, outcome = found
            if not allow_empty and not market.has_book():
                return None
            return book_snapshot(market, outcome, now)

    def price_snapshot(self, asset_id: str) -> PriceSnapshot | None:
        """A token's prices (None for an unknown token)."""
        with self._op() as now:
            found = self.tokens.get(asset_id)
            if found is None:
                return None
            return price_snapshot(found[0], found[1], now)

    def has_token(self, asset_id: str) -> bool:
        with self._lock:
            return asset_id in self.tokens

    def fee_rate(self, token_id: str) -> int | None:
        with self._lock:
            found = self.tokens.get(token_id)
            return None if found is None else found[0].fx.fee_rate_bps

    def wallet(self, user_id: str) -> WalletInfo:
        """The user's wallet (maker, signer, chain, exchange addresses)."""
        with self._lock:
            return self.account(user_id).wallet

    def list_orders(
        self, user_id: str, *, status: str | None = None, page: int = 1, page_size: int = 20
    ) -> Page[OrderRecord]:
        """A user's orders, newest first, optionally of one status."""
        with self._op() as now:
            account = self.account(user_id)
            orders = [o for o in reversed(account.orders) if status is None or o.status == status]
            chunk = orders[(page - 1) * page_size : page * page_size]
            return Page([order_record(o) for o in chunk], len(orders), page, page_size, now)

    def order_detail(self, user_id: str, order_id: str) -> OrderRecord:
        """One of the user's orders (404 ``ORDER_NOT_FOUND`` for anyone else's)."""
        with self._op():
            return order_record(self._own_order(user_id, order_id, code=CODE_ORDER_NOT_FOUND))

    def positions(self, user_id: str, *, page: int = 1, per_page: int = 10) -> Page[Position]:
        """A user's open positions, most recently changed first (live records)."""
        with self._op() as now:
            account = self.account(user_id)
            held = sorted(
                (p for p in account.positions.values() if p.shares > 0),
                key=lambda p: (-p.updated_ms, p.id),
            )
            chunk = held[(page - 1) * per_page : page * per_page]
            return Page(chunk, len(held), page, per_page, now)

    def portfolio_orders(
        self, user_id: str, *, side: str | None = None, page: int = 1, per_page: int = 10
    ) -> Page[OrderRecord]:
        """A user's orders for the portfolio view, newest first, optionally of one side."""
        with self._op() as now:
            account = self.account(user_id)
            wanted = None if side is None else (BUY if side == "BUY" else SELL)
            orders = [o for o in reversed(account.orders) if wanted is None or o.side == wanted]
            chunk = orders[(page - 1) * per_page : page * per_page]
            return Page([order_record(o) for o in chunk], len(orders), page, per_page, now)

    # -- assertions (tests, admin) ----------------------------------------------------------

    def order(self, order_id: str) -> OrderRecord:
        """Any order (no ownership check)."""
        with self._lock:
            order = self.orders.get(order_id)
            if order is None:
                raise Rejected(404, ERROR_ORDER_NOT_FOUND)
            return order_record(order)

    def balances(self, user_id: str) -> Balances:
        """A user's exact balances."""
        with self._lock:
            return _balances(self.account(user_id))

    def shares(self, user_id: str, token_id: str) -> tuple[Decimal, Decimal]:
        """(shares, reserved shares) a user holds of a token."""
        with self._lock:
            pos = self.account(user_id).positions.get(token_id)
            if pos is None:
                return Decimal(0), Decimal(0)
            return dec(pos.shares), dec(pos.reserved)

    def totals(self) -> Totals:
        """Money totals in units: users, house ledger, collateral, deposits, payouts."""
        with self._lock:
            users = sum(
                a.cash + a.cash_reserved + a.bonus + a.bonus_reserved
                for a in self.accounts.values()
            )
            return Totals(
                users=users,
                house=self.house_usdc,
                collateral=sum(m.collateral for m in self.markets.values()),
                deposits=self.deposits,
                payouts=sum(a.payouts for a in self.accounts.values()),
            )

    def check_invariants(self) -> list[str]:
        """Every violated invariant, described (empty when all hold)."""
        with self._lock:
            return violations(self)


def _balances(account: Account) -> Balances:
    return Balances(
        cash=dec(account.cash),
        cash_reserved=dec(account.cash_reserved),
        bonus=dec(account.bonus),
        bonus_reserved=dec(account.bonus_reserved),
        payouts=dec(account.payouts),
        deposits=dec(account.deposits),
    )
