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
from collections.abc import Iterable
from decimal import Decimal
from types import TracebackType
from typing import NamedTuple

from .._checks import positive_int
from .._core import to_units
from ..client import AsyncClient, Stream, book_topic, orders_topic
from ..errors import ApiError, OrderBookNotFound, QuoteRefused, ValidationError
from ..models import Market, Order, Reconnected, StreamMessage
from .book import BookMirror
from .ladder import Level, Limits, Live, Quote, crosses, diff, exceeds, read_ladder
from .resolve import Resolving
from .sending import Host
from .tracking import OPEN, Fill, _Tracked

__all__ = ["Fill", "Quoter", "RequoteReport"]

log = logging.getLogger("clobkit.mm")

Number = Decimal | str | int | float


class RequoteReport(NamedTuple):
    """What one ``requote`` did: orders ``placed``, ``cancelled`` and ``kept`` (``Order``s)."""

    placed: list[Order]
    cancelled: list[Order]
    kept: list[Order]


class Quoter(Resolving):
    """Keeps the wanted ladder of ``outcome`` (``a``/``b``) of ``market_id`` on the service.

    ``async with Quoter(client, market_id, "a") as q: await q.requote([...])``.
    On enter it reads the market (tokens, ``neg_risk``, minimum order size, fee
    rate), subscribes to the user's order topic and the outcome's book topic,
    and adopts the live orders of that market and outcome. On exit it cancels
    its open orders (unless ``cancel_on_exit`` is false) and closes its stream.

    ``book`` mirrors the outcome's book (read over REST on enter, then the stream's);
    ``book.stale`` is true while the stream is down and after a reconnect until a
    fresh book comes (the subscription's snapshot), ``book.age`` its seconds.

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
        _check(market_id, outcome, max_open_orders)
        self._client = client
        self.market_id = market_id
        self.outcome = outcome
        self.max_open_orders = max_open_orders
        self._max_position = _units(max_position, "max_position")
        self._max_notional = _units(max_notional, "max_notional")
        self.cancel_on_exit = cancel_on_exit
        self.user_id = user_id
        self._init_market()
        self._init_tracking()
        self._init_requests()

    def _init_market(self) -> None:
        """What ``__aenter__`` reads of the market (empty until then)."""
        #: The market as read on enter.
        self.market: Market | None = None
        self.event_id: str | None = None
        self.token_id = ""
        self.neg_risk = False
        self.fee_rate_bps = 0
        #: The market's minimum order value in USDC (from the book), when known.
        self.min_order_size: Decimal | None = None
        self.book = BookMirror("")
        #: The wallet's exchange version (1, 2 or 3), known after enter.
        self.exchange_version = 0

    def _init_requests(self) -> None:
        """The stream, the lock over requotes, and the settings of resolution."""
        #: Reconnects of the stream seen so far.
        self.reconnects = 0
        #: Places and cancels sent again after REST showed they had not happened.
        self.retries = 0
        self.resolve_attempts = 20
        self.id_wait = 0.25
        self._errors: list[ApiError] = []
        self._lock = asyncio.Lock()
        self._stale = False  # the stream reconnected: re-read before trusting the view
        self._stream: Stream | None = None
        self._pump: asyncio.Task[None] | None = None
        self._resync: asyncio.Task[None] | None = None
        #: Seconds a book may take to come on the stream after a reconnect before it is
        #: read over REST instead.
        self.book_grace = 1.0
        self._rebook: asyncio.Task[None] | None = None
        self._acked: asyncio.Event | None = None
        self._orders_topic: str | None = None
        self._book_topic = ""
        #: The desk this quoter runs on (``Desk.quoter``), else ``None``: own stream.
        self._host: Host | None = None
        self._desk_key = (self.market_id, self.outcome)  # its key on the desk, as given
        self._closed = False  # exited: no new quotes until entered again

    def __repr__(self) -> str:
        return (
            f"Quoter(market_id={self.market_id!r}, outcome={self.outcome!r}, "
            f"open={len(self._live)}, position={self.position})"
        )

    def _limits(self) -> Limits:
        low = None if self.min_order_size is None else to_units(self.min_order_size, "min")
        return Limits(self.max_open_orders, self._max_position, self._max_notional, low)

    async def __aenter__(self) -> Quoter:
        self._closed = False
        await self._read_market()
        await self._read_book()
        await self._listen()
        try:
            await self._adopt_live()
        except BaseException:
            await self._close()
            raise
        return self

    async def _read_market(self) -> None:
        """The market, its token and ``neg_risk``, the wallet's version, the fee rate."""
        client = self._client
        if self._host is not None:  # one read for the quoters of a market opening together
            market = await self._host.market(self)
        else:
            market = await client.get_market(self.market_id)  # caches tokens and neg_risk
            await client.prepare([market.id])  # the wallet, both tokens' fee rates
        self.market = market
        self.market_id = market.id
        self.event_id = market.event_id
        # all three cached by prepare(): no request (on a desk, none to charge to its
        # budget nor count in its metrics). V1: ids precomputed; V2/V3: learnt from
        # the service (tracked by client_order_id)
        self.exchange_version = await client.exchange_version()
        info = await client.market_info(market.id)
        self.token_id = info.token(self.outcome)
        self.neg_risk = info.neg_risk
        self.fee_rate_bps = await client.get_fee_rate(self.token_id)

    async def _read_book(self) -> None:
        """The book over REST into the mirror, and the market's minimum order value."""
        self.book = BookMirror(self.token_id)
        with contextlib.suppress(OrderBookNotFound):
            book = await self._req("GET /orderbook", self._client.get_orderbook(self.token_id))
            self.min_order_size = book.min_order_size
            self.book.take(book)

    async def _listen(self) -> None:
        """The book and order topics: from the desk's stream, else an own stream."""
        host = self._host
        if self.user_id is None and host is None:  # a desk learns it once for all
            page = await self._req("GET /orders", self._client.list_orders(page_size=1))
            if page.orders:
                self.user_id = page.orders[0].user_id
        self._book_topic = book_topic(self.token_id)
        if self.user_id is not None:
            self._orders_topic = orders_topic(self.user_id)
        if host is not None:  # the desk's stream hands this quoter its messages
            await host.attach(self)
            return
        topics = [self._book_topic]
        if self._orders_topic is not None:
            topics.append(self._orders_topic)
        self._stream = self._client.stream(topics, backoff=0.05, backoff_cap=1.0)
        await self._stream.start()
        self.book.feed = self._stream  # down or closed: the book is stale
        self._pump = asyncio.create_task(self._consume(), name="clobkit-quoter")

    async def _adopt_live(self) -> None:
        """The position held and the live orders of this outcome, now that updates
        are heard (on a desk: one read of each shared by its quoters)."""
        host = self._host
        listed = None
        if host is not None:
            self._position = await host.held(self)
            listed = await host.listed(self)
        else:
            self._position = await self._held()
        async with self._lock:
            await self._reconcile(listed)
            self._settle()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closed = True
        try:
            if self.cancel_on_exit:
                await self.cancel_all()
        finally:
            await self._close(forget=True)

    async def _close(self, forget: bool = False) -> None:
        self.book.feed = None  # nothing keeps it current any more: stale
        if self._host is not None:
            await self._host.detach(self, forget)
        for task in (self._resync, self._pump, self._rebook):
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

    async def _consume(self) -> None:
        assert self._stream is not None
        async for item in self._stream:
            self._on_item(item)

    def _on_item(self, item: StreamMessage | Reconnected) -> None:
        """Bookkeeping of one stream item (order update, book, reconnect marker)."""
        if type(item) is StreamMessage:
            if item.topic == self._book_topic:
                self._on_book(item)
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
            self._lost_book()
            if self._resync is None or self._resync.done():
                self._resync = asyncio.ensure_future(self._resync_after_reconnect())

    def _on_book(self, item: StreamMessage) -> None:
        if item.type in ("data", "snapshot"):
            self.book.apply(item.data)
            if self.book.min_order_size is not None:  # the market may raise it
                self.min_order_size = self.book.min_order_size

    def _lost_book(self) -> None:
        """Book messages were lost (a reconnect): the book is stale until the next one
        comes; none within ``book_grace`` s (a service need not send a snapshot on
        subscription), it is read over REST."""
        self.book.mark_stale()
        if self.book.feed is not None and (self._rebook is None or self._rebook.done()):
            self._rebook = asyncio.ensure_future(self._book_after_gap())

    async def _book_after_gap(self) -> None:
        await asyncio.sleep(self.book_grace)
        if not self.book.missed:  # the stream's book came
            return
        try:
            book = await self._req("GET /orderbook", self._client.get_orderbook(self.token_id))
        except Exception as exc:  # stale until the next book, or the next reconnect's try
            log.warning("reading the book after a reconnect failed: %s", exc)
            return
        if self.book.missed:  # else the stream's came first: newer than this read
            self.book.take(book)

    async def _resync_after_reconnect(self) -> None:
        try:
            async with self._lock:
                if self._stale:
                    await self._reconcile()
        except Exception as exc:  # the next requote or reconcile tries again
            self._stale = True
            log.warning("re-reading orders after a reconnect failed: %s", exc)

    async def requote(self, quotes: Iterable[Quote]) -> RequoteReport:
        """Make the live ladder equal ``quotes``: keep the orders that already match (side,
        price, remaining size), cancel the others and place the missing ones, concurrently.

        Quotes breaking a limit or the market minimum raise ``QuoteRefused`` (bad prices
        or sizes the core's ``AmountError``) before anything is sent. A quote the service
        refuses raises its ``ApiError`` once everything else is done and the view is
        consistent. Returns after every request's outcome is known.
        """
        wanted = list(quotes)
        if wanted:
            self._check_hearing()
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
            # old and new orders rest together while a requote is in flight: when both
            # could pass the quoter's own limits, the cancels go first
            union = [*levels, *(_as_level(o) for o in cancel)]
            first = exceeds(union, self._limits(), self._position)
            if self._host is not None:  # the desk's limits, before anything is sent
                first = await self._host.admit(self, levels, union) or first
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
        cancelled SELL still reserves, or (``first``) fits the quoter's or the desk's
        limits only once the cancels are done."""
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

    def _check_hearing(self) -> None:
        """``QuoteRefused`` for new quotes of a closed quoter, or of one whose order
        topic the service refused (cancels still go: they only lower the risk)."""
        if self._closed:
            raise QuoteRefused("quoter", self, "is closed: enter it again to quote")
        deaf = self._deaf
        if deaf is not None:
            topic = self._orders_topic
            reason = f"was refused by the service ({deaf}): fills would go unheard"
            raise QuoteRefused("orders topic", topic, reason)

    @property
    def _deaf(self) -> str | None:
        """Why the service refused the order topic (fills would go unheard), else
        ``None``: the desk's word, or this quoter's own stream's."""
        if self._host is not None:
            return self._host.deaf
        stream, topic = self._stream, self._orders_topic
        return None if stream is None or topic is None else stream.refusal(topic)

    def _settle(self) -> None:
        """Tell the desk (if any) what this quoter may now have on the service."""
        if self._host is not None:
            self._host.settle(self)


def _check(market_id: object, outcome: object, max_open_orders: object) -> None:
    if outcome not in ("a", "b"):
        raise ValidationError("outcome", outcome, "must be 'a' or 'b'")
    if not isinstance(market_id, str) or not market_id.strip():
        raise ValidationError("market_id", market_id, "must be a non-empty string")
    positive_int(max_open_orders, "max_open_orders")


def _units(value: Number | None, name: str) -> int | None:
    return None if value is None else to_units(value, name)


def _as_level(o: Live) -> Level:
    return Level(o.side, o.price, o.remaining, 0, 0)
