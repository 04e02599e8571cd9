"""``Client``: the synchronous I/O shell over ``ClientCore``, sending through httpcore's
pool (``_transport.py``)."""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

from ..errors import TransportError
from ..models import Order
from ..signing.protocol import as_signer
from ._api_sync import ClientApi
from ._config import ClientConfig
from ._core import OrderFeed
from ._errors import Reply
from ._ops import Gather, Operation, Receive, Send, Sign, Sleep
from ._paging import Pager
from ._stream import StreamItem
from ._sync_stream import SyncStream
from ._transport import SyncConnections, this_process
from ._wire import attempt_timeout_error

__all__ = ["Client"]

T = TypeVar("T")


class _Abandoned(Exception):
    """Ends a ``Gather``'s worker whose caller was interrupted (nobody reads it)."""


class Client(ClientApi):
    """Synchronous client of the External Trading API; see ``AsyncClient`` for asyncio.

    ``base_url``, ``api_key``, ``api_secret`` and ``clob_url`` default to the
    ``CLOBKIT_BASE_URL`` / ``CLOBKIT_API_KEY`` / ``CLOBKIT_API_SECRET`` /
    ``CLOBKIT_CLOB_URL`` environment variables (``clob_url``, the exchange
    host of the fee-rate query, falls back to ``base_url``). Times are in
    seconds: ``timeout`` bounds one attempt as a whole (a trickling server
    cannot stretch it), ``total_timeout`` a call with its retries (default
    ``(max_retries + 1) * timeout + max_retry_after``); a body over
    ``max_response_bytes`` is refused with ``ServerError``; ``landing_time`` is how long
    a raw order's copy without an answer may still land (``OutcomeUnknown``). GETs retry on 429,
    5xx and transport errors; ``place_order`` is never retried;
    ``place_raw_order`` always carries a ``client_order_id`` and is retried
    safely. The secret is held only by the request signer and never
    appears in a repr, log line or exception.

    One client may be shared by threads. ``close()`` from any thread ends the
    calls in flight with ``TransportError`` and refuses later ones; a child
    process after ``os.fork()`` makes its own client (this one refuses there:
    its connections are the parent's). See docs/going-live.md, "Threads, Ctrl-C and fork".

    The network options are ``AsyncClient``'s: ``max_connections``, ``proxy``,
    ``ssl`` or ``verify`` and ``cert`` (docs/going-live.md).
    """

    def _start(self, config: ClientConfig) -> None:
        """The transport and the state of this shell (``__init__`` resolved ``config``)."""
        # httpcore's request and response, every read and write ending by the deadline
        self._http = SyncConnections(config, self._tls)
        self._pid = this_process()
        self._shut = threading.Event()  # set by close(): wakes the calls sleeping
        self._lock = threading.Lock()  # threads add to the sets while close() reads them
        self._streams: weakref.WeakSet[SyncStream] = weakref.WeakSet()
        # the inboxes of the wait_for_order calls listening on a stream
        self._inboxes: weakref.WeakSet[queue.Queue[Any]] = weakref.WeakSet()

    def __repr__(self) -> str:
        config = self._core.config
        return f"Client(base_url={config.base_url!r}, api_key={config.api_key!r})"

    # -- I/O driver ------------------------------------------------------------------

    def _run(self, op: Operation[T], abandon: threading.Event | None = None) -> T:
        """Drive ``op`` to its result; a worker of a ``Gather`` stops before its next
        effect once ``abandon`` is set (the caller was interrupted)."""
        send = self._send
        shut = self._shut
        try:
            effect = op.send(None)
            while True:
                result: Any
                if shut.is_set() or self._pid != this_process():
                    # raised where the operation waits: a raw order's error carries it
                    effect = op.throw(self._refusal())
                    continue
                if abandon is not None and abandon.is_set():
                    raise _Abandoned  # closes the operation below: it sends nothing more
                if type(effect) is Send:
                    result = send(effect)
                elif type(effect) is Sleep:
                    shut.wait(effect.seconds)  # close() ends the sleep
                    result = None
                elif type(effect) is Gather:
                    result = self._gather(effect.operations, abandon)
                elif type(effect) is Sign:
                    result = as_signer(effect.signer).sign_many(effect.digests)
                else:
                    assert type(effect) is Receive
                    try:
                        result = effect.inbox.get(timeout=effect.seconds)
                    except queue.Empty:
                        result = None
                effect = op.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except BaseException:
            op.close()  # the operation's cleanup (a stream listener) runs at once
            raise

    def _refusal(self) -> TransportError:
        """The error of a call this client cannot make: closed, or in a forked child."""
        if self._pid != this_process():
            return TransportError(
                f"this Client was made in process {self._pid}; process {os.getpid()} was "
                "forked from it and shares its connections: make a new Client after the fork"
            )
        return TransportError("the Client is closed")

    def _send(self, effect: Send) -> Reply | BaseException:
        """One attempt: the complete response within ``effect.timeout`` s, or the error."""
        outgoing, timeout, limit = effect
        if timeout is not None and timeout <= 0:
            return attempt_timeout_error(outgoing, timeout)
        return self._http.exchange(outgoing, limit, timeout)

    def _gather(
        self, ops: list[Operation[Any]], abandon: threading.Event | None = None
    ) -> list[Any]:
        if len(ops) <= 1:
            return [self._run(op, abandon) for op in ops]
        stop = threading.Event() if abandon is None else abandon
        pool = ThreadPoolExecutor(max_workers=min(16, len(ops)))
        wait = True
        try:
            return list(pool.map(lambda op: self._run(op, stop), ops))
        except BaseException as exc:
            if not isinstance(exc, Exception):
                # Ctrl-C (KeyboardInterrupt in the main thread): return at once. The
                # requests in flight end in the background, each answer taken whole
                # (cached or not at all); the workers start nothing further.
                wait = False
                stop.set()
            raise
        finally:
            pool.shutdown(wait=wait, cancel_futures=not wait)

    def _iterate(self, pager: Pager[Any, T]) -> Iterator[T]:
        while pager.params is not None:
            yield from pager.advance(self._run(self._core.page(pager)))

    # -- lifecycle --------------------------------------------------------------------

    def close(self) -> None:
        """Close open streams and the HTTP connection pool, from any thread: calls in
        flight end with ``TransportError`` (a raw order's carries it), later ones are
        refused. In a child after a fork the parent's connections are left to it."""
        self._shut.set()
        with self._lock:
            streams, inboxes = list(self._streams), list(self._inboxes)
        for inbox in inboxes:
            inbox.put(None)  # a wait_for_order waiting on a stream goes on, and is refused
        for stream in streams:
            stream.close()
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- waiting on a stream ----------------------------------------------------------

    def _listen(self, order: Order) -> OrderFeed | None:
        with self._lock:
            streams = list(self._streams)
        stream = self._core.order_stream(order, streams)
        if stream is None:
            return None
        inbox: queue.Queue[StreamItem] = queue.Queue()
        with self._lock:
            self._inboxes.add(inbox)
        return OrderFeed(stream, inbox, inbox.put)

    # -- stream -------------------------------------------------------------------------

    def stream(
        self,
        topics: Iterable[str] | str,
        *,
        backoff: float = 0.1,
        backoff_cap: float = 5.0,
        open_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        ack_timeout: float = 1.0,
        max_queue: int = 10_000,
    ) -> SyncStream:
        """A WebSocket stream of ``topics`` (``user:<id>:orders``, ``market:<token>:book``).

        Connects on ``start()``, ``with`` or first iteration (returning once the
        server acknowledged, or after ``ack_timeout`` s); reconnects with backoff
        (seconds), resubscribes and yields ``Reconnected``. Frames that are not JSON are
        skipped (counted in ``bad_frames``); at most ``max_queue`` items wait unread.
        ``TransportError`` once the client is closed.
        """
        stream = SyncStream(
            self._core,
            topics,
            backoff=backoff,
            backoff_cap=backoff_cap,
            open_timeout=open_timeout,
            ping_interval=ping_interval,
            ack_timeout=ack_timeout,
            max_queue=max_queue,
            tls=self._tls,
        )
        with self._lock:  # close() reads the set under the lock, after setting _shut
            if self._shut.is_set() or self._pid != this_process():
                raise self._refusal()
            self._streams.add(stream)
        return stream
