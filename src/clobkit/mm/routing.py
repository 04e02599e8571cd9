"""The ``Desk``'s streams: the user's order topic and every quoter's book topic on as
few WebSockets as the service's cap on topics allows; each frame decoded once and
handed to the quoter it concerns (order updates by market and outcome, books by
topic); after a reconnect of the order topic, one read of the live orders brings
every quoter up to date."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from .._checks import positive_int
from ..client import Stream, orders_topic, within
from ..errors import ValidationError
from ..models import Reconnected, StreamMessage
from .gate import OPEN_ORDERS, Gate, by_outcome
from .quoter import Quoter
from .sending import LISTING

__all__ = ["Routing"]

log = logging.getLogger("clobkit.mm")


class Routing(Gate):
    """The streams of a ``Desk`` and the routing of their messages."""

    user_id: str | None
    books: bool

    def _init_routing(self) -> None:
        self._quoters: dict[tuple[str, str], Quoter] = {}  # (market id as given, outcome)
        self._by_outcome: dict[tuple[str, str], Quoter] = {}  # (market id, outcome)
        self._by_topic: dict[str, Quoter] = {}  # book topic -> quoter
        self._streams: list[Stream] = []  # the desk's streams, in the order opened
        self._carrier: dict[str, Stream] = {}  # topic -> the stream that carries it
        self._load: dict[Stream, int] = {}  # stream -> the topics it carries
        self._stream_lock = asyncio.Lock()
        self._acked = asyncio.Event()
        self._pumps: list[asyncio.Task[None]] = []
        self._resync: asyncio.Task[None] | None = None
        self._resync_again = False
        self._resync_everyone = False
        self._closing = False
        #: Topics on one WebSocket at most: a service caps them (the sandbox at 1,000).
        self.topics_per_stream = 500
        #: Reconnects of the desk's streams seen so far.
        self.reconnects = 0

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
        """The desk's WebSocket streams: the user's order topic and the book topics,
        at most ``topics_per_stream`` on each."""
        return list(self._streams)

    async def attach(self, q: Quoter) -> None:
        key = (q.market_id, q.outcome)
        other = self._by_outcome.get(key)
        given = self._quoters.get(q._desk_key)
        if (other is not None and other is not q) or (given is not None and given is not q):
            raise ValidationError(
                "market_id", q.market_id, f"already has a quoter of {q.outcome!r}"
            )
        self._quoters[q._desk_key] = q  # again, when a closed quoter is entered again
        self._by_outcome[key] = q
        if self.user_id is None and q.user_id is not None:
            self.user_id = q.user_id
        if self.user_id is not None:
            await self._listen([orders_topic(self.user_id)])
        if self.books:
            self._by_topic[q._book_topic] = q
            await self._listen([q._book_topic])
            # fed by the stream carrying its topic: stale while that one is down
            q.book.feed = self._carrier.get(q._book_topic)

    async def detach(self, q: Quoter, forget: bool = False) -> None:
        """``q`` no longer hears the desk's streams; ``forget``: it was closed, so the
        desk forgets it (its book topic unsubscribed, its market free for a new quoter)."""
        if self._by_outcome.get((q.market_id, q.outcome)) is q:
            del self._by_outcome[(q.market_id, q.outcome)]
        topic = q._book_topic
        if self._by_topic.get(topic) is q:
            del self._by_topic[topic]
            stream = self._carrier.get(topic)
            self._carry(topic, None)
            if stream is not None and not self._closing:
                await stream.unsubscribe(topic)
        if forget and self._quoters.get(q._desk_key) is q:
            del self._quoters[q._desk_key]
        self.release(q)

    async def subscribe_orders(self, user_id: str) -> None:
        if self.user_id is None:
            self.user_id = user_id
            for q in self._quoters.values():
                if q.user_id is None:
                    q.user_id = user_id
                    q._orders_topic = orders_topic(user_id)
            self._acked.clear()
            await self._listen([orders_topic(user_id)])
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._acked.wait(), 1.0)
            # what happened before the subscription: one read for every open quoter (the
            # quoter that learnt the user re-reads its own at the end of its requote)
            self._schedule_resync(everyone=True)

    async def _listen(self, topics: list[str]) -> None:
        """Subscribe ``topics`` not yet carried: on the first stream with room (a topic
        dropped frees its place), else on a new one (a service caps the topics of one
        connection)."""
        async with self._stream_lock:
            for topic in topics:
                if topic in self._carrier:
                    continue
                cap = positive_int(self.topics_per_stream, "topics_per_stream")
                stream = next((s for s in self._streams if self._load[s] < cap), None)
                if stream is not None:
                    self._carry(topic, stream)
                    await stream.subscribe(topic)
                    continue
                stream = self._client.stream([topic], backoff=0.05, backoff_cap=1.0)
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

    async def _close_streams(self) -> None:
        self._closing = True
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
        """Hand one stream item to the quoter it concerns (the desk's bookkeeping)."""
        counters = self.counters
        counters.messages += 1
        if type(item) is StreamMessage:
            order = item.order
            if order is not None:
                q = self._by_outcome.get((order.market_id or "", order.outcome or ""))
                stamp = order.updated_at
                if stamp is not None:
                    counters.lag.observe(max(0.0, time.time() - stamp.timestamp()))
            else:
                q = self._by_topic.get(item.topic or "")
                if q is None and item.type == "subscribed":
                    self._acked.set()
            if q is not None:
                q._on_item(item)
        elif type(item) is Reconnected:
            self._reconnected(item)

    def _reconnected(self, item: Reconnected) -> None:
        """Messages of ``item.topics`` were lost: their books are stale until the next,
        and when the order topic was among them, every quoter re-reads its orders."""
        self.reconnects += 1
        mine = self.user_id is not None and orders_topic(self.user_id) in item.topics
        everyone = mine or not item.topics  # a marker naming nothing: assume the worst
        lost = [q for t in item.topics if (q := self._by_topic.get(t)) is not None]
        for q in self._quoters.values() if everyone else lost:
            q.reconnects += 1
            if everyone:
                q._stale = True
        for q in lost if item.topics else self._quoters.values():
            q._lost_book()  # stale until the snapshot, else read over REST
        if everyone:
            self._schedule_resync()

    def _schedule_resync(self, everyone: bool = False) -> None:
        self._resync_again = True
        self._resync_everyone = self._resync_everyone or everyone
        if self._resync is None or self._resync.done():
            self._resync = asyncio.ensure_future(self._resync_all())

    async def _resync_all(self) -> None:
        """After a reconnect (or the order topic's late subscription): one read of the
        live orders brings every quoter up to date."""
        while self._resync_again:
            self._resync_again = False
            everyone, self._resync_everyone = self._resync_everyone, False
            try:
                failures = await self._reread(everyone)
            except Exception as exc:  # each quoter's next requote re-reads what is stale
                failures = [exc]
            for failure in failures:
                log.warning("re-reading orders after a reconnect failed: %s", failure)

    async def _reread(self, everyone: bool) -> list[BaseException]:
        """Under the lock of every open quoter (taken one at a time, in one order: no
        lock cycle), one listing of the live orders brings the stale quoters
        (``everyone``: all of them) up to date; the failures of those it could not."""
        quoters = [q for q in self._quoters.values() if q.market is not None]
        async with contextlib.AsyncExitStack() as stack:
            for q in quoters:
                await stack.enter_async_context(q._lock)
            stale = [q for q in quoters if q._stale or everyone]
            if not stale:
                return []
            try:
                listed = await self.request(OPEN_ORDERS, self._client.open_orders(), LISTING)
            except BaseException:
                for q in stale:  # their next requote re-reads first
                    q._stale = True
                raise
            groups = by_outcome(listed)  # each quoter its own orders
            results = await asyncio.gather(
                *(q._reconcile(groups.get((q.market_id, q.outcome), [])) for q in stale),
                return_exceptions=True,
            )
            for q in stale:
                self.settle(q)
        return [result for result in results if isinstance(result, BaseException)]
