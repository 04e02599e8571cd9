"""``Client``'s transport: httpcore's connection pool (public API only), each attempt
ending by its deadline, each body bounded after decoding.

* ``SyncConnections``: httpcore's ``ConnectionPool`` (an ``HTTPProxy`` pool of its own
  for each proxy ``_net.Proxies`` names), with a network backend (httpcore's public
  ``network_backend`` option) whose every read and write ends by the attempt's
  deadline, its request sent with httpcore's own request and response and its answer
  read whole into a ``_wire.Answer`` (``_body.Body`` under ``max_response_bytes``);
  httpcore's exceptions become ``clobkit.errors`` through one table, ``FAILURES``;
* ``this_process()``: the id of the running process, kept by a fork hook, so that
  what a process inherited from its parent (connections, stream threads) is told
  from its own at the cost of an attribute read.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import threading
import time
import weakref
import zlib
from ssl import SSLContext
from typing import Any

import httpcore

from ..errors import ClobkitError
from ..errors import TransportError as ClobkitTransportError
from ._body import Body, BodyTooLarge, refusal, unreadable
from ._config import KEEPALIVE_EXPIRY, ClientConfig
from ._net import Proxies, ProxyUrl
from ._wire import (
    Answer,
    Failure,
    Outgoing,
    RawHeaders,
    attempt_timeout_error,
    failure_error,
    lookup_failure,
)

__all__ = ["FAILURES", "SyncConnections", "this_process"]


class _Process:
    pid = os.getpid()  # updated in a child by the fork hook below


def _forked() -> None:
    _Process.pid = os.getpid()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forked)


def this_process() -> int:
    """The running process's id (``os.getpid()`` without its system call)."""
    return _Process.pid


#: httpcore's exceptions (every class it exports) and the failures they are. A
#: ``RemoteProtocolError`` before any byte of the answer is the server's close
#: (``DISCONNECTED``), and any protocol error in the body is a body ``CUT`` short
#: (``_protocol_failure``): the words aiohttp's exceptions give the async client.
FAILURES: dict[type[BaseException], Failure] = {
    httpcore.ConnectionNotAvailable: Failure.LOST,
    httpcore.ProxyError: Failure.PROXY,
    httpcore.ProtocolError: Failure.MALFORMED,
    httpcore.LocalProtocolError: Failure.UNSENDABLE,
    httpcore.RemoteProtocolError: Failure.MALFORMED,
    httpcore.UnsupportedProtocol: Failure.UNSENDABLE,
    httpcore.TimeoutException: Failure.TIMEOUT,
    httpcore.PoolTimeout: Failure.TIMEOUT,
    httpcore.ConnectTimeout: Failure.TIMEOUT,
    httpcore.ReadTimeout: Failure.TIMEOUT,
    httpcore.WriteTimeout: Failure.TIMEOUT,
    httpcore.NetworkError: Failure.LOST,
    httpcore.ConnectError: Failure.CONNECT,
    httpcore.ReadError: Failure.LOST,
    httpcore.WriteError: Failure.LOST,
}
_HTTPCORE_ERRORS = tuple(FAILURES)


def _kind(exc: BaseException, in_body: bool) -> Failure:
    """The failure of httpcore's ``exc``, met reading the body or before it."""
    kind = lookup_failure(FAILURES, exc) or Failure.LOST
    if kind is Failure.MALFORMED and isinstance(exc, httpcore.RemoteProtocolError):
        if in_body:
            return Failure.CUT
        if not _deadline.heard:
            return Failure.DISCONNECTED
    if kind is Failure.CONNECT and isinstance(exc.__cause__, ssl.SSLError):
        return Failure.TLS  # httpcore's ConnectError from the handshake
    return kind


def _failure(
    exc: BaseException, outgoing: Outgoing, timeout: float | None, in_body: bool = False
) -> ClobkitError:
    error = failure_error(_kind(exc, in_body), outgoing, str(exc).strip(), timeout)
    error.__cause__ = exc
    return error


def _start(
    outgoing: Outgoing, status: int, headers: list[tuple[bytes, bytes]], limit: int | None
) -> Body | ClobkitError:
    """The body reader of an answer, or the error refusing it before its body."""
    codings = [v.decode("latin-1") for k, v in headers if k.lower() == b"content-encoding"]
    coding = ", ".join(codings) if codings else None
    refused = refusal(outgoing, status, coding, _declared(headers, limit), limit)
    return Body(coding, limit) if refused is None else refused


