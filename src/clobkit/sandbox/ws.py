"""The WebSocket hub: topic subscriptions and the delivery of engine events to subscribers.

Topics (section 6 of the API text, names from ``_spec``): a user's orders,
and each outcome token's book and price. A subscriber whose unread messages
pass ``ws_max_queue_bytes`` is dropped, so a client that never reads costs
bounded memory; and when the unread messages of all subscribers together pass
``Hub.max_queued_bytes`` (``MAX_QUEUED_BYTES``), the subscribers with the most
unread are dropped until they fit (``Hub.shed`` counts them), so a thousand
clients that never read cost bounded memory too.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

import msgspec
from starlette.websockets import WebSocket

from ..core.spec import MARKET_TOPIC_KINDS, book_topic, forbidden_scope, user_orders_topic
from . import views
from .config import LimitsConfig, UserConfig
from .engine import Engine, EngineEvent
from .wire import decode_json, encode

__all__ = ["MAX_QUEUED_BYTES", "Connection", "Hub"]

#: The most bytes of messages waiting for their subscribers, all connections together.
MAX_QUEUED_BYTES = 128 * 1024 * 1024


class _Queued:
    """The bytes waiting in every connection's queue, and what sheds some past the bound."""

    __slots__ = ("bytes", "limit", "over")

    def __init__(self, limit: int, over: Callable[[], None]) -> None:
        self.bytes = 0
        self.limit = limit
        self.over = over


class Connection:
    """One WebSocket subscriber: its topics and the messages waiting to be written.

    ``queued_bytes`` counts the encoded messages in ``queue`` exactly; past
    ``max_queue_bytes`` the subscriber is dropped (close code 1008) and its
    queue freed, so a client that never reads costs a bounded amount of memory.
    Once its hub has handled a message of it, its bytes count in the hub's total
    too (``Hub.max_queued_bytes``).
    """

    def __init__(self, websocket: WebSocket, user: UserConfig, max_queue_bytes: int) -> None:
        self.websocket = websocket
        self.user = user
        self.topics: set[str] = set()
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.queued_bytes = 0
        self.max_queue_bytes = max_queue_bytes
        self.closing = False
        self.total: _Queued | None = None  # the hub's, once it handled a message of this one

    def send(self, message: object) -> None:
        if self.closing:
            return
        data = encode(message)
        if self.queued_bytes + len(data) > self.max_queue_bytes:  # a consumer this slow is dropped
            self.shed()
            return
        self.queued_bytes += len(data)
        self.queue.put_nowait(data)
        total = self.total
        if total is not None:
            total.bytes += len(data)
            if total.bytes > total.limit:
                total.over()

    def shed(self) -> None:
        """Drop this subscriber: its queue freed at once, the connection closed (1008,
        slow consumer) when its pump comes to it."""
        self.closing = True
        while not self.queue.empty():
            self.queue.get_nowait()
        if self.total is not None:
            self.total.bytes -= self.queued_bytes
        self.queued_bytes = 0
        self.queue.put_nowait(None)

    async def pump(self) -> None:
        while True:
            item = await self.queue.get()
            if item is None:
                await self.websocket.close(code=1008, reason="slow consumer")
                return
            self.queued_bytes -= len(item)
            if self.total is not None:
                self.total.bytes -= len(item)
            await self.websocket.send_text(item.decode("utf-8"))


