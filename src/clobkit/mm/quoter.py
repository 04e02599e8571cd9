"""The ``Quoter``: keeps a ladder of resting orders on the service equal to the wanted one.

Every new order is built before it is sent and tracked from then on by the
``client_order_id`` it carries (the service's idempotency key, which the
order record echoes as ``order_source_id``), and on a V1 wallet also by its
precomputed ``clob_order_id``; on V2/V3 wallets that id signs the service's
timestamp and is learnt from the stream or REST. So the stream's record of an
order is recognised even when it arrives before the POST's answer. A place or
cancel whose outcome is unknown (timeout, 5xx, 429, dropped connection) is
resolved from REST before anything is sent again, and a place is only ever
sent again under its own key; after the stream's ``Reconnected`` marker the
live orders and fills are re-read. See docs/market-making.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Iterable, Sequence
from decimal import Decimal
from types import TracebackType
from typing import NamedTuple, Protocol, TypeVar

from .._core import from_units, to_units
from .._spec import SIDES, UNIT
from ..client import (
    UNKNOWN_OUTCOME,
    AsyncClient,
    PreparedRawOrder,
    Stream,
    book_topic,
    orders_topic,
    within,
)
from ..errors import (
    ApiError,
    NotFound,
    OrderBookNotFound,
    TransportError,
    ValidationError,
)
from ..models import FINAL_STATUSES, OPEN_STATUSES, Market, Order, Reconnected, StreamMessage
from .book import BookMirror
from .ladder import Level, Limits, Live, Quote, crosses, diff, read_ladder

__all__ = ["Fill", "Quoter", "RequoteReport"]

T = TypeVar("T")

log = logging.getLogger("clobkit.mm")

Number = Decimal | str | int | float
#: Failures after which a request may or may not have taken effect.
UNKNOWN = UNKNOWN_OUTCOME

_KEEP_DONE = 10_000  # finished orders remembered, so late stream messages still count fills
_KEEP_UNCLAIMED = 1_000  # records of unknown orders held while places are in flight

# states of a tracked order
PLACING = "placing"  # POST in flight
PLACE_UNKNOWN = "place_unknown"  # POST failed without a definite answer
OPEN = "open"  # on the service (pending .. live)
CANCELLING = "cancelling"  # DELETE in flight
CANCEL_UNKNOWN = "cancel_unknown"  # DELETE failed, or the order was not cancellable yet
DONE = "done"  # matched, cancelled, won or lost; or never placed


class RequoteReport(NamedTuple):
    """What one ``requote`` did: orders ``placed``, ``cancelled`` and ``kept`` (``Order``s)."""

    placed: list[Order]
    cancelled: list[Order]
    kept: list[Order]


class Fill(NamedTuple):
    """Shares of one of the quoter's orders that traded (``price`` USDC per share)."""

    order_id: str
    side: str
    price: Decimal
    shares: Decimal


class _Tracked:
    """One order of the quoter, from before its POST until it is done."""

    __slots__ = (
        "clob_order_id",
        "key",
        "matched",
        "order",
        "order_id",
        "prepared",
        "price",
        "sent_at",
        "shares",
        "side",
        "state",
    )

    def __init__(
        self,
        key: str,
        clob_order_id: str,
        side: int,
        price: int,
        shares: int,
        state: str,
        prepared: PreparedRawOrder | None = None,
    ) -> None:
        #: the client_order_id it was sent with; ``id:<order_id>`` for an adopted order
        self.key = key
        self.clob_order_id = clob_order_id  # "" until known (V2/V3: from the service)
        self.order_id: str | None = None
        self.side = side
        self.price = price  # units of USDC per share
        self.shares = shares  # units
        self.matched = 0  # units
        self.state = state
        self.order: Order | None = None
        self.prepared = prepared
        self.sent_at = time.time()

    def __repr__(self) -> str:
        return (
            f"_Tracked({SIDES[self.side]} {from_units(self.price)} x {from_units(self.shares)}"
            f" matched {from_units(self.matched)}, {self.state}, id={self.order_id})"
        )


