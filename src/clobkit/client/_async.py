"""``AsyncClient``: the asyncio I/O shell over ``ClientCore``, sending through one
aiohttp ``ClientSession`` (``_session.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import Any, TypeVar

from ..errors import TransportError
from ..models import Order
from ..signing.protocol import as_async_signer
from ._aio import pace
from ._api_async import AsyncClientApi
from ._config import ClientConfig
from ._core import OrderFeed
from ._errors import Reply
from ._ops import Gather, Operation, Receive, Send, Sign, Sleep
from ._paging import Pager
from ._session import SessionTransport
from ._stream import Stream, StreamItem
from ._wire import attempt_timeout_error

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient(AsyncClientApi):
    """Asyncio client of the External Trading API; the twin of ``Client``.

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

    The network (docs/going-live.md): at most ``max_connections`` connections at
    once; ``proxy`` (an ``http://`` or ``https://`` URL; default: the environment's,
    ``NO_PROXY`` honoured); TLS with the ``ssl`` context given, else ``verify`` (the
    system's roots; a CA bundle's path; ``False``) and ``cert`` (a client
    certificate's PEM file, or ``(certificate, key)``).
    """

    def _start(self, config: ClientConfig) -> None:
        """The transport and the state of this shell (``__init__`` resolved ``config``)."""
        self._http = SessionTransport(config, self._tls)
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        self._closed = False

    def __repr__(self) -> str:
        config = self._core.config
        return f"AsyncClient(base_url={config.base_url!r}, api_key={config.api_key!r})"

    # -- I/O driver ------------------------------------------------------------------

    async def _run(self, op: Operation[T]) -> T:
        send = self._send
        try:
            effect = op.send(None)
            while True:
                result: Any
                if self._closed:  # raised where the operation waits (a raw order's carries it)
                    effect = op.throw(TransportError("the AsyncClient is closed"))
                    continue
                if type(effect) is Send:
                    result = await send(effect)
                elif type(effect) is Sleep:
                    await asyncio.sleep(effect.seconds)
                    await pace()  # what follows a wait is a request sent again
                    result = None
                elif type(effect) is Gather:
                    result = await self._gather(effect.operations)
                elif type(effect) is Sign:
                    result = await as_async_signer(effect.signer).sign_digests(effect.digests)
                else:
                    assert type(effect) is Receive
                    result = None
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(effect.seconds):
                            result = await effect.inbox.get()
                effect = op.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except BaseException:
            op.close()  # the operation's cleanup (a stream listener) runs at once
            raise

    async def _send(self, effect: Send) -> Reply | BaseException:
        """One attempt: the complete response within ``effect.timeout`` s, or the error."""
        outgoing, timeout, limit = effect
        if timeout is not None and timeout <= 0:
            return attempt_timeout_error(outgoing, timeout)
        return await self._http.exchange(outgoing, limit, timeout)

    async def _gather(self, ops: list[Operation[Any]]) -> list[Any]:
        """Run ``ops`` concurrently: their results in order; the first failure cancels the
        others and is raised (alone, not in an ``ExceptionGroup``)."""
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._run(op)) for op in ops]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return [task.result() for task in tasks]

    async def _iterate(self, pager: Pager[Any, T]) -> AsyncIterator[T]:
        further = False
        while pager.params is not None:
            if further:
                await pace()  # a further page: a request beyond the walk's first
            further = True
            for item in pager.advance(await self._run(self._core.page(pager))):
                yield item

    # -- lifecycle --------------------------------------------------------------------

    async def close(self) -> None:
        """Close open streams and the HTTP connection pool; later calls are refused
        (``TransportError``)."""
        self._closed = True
        for stream in list(self._streams):
            await stream.close()
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- waiting on a stream ----------------------------------------------------------

    def _listen(self, order: Order) -> OrderFeed | None:
        stream = self._core.order_stream(order, list(self._streams))
        if stream is None:
            return None
        inbox: asyncio.Queue[StreamItem] = asyncio.Queue()
        return OrderFeed(stream, inbox, inbox.put_nowait)

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
    ) -> Stream:
        """A WebSocket stream of ``topics`` (``user:<id>:orders``, ``market:<token>:book``).

        Connects on ``start()``, ``async with`` or first iteration (returning once
        the server acknowledged, or after ``ack_timeout`` s); reconnects with
        backoff (seconds), resubscribes and yields ``Reconnected``. Frames that are not JSON are
        skipped (counted in ``bad_frames``); at most ``max_queue`` items wait unread.
        ``TransportError`` once the client is closed.
        """
        if self._closed:
            raise TransportError("the AsyncClient is closed")
        stream = Stream(
            self._core,
            topics,
            tls=self._tls,
            backoff=backoff,
            backoff_cap=backoff_cap,
            open_timeout=open_timeout,
            ping_interval=ping_interval,
            ack_timeout=ack_timeout,
            max_queue=max_queue,
        )
        self._streams.add(stream)
        return stream
