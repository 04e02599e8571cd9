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

When no timeout is asked for (the client bounds each attempt as a whole, see
``AsyncClient._send``), reads and writes go to anyio's stream under httpcore's
without httpcore's per-call timeout scope, with httpcore's error mapping.

``Pools.exchange`` sends the async client's requests through httpcore's pools
with httpcore's own request and response (its public API): no httpx model is
built per request.

Everything else (connection pool, HTTP/1.1, TLS, timeouts, error types) is
httpx's and httpcore's, through httpcore's public ``AsyncNetworkBackend`` hook.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio
import anyio.abc
import httpcore
import httpx

from ..errors import ClobkitError
from ._errors import body_error, declared_size, too_large, with_body
from ._ops import Outgoing

__all__ = ["Pools", "read_whole", "transport"]

#: httpcore's errors and the httpx errors httpx's transport raises for them (the
#: same table as httpx's ``map_httpcore_exceptions``): the direct path fails as
#: the transport would, so the client maps them to the same clobkit errors.
_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


#: httpcore's errors, the ones the direct path catches and maps (subclasses included)
_HTTPCORE_ERRORS = tuple(_ERRORS)


def as_httpx_error(exc: Exception) -> httpx.TransportError:
    """The httpx error httpx's transport raises for httpcore's ``exc`` (one of
    ``_HTTPCORE_ERRORS``): the most specific one."""
    mapped: type[httpx.TransportError] = httpx.TransportError
    for source, target in _ERRORS.items():
        if isinstance(exc, source) and issubclass(target, mapped):
            mapped = target
    error = mapped(str(exc))
    error.__cause__ = exc
    return error


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
        # anyio's stream under httpcore's (``AnyIOStream._stream``), should a later
        # httpcore keep it elsewhere None: then every call goes through ``inner``
        raw = getattr(inner, "_stream", None)
        self._raw: anyio.abc.ByteStream | None = (
            raw if isinstance(raw, anyio.abc.ByteStream) else None
        )

    async def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            raw = self._raw
            if raw is None or self._timeout is not None:
                await self._inner.write(data, self._timeout)
                return
            # httpcore's write without its timeout scope (none was asked for), which
            # cost about 10% of a request's client time; its errors mapped as it does
            try:
                await raw.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                raise httpcore.WriteError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._pending.append(buffer)
            self._timeout = timeout

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._flush()
        raw = self._raw
        if raw is None or timeout is not None:
            return await self._inner.read(max_bytes, timeout)
        try:  # httpcore's read without a timeout scope, as ``_flush``
            return await raw.receive(max_bytes)
        except anyio.EndOfStream:
            return b""
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpcore.ReadError(exc) from exc

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


async def read_whole(response: httpx.Response, limit: int | None) -> httpx.Response | Exception:
    """``response`` (streamed) with its whole body read, at most ``limit`` bytes as
    decoded, then closed; or the error met reading it."""
    try:
        error = body_error(response, declared_size(response), limit, False)
        if error is not None:
            return error
        headers = response.headers
        if "Content-Length" in headers and "Content-Encoding" not in headers:
            # h11 reads exactly the declared length, checked against the limit
            # above: read it whole, and the response needs no rebuilding
            await response.aread()
            return response
        chunks = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            error = body_error(response, size, limit, False)
            if error is not None:
                return error
        return with_body(response, b"".join(chunks))
    except (httpx.RequestError, ClobkitError) as exc:
        return exc
    finally:
        await response.aclose()


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


class _Body(httpx.AsyncByteStream):
    """httpcore's response body as an httpx stream, its errors raised as httpx's."""

    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_stream():
                yield chunk
        except _HTTPCORE_ERRORS as exc:
            raise as_httpx_error(exc) from exc

    async def aclose(self) -> None:
        await self._response.aclose()


class Pools(httpx.AsyncBaseTransport):
    """``count`` transports of ``transport(limits)``, each request to the next one in turn.

    httpcore's pool walks its connections twice per request, and for each idle one
    counts the idle ones again: with 20 connections kept that came to 0.5 ms per
    request sent alone and about 2 ms per request among 20 at once (2-core test
    machine). Split in ``count`` pools, each walks a ``count``-th of them.

    ``exchange`` sends a request through httpcore's pool of the next transport
    directly (httpcore's public request/response API), as httpx's transport does
    but without building the httpx request again or wrapping the body twice.
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
        cores = [getattr(t, "_pool", None) for t in self._pools]  # as under_pool reaches it
        #: httpcore's pools under the transports, None should a later httpx keep them
        #: elsewhere (then ``exchange`` goes through the transports).
        self.cores: list[httpcore.AsyncConnectionPool] | None = (
            cores  # type: ignore[assignment]
            if all(isinstance(c, httpcore.AsyncConnectionPool) for c in cores)
            else None
        )

    async def exchange(self, outgoing: Outgoing, limit: int | None) -> httpx.Response | Exception:
        """Send ``outgoing`` through httpcore's pool of the next transport: the answer
        with its whole body (at most ``limit`` bytes), or the error (httpcore's as the
        httpx error httpx's transport raises, a body too large as ``ServerError``).
        Needs ``cores``."""
        cores = self.cores
        assert cores is not None
        pool = cores[self._next]
        self._next = (self._next + 1) % len(cores)
        scheme, host, port = outgoing.origin
        try:
            response = await pool.handle_async_request(
                httpcore.Request(
                    outgoing.method,
                    httpcore.URL(scheme=scheme, host=host, port=port, target=outgoing.target),
                    headers=outgoing.headers,
                    content=outgoing.body,
                )
            )
        except _HTTPCORE_ERRORS as exc:
            return as_httpx_error(exc)
        try:
            length = None
            encoded = False
            for key, value in response.headers:
                name = key.lower()
                if name == b"content-length":
                    length = value
                elif name == b"content-encoding":
                    encoded = True
            if encoded or length is None or not length.isdigit():
                # decoded (and counted) by httpx chunk by chunk, as without this path
                streamed = httpx.Response(
                    response.status,
                    headers=response.headers,
                    stream=_Body(response),
                    request=outgoing.httpx_request(),
                    extensions=response.extensions,
                )
                return await read_whole(streamed, limit)
            if limit is not None and int(length) > limit:
                return too_large(outgoing, response.status, limit)
            chunks = []
            size = 0
            async for chunk in response.aiter_stream():
                chunks.append(chunk)
                size += len(chunk)
                if limit is not None and size > limit:
                    return too_large(outgoing, response.status, limit)
            return httpx.Response(
                response.status,
                headers=response.headers,
                content=b"".join(chunks),
                extensions=response.extensions,
            )
        except _HTTPCORE_ERRORS as exc:
            return as_httpx_error(exc)
        finally:
            await response.aclose()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        pools = self._pools
        pool = pools[self._next]
        self._next = (self._next + 1) % len(pools)
        return await pool.handle_async_request(request)

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()
