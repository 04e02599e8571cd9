"""The WebSocket channel (section 6): typed messages, reconnects, resubscription.

``Stream`` is an async iterator; ``SyncStream`` (``_sync_stream.py``) runs one on
a private event loop in a background thread for synchronous code. After a reconnect a stream
yields ``Reconnected``: messages sent while it was down are lost, so the
caller resynchronises over REST (``Client.open_orders()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from ssl import SSLContext
from types import TracebackType
from typing import Any

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedOK, InvalidStatus, WebSocketException

from ..core.checks import seconds
from ..core.jsondepth import json_too_deep
from ..core.spec import book_topic
from ..core.spec import user_orders_topic as orders_topic
from ..errors import ClobkitError, TransportError, ValidationError
from ..models import Order, Reconnected, StreamMessage
from ._aio import within
from ._core import ClientCore, StreamItem
from ._decode import tolerant_convert
from ._errors import api_error
from ._ops import split_url

__all__ = ["Stream", "StreamItem", "book_topic", "orders_topic", "parse_message"]

log = logging.getLogger("clobkit.client.stream")

Listener = Callable[[StreamItem], None]
# any user's order topic, built from the one home of the topic names
_ORDERS_TOPIC = re.compile(re.escape(orders_topic("@")).replace("@", "[^:]+") + r"\Z")


def topic_list(topics: Iterable[str] | str) -> list[str]:
    if not isinstance(topics, str) and not hasattr(topics, "__iter__"):
        raise ValidationError("topics", topics, "must be a topic string or an iterable of them")
    chosen = [topics] if isinstance(topics, str) else list(topics)
    for topic in chosen:
        if not isinstance(topic, str) or not topic:
            raise ValidationError("topics", topic, "must be non-empty topic strings")
    return list(dict.fromkeys(chosen))


def parse_message(raw: str | bytes, received_ns: int | None = None) -> StreamMessage:
    """A ``StreamMessage`` from one WebSocket frame (arrived at ``received_ns``, wall-clock
    ns); order payloads read as ``Order``.

    A frame that is not JSON (binary, not UTF-8, nested too deeply to decode)
    gives ``type="invalid"`` with the frame's text (bytes when not UTF-8); this
    never raises.
    """
    try:
        if json_too_deep(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw):
            raise RecursionError  # before msgspec can overflow the C stack
        obj = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):  # msgspec checks UTF-8
        data: Any = raw
        if isinstance(raw, bytes):
            with contextlib.suppress(UnicodeDecodeError):
                data = raw.decode()
        return StreamMessage(type="invalid", data=data, received_ns=received_ns)
    if not isinstance(obj, dict):
        return StreamMessage(type="unknown", data=obj, received_ns=received_ns)
    kind = obj.get("type")
    topic = obj.get("topic") if isinstance(obj.get("topic"), str) else None
    data = obj.get("data")
    order = None
    if (
        isinstance(data, dict)
        and (data.get("id") or data.get("order_id"))
        and (topic is None or _ORDERS_TOPIC.match(topic))
        and ("status" in data or "size_matched" in data)
    ):
        fields = dict(data)
        fields.setdefault("id", fields.get("order_id"))
        with contextlib.suppress(msgspec.ValidationError, RecursionError):
            order = tolerant_convert(fields, Order)
    error = obj.get("error")
    return StreamMessage(
        type=kind if isinstance(kind, str) else "unknown",
        topic=topic,
        data=data,
        order=order,
        received_ns=received_ns,
        error=error if isinstance(error, str) else None,
    )


class End:
    """Queue sentinel: the stream is over."""


END = End()


class Stream:
    """Async iterator of ``StreamMessage`` (and ``Reconnected``) for some topics.

    Use ``async with client.stream([...]) as s: async for msg in s: ...``
    (or iterate directly: the first ``__anext__`` connects). The handshake
    carries the signed ``X-API-*`` headers. A dropped connection is retried
    forever with capped exponential backoff (``backoff`` .. ``backoff_cap``
    seconds); failing the *first* connection raises ``TransportError`` (or the
    ``ApiError`` of a refused handshake, e.g. 401). After subscribing, the
    stream waits up to ``ack_timeout`` seconds for the server's first answer
    (the API text names no acknowledgement; the sandbox sends ``subscribed``)
    before ``start()`` returns or ``Reconnected`` is yielded.

    A frame that is not JSON (binary, not UTF-8, nested too deeply) is skipped
    and counted in ``bad_frames``. At most ``max_queue`` items wait unread:
    past that the stream stops reading the socket until the consumer catches
    up (frames are at most ``max_size`` bytes, 1 MiB by default). Should the
    stream's task ever fail, the consumer gets the error (a ``ClobkitError``)
    and ``closed`` turns True: it never waits on a dead stream. ``tls``: the
    client's TLS context (``wss``); the proxy is the client's ``proxy``, else the
    environment's (websockets reads it as the clients do).
    """

    def __init__(
        self,
        core: ClientCore,
        topics: Iterable[str] | str,
        *,
        backoff: float = 0.1,
        backoff_cap: float = 5.0,
        open_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        ack_timeout: float = 1.0,
        max_queue: int = 10_000,
        max_size: int = 1 << 20,
        tls: SSLContext | None = None,
    ) -> None:
        for name, value in (("max_queue", max_queue), ("max_size", max_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(name, value, "must be a positive int")
        self._core = core
        self._topics = topic_list(topics)
        self._backoff = seconds(backoff, "backoff")  # 0 would reconnect in a tight loop
        self._backoff_cap = seconds(backoff_cap, "backoff_cap")
        if backoff_cap < backoff:
            raise ValidationError(
                "backoff_cap", backoff_cap, f"must be at least backoff ({backoff})"
            )
        self._open_timeout = seconds(open_timeout, "open_timeout")
        self._ping_interval = (
            None if ping_interval is None else seconds(ping_interval, "ping_interval")
        )
        self._ack_timeout = seconds(ack_timeout, "ack_timeout", zero=True)
        self._max_queue = max_queue
        self._max_size = max_size
        self._tls = tls
        # unbounded as a container, bounded by _put (the end marker and a
        # failure always fit: they must reach the consumer)
        self._queue: asyncio.Queue[StreamItem | End | BaseException] = asyncio.Queue()
        self._room = asyncio.Event()
        self._listeners: list[Listener] = []
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._ws: ClientConnection | None = None
        self._closed = False
        #: Reconnects so far.
        self.reconnects = 0
        #: Frames skipped because they were not JSON (binary, not UTF-8, too deep).
        self.bad_frames = 0
        #: Frames received, each decoded once (``parse_message``).
        self.frames = 0
        #: Event-loop time (s) the connection was lost at (the first loss, however many
        #: reconnects fail after it); ``None`` while subscribed, and before the first.
        self.down_since: float | None = None
        self._refused: dict[str, str] = {}
        # the (un)subscribe messages of this connection the server has not answered yet,
        # oldest first: a topic-less ``error`` refuses the oldest whole
        self._asked: deque[tuple[str, list[str]]] = deque()
        #: A faster decoding of the frames a consumer knows (the recorder's book frames):
        #: ``decode(frame)`` gets each frame's bytes and returns its ``StreamMessage``, or
        #: ``None`` to leave the frame to ``parse_message``. It must not raise, and must
        #: check the nesting depth itself (``clobkit.core.jsondepth``) before decoding.
        self.decode: Callable[[bytes], StreamMessage | None] | None = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._ws is not None else "idle")
        return f"Stream(topics={self._topics!r}, {state})"

    @property
    def topics(self) -> list[str]:
        """The subscribed topics (resubscribed after every reconnect)."""
        return list(self._topics)

    @property
    def refused(self) -> dict[str, str]:
        """The topics the service refused (an ``error`` message naming them), with its
        words; each until it is subscribed again (a reconnect), dropped, or a message
        comes on it (the subscription stands). A copy."""
        return dict(self._refused)

    def refusal(self, topic: str) -> str | None:
        """Why the service refused ``topic`` (its words, as in ``refused``), else ``None``."""
        return self._refused.get(topic)

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran or the stream failed for good."""
        return self._closed

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(item)`` for every item, on the stream's event loop."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling ``listener``."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    async def start(self) -> None:
        """Connect and subscribe; returns once the subscription is sent."""
        if self._task is None:
            if self._closed:
                raise TransportError("stream is closed")
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._guarded(), name="clobkit-stream")
        assert self._ready is not None
        await asyncio.shield(self._ready)

    async def subscribe(self, topics: Iterable[str] | str) -> None:
        """Add topics; sent at once when connected, and after every reconnect."""
        new = [t for t in topic_list(topics) if t not in self._topics]
        self._topics.extend(new)
        ws = self._ws
        if new and ws is not None:
            with contextlib.suppress(WebSocketException, OSError):
                await self._send_topics(ws, "subscribe", new)

    async def unsubscribe(self, topics: Iterable[str] | str) -> None:
        """Drop topics: never subscribed again after a reconnect, and an ``unsubscribe``
        message sent at once when connected (the API text names only ``subscribe``; the
        sandbox honours it, and a service that does not at worst answers an ``error``
        message while the topic's messages keep coming until the next reconnect)."""
        chosen = set(topic_list(topics))
        gone = [t for t in self._topics if t in chosen]
        if not gone:
            return
        self._topics = [t for t in self._topics if t not in chosen]
        for topic in gone:
            self._refused.pop(topic, None)
        ws = self._ws
        if ws is not None:
            with contextlib.suppress(WebSocketException, OSError):
                await self._send_topics(ws, "unsubscribe", gone)

    async def close(self) -> None:
        """Close the connection and end iteration."""
        if self._closed and self._task is None:
            return
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        ready = self._ready
        if ready is not None and not ready.done():  # closed before it connected
            ready.set_exception(TransportError("stream closed before it connected"))
            ready.exception()  # mark retrieved: a waiting start() raises it
        while not self._queue.empty():  # closing ends iteration: drop what was not read
            self._queue.get_nowait()
        self._queue.put_nowait(END)

    async def __aenter__(self) -> Stream:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[StreamItem]:
        return self

    async def __anext__(self) -> StreamItem:
        if self._task is None and not self._closed:
            await self.start()
        item = await self._queue.get()
        self._room.set()
        if isinstance(item, End):
            self._queue.put_nowait(item)
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._queue.put_nowait(END)
            raise item
        return item

    # -- internals ---------------------------------------------------------------

    async def _emit(self, item: StreamItem) -> None:
        # wait for room: a consumer that does not read pauses the socket's
        # reading, never grows memory without bound
        while self._queue.qsize() >= self._max_queue and not self._closed:
            self._room.clear()
            await self._room.wait()
        self._queue.put_nowait(item)
        if not self._listeners:
            return
        for listener in tuple(self._listeners):
            try:
                listener(item)
            except Exception:
                log.exception("stream listener failed")

    def _fail(self, error: BaseException) -> None:
        self._closed = True
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(error)
            self._ready.exception()  # mark retrieved: start() raises it
        self._queue.put_nowait(error)

    def _headers(self) -> dict[str, str]:
        _, target = split_url(self._core.config.ws_url)
        return self._core.signer.headers("GET", target)

    async def _connect(self) -> ClientConnection:
        config = self._core.config
        options: dict[str, Any] = {}
        if config.ws_url.lower().startswith("wss:") and self._tls is not None:
            options["ssl"] = self._tls
        return await _Connect(
            config.ws_url,
            proxy=True if config.proxy is None else config.proxy.with_auth,
            additional_headers=self._headers(),
            open_timeout=self._open_timeout,
            ping_interval=self._ping_interval,
            max_size=self._max_size,
            # no permessage-deflate: websockets inflates a frame in one call, whose
            # output buffer peaks over twice max_size (2.3 MiB for 1 MiB measured),
            # and inflating costs CPU on every message; a server cannot compress
            # a frame unless the client offered it
            compression=None,
            user_agent_header="clobkit-python",
            **options,
        )

    def _frame(self, raw: bytes) -> StreamMessage | None:
        """The message of a frame, or None (counted, logged) for one that is not JSON."""
        # stamped on arrival: a consumer busy elsewhere (a recorder reading a snapshot)
        # reads it later, and must still know when it came
        received = time.time_ns()
        self.frames += 1
        decode = self.decode
        if decode is not None and (known := decode(raw)) is not None:
            if known.received_ns is None:
                known = msgspec.structs.replace(known, received_ns=received)
            return known
        message = parse_message(raw, received)
        if message.type != "invalid":
            return message
        self.bad_frames += 1
        log.warning(
            "skipping a stream frame that is not JSON (%s, %d bytes; %d so far)",
            type(raw).__name__,
            len(raw),
            self.bad_frames,
        )
        return None

    async def _guarded(self) -> None:
        """``_run``, and whatever ends it unexpectedly reaches the consumer."""
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("the stream failed")
            error = (
                exc
                if isinstance(exc, ClobkitError)
                else TransportError(f"stream failed: {type(exc).__name__}: {exc}")
            )
            self._fail(error)
        finally:
            self._ws = None

    async def _first_message(self, ws: ClientConnection) -> bytes | None:
        """The server's first answer to the subscription (its acknowledgement), if it
        comes within ``ack_timeout``: the stream counts as subscribed only then, so
        nothing published after ``start()`` returns (or after ``Reconnected``) is lost."""
        try:
            return await within(ws.recv(decode=False), self._ack_timeout)
        except TimeoutError:
            return None

    async def _run(self) -> None:
        """Connect, subscribe and read until closed; reconnect with backoff after a loss."""
        connected_once = False
        failures = 0
        while not self._closed:
            ws = await self._open(connected_once)
            if ws is not None:
                if await self._session(ws, connected_once):
                    connected_once = True
                    failures = 0
                elif not connected_once:  # the first connection failed: start() says so
                    code = ws.close_code
                    self._fail(TransportError(f"stream closed before it subscribed ({code})"))
            if self._closed:
                return
            delay = min(self._backoff_cap, self._backoff * 2.0**failures)
            failures += 1
            await asyncio.sleep(delay * (0.5 + 0.5 * self._core.random()))

    async def _open(self, connected_once: bool) -> ClientConnection | None:
        """A new connection, or None after a failure worth retrying; a failure of the
        first connection (or a refusal of the credentials) ends the stream."""
        try:
            return await self._connect()
        except InvalidStatus as exc:
            status = exc.response.status_code
            error = _handshake_error(status, bytes(exc.response.body or b""))
            if status in (401, 403) or not connected_once:
                self._fail(error)
            else:
                log.warning("stream handshake refused (%s); retrying", status)
        except (TimeoutError, OSError, WebSocketException, EOFError) as exc:
            if not connected_once:
                self._fail(TransportError(f"stream connect failed: {type(exc).__name__}: {exc}"))
            else:
                log.info("stream reconnect failed: %s: %s", type(exc).__name__, exc)
        return None

    async def _session(self, ws: ClientConnection, connected_once: bool) -> bool:
        """Subscribe on ``ws`` and read it until it ends; whether the subscription stood."""
        self._ws = ws
        subscribed = False
        try:
            self._refused.clear()  # subscribed anew: a refusal comes anew
            self._asked.clear()  # a new connection: the old one's answers never come
            await self._send_topics(ws, "subscribe", self._topics)
            first = await self._first_message(ws)
            await self._subscribed(connected_once)
            subscribed = True
            if first is not None:
                await self._receive(first)
            await self._read(ws)
            log.info("stream closed by the server (%s); reconnecting", ws.close_code)
        except (OSError, WebSocketException, EOFError) as exc:
            log.info("stream connection lost: %s: %s", type(exc).__name__, exc)
        finally:
            self._ws = None
            if self.down_since is None:  # down since this loss, not since a failed retry
                self.down_since = asyncio.get_running_loop().time()
            with contextlib.suppress(Exception):
                await within(ws.close(), 1.0)
        return subscribed

    async def _subscribed(self, connected_once: bool) -> None:
        """The subscription stands: ``start()`` returns, or ``Reconnected`` is yielded."""
        self.down_since = None  # up again only now: an open socket is not a subscription
        if connected_once:
            self.reconnects += 1
            stood = time.time_ns()  # when, however late its consumer reads it
            await self._emit(
                Reconnected(topics=list(self._topics), attempt=self.reconnects, received_ns=stood)
            )
        elif self._ready is not None and not self._ready.done():
            self._ready.set_result(None)

    async def _read(self, ws: ClientConnection) -> None:
        """Every frame until the server closes normally; as bytes, text frames too (no
        UTF-8 decoding here: the JSON decoder checks the text, and a frame that is not
        UTF-8 is a bad frame like any other)."""
        recv, receive, clock = ws.recv, self._receive, time.perf_counter
        busy = 0.0  # s spent on frames since the loop last ran anything else
        try:
            while True:
                raw = await recv(decode=False)
                began = clock()
                await receive(raw)
                busy += clock() - began
                # frames already buffered come back from recv() without a wait, so a
                # burst (a desk's requote: thousands of order updates) would hold the
                # loop for as long as it takes: give the loop a turn every STREAM_TURN s
                if busy > STREAM_TURN:
                    await asyncio.sleep(0)
                    busy = 0.0
        except ConnectionClosedOK:
            return

    async def _receive(self, raw: bytes) -> None:
        message = self._frame(raw)
        if message is not None:
            if message.type != "data" or self._refused:  # "data": the many, and plain
                self._heard(message)
            await self._emit(message)

    async def _send_topics(self, ws: ClientConnection, action: str, topics: list[str]) -> None:
        """``action`` (subscribe, unsubscribe) of ``topics``, ``FRAME_TOPICS`` a message,
        each message kept until the server answers it."""
        for k in range(0, len(topics), FRAME_TOPICS):
            chunk = topics[k : k + FRAME_TOPICS]
            self._asked.append((action, chunk))
            await ws.send(msgspec.json.encode({"action": action, "topics": chunk}).decode())

    def _heard(self, message: StreamMessage) -> None:
        """Keep (and say: never silent) a refusal. The server answers each (un)subscribe
        message in order, ``subscribed`` / ``unsubscribed`` or an ``error``: with a topic
        (that topic refused), or without (the whole message refused, as the sandbox does
        past its topics per message). A message on a refused topic shows its
        subscription stands."""
        kind, topic = message.type, message.topic
        if kind in ("subscribed", "unsubscribed"):
            if self._asked:
                self._asked.popleft()
        elif kind == "error":
            words = message.error or "refused"
            if topic is not None:
                self._refuse([topic], words)
            elif self._asked and self._asked[0][0] == "subscribe":
                self._refuse(self._asked.popleft()[1], words)
            else:
                if self._asked:
                    self._asked.popleft()
                log.warning("the stream's server answered an error: %s", words)
        elif topic is not None:
            self._refused.pop(topic, None)

    def _refuse(self, topics: list[str], words: str) -> None:
        held = set(self._topics)  # one an unsubscribe dropped is no longer the stream's
        for topic in topics:
            if topic in held:
                self._refused[topic] = words
                log.warning("the service refused the topic %s: %s", topic, words)
            else:
                log.warning("the stream's server answered an error (%s): %s", topic, words)


#: The longest (s) the stream handles buffered frames before the event loop gets a turn.
STREAM_TURN = 0.001

#: Topics in one subscribe message at most: a service may cap a message's topics (the
#: sandbox refuses a message of more than 1,000 whole), and subscriptions add up.
FRAME_TOPICS = 500


class _Connect(connect):
    """websockets' ``connect``, following no redirect: one would carry the signed
    ``X-API-*`` headers wherever it points (websockets drops only the Authorization
    and cookie headers across origins), and the REST clients follow none either. The
    redirect's status then refuses the handshake as any other status does."""

    def process_redirect(self, exc: Exception) -> Exception | str:
        return exc


def _handshake_error(status: int, body: bytes) -> ClobkitError:
    message = f"WebSocket handshake refused with HTTP {status}"
    code = None
    try:
        obj = msgspec.json.decode(body)
    except msgspec.DecodeError:
        obj = None
    if isinstance(obj, dict):
        if isinstance(obj.get("error"), str):
            message = obj["error"]
        if isinstance(obj.get("code"), str):
            code = obj["code"]
    if status < 400:
        return TransportError(message)
    return api_error(status, message, code)
