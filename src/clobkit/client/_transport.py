"""Reading answers through httpx and httpcore (public API only), bounded after decoding.

* ``read_whole_async`` / ``read_whole_sync``: an ``httpx.Response`` opened as a
  stream (a transport given to the client, a proxy from the environment) read
  whole from its raw bytes, decoded by ``_body.Body`` under ``max_response_bytes``
  (httpx's own decoding inflates a whole chunk, unbounded, before it can be counted);
* ``SyncConnections``: the sync client's pool, httpcore's ``ConnectionPool`` with
  a network backend (httpcore's public ``network_backend`` option) whose every
  read and write ends by the attempt's deadline, and its request sent with
  httpcore's own request and response: no httpx model is built per request;
* ``this_process()``: the id of the running process, kept by a fork hook, so that
  what a process inherited from its parent (connections, stream threads) is told
  from its own at the cost of an attribute read.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import weakref
import zlib
from typing import Any

import httpcore
import httpx

from ..errors import ClobkitError
from ..errors import TimeoutError as ClobkitTimeoutError
from ..errors import TransportError as ClobkitTransportError
from ._body import Body, BodyTooLarge, coding_error
from ._errors import body_error, too_large
from ._ops import Outgoing

__all__ = [
    "SyncConnections",
    "as_httpx_error",
    "read_whole_async",
    "read_whole_sync",
    "this_process",
]


class _Process:
    pid = os.getpid()  # updated in a child by the fork hook below


def _forked() -> None:
    _Process.pid = os.getpid()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forked)


def this_process() -> int:
    """The running process's id (``os.getpid()`` without its system call)."""
    return _Process.pid


#: httpcore's errors and the httpx errors httpx's transport raises for them (the
#: same table as httpx's ``map_httpcore_exceptions``): the direct path fails as
#: httpx's client would, so the core maps both to the same clobkit errors.
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
_HTTPCORE_ERRORS = tuple(_ERRORS)


def as_httpx_error(exc: Exception) -> httpx.TransportError:
    """The httpx error httpx's transport raises for httpcore's ``exc``: the most specific."""
    mapped: type[httpx.TransportError] = httpx.TransportError
    for source, target in _ERRORS.items():
        if isinstance(exc, source) and issubclass(target, mapped):
            mapped = target
    error = mapped(str(exc))
    error.__cause__ = exc
    return error


_BODY_HEADERS = (b"content-encoding", b"content-length", b"transfer-encoding")


def _complete(
    status: int, headers: list[tuple[bytes, bytes]], body: Body, coded: bool, extensions: Any
) -> httpx.Response:
    content = body.finish()
    if coded:  # the content is decoded: its coding and size are not the headers'
        headers = [(k, v) for k, v in headers if k.lower() not in _BODY_HEADERS]
    return httpx.Response(status, headers=headers, content=content, extensions=extensions)


def _start(
    request: Any, status: int, headers: list[tuple[bytes, bytes]], limit: int | None
) -> tuple[Body, bool] | ClobkitError:
    """The body reader of an answer, or the error refusing it before its body."""
    codings = [v.decode("latin-1") for k, v in headers if k.lower() == b"content-encoding"]
    if codings:
        error = coding_error(", ".join(codings), status)
        if error is not None:
            return error
        return Body(", ".join(codings), limit), True
    for key, value in headers:
        big = limit is not None and value.isdigit() and int(value) > limit
        if big and key.lower() == b"content-length":
            assert limit is not None
            return too_large(request, status, limit)
    return Body(None, limit), False


def _already_read(response: httpx.Response, limit: int | None) -> httpx.Response | Exception:
    """A response a transport gave with its content read (and decoded) already."""
    if limit is not None and len(response.content) > limit:
        return too_large(response.request, response.status_code, limit)
    return response


async def read_whole_async(
    response: httpx.Response, limit: int | None
) -> httpx.Response | Exception:
    """``response`` (streamed) read whole, at most ``limit`` bytes as decoded, then
    closed; or the error met reading it."""
    try:
        started = _start(response.request, response.status_code, response.headers.raw, limit)
        if isinstance(started, ClobkitError):
            return started
        body, coded = started
        if response.is_stream_consumed:  # a transport that answered with read content
            return _already_read(response, limit)
        async for chunk in response.aiter_raw():
            body.feed(chunk)
        whole = _complete(response.status_code, response.headers.raw, body, coded, None)
        whole.request = response.request
        return whole
    except BodyTooLarge:
        assert limit is not None
        return too_large(response.request, response.status_code, limit)
    except zlib.error as exc:
        return httpx.DecodingError(str(exc))
    except (httpx.RequestError, ClobkitError) as exc:
        return exc
    finally:
        await response.aclose()


