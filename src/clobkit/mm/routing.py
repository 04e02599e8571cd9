"""The ``Desk``'s one stream: the user's order topic and every quoter's book topic
on one WebSocket; each frame decoded once and handed to the quoter it concerns
(order updates by market and outcome, books by topic); after a reconnect, one
read of the live orders brings every quoter up to date."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from ..client import Stream, orders_topic, within
from ..errors import ValidationError
from ..models import Reconnected, StreamMessage
from .gate import OPEN_ORDERS, Gate, by_outcome
from .quoter import Quoter
from .sending import LISTING

__all__ = ["Routing"]

log = logging.getLogger("clobkit.mm")


class Routing(Gate):
    """The stream of a ``Desk`` and the routing of its messages."""

    user_id: str | None
    books: bool

    def _init_routing(self) -> None:
        self._quoters: dict[tuple[str, str], Quoter] = {}  # (market id as given, outcome)
        self._by_outcome: dict[tuple[str, str], Quoter] = {}  # (market id, outcome)
        self._by_topic: dict[str, Quoter] = {}  # book topic -> quoter
        self._stream: Stream | None = None
        self._frames = 0  # frames of streams closed before
        self._stream_lock = asyncio.Lock()
        self._acked = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._resync: asyncio.Task[None] | None = None
        self._resync_again = False
        self._resync_everyone = False
        #: Reconnects of the desk's stream seen so far.
        self.reconnects = 0

    async def attach(self, q: Quoter) -> None:
        key = (q.market_id, q.outcome)
        other = self._by_outcome.get(key)
        if other is not None and other is not q:
            raise ValidationError(
                "market_id", q.market_id, f"already has a quoter of {q.outcome!r}"
            )
        self._by_outcome[key] = q
        topics = []
        if self.books:
            self._by_topic[q._book_topic] = q
            topics.append(q._book_topic)
        if self.user_id is None and q.user_id is not None:
            self.user_id = q.user_id
        if self.user_id is not None:
            topics.append(orders_topic(self.user_id))
        if topics:
            await self._listen(topics)
        if self.books:  # fed by the desk's stream: stale while it is down
            q.book.feed = self._stream

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
        async with self._stream_lock:
            if self._stream is None:
                self._stream = self._client.stream(topics, backoff=0.05, backoff_cap=1.0)
                await self._stream.start()
                self._pump = asyncio.create_task(self._consume(), name="clobkit-desk")
            else:
                await self._stream.subscribe(topics)

    async def _consume(self) -> None:
        assert self._stream is not None
        route = self.route
        async for item in self._stream:
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
                if q is None:
                    if item.type == "subscribed":
                        self._acked.set()
                    return
            if q is not None:
                q._on_item(item)
        elif type(item) is Reconnected:
            self.reconnects += 1
            for q in self._quoters.values():
                q.reconnects += 1
                q._stale = True
                q._lost_book()  # stale until the snapshot, else read over REST
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
