"""httpx's own transport for ``AsyncClient``, with a network backend that sends each
request in one write.

httpcore writes a request's head and body as two ``send`` calls. On loopback
each one wakes the server (which parses the head and waits for the body), and
on the 2-core test machine each such send cost about 0.7 ms: a POST paid it
twice. ``_Stream`` holds writes until the connection is next read, which
httpcore always does right after a request, so head and body leave together.
It also answers httpcore's "is this idle connection readable?" check, made
for every pooled connection on every request, from the socket it keeps
instead of anyio's attribute table (which costs a ``getpeername`` call each time).

Everything else (connection pool, HTTP/1.1, TLS, timeouts, error types) is
httpx's and httpcore's, through httpcore's public ``AsyncNetworkBackend`` hook.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

__all__ = ["Pools", "transport"]


def _readable(sock: socket.socket | None) -> bool:
    """True when ``sock`` has bytes (or its end) waiting: an idle connection the server closed."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover - Windows


class _Stream(httpcore.AsyncNetworkStream):
    """A network stream whose writes wait for the next read (or close) to leave as one."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._pending: list[bytes] = []
        self._timeout: float | None = None
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            await self._inner.write(data, self._timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._pending.append(buffer)
            self._timeout = timeout

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._flush()
        return await self._inner.read(max_bytes, timeout)

    async def aclose(self) -> None:
        self._pending.clear()  # a request never read back: nothing more is sent
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        await self._flush()
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    """The pool's own network backend (httpcore's default), its streams wrapped."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return _Stream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:  # pragma: no cover - the client takes no socket path
        stream = await self._inner.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )
        return _Stream(stream)

    async def sleep(self, seconds: float) -> None:  # pragma: no cover - used by retries only
        await self._inner.sleep(seconds)


def under_pool(transport: httpx.BaseTransport | httpx.AsyncBaseTransport, wrap: Any) -> bool:
    """Put ``wrap(backend)`` in place of the network backend of ``transport``'s pool.

    httpx names no option for a network backend, so this reaches its pool's
    ``_network_backend`` (httpcore's public ``NetworkBackend`` interface under
    it); should a later httpx keep them elsewhere, ``transport`` is left as it
    is and this returns False. Both clients use it: the sync one for its
    deadline streams, the async one for its one-write streams.
    """
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    expected = (
        httpcore.AsyncNetworkBackend
        if isinstance(transport, httpx.AsyncBaseTransport)
        else httpcore.NetworkBackend
    )
    if not isinstance(inner, expected):
        return False
    pool._network_backend = wrap(inner)  # type: ignore[union-attr]
    return True


def transport(limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """httpx's transport with ``limits``, each request of it sent in one write."""
    http = httpx.AsyncHTTPTransport(limits=limits)
    under_pool(http, _Backend)
    return http


class Pools(httpx.AsyncBaseTransport):
    """``count`` transports of ``transport(limits)``, each request to the next one in turn.

    httpcore's pool walks its connections twice per request, and for each idle one
    counts the idle ones again: with 20 connections kept that came to 0.5 ms per
    request sent alone and about 2 ms per request among 20 at once (2-core test
    machine). Split in ``count`` pools, each walks a ``count``-th of them.
    """

    def __init__(self, limits: httpx.Limits, count: int) -> None:
        def share(value: int | None) -> int | None:
            return None if value is None else max(1, -(-value // count))

        part = httpx.Limits(
            max_connections=share(limits.max_connections),
            max_keepalive_connections=share(limits.max_keepalive_connections),
            keepalive_expiry=limits.keepalive_expiry,
        )
        self._pools = [transport(part) for _ in range(count)]
        self._next = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        pools = self._pools
        pool = pools[self._next]
        self._next = (self._next + 1) % len(pools)
        return await pool.handle_async_request(request)

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()
