"""What one quoter hears of the service: its outcome's book (a mirror kept current by
the book topic, read over REST when a gap is not filled in time), its orders' records
(taken into the execution cache, new ones held or adopted), the user's order topic
(subscribed once the user is known) and whether what it heard can be trusted (stale
after a reconnect until the orders are read again). A lone quoter's feed has a stream
of its own; a desk's quoters hear the desk's streams."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Protocol

from ..client import AsyncClient, Stream, book_topic, orders_topic
from ..errors import OrderBookNotFound
from ..models import OPEN_STATUSES, Order, Orderbook, Reconnected, StreamMessage
from .book import BookMirror
from .cache import ExecutionCache, Owner
from .tasks import Rerun

__all__ = ["Feed", "Streams"]

log = logging.getLogger("clobkit.mm")


class Streams(Protocol):
    """A desk's streams, as a quoter's feed uses them."""

    @property
    def deaf(self) -> str | None: ...
    async def attach(self, feed: Feed) -> None: ...
    async def detach(self, feed: Feed, forget: bool) -> None: ...
    async def subscribe_orders(self, user_id: str) -> None: ...


class Feed:
    """The book and the order records of one outcome (``owner``: market id, outcome).

    ``read_book()`` reads the book over REST (through ``request``, the gate's), and
    ``resync()`` re-reads the orders after a reconnect (the quoter's ``reconcile``).
    """

    def __init__(
        self,
        client: AsyncClient,
        cache: ExecutionCache,
        owner: Owner,
        token_id: str,
        read_book: Callable[[], Awaitable[Orderbook]],
        resync: Callable[[], Awaitable[None]],
    ) -> None:
        self.client = client
        self.cache = cache
        self.owner = owner
        self.read_book = read_book
        self.resync = resync
        self.book = BookMirror(token_id)
        self.book_topic = book_topic(token_id)
        self.orders_topic: str | None = None
        #: The market's minimum order value in USDC, when a book said.
        self.min_order_size: Decimal | None = None
        self._minimum_read = -math.inf  # time.monotonic() of the last read for it
        #: Reconnects seen so far.
        self.reconnects = 0
        #: Seconds a book may take to come after a reconnect before it is read over REST.
        self.book_grace = 1.0
        #: Messages of the order topic were lost: re-read before trusting the view.
        self.stale = False
        self.streams: Streams | None = None  # the desk's, else ``stream``: its own
        self.stream: Stream | None = None
        self._acked: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: The REST read of the book after a gap, while one is scheduled or running.
        self.rebooking: asyncio.Task[None] | None = None
        # re-reads the orders after a reconnect (once more for one during a re-read)
        self._resyncing = Rerun(self.resync, "clobkit-resync", self._resync_failed)

    # -- listening ------------------------------------------------------------

    async def listen(self, user_id: str | None, streams: Streams | None) -> None:
        """Subscribe the book topic and, with ``user_id``, the user's order topic: on
        the desk's ``streams``, else on a stream of its own."""
        if user_id is not None:
            self.orders_topic = orders_topic(user_id)
        self.streams = streams
        if streams is not None:
            await streams.attach(self)
            return
        topics = [self.book_topic]
        if self.orders_topic is not None:
            topics.append(self.orders_topic)
        self.stream = self.client.stream(topics, backoff=0.05, backoff_cap=1.0)
        await self.stream.start()
        self.book.feed = self.stream  # down or closed: the book is stale
        self._start(self._consume(self.stream), "clobkit-quoter")

    async def learn_user(self, user_id: str) -> None:
        """The first order named the user: subscribe its order topic (what happened
        before is read from REST: stale)."""
        if self.orders_topic is not None:
            return
        self.orders_topic = orders_topic(user_id)
        if self.streams is not None:
            await self.streams.subscribe_orders(user_id)
        elif self.stream is not None:
            self._acked = asyncio.Event()
            await self.stream.subscribe(self.orders_topic)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await self._acked.wait()
        else:
            return
        self.stale = True

    @property
    def deaf(self) -> str | None:
        """Why the service refused the order topic (fills would go unheard), else
        ``None``: the desk's word, or this feed's own stream's."""
        if self.streams is not None:
            return self.streams.deaf
        stream, topic = self.stream, self.orders_topic
        return None if stream is None or topic is None else stream.refusal(topic)

    @property
    def heard(self) -> bool:
        """Whether the order topic is subscribed and nothing of it was lost since."""
        return self.orders_topic is not None and not self.stale

    async def close(self, forget: bool = False) -> None:
        self.book.feed = None  # nothing keeps it current any more: stale
        if self.streams is not None:
            await self.streams.detach(self, forget)
        for task in [*self._tasks]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._resyncing.close()
        if self.stream is not None:
            await self.stream.close()

    def _start(self, coro: Awaitable[None], name: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _consume(self, stream: Stream) -> None:
        async for item in stream:
            if type(item) is Reconnected:
                self.reconnects += 1
                self.lost(orders=True, book=True)
                self._resyncing.ask()
            elif type(item) is StreamMessage:
                self.handle(item)

    def _resync_failed(self, exc: Exception) -> None:
        self.stale = True  # the next requote or reconcile tries again
        log.warning("re-reading orders after a reconnect failed: %s", exc)

    # -- what it hears --------------------------------------------------------

    def handle(self, item: StreamMessage) -> None:
        """One stream message of this outcome: a book, an order record, an answer."""
        if item.topic == self.book_topic:
            if item.type in ("data", "snapshot"):
                book = self.book
                book.apply(item.data)
                if book.min_order_size is not None:  # the market may raise it
                    self.min_order_size = book.min_order_size
            return
        record = item.order
        if record is None:
            if item.type == "subscribed" and self._acked is not None:
                self._acked.set()
            return
        self.record(record)

    def record(self, record: Order) -> None:
        """An order record of this outcome: into the cache; one no order claims is held
        while a place is in flight (its answer may name it), else adopted when open."""
        cache = self.cache
        t = cache.find(record)
        if t is not None:
            cache.apply(t, record)
        elif (record.market_id, record.outcome) != self.owner:
            return  # another outcome's (the user's order topic carries every one)
        elif cache.in_flight(self.owner):
            cache.hold(record, self.owner)
        elif record.status in OPEN_STATUSES:
            cache.adopt(record, self.owner)

    def settle_unclaimed(self) -> None:
        """Once no place is in flight, held records belong to nobody of ours: adopt the
        open ones (orders placed elsewhere), drop the rest."""
        for record in self.cache.release_unclaimed(self.owner):
            if record.status in OPEN_STATUSES:
                self.cache.adopt(record, self.owner)

    def lost(self, *, orders: bool, book: bool) -> None:
        """Messages were lost (a reconnect): of the order topic, the view is stale until
        re-read; of the book topic, the book is stale until the next one comes (none
        within ``book_grace`` s: it is read over REST)."""
        if orders:
            self.stale = True
        if book:
            self.book.mark_stale()
            if self.book.feed is not None and (self.rebooking is None or self.rebooking.done()):
                self.rebooking = self._start(self._book_after_gap(), "clobkit-rebook")

    async def _book_after_gap(self) -> None:
        await asyncio.sleep(self.book_grace)
        if not self.book.missed:  # the stream's book came
            return
        try:
            book = await self.read_book()
        except OrderBookNotFound:
            return
        except Exception as exc:  # stale until the next book, or the next reconnect's try
            log.warning("reading the book after a reconnect failed: %s", exc)
            return
        if self.book.missed:  # else the stream's came first: newer than this read
            self.take(book)

    async def learn_minimum(self) -> None:
        """Read the market's minimum over REST when no book has said it yet (the book
        was absent when the quoter entered, or its topic is not heard): before quotes
        are checked against it. It stays unknown while the service has no book for the
        token (the service then judges the order); at most one read a second."""
        if self.min_order_size is not None or time.monotonic() - self._minimum_read < 1.0:
            return
        self._minimum_read = time.monotonic()
        with contextlib.suppress(OrderBookNotFound):
            book = await self.read_book()
            if self.book.received_at is None:  # else the mirror's book is newer
                self.book.take(book)
            if book.min_order_size is not None:
                self.min_order_size = book.min_order_size

    def take(self, book: Orderbook) -> None:
        """A book read over REST (the market's minimum with it)."""
        self.book.take(book)
        if book.min_order_size is not None:
            self.min_order_size = book.min_order_size