class Hub:
    """Topic subscriptions and delivery of engine events to WebSocket connections."""

    def __init__(
        self,
        engine: Engine,
        max_topics: int = LimitsConfig.ws_max_topics,
        max_queued_bytes: int = MAX_QUEUED_BYTES,
    ) -> None:
        self.engine = engine
        self.max_topics = max_topics
        #: The bytes waiting for all subscribers together (``queued.bytes``) and its bound.
        self.queued = _Queued(max_queued_bytes, self._shed_slowest)
        self.connections: set[Connection] = set()  # those whose bytes count in ``queued``
        #: Subscribers dropped because all queues together passed the bound.
        self.shed = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.subscribers: dict[str, set[Connection]] = {}
        self._loop_thread = 0
        self._last: dict[str, object] = {}

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._loop_thread = threading.get_ident()
        self.engine.add_listener(self._from_engine)

    def stop(self) -> None:
        self.engine.remove_listener(self._from_engine)
        self.loop = None

    def _from_engine(self, events: list[EngineEvent]) -> None:
        loop = self.loop
        if loop is None or loop.is_closed() or not self.subscribers:
            return  # nobody listens: an event is only ever sent to a topic's subscribers
        if threading.get_ident() == self._loop_thread:
            # an HTTP request or the ticker, on the loop itself: no wake-up through the
            # loop's self-pipe (a system call per operation) is needed
            loop.call_soon(self._dispatch, events)
            return
        with contextlib.suppress(RuntimeError):  # loop shutting down
            loop.call_soon_threadsafe(self._dispatch, events)

    def _dispatch(self, events: list[EngineEvent]) -> None:
        markets: dict[str, None] = {}
        for event in events:
            if event.kind == "order":
                topic = user_orders_topic(event.key)
                for conn in list(self.subscribers.get(topic, ())):
                    data = None if event.data is None else views.order_record(event.data)
                    conn.send({"type": "data", "topic": topic, "data": data})
            else:
                markets[event.key] = None
        for market_id in markets:
            market = self.engine.markets.get(market_id)
            if market is None:
                continue
            for token in (market.fx.token_id_a, market.fx.token_id_b):
                for kind in MARKET_TOPIC_KINDS:
                    topic = book_topic(token, kind)
                    if self.subscribers.get(topic):
                        self._publish(topic, token, kind)

    def _payload(self, token: str, kind: str) -> tuple[object, object] | None:
        """A topic's message data, and what decides whether it changed (not the time)."""
        if kind == "book":
            book = self.engine.orderbook(token, allow_empty=True)
            return None if book is None else (views.orderbook(book), (book.bids, book.asks))
        snap = self.engine.price_snapshot(token)
        if snap is None:
            return None
        return views.price_payload(snap), msgspec.structs.replace(snap, at_ms=0)

    def _publish(self, topic: str, token: str, kind: str) -> None:
        found = self._payload(token, kind)
        if found is None:
            return
        data, key = found
        if self._last.get(topic) == key:
            return
        self._last[topic] = key
        for conn in list(self.subscribers.get(topic, ())):
            conn.send({"type": "data", "topic": topic, "data": data})

    def _refusal(self, conn: Connection, topic: object) -> str | None:
        """Why ``conn`` may not subscribe to ``topic``; None when it may."""
        if not isinstance(topic, str):
            return "topics must be strings"
        parts = topic.split(":")
        if len(parts) == 3 and parts[0] == "market" and parts[2] in MARKET_TOPIC_KINDS:
            if "markets:read" not in conn.user.scopes:
                return forbidden_scope("markets:read")
            return None if self.engine.has_token(parts[1]) else "unknown token"
        if len(parts) == 3 and parts[0] == "user" and parts[2] == "orders":
            return _orders_refusal(conn, parts[1])
        return "unknown topic"

    @property
    def max_queued_bytes(self) -> int:
        """The most bytes waiting for all subscribers together (``MAX_QUEUED_BYTES``)."""
        return self.queued.limit

    @max_queued_bytes.setter
    def max_queued_bytes(self, limit: int) -> None:
        self.queued.limit = limit

    def _shed_slowest(self) -> None:
        """Drop the subscribers with the most unread bytes until the rest fit the bound."""
        queued = self.queued
        for conn in sorted(self.connections, key=lambda c: c.queued_bytes, reverse=True):
            if queued.bytes <= queued.limit:
                break
            if not conn.closing:
                conn.shed()
                self.shed += 1

    def handle(self, conn: Connection, text: str) -> None:
        """One client message: a ping, a subscribe or an unsubscribe (or an error sent back)."""
        if conn.total is None and not conn.closing:  # from now on its bytes count overall
            conn.total = self.queued
            self.queued.bytes += conn.queued_bytes
            self.connections.add(conn)
        request = self._request(text)
        if isinstance(request, str):
            conn.send({"type": "error", "error": request})
        elif request[0] == "ping":
            conn.send({"type": "pong"})
        elif request[0] == "unsubscribe":
            gone = [t for t in request[1] if isinstance(t, str) and t in conn.topics]
            for topic in gone:
                self._unsubscribe(conn, topic)
            conn.send({"type": "unsubscribed", "topics": gone})
        else:
            self._subscribe(conn, request[1])

    def _request(self, text: str) -> tuple[str, list[object]] | str:
        """(action, its distinct topics in order) of a message, or why it is refused."""
        try:
            message = decode_json(text)
        except ValueError as exc:
            return f"invalid message: {exc}"
        if not isinstance(message, dict):
            return "invalid message: expected a JSON object"
        action = message.get("action")
        if action == "ping":
            return "ping", []
        if action not in ("subscribe", "unsubscribe"):
            return "unknown action (subscribe, unsubscribe or ping)"
        raw_topics = message.get("topics")
        if not isinstance(raw_topics, list) or not raw_topics:
            return "topics must be a non-empty array of strings"
        if len(raw_topics) > self.max_topics:  # checked before any work on them
            return f"at most {self.max_topics} topics per message"
        # De-duplicated in order: a topic listed twice is one subscription (and one watch).
        unique = {(isinstance(t, str), t if isinstance(t, str) else repr(t)): t for t in raw_topics}
        return str(action), list(unique.values())

    def _subscribe(self, conn: Connection, topics: list[object]) -> None:
        """The topics ``conn`` may have subscribed, confirmed, and each market's snapshot sent."""
        accepted = self._accepted(conn, topics)
        for topic in accepted:
            conn.topics.add(topic)
            self.subscribers.setdefault(topic, set()).add(conn)
            if topic.startswith("user:"):
                self.engine.watch_user(conn.user.user_id, +1)
        conn.send({"type": "subscribed", "topics": accepted})
        for topic in accepted:
            _, token, kind = topic.split(":")
            if topic.startswith("market:"):
                found = self._payload(token, kind)
                if found is not None:
                    conn.send({"type": "snapshot", "topic": topic, "data": found[0]})

    def _accepted(self, conn: Connection, topics: list[object]) -> list[str]:
        """The new topics ``conn`` may subscribe to, within its cap; an error sent for the rest."""
        accepted: list[str] = []
        for item in topics:
            refusal = self._refusal(conn, item)
            if refusal is not None:
                conn.send({"type": "error", "error": refusal, "topic": item})
                continue
            topic = str(item)
            if topic in conn.topics:
                continue
            if len(conn.topics) + len(accepted) >= self.max_topics:
                refusal = f"at most {self.max_topics} topics per connection"
                conn.send({"type": "error", "error": refusal, "topic": topic})
                continue
            accepted.append(topic)
        return accepted

    def _unsubscribe(self, conn: Connection, topic: str) -> None:
        conn.topics.discard(topic)
        subs = self.subscribers.get(topic)
        if subs is not None:
            subs.discard(conn)
            if not subs:
                del self.subscribers[topic]
                self._last.pop(topic, None)
        if topic.startswith("user:"):
            self.engine.watch_user(conn.user.user_id, -1)

    def drop(self, conn: Connection) -> None:
        """A connection gone: its topics, and its bytes from the total."""
        for topic in list(conn.topics):
            self._unsubscribe(conn, topic)
        if conn.total is not None:
            conn.total.bytes -= conn.queued_bytes
            conn.total = None
        self.connections.discard(conn)


def _orders_refusal(conn: Connection, user_id: str) -> str | None:
    """Why ``conn`` may not follow ``user_id``'s orders; None when it may."""
    if user_id != conn.user.user_id:
        return "forbidden: cannot subscribe to another user's orders"
    if "orders:read" not in conn.user.scopes:
        return forbidden_scope("orders:read")
    return None