class Host(Protocol):
    """What a ``Desk`` does for the quoters it hosts (``quoter._host``): the stream,
    the shared reads, the request budget and the limits over all of them."""

    async def request(self, endpoint: str, call: Awaitable[T]) -> T: ...
    async def open(self, q: Quoter) -> None: ...
    async def attach(self, q: Quoter) -> None: ...
    def detach(self, q: Quoter) -> None: ...
    async def held(self, q: Quoter) -> int: ...
    async def listed(self) -> list[Order]: ...
    async def subscribe_orders(self, user_id: str) -> None: ...
    async def admit(self, q: Quoter, levels: Sequence[Level], union: Sequence[Level]) -> bool: ...
    async def admit_places(self, q: Quoter, place: Sequence[Level]) -> None: ...
    def settle(self, q: Quoter) -> None: ...


class Quoter:
    """Keeps the wanted ladder of ``outcome`` (``a``/``b``) of ``market_id`` on the service.

    ``async with Quoter(client, market_id, "a") as q: await q.requote([...])``.
    On enter it reads the market (tokens, ``neg_risk``, minimum order size, fee
    rate), subscribes to the user's order topic and the outcome's book topic,
    and adopts the live orders of that market and outcome. On exit it cancels
    its open orders (unless ``cancel_on_exit`` is false) and closes its stream.

    It runs on every exchange version of the wallet (``exchange_version``): on V1
    each order's ``clob_order_id`` is precomputed; on V2/V3 it signs the service's
    timestamp and is learnt from the order's record (stream, else REST) before
    ``requote`` returns. Either way each order is tracked by its ``client_order_id``.

    Limits, checked before anything is sent (``QuoteRefused``): at most
    ``max_open_orders`` quotes; ``max_position`` shares held if every quote
    filled; ``max_notional`` USDC over the ladder. ``user_id`` (optional) names
    the account; without it the quoter learns it from the first order it sees.
    """

    def __init__(
        self,
        client: AsyncClient,
        market_id: str,
        outcome: str,
        *,
        max_open_orders: int = 50,
        max_position: Number | None = None,
        max_notional: Number | None = None,
        cancel_on_exit: bool = True,
        user_id: str | None = None,
    ) -> None:
        if outcome not in ("a", "b"):
            raise ValidationError("outcome", outcome, "must be 'a' or 'b'")
        if not isinstance(market_id, str) or not market_id.strip():
            raise ValidationError("market_id", market_id, "must be a non-empty string")
        if (
            isinstance(max_open_orders, bool)
            or not isinstance(max_open_orders, int)
            or max_open_orders < 1
        ):
            raise ValidationError("max_open_orders", max_open_orders, "must be a positive int")
        self._client = client
        self.market_id = market_id
        self.outcome = outcome
        self.max_open_orders = max_open_orders
        self._max_position = (
            None if max_position is None else to_units(max_position, "max_position")
        )
        self._max_notional = (
            None if max_notional is None else to_units(max_notional, "max_notional")
        )
        self.cancel_on_exit = cancel_on_exit
        self.user_id = user_id
        #: The market as read on enter.
        self.market: Market | None = None
        self.token_id = ""
        self.neg_risk = False
        self.fee_rate_bps = 0
        #: The market's minimum order value in USDC (from the book), when known.
        self.min_order_size: Decimal | None = None
        self.book = BookMirror("")
        #: Fills seen so far, oldest first (the last 10,000).
        self.fills: deque[Fill] = deque(maxlen=10_000)
        #: Reconnects of the stream seen so far.
        self.reconnects = 0
        #: Fills seen so far (all of them; ``fills`` keeps the last 10,000).
        self.fill_count = 0
        self._position = 0
        self._live: dict[str, _Tracked] = {}  # key -> order not done
        self._by_clob: dict[str, _Tracked] = {}
        self._by_id: dict[str, _Tracked] = {}
        self._by_client: dict[str, _Tracked] = {}  # client_order_id -> order sent
        # stream records of this outcome's orders that nothing claims yet, kept while a
        # place is in flight: its answer may name one of them (a service whose records
        # do not echo the client_order_id)
        self._unclaimed: dict[str, Order] = {}
        self._learnt = asyncio.Event()  # a clob_order_id became known
        self._done: deque[_Tracked] = deque()
        self._errors: list[ApiError] = []
        self._lock = asyncio.Lock()
        self._stale = False  # the stream reconnected: re-read before trusting the view
        self._stream: Stream | None = None
        self._pump: asyncio.Task[None] | None = None
        self._resync: asyncio.Task[None] | None = None
        self._acked: asyncio.Event | None = None
        self._orders_topic: str | None = None
        self._book_topic = ""
        #: Rounds of REST reads (with backoff, about 0.01 to 0.5 s) resolving unknown outcomes.
        self.resolve_attempts = 20
        #: Seconds a requote waits for the stream to name a new V2/V3 order's
        #: ``clob_order_id`` before reading it over REST.
        self.id_wait = 0.25
        #: The wallet's exchange version (1, 2 or 3), known after enter.
        self.exchange_version = 0
        #: Places and cancels sent again after REST showed they had not happened.
        self.retries = 0
        #: The desk this quoter runs on (``Desk.quoter``), else ``None``: own stream.
        self._host: Host | None = None
        self.event_id: str | None = None

    def __repr__(self) -> str:
        return (
            f"Quoter(market_id={self.market_id!r}, outcome={self.outcome!r}, "
            f"open={len(self._live)}, position={self.position})"
        )

    # -- the view ---------------------------------------------------------------

    @property
    def open_orders(self) -> list[Order]:
        """The quoter's live orders on the service (``Order`` with ``clob_order_id``)."""
        return [
            t.order
            for t in self._live.values()
            if t.state in (OPEN, CANCELLING, CANCEL_UNKNOWN) and t.order is not None
        ]

    @property
    def position(self) -> Decimal:
        """Shares of the outcome held: the holding read on enter plus the fills since."""
        return from_units(self._position)

    @property
    def pending(self) -> int:
        """Orders whose place or cancel is still unresolved (0 after a requote returns)."""
        return sum(1 for t in self._live.values() if t.state not in (OPEN,))

    def _limits(self) -> Limits:
        low = None if self.min_order_size is None else to_units(self.min_order_size, "min")
        return Limits(self.max_open_orders, self._max_position, self._max_notional, low)

    # -- lifecycle -----------------------------------------------------------------

    async def _req(self, endpoint: str, call: Awaitable[T]) -> T:
        """A request to the service: on a desk, within its budget and counted."""
        host = self._host
        if host is None:
            return await call
        return await host.request(endpoint, call)

    async def __aenter__(self) -> Quoter:
        client = self._client
        host = self._host
        market = await self._req("GET /markets/:id", client.get_market(self.market_id))
        self.market = market  # (the call above caches tokens and neg_risk)
        self.market_id = market.id
        self.event_id = market.event_id
        await self._req("prepare", client.prepare([market.id]))  # wallet (hasher), fee rates
        # both cached by prepare(): no request. V1: ids precomputed; V2/V3: learnt
        # from the service (tracked by client_order_id)
        self.exchange_version = await client.exchange_version()
        info = await client.market_info(market.id)
        self.token_id = info.token(self.outcome)
        self.neg_risk = info.neg_risk
        self.fee_rate_bps = await self._req("GET /fee-rate", client.get_fee_rate(self.token_id))
        self.book = BookMirror(self.token_id)
        with contextlib.suppress(OrderBookNotFound):
            book = await self._req("GET /orderbook", client.get_orderbook(self.token_id))
            self.min_order_size = book.min_order_size
            self.book.apply(
                {
                    "bids": [{"price": str(lv.price), "size": str(lv.size)} for lv in book.bids],
                    "asks": [{"price": str(lv.price), "size": str(lv.size)} for lv in book.asks],
                    "hash": book.hash,
                    "min_order_size": book.min_order_size,
                }
            )
        if self.user_id is None and host is None:  # a desk learns it once for all
            page = await self._req("GET /orders", client.list_orders(page_size=1))
            if page.orders:
                self.user_id = page.orders[0].user_id
        self._book_topic = book_topic(self.token_id)
        if self.user_id is not None:
            self._orders_topic = orders_topic(self.user_id)
        if host is not None:  # the desk's stream hands this quoter its messages
            await host.attach(self)
        else:
            topics = [self._book_topic]
            if self._orders_topic is not None:
                topics.append(self._orders_topic)
            self._stream = client.stream(topics, backoff=0.05, backoff_cap=1.0)
            await self._stream.start()
            self._pump = asyncio.create_task(self._consume(), name="clobkit-quoter")
        try:
            if host is not None:
                self._position = await host.held(self)
                listed = await host.listed()
            else:
                self._position = await self._held()
                listed = None
            async with self._lock:
                await self._reconcile(listed)  # adopt what is live, now that updates are heard
                self._settle()
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.cancel_on_exit:
                await self.cancel_all()
        finally:
            await self._close()

    async def _close(self) -> None:
        if self._host is not None:
            self._host.detach(self)
        for task in (self._resync, self._pump):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._stream is not None:
            await self._stream.close()

    async def _held(self) -> int:
        async for pos in self._client.iter_positions():
            if pos.token_id == self.token_id or (
                pos.token_id is None
                and pos.market_id == self.market_id
                and pos.raw_outcome == self.outcome
            ):
                return to_units(pos.shares or 0, "shares")
        return 0

    # -- the stream ----------------------------------------------------------------------

    async def _consume(self) -> None:
        assert self._stream is not None
        async for item in self._stream:
            self._on_item(item)

    def _on_item(self, item: StreamMessage | Reconnected) -> None:
        """Bookkeeping of one stream item (order update, book, reconnect marker)."""
        if type(item) is StreamMessage:
            if item.topic == self._book_topic:
                if item.type == "data" or item.type == "snapshot":
                    self.book.apply(item.data)
                return
            order = item.order
            if order is None:
                if item.type == "subscribed" and self._acked is not None:
                    self._acked.set()
                return
            t = self._match(order)
            if t is None:
                if order.market_id == self.market_id and order.outcome == self.outcome:
                    self._unknown(order)
                return
            self._apply(t, order)
        elif type(item) is Reconnected:
            self.reconnects += 1
            self._stale = True
            if self._resync is None or self._resync.done():
                self._resync = asyncio.ensure_future(self._resync_after_reconnect())

    async def _resync_after_reconnect(self) -> None:
        try:
            async with self._lock:
                if self._stale:
                    await self._reconcile()
        except Exception as exc:  # the next requote or reconcile tries again
            self._stale = True
            log.warning("re-reading orders after a reconnect failed: %s", exc)

    # -- bookkeeping -------------------------------------------------------------------

    def _match(self, order: Order) -> _Tracked | None:
        """The tracked order a record is about: by ``id``, then by the client's key
        the record echoes (``order_source_id``), then by ``clob_order_id``."""
        t = self._by_id.get(order.id)
        if t is None:
            source = order.order_source_id
            t = self._by_client.get(source) if source else None
            if t is None:
                clob = order.clob_order_id
                t = self._by_clob.get(clob) if clob else None
        return t

    def _in_flight(self) -> bool:
        """Whether a place of ours has no ``order_id`` yet (its record could come first)."""
        return any(
            t.order_id is None and (t.state == PLACING or t.state == PLACE_UNKNOWN)
            for t in self._live.values()
        )

    def _unknown(self, order: Order) -> None:
        """A record of this market and outcome that no tracked order claims: held while
        a place is in flight (its answer may name it), else adopted when open."""
        if self._in_flight():
            held = self._unclaimed.get(order.id)
            if held is None or (order.size_matched or 0) >= (held.size_matched or 0):
                self._unclaimed[order.id] = order
                while len(self._unclaimed) > _KEEP_UNCLAIMED:
                    del self._unclaimed[next(iter(self._unclaimed))]
        elif order.status in OPEN_STATUSES:
            self._adopt(order)

    def _claim(self, t: _Tracked, order_id: str) -> None:
        """``t`` learnt its ``order_id``: index it, and take a record held for it."""
        t.order_id = order_id
        self._by_id[order_id] = t
        held = self._unclaimed.pop(order_id, None)
        if held is not None:
            self._apply(t, held)

    def _settle_unclaimed(self) -> None:
        """Once no place is in flight, held records belong to nobody of ours: adopt
        the open ones (orders placed elsewhere), drop the rest."""
        if not self._unclaimed or self._in_flight():
            return
        held, self._unclaimed = self._unclaimed, {}
        for order in held.values():
            if self._match(order) is None and order.status in OPEN_STATUSES:
                self._adopt(order)

    def _apply(self, t: _Tracked, order: Order) -> None:
        """Take an order record (stream or REST) into ``t``: ids, fills, status."""
        if t.order_id is None and order.id:
            self._claim(t, order.id)
        if not t.clob_order_id and order.clob_order_id:
            t.clob_order_id = order.clob_order_id
            self._by_clob[t.clob_order_id] = t
            self._learnt.set()
        matched = order.size_matched
        newer = True
        if matched is not None:
            units = int(matched * UNIT)
            if units > t.matched:
                delta = units - t.matched
                t.matched = units
                self._position += delta if t.side == 0 else -delta
                self.fills.append(
                    Fill(order.id, SIDES[t.side], from_units(t.price), from_units(delta))
                )
                self.fill_count += 1
            elif units < t.matched:
                newer = False  # an older record than one already seen
        status = order.status
        if t.state == DONE:
            if newer and status in FINAL_STATUSES:
                t.order = order
            return
        if newer:
            t.order = order
        if status in FINAL_STATUSES:
            self._finish(t)
        elif status in OPEN_STATUSES and (t.state == PLACING or t.state == PLACE_UNKNOWN):
            t.state = OPEN

    def _adopt(self, order: Order) -> _Tracked:
        """Track a live order found on the service (placed before, or elsewhere)."""
        side = 0 if order.side == "BUY" else 1
        price = order.limit_price if order.limit_price is not None else order.clob_price
        t = _Tracked(
            f"id:{order.id}",
            order.clob_order_id or "",
            side,
            to_units(price or 0, "price"),
            to_units(order.original_size or 0, "original_size"),
            OPEN,
        )
        t.order_id = order.id
        t.matched = to_units(order.size_matched or 0, "size_matched")
        t.order = order
        self._by_id[order.id] = t
        if t.clob_order_id:
            self._by_clob[t.clob_order_id] = t
        self._live[t.key] = t
        if self.user_id is None and order.user_id:
            self.user_id = order.user_id
        return t

    def _finish(self, t: _Tracked) -> None:
        t.state = DONE
        t.prepared = None
        self._live.pop(t.key, None)
        self._done.append(t)
        while len(self._done) > _KEEP_DONE:
            self._unindex(self._done.popleft())

    def _unindex(self, t: _Tracked) -> None:
        if t.clob_order_id:
            self._by_clob.pop(t.clob_order_id, None)
        if t.order_id is not None:
            self._by_id.pop(t.order_id, None)
        self._by_client.pop(t.key, None)

    def _forget(self, t: _Tracked) -> None:
        """A place the service refused: the order never existed."""
        t.state = DONE
        self._live.pop(t.key, None)
        self._unindex(t)

    def _synthesised(self, t: _Tracked) -> Order:
        assert t.order_id is not None
        price = from_units(t.price)
        return Order(
            id=t.order_id,
            user_id=self.user_id,
            market_id=self.market_id,
            outcome=self.outcome,
            status="live",
            side=SIDES[t.side],
            order_type="GTC",
            order_source_id=t.key,
            clob_order_id=t.clob_order_id or None,
            original_size=from_units(t.shares),
            size_matched=from_units(t.matched),
            clob_price=price,
            limit_price=price,
        )

    # -- requests ------------------------------------------------------------------------

    async def _prepare(self, level: Level) -> _Tracked:
        prepared = await self._client.prepare_raw_order_amounts(  # caches warm: no request
            self.market_id, self.outcome, level.side, level.maker, level.taker, order_type="GTC"
        )
        result = prepared.result
        t = _Tracked(
            result.client_order_id,
            result.clob_order_id,  # precomputed on V1, "" on V2/V3
            level.side,
            level.price,
            level.shares,
            PLACING,
            prepared,
        )
        # tracked before the POST: the stream's record of it is recognised by the
        # key it echoes (order_source_id) or, on V1, by its precomputed hash
        self._by_client[t.key] = t
        if t.clob_order_id:
            self._by_clob[t.clob_order_id] = t
        self._live[t.key] = t
        return t

    async def _send_place(self, t: _Tracked) -> None:
        assert t.prepared is not None
        t.sent_at = time.time()
        try:
            result = await self._req("POST /orders", self._client.post_raw_order(t.prepared))
        except UNKNOWN as exc:
            log.info("place %s: outcome unknown (%s)", t.key, exc)
            if t.state == PLACING:
                t.state = PLACE_UNKNOWN
            return
        except ApiError as exc:
            if exc.code == "ORDER_DUPLICATE":  # it exists: find it
                if t.state == PLACING:
                    t.state = PLACE_UNKNOWN
                return
            if t.state in (PLACING, PLACE_UNKNOWN):
                self._forget(t)
                self._errors.append(exc)
            return
        if t.order_id is None:
            self._claim(t, result.order_id)
        if t.state == PLACING or t.state == PLACE_UNKNOWN:
            t.state = OPEN
        if t.order is None:
            t.order = self._synthesised(t)
        if self.user_id is None:
            await self._learn_user(t, result.order_id)

    async def _send_cancel(self, t: _Tracked) -> None:
        assert t.order_id is not None
        if t.state == DONE:
            return
        t.state = CANCELLING
        try:
            await self._req("DELETE /orders/:id", self._client.cancel_order(t.order_id))
        except (TransportError, ApiError) as exc:
            # unknown outcome, or not cancellable now (filled, not live yet): read it
            log.info("cancel %s: %s", t.order_id, exc)
            if t.state == CANCELLING:
                t.state = CANCEL_UNKNOWN
            return
        if t.state != DONE:
            if t.order is not None:
                t.order = _with_status(t.order, "cancelled")
            self._finish(t)

    async def _learn_user(self, t: _Tracked, order_id: str) -> None:
        """Subscribe to the user's order topic once the first order names the user."""
        order = await self._req("GET /orders/:id", self._client.get_order(order_id))
        self._apply(t, order)
        if self.user_id is not None or order.user_id is None:
            return
        if self._host is not None:
            self.user_id = order.user_id
            self._orders_topic = orders_topic(order.user_id)
            await self._host.subscribe_orders(order.user_id)
        elif self._stream is not None:
            self.user_id = order.user_id
            self._orders_topic = orders_topic(order.user_id)
            self._acked = asyncio.Event()
            await self._stream.subscribe(self._orders_topic)
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._acked.wait(), 1.0)
        else:
            return
        self._stale = True  # what happened before the subscription is read from REST

    # -- resolution ------------------------------------------------------------------------

    async def _resolve(self) -> None:
        """Settle every place and cancel of unknown outcome from REST, re-sending only
        what REST shows was not done. Raises the last failure if it cannot."""
        last: Exception | None = None
        for attempt in range(self.resolve_attempts):
            places = [t for t in self._live.values() if t.state == PLACE_UNKNOWN]
            cancels = [t for t in self._live.values() if t.state == CANCEL_UNKNOWN]
            if not places and not cancels:
                self._settle_unclaimed()
                return
            try:
                if places:
                    await self._resolve_places(places)
                if cancels:
                    await self._resolve_cancels(cancels)
            except UNKNOWN as exc:
                last = exc
            if any(t.state in (PLACE_UNKNOWN, CANCEL_UNKNOWN) for t in self._live.values()):
                await asyncio.sleep(min(0.5, 0.01 * 2**attempt))
        if any(t.state in (PLACE_UNKNOWN, CANCEL_UNKNOWN) for t in self._live.values()):
            raise last or TransportError("orders of unknown outcome could not be resolved")

    async def _learn_ids(self) -> None:
        """The ``clob_order_id`` of every tracked order placed without one (V2/V3): from
        the stream, which normally names it with the POST's answer (``id_wait`` s at
        most), else ``GET /orders/:id``."""

        def missing() -> list[_Tracked]:
            return [t for t in self._live.values() if not t.clob_order_id and t.order_id]

        todo = missing()
        if todo and self._orders_topic is not None and not self._stale:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.id_wait
            while todo and (left := deadline - loop.time()) > 0:
                self._learnt.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await within(self._learnt.wait(), left)
                todo = missing()
        for attempt in range(self.resolve_attempts):
            if not todo:
                return
            records = await asyncio.gather(
                *(
                    self._req("GET /orders/:id", self._client.get_order(t.order_id))
                    for t in todo
                    if t.order_id is not None
                ),
                return_exceptions=True,
            )
            failed: BaseException | None = None
            for t, record in zip(todo, records, strict=True):
                if isinstance(record, Order):
                    self._apply(t, record)
                elif isinstance(record, UNKNOWN):
                    failed = record
                else:
                    raise record
            if failed is None:
                return  # a record still without the id: the service has none yet
            if attempt + 1 == self.resolve_attempts:
                raise failed
            await asyncio.sleep(min(0.5, 0.01 * 2**attempt))
            todo = [t for t in missing() if t in todo]

    async def _resolve_places(self, places: list[_Tracked]) -> None:
        found = await self._find(places)
        resend = []
        for t in places:
            order = found.get(t.key)
            if order is not None:
                self._apply(t, order)
                if t.state == PLACE_UNKNOWN:  # a status outside the API text's list
                    t.state = OPEN
            elif t.state == PLACE_UNKNOWN:
                # not seen on the service: sent again under the same client_order_id,
                # which the service answers with the order holding it if the first
                # send landed after all, so this cannot make a second one
                resend.append(t)
        if resend:
            self.retries += len(resend)
            await asyncio.gather(*(self._send_place(t) for t in resend))

    async def _find(self, places: list[_Tracked]) -> dict[str, Order]:
        """The records of these places (by their key) among the newest orders over REST:
        matched by the key the record echoes (``order_source_id``), by ``id`` when
        known, or by a precomputed (V1) ``clob_order_id``."""
        since = min(t.sent_at for t in places)
        wanted = {t.key: t for t in places}
        by_clob = {t.clob_order_id: t for t in places if t.clob_order_id}
        by_id = {t.order_id: t for t in places if t.order_id is not None}
        found: dict[str, Order] = {}
        page_no = 1
        while True:
            page = await self._req(
                "GET /orders", self._client.list_orders(page=page_no, page_size=100)
            )
            oldest = None
            for order in page.orders:
                source = order.order_source_id
                t = (
                    (wanted.get(source) if source else None)
                    or by_id.get(order.id)
                    or by_clob.get(order.clob_order_id or "")
                )
                if t is not None:
                    found[t.key] = order
                if order.created_at is not None:
                    stamp = order.created_at.timestamp()
                    oldest = stamp if oldest is None else min(oldest, stamp)
            total = page.total_count or 0
            if (
                len(found) == len(wanted)
                or len(page.orders) < 100
                or page_no * 100 >= total
                or (oldest is not None and oldest < since - 60)
            ):
                return found
            page_no += 1

    async def _resolve_cancels(self, cancels: list[_Tracked]) -> None:
        cancels = [t for t in cancels if t.order_id is not None]
        records = await asyncio.gather(
            *(
                self._req("GET /orders/:id", self._client.get_order(t.order_id))
                for t in cancels
                if t.order_id is not None
            ),
            return_exceptions=True,
        )
        again = []
        failure: BaseException | None = None
        for t, record in zip(cancels, records, strict=True):
            if isinstance(record, NotFound):
                log.warning("order %s vanished from the service", t.order_id)
                self._finish(t)
            elif isinstance(record, BaseException):
                failure = record
            else:
                self._apply(t, record)
                if t.state != DONE and record.status == "live":
                    again.append(t)  # still live: the cancel did not happen
        if again:
            self.retries += len(again)
            await asyncio.gather(*(self._send_cancel(t) for t in again))
        if failure is not None:
            raise failure

    async def _reconcile(self, listed: list[Order] | None = None) -> None:
        """Make the view equal the service's: resolve unknowns, read the live orders of
        this market and outcome (``listed``: the user's, read after the view went stale),
        adopt new ones, read the final record of those gone."""
        self._stale = False
        try:
            await self._resolve()
            if listed is None:
                listed = await self._req("GET /orders?open", self._client.open_orders())
            seen: set[str] = set()
            for order in listed:
                if order.market_id != self.market_id or order.outcome != self.outcome:
                    continue
                t = self._match(order)
                if t is None:
                    t = self._adopt(order)
                else:
                    self._apply(t, order)
                seen.add(t.key)
            gone = [t for t in self._live.values() if t.key not in seen]
            if gone:
                known = [t for t in gone if t.order_id is not None]
                records = await asyncio.gather(
                    *(
                        self._req("GET /orders/:id", self._client.get_order(t.order_id))
                        for t in known
                        if t.order_id is not None
                    )
                )
                for t, record in zip(known, records, strict=True):
                    self._apply(t, record)
        except BaseException:
            self._stale = True
            raise

    # -- the public operations ----------------------------------------------------------------

    async def requote(self, quotes: Iterable[Quote]) -> RequoteReport:
        """Make the live ladder equal ``quotes``: keep the orders that already match (side,
        price, remaining size), cancel the others and place the missing ones, concurrently.

        Quotes breaking a limit or the market minimum raise ``QuoteRefused`` (bad prices
        or sizes the core's ``AmountError``) before anything is sent. A quote the service
        refuses raises its ``ApiError`` once everything else is done and the view is
        consistent. Returns after every request's outcome is known.
        """
        wanted = list(quotes)
        if self._host is not None and self.market is None:
            await self._host.open(self)  # reads only: the market, positions, live orders
        position = self._position
        levels = read_ladder(wanted, self._limits(), position)  # refused before anything is sent
        async with self._lock:
            if self._stale:
                await self._reconcile()
            elif self.pending:
                await self._resolve()
            if self._position != position:  # fills while waiting: the position limit again
                levels = read_ladder(wanted, self._limits(), self._position)
            live = [
                Live(t.side, t.price, t.shares - t.matched, t)
                for t in self._live.values()
                if t.state == OPEN
            ]
            kept, cancel, place = diff(levels, live)
            first = False
            if self._host is not None:  # the desk's limits, before anything is sent
                union = [*levels, *(_as_level(o) for o in cancel)]
                first = await self._host.admit(self, levels, union)
            self._errors = []
            new: list[_Tracked] = []
            try:
                new.extend([await self._prepare(level) for level in place])
                await self._send(place, cancel, live, new, first)
            finally:
                self._orphans()
                self._settle()
            await self._resolve()
            await self._learn_ids()
            if self._stale:
                await self._reconcile()
            self._settle()
            errors, self._errors = self._errors, []
            gone = [o.handle for o in cancel]
            report = RequoteReport(
                placed=[t.order for t in new if t.order is not None],
                cancelled=[t.order for t in gone if t.order is not None],
                kept=[t.order for t in (o.handle for o in kept) if t.order is not None],
            )
        if errors:
            raise errors[0]
        return report

    async def _send(
        self,
        place: list[Level],
        cancel: list[Live],
        live: list[Live],
        new: list[_Tracked],
        first: bool = False,
    ) -> None:
        """Send the cancels and the places: concurrently, or cancels first when a new
        order could trade with one being cancelled, needs the shares that a
        cancelled SELL still reserves, or (``first``) fits the desk's limits only
        once the cancels are done."""
        gone = [o.handle for o in cancel]
        selling = sum(level.shares for level in place if level.side == 1)
        reserved = sum(o.remaining for o in live if o.side == 1)
        if first or crosses(place, cancel) or (selling and selling > self._position - reserved):
            await asyncio.gather(*(self._send_cancel(t) for t in gone))
            await self._resolve()
            if self._host is not None and new:
                try:
                    await self._host.admit_places(self, place)
                except BaseException:
                    for t in new:  # never sent
                        self._forget(t)
                    raise
            await asyncio.gather(*(self._send_place(t) for t in new))
        else:
            await asyncio.gather(
                *(self._send_cancel(t) for t in gone),
                *(self._send_place(t) for t in new),
            )

    def _orphans(self) -> None:
        """Requests cut short (the caller was cancelled) become requests of unknown outcome."""
        for t in self._live.values():
            if t.state == PLACING:
                t.state = PLACE_UNKNOWN
            elif t.state == CANCELLING:
                t.state = CANCEL_UNKNOWN

    async def cancel_all(self) -> list[Order]:
        """Cancel every open order of the quoter; the orders cancelled (or found done)."""
        async with self._lock:
            if self._stale:
                await self._reconcile()
            else:
                await self._resolve()
            orders = [t for t in self._live.values() if t.state == OPEN]
            try:
                await asyncio.gather(*(self._send_cancel(t) for t in orders))
            finally:
                self._orphans()
            try:
                await self._resolve()
            finally:
                self._settle()
            return [t.order for t in orders if t.order is not None]

    async def reconcile(self) -> None:
        """Re-read the service (live orders, fills) so that the view equals it."""
        async with self._lock:
            try:
                await self._reconcile()
            finally:
                self._settle()

    def _settle(self) -> None:
        """Tell the desk (if any) what this quoter may now have on the service."""
        if self._host is not None:
            self._host.settle(self)

    def resting(self) -> list[Level]:
        """Every order of the quoter that may rest on the service (open, or with a
        place or cancel in flight) as a ``Level`` of its remaining shares."""
        return [
            Level(t.side, t.price, t.shares - t.matched, 0, 0)
            for t in self._live.values()
            if t.shares > t.matched
        ]


def _as_level(o: Live) -> Level:
    return Level(o.side, o.price, o.remaining, 0, 0)


def _with_status(order: Order, status: str) -> Order:
    import msgspec

    return msgspec.structs.replace(order, status=status)