def _declared(headers: list[tuple[bytes, bytes]], limit: int | None) -> int | None:
    """The ``Content-Length`` of ``headers`` (None when absent or unread), read only as
    far as ``limit`` needs: a length of more digits than it is past it unconverted
    (int() of more than 4,300 digits raises)."""
    if limit is None:
        return None  # nothing to refuse
    for key, value in headers:
        if key.lower() == b"content-length" and value.isdigit():
            return limit + 1 if len(value) > len(str(limit)) else int(value)
    return None


# ---------------------------------------------------------------------------
# The sync client's pool: a deadline under httpcore's per-read timeouts


class _Deadline(threading.local):
    at: float | None = None  # time.monotonic() of the current attempt's end
    sent: _DeadlineStream | None = None  # the stream the attempt's request went out on
    heard = 0  # bytes read from it since


_deadline = _Deadline()


def _cut(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` shortened to what is left of the attempt (raises ``error`` at 0)."""
    at = _deadline.at
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read and write ends by the attempt's deadline, so a
    server trickling its headers one byte at a time cannot outlast ``timeout``."""

    def __init__(self, inner: httpcore.NetworkStream, backend: _DeadlineBackend) -> None:
        self._inner = inner
        self._backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, _cut(timeout, httpcore.ReadTimeout))
        if _deadline.sent is self:
            _deadline.heard += len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if _deadline.sent is not self:
            _deadline.sent, _deadline.heard = self, 0
        self._inner.write(buffer, _cut(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def shut_down(self) -> None:
        """End the connection for both sides: a thread blocked reading it wakes at once
        (closing the socket alone leaves it waiting for its timeout)."""
        sock = self._inner.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed, or reset
                sock.shutdown(socket.SHUT_RDWR)

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, _cut(timeout, httpcore.ConnectTimeout)
        )
        return self._backend.track(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's ``SyncBackend``, its streams ending by the attempt's deadline; it
    knows its open streams (``SyncConnections.close`` reaches them without the pool)."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()
        self._lock = threading.Lock()
        self._streams: weakref.WeakSet[_DeadlineStream] = weakref.WeakSet()

    def track(self, inner: httpcore.NetworkStream) -> _DeadlineStream:
        """``inner`` as a stream ending by the deadline, known to this backend."""
        stream = _DeadlineStream(inner, self)
        with self._lock:
            self._streams.add(stream)
        return stream

    def streams(self, *, inherited: bool = False) -> list[_DeadlineStream]:
        """The streams not yet collected. ``inherited``: read in a child after a fork,
        without the lock (a thread of the parent may have held it; none of the child
        adds to the set)."""
        if inherited:
            return list(self._streams)
        with self._lock:
            return list(self._streams)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(
            host, port, _cut(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return self.track(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:  # pragma: no cover - the client takes no socket path
        stream = self._inner.connect_unix_socket(
            path, _cut(timeout, httpcore.ConnectTimeout), socket_options
        )
        return self.track(stream)

    def sleep(self, seconds: float) -> None:  # pragma: no cover - httpcore's retries only
        self._inner.sleep(seconds)


def _unasked(outgoing: Outgoing) -> ClobkitError | None:
    """The error of an answer read before the attempt's request went out: bytes a server
    sent unasked on a kept connection (left in httpcore's parser), never this request's
    answer. Its connection is closed, so httpcore drops it."""
    sent = _deadline.sent
    if sent is None or _deadline.heard:
        return None
    sent.close()
    return failure_error(
        Failure.MALFORMED, outgoing, "an answer before the request: bytes nobody asked for"
    )


class SyncConnections:
    """httpcore's connection pool (HTTP/1.1; a pool of its own through each proxy),
    each attempt ending by its deadline.

    Shared by threads (httpcore's pools lock their own state). ``close()`` from any
    thread cuts the exchanges in flight short and refuses later ones; in a child
    process after a fork the connections are the parent's and are never used.
    """

    def __init__(self, config: ClientConfig, tls: SSLContext | None) -> None:
        self._backend = _DeadlineBackend()
        self._tls = tls
        self._limit = config.max_connections
        self._proxies = Proxies(config.proxy)
        self._pool = self._make(None)
        self._through: dict[ProxyUrl, httpcore.ConnectionPool] = {}
        self._lock = threading.Lock()
        self._pid = this_process()
        self.closed = False

    def _make(self, proxy: ProxyUrl | None) -> httpcore.ConnectionPool:
        options: dict[str, Any] = {
            "ssl_context": self._tls,
            "max_connections": self._limit,
            "max_keepalive_connections": min(20, self._limit),
            "keepalive_expiry": KEEPALIVE_EXPIRY,
            "network_backend": self._backend,
        }
        if proxy is None:
            return httpcore.ConnectionPool(**options)
        if proxy.url.startswith("https:"):  # TLS to the proxy itself too
            options["proxy_ssl_context"] = self._tls
        return httpcore.HTTPProxy(proxy_url=proxy.url, proxy_auth=proxy.auth, **options)

    def _pool_of(self, outgoing: Outgoing) -> httpcore.ConnectionPool:
        proxy = self._proxies(outgoing.origin.scheme, outgoing.origin.host)
        if proxy is None:
            return self._pool
        with self._lock:
            pool = self._through.get(proxy)
            if pool is None:
                pool = self._through[proxy] = self._make(proxy)
            return pool

    def exchange(
        self, outgoing: Outgoing, limit: int | None, timeout: float | None
    ) -> Answer | ClobkitError:
        """Send ``outgoing``: the answer with its whole body (at most ``limit`` bytes as
        decoded) within ``timeout`` s, or the ``clobkit.errors`` exception of the failure
        (httpcore's through ``FAILURES``; a body too large as ``ServerError``; one cut
        off by ``close()`` as ``TransportError``)."""
        if self.closed or self._pid != this_process():
            return _closed(outgoing, "not sent")
        deadline = None if timeout is None else time.monotonic() + timeout
        origin = outgoing.origin
        extensions = {} if timeout is None else {"timeout": dict.fromkeys(_PHASES, timeout)}
        _deadline.at = deadline  # read by the network streams (_DeadlineStream)
        _deadline.sent = None
        _deadline.heard = 0
        pool = self._pool_of(outgoing)
        try:
            response = pool.handle_request(
                httpcore.Request(
                    outgoing.method,
                    httpcore.URL(
                        scheme=origin.scheme,
                        host=origin.host,
                        port=origin.port,
                        target=outgoing.target,
                    ),
                    headers=outgoing.headers,
                    content=outgoing.body,
                    extensions=extensions,
                )
            )
        except BaseException as exc:
            _deadline.at = _deadline.sent = None
            if not isinstance(exc, _HTTPCORE_ERRORS):
                raise  # KeyboardInterrupt: httpcore dropped the connection half used
            return _closed(outgoing, "cut off") if self.closed else _failure(exc, outgoing, timeout)
        try:
            return self._read(outgoing, response, limit, timeout, deadline)
        finally:
            _deadline.at = _deadline.sent = None
            response.close()  # unless read whole, httpcore drops the connection
            if self.closed:  # close() ran meanwhile: leave no connection open
                self._close_pools()

    def _read(
        self,
        outgoing: Outgoing,
        response: httpcore.Response,
        limit: int | None,
        timeout: float | None,
        deadline: float | None,
    ) -> Answer | ClobkitError:
        """The answer of ``exchange`` read whole, or the error met reading it."""
        status, headers = response.status, response.headers
        try:
            body = _unasked(outgoing) or _start(outgoing, status, headers, limit)
            if not isinstance(body, Body):
                return body
            for chunk in response.iter_stream():
                body.feed(chunk)
                if deadline is not None and time.monotonic() > deadline:
                    return attempt_timeout_error(outgoing, timeout)
            content = body.finish()
        except (BodyTooLarge, zlib.error) as exc:
            return unreadable(exc, outgoing, status, limit)
        except _HTTPCORE_ERRORS as exc:
            if self.closed:
                return _closed(outgoing, "cut off")
            return _failure(exc, outgoing, timeout, in_body=True)
        reason = response.extensions.get("reason_phrase", b"")
        return Answer(status, RawHeaders(headers), content, reason.decode("latin-1"))

    def _close_pools(self) -> None:
        with self._lock:
            pools = [self._pool, *self._through.values()]
        for pool in pools:
            pool.close()

    def close(self) -> None:
        """Close every connection; exchanges in flight in other threads end at once
        (their sockets are shut down: closing alone would leave a reader waiting for
        its timeout) and later ones are refused. In a child after a fork only the
        child's copies of the parent's sockets are closed: shutting one down would
        end the parent's connection, and the pools' locks may be held by a thread
        of the parent that the child does not have."""
        self.closed = True
        if self._pid != this_process():
            for stream in self._backend.streams(inherited=True):
                stream.close()
            return
        for stream in self._backend.streams():
            stream.shut_down()
        self._close_pools()


#: httpcore's timeout phases, each given the attempt's seconds (the network streams
#: cut each read and write to what is left of it)
_PHASES = ("connect", "read", "write", "pool")


def _closed(outgoing: Outgoing, what: str) -> ClobkitTransportError:
    """The error of an exchange the client's ``close()`` refused or cut off."""
    return ClobkitTransportError(f"{outgoing.where}: {what}, the Client was closed")
