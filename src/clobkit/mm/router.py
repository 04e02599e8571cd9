"""A desk's streams: the user's order topic and every quoter's book topic on as few
WebSockets as the service's cap on topics allows; each frame decoded once and handed
on: an order record into the execution cache (by key or id, whichever quoter or
order of one's own it is), one no order claims to the feed of its market and
outcome, a book to the feed of its topic. After a reconnect of the order topic the
desk re-reads the live orders once for every quoter (``resync``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from ..client import AsyncClient, Stream, orders_topic
from ..core.checks import positive_int
from ..errors import ValidationError
from ..models import Reconnected, StreamMessage
from .cache import ExecutionCache, Owner
from .feed import Feed
from .metrics import Counters

__all__ = ["Router"]

log = logging.getLogger("clobkit.mm")


class Router:
    """The streams of one desk and the routing of their messages (a quoter's feed sees
    it as ``feed.Streams``). ``resync(everyone)`` is called when the order topic lost
    messages (``everyone``: every quoter's view, else the stale ones)."""

    def __init__(
        self,
        client: AsyncClient,
        cache: ExecutionCache,
        counters: Counters,
        resync: Callable[[bool], None],
        books: bool = True,
    ) -> None:
        self.client = client
        self.cache = cache
        self.counters = counters
        self.resync = resync
        self.books = books
        self.user_id: str | None = None
        #: Topics on one WebSocket at most: a service caps them (the sandbox at 1,000).
        self.topics_per_stream = 500
        #: Reconnects of the desk's streams seen so far.
        self.reconnects = 0
        self.feeds: dict[Owner, Feed] = {}  # (market id, outcome) -> the feed of its quoter
        self.book_feeds: dict[str, Feed] = {}  # book topic -> feed
        self._streams: list[Stream] = []
        self._carrier: dict[str, Stream] = {}  # topic -> the stream that carries it
        self._load: dict[Stream, int] = {}  # stream -> the topics it carries
        self._lock = asyncio.Lock()
        self._acked = asyncio.Event()
        self._pumps: list[asyncio.Task[None]] = []
        #: The streams close next: topics dropped now are not unsubscribed one by one.
        self.closing = False

    @property
    def deaf(self) -> str | None:
        """Why the service refused the user's order topic (its words), else ``None``:
        fills would go unheard, so quoters refuse new quotes until a reconnect
        subscribes it again (``Stream.refusal`` of the stream carrying it)."""
        if self.user_id is None:
            return None
        topic = orders_topic(self.user_id)
        stream = self._carrier.get(topic)
        return None if stream is None else stream.refusal(topic)

    @property
    def refused(self) -> dict[str, str]:
        """The desk's topics the service refused, with its words (a book topic's quoter
        then has a stale book: ``book.refused``); each stream's ``refused``."""
        return {t: r for t, s in self._carrier.items() if (r := s.refusal(t)) is not None}

    @property
    def streams(self) -> list[Stream]:
        """The WebSocket streams: the order topic and the book topics, at most
        ``topics_per_stream`` on each."""
        return list(self._streams)

    def down_since(self) -> list[float]:
        """When each stream that is down went down (loop time, s)."""
        return [s.down_since for s in self._streams if s.down_since is not None]

    async def start(self, user_id: str | None) -> None:
        """Listen to the user's order topic (when known)."""
        self.user_id = user_id
        if user_id is not None:
            await self._listen([orders_topic(user_id)])

    # -- feeds (feed.Streams) ------------------------------------------------------

    async def attach(self, feed: Feed) -> None:
        """``feed`` hears the desk's streams: its book topic (``books``) and the
        order topic; one feed per market and outcome."""
        other = self.feeds.get(feed.owner)
        if other is not None and other is not feed:
            market_id, outcome = feed.owner
            raise ValidationError("market_id", market_id, f"already has a quoter of {outcome!r}")
        self.feeds[feed.owner] = feed
        if self.user_id is not None:
            feed.orders_topic = orders_topic(self.user_id)
            await self._listen([feed.orders_topic])
        if self.books:
            self.book_feeds[feed.book_topic] = feed
            await self._listen([feed.book_topic])
            # fed by the stream carrying its topic: stale while that one is down
            feed.book.feed = self._carrier.get(feed.book_topic)

    async def detach(self, feed: Feed, forget: bool) -> None:
        """``feed`` no longer hears the desk's streams (its book topic unsubscribed)."""
        if self.feeds.get(feed.owner) is feed:
            del self.feeds[feed.owner]
        topic = feed.book_topic
        if self.book_feeds.get(topic) is feed:
            del self.book_feeds[topic]
            stream = self._carrier.get(topic)
            self._carry(topic, None)
            if stream is not None and not self.closing:
                await stream.unsubscribe(topic)

    async def subscribe_orders(self, user_id: str) -> None:
        """The user became known (its first order): listen to its order topic, and
        re-read every quoter's orders (what happened before was not heard)."""
        if self.user_id is not None:
            return
        self.user_id = user_id
        topic = orders_topic(user_id)
        for feed in self.feeds.values():
            feed.orders_topic = topic
        self._acked.clear()
        await self._listen([topic])
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await self._acked.wait()
        self.resync(True)

    # -- streams ----------------------------------------------------------------

    async def _listen(self, topics: list[str]) -> None:
        """Subscribe ``topics`` not yet carried: on the first stream with room (a topic
        dropped frees its place), else on a new one (a service caps the topics of one
        connection)."""
        async with self._lock:
            for topic in topics:
                if topic in self._carrier:
                    continue
                cap = positive_int(self.topics_per_stream, "topics_per_stream")
                stream = next((s for s in self._streams if self._load[s] < cap), None)
                if stream is not None:
                    self._carry(topic, stream)
                    await stream.subscribe(topic)
                    continue
                stream = self.client.stream([topic], backoff=0.05, backoff_cap=1.0)
                try:
                    await stream.start()
                except BaseException:
                    await stream.close()
                    raise
                self._streams.append(stream)
                self._load[stream] = 0
                self._carry(topic, stream)
                self._pumps.append(asyncio.create_task(self._consume(stream), name="clobkit-desk"))

    def _carry(self, topic: str, stream: Stream | None) -> None:
        """``topic`` carried by ``stream`` (``None``: by none any more)."""
        before = self._carrier.pop(topic, None)
        if before is not None:
            self._load[before] -= 1
        if stream is not None:
            self._carrier[topic] = stream
            self._load[stream] += 1

    async def close(self) -> None:
        self.closing = True
        for task in self._pumps:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for stream in self._streams:
            await stream.close()

    async def _consume(self, stream: Stream) -> None:
        route = self.route
        async for item in stream:
            route(item)

    def route(self, item: StreamMessage | Reconnected) -> None:
        """Hand one stream item on (the desk's bookkeeping)."""
        counters = self.counters
        counters.messages += 1
        if type(item) is StreamMessage:
            record = item.order
            if record is None:
                feed = self.book_feeds.get(item.topic or "")
                if feed is not None:
                    feed.handle(item)
                elif item.type == "subscribed":
                    self._acked.set()
                return
            stamp = record.updated_at
            if stamp is not None:
                counters.lag.observe(max(0.0, time.time() - stamp.timestamp()))
            t = self.cache.find(record)
            if t is not None:
                self.cache.apply(t, record)
                return
            feed = self.feeds.get((record.market_id or "", record.outcome or ""))
            if feed is not None:
                feed.record(record)
        elif type(item) is Reconnected:
            self._reconnected(item)

    def _reconnected(self, item: Reconnected) -> None:
        """Messages of ``item.topics`` were lost: their books are stale until the next,
        and when the order topic was among them, every quoter re-reads its orders."""
        self.reconnects += 1
        mine = self.user_id is not None and orders_topic(self.user_id) in item.topics
        everyone = mine or not item.topics  # a marker naming nothing: assume the worst
        books = [f for t in item.topics if (f := self.book_feeds.get(t)) is not None]
        for feed in self.feeds.values() if everyone else books:
            feed.reconnects += 1
        for feed in self.feeds.values() if everyone else []:
            feed.lost(orders=True, book=False)
        for feed in books if item.topics else self.feeds.values():
            feed.lost(orders=False, book=True)  # stale until the snapshot, else REST
        if everyone:
            self.resync(False)