def read_whole_sync(
    response: httpx.Response, limit: int | None, deadline: float | None
) -> httpx.Response | Exception:
    """``read_whole_async`` for the sync client, also refusing a body still
    arriving past ``deadline`` (``time.monotonic()``)."""
    try:
        started = _start(response.request, response.status_code, response.headers.raw, limit)
        if isinstance(started, ClobkitError):
            return started
        body, coded = started
        if response.is_stream_consumed:  # a transport that answered with read content
            return _already_read(response, limit)
        for chunk in response.iter_raw():
            body.feed(chunk)
            if deadline is not None and time.monotonic() > deadline:
                late = body_error(response, 0, None, True)
                assert late is not None
                return late
        whole = _complete(response.status_code, response.headers.raw, body, coded, None)
        whole.request = response.request
        return whole
    except BodyTooLarge:
        assert limit is not None
        return too_large(response.request, response.status_code, limit)
    except zlib.error as exc:
        return httpx.DecodingError(str(exc))
    except (httpx.RequestError, ClobkitError) as exc:
        return exc
    finally:
        response.close()


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


def _unasked() -> httpx.RemoteProtocolError | None:
    """The error of an answer read before the attempt's request went out: bytes a server
    sent unasked on a kept connection (left in httpcore's parser), never this request's
    answer. Its connection is closed, so httpcore drops it."""
    sent = _deadline.sent
    if sent is None or _deadline.heard:
        return None
    sent.close()
    return httpx.RemoteProtocolError(
        "the server sent an answer before the request (bytes nobody asked for)"
    )


class SyncConnections:
    """httpcore's connection pool (HTTP/1.1, TLS with httpx's certificates), each
    attempt ending by its deadline.

    Shared by threads (httpcore's pool locks its own state). ``close()`` from any
    thread cuts the exchanges in flight short and refuses later ones; in a child
    process after a fork the connections are the parent's and are never used.
    """

    def __init__(self) -> None:
        self._backend = _DeadlineBackend()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=self._backend,
        )
        self._pid = this_process()
        self.closed = False

    def exchange(
        self, outgoing: Outgoing, limit: int | None, timeout: float | None
    ) -> httpx.Response | Exception:
        """Send ``outgoing``: the answer with its whole body (at most ``limit`` bytes as
        decoded) within ``timeout`` s, or the error (httpcore's as the httpx error
        httpx's transport raises; a body too large as ``ServerError``; a late one as
        ``clobkit.errors.TimeoutError``; one cut off by ``close()`` as ``TransportError``)."""
        if self.closed or self._pid != this_process():
            return _closed(outgoing, "not sent")
        deadline = None if timeout is None else time.monotonic() + timeout
        scheme, host, port = outgoing.origin
        extensions = {} if timeout is None else {"timeout": httpx.Timeout(timeout).as_dict()}
        _deadline.at = deadline  # read by the network streams (_DeadlineStream)
        _deadline.sent = None
        try:
            response = self._pool.handle_request(
                httpcore.Request(
                    outgoing.method,
                    httpcore.URL(scheme=scheme, host=host, port=port, target=outgoing.target),
                    headers=outgoing.headers,
                    content=outgoing.body,
                    extensions=extensions,
                )
            )
        except BaseException as exc:
            _deadline.at = _deadline.sent = None
            if not isinstance(exc, _HTTPCORE_ERRORS):
                raise  # KeyboardInterrupt: httpcore dropped the connection half used
            return _closed(outgoing, "cut off") if self.closed else as_httpx_error(exc)
        try:
            return self._read(outgoing, response, limit, deadline)
        finally:
            _deadline.at = _deadline.sent = None
            response.close()  # unless read whole, httpcore drops the connection
            if self.closed:  # close() ran meanwhile: leave no connection open
                self._pool.close()

    def _read(
        self,
        outgoing: Outgoing,
        response: httpcore.Response,
        limit: int | None,
        deadline: float | None,
    ) -> httpx.Response | Exception:
        """The answer of ``exchange`` read whole, or the error met reading it."""
        try:
            started = _unasked() or _start(outgoing, response.status, response.headers, limit)
            if isinstance(started, Exception):
                return started
            body, coded = started
            for chunk in response.iter_stream():
                body.feed(chunk)
                if deadline is not None and time.monotonic() > deadline:
                    return ClobkitTimeoutError(
                        f"{outgoing.method} {outgoing.url.copy_with(query=None)}: "
                        "timed out reading the response"
                    )
            return _complete(response.status, response.headers, body, coded, response.extensions)
        except BodyTooLarge:
            assert limit is not None
            return too_large(outgoing, response.status, limit)
        except zlib.error as exc:
            return httpx.DecodingError(str(exc))
        except _HTTPCORE_ERRORS as exc:
            return _closed(outgoing, "cut off") if self.closed else as_httpx_error(exc)

    def close(self) -> None:
        """Close every connection; exchanges in flight in other threads end at once
        (their sockets are shut down: closing alone would leave a reader waiting for
        its timeout) and later ones are refused. In a child after a fork only the
        child's copies of the parent's sockets are closed: shutting one down would
        end the parent's connection, and the pool's lock may be held by a thread
        of the parent that the child does not have."""
        self.closed = True
        if self._pid != this_process():
            for stream in self._backend.streams(inherited=True):
                stream.close()
            return
        for stream in self._backend.streams():
            stream.shut_down()
        self._pool.close()


def _closed(outgoing: Outgoing, what: str) -> ClobkitTransportError:
    """The error of an exchange the client's ``close()`` refused or cut off."""
    where = f"{outgoing.method} {outgoing.url.copy_with(query=None)}"
    return ClobkitTransportError(f"{where}: {what}, the Client was closed")
