"""``AsyncClient``'s HTTP/1.1 connections: an asyncio ``Protocol`` per connection with
httptools' response parser (llhttp, the C parser of Node.js), kept alive in a pool.

Chosen over httpx/httpcore and aiohttp by client CPU per request (see
docs/architecture.md and benchmarks/bench_client_cpu.py): a request is one
``transport.write`` of head and body, the answer is parsed in C as it arrives,
and the attempt's deadline is one timer on the event loop, not a task. Only
public APIs are used (asyncio's ``Protocol`` and ``create_connection``,
httptools' parser, httpx's error classes and ``Response``).

Failures come back as the httpx errors (with the same texts) that httpx's own
transport raises for them, so the core maps both paths to the same
``clobkit.errors``: a connection closed before any answer is
``RemoteProtocolError("Server disconnected without sending a response.")``, a
body cut short is a ``RemoteProtocolError`` naming what was received, a reset is
a ``ReadError``.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from typing import Any

import httptools
import httpx

from ._aio import within
from ._body import Body, BodyTooLarge, coding_error
from ._errors import too_large
from ._ops import Outgoing

__all__ = ["Answer", "Connections"]

MAX_HEAD = 64 * 1024  # bytes of status line and headers an answer may take
#: s an idle connection is kept: under the 5 s after which common servers (uvicorn's
#: default) close an idle one, so a request rarely meets a close already on its way
KEEPALIVE_EXPIRY = 4.0
_DISCONNECTED = "Server disconnected without sending a response."
_CUT = "peer closed connection without sending complete message body"
_NO_BODY = frozenset({204, 304})


class Answer:
    """A complete answer: what the core reads of one (``_errors.Reply``), no more
    (an ``httpx.Response`` costs about 30 us to build)."""

    __slots__ = ("_headers", "_raw", "_reason", "content", "status_code")

    def __init__(
        self, status: int, headers: list[tuple[bytes, bytes]], content: bytes, reason: bytes
    ) -> None:
        self.status_code = status
        self.content = content
        self._raw = headers
        self._reason = reason
        self._headers: httpx.Headers | None = None

    @property
    def headers(self) -> httpx.Headers:
        """The headers (built on first use: only an error answer's are read)."""
        if self._headers is None:
            self._headers = httpx.Headers(self._raw)
        return self._headers

    @property
    def text(self) -> str:
        """The body as text, decoded as httpx decodes it (its charset, else UTF-8);
        read for an error's message only."""
        return httpx.Response(self.status_code, headers=self._raw, content=self.content).text

    @property
    def reason_phrase(self) -> str:
        """The status line's reason, as httpx reads it."""
        return self._reason.decode("ascii", errors="ignore")


class _Timeout(Exception):
    """The attempt's deadline passed (``Connections.exchange`` returns None for it)."""


def _resolve(waiter: asyncio.Future[Any], result: Any, turns: int) -> None:
    if turns:
        waiter.get_loop().call_soon(_resolve, waiter, result, turns - 1)
    elif not waiter.done():
        waiter.set_result(result)


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection, one exchange at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[Answer | Exception] | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._outgoing: Outgoing | None = None
        self._limit: int | None = None
        self._reset_answer()

    def _reset_answer(self) -> None:
        self._head_bytes = 0
        self._trailer_bytes = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._reason = b""
        self._status = 0
        self._headed = False  # headers complete
        self._length: int | None = None  # declared Content-Length
        self._chunked = False
        self._coding: str | None = None
        self._received = 0  # body bytes as sent (before decoding)
        self._body: Body | None = None
        self._started = False  # any byte of the answer arrived

    # -- asyncio.Protocol --------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: the connection is not in a known state
            return
        self._started = True
        if not self._headed:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._finish(httpx.RemoteProtocolError("the server switched protocols"))
        except httptools.HttpParserError as exc:
            self._finish(httpx.RemoteProtocolError(f"malformed answer: {exc}"))
        else:
            if not self._headed and self._head_bytes > MAX_HEAD:
                self._finish(httpx.RemoteProtocolError(f"answer head longer than {MAX_HEAD} bytes"))
            elif self._trailer_bytes > MAX_HEAD:
                self._finish(httpx.RemoteProtocolError(f"trailers longer than {MAX_HEAD} bytes"))

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if exc is not None and not self._headed:
            # without the OS's text, as httpx's transport (anyio) reports a reset
            self._finish(httpx.ReadError(""))
        elif not self._started:
            self._finish(httpx.RemoteProtocolError(_DISCONNECTED))
        elif self._headed and self._length is None and not self._chunked:
            self._complete()  # a body delimited by the end of the connection
        elif self._chunked:
            self._finish(httpx.RemoteProtocolError(_CUT + " (incomplete chunked read)"))
        elif self._headed:
            self._finish(
                httpx.RemoteProtocolError(
                    _CUT + f" (received {self._received} bytes, expected {self._length})"
                )
            )
        else:
            self._finish(httpx.RemoteProtocolError(_DISCONNECTED))

    # -- httptools callbacks -----------------------------------------------------

    def on_message_begin(self) -> None:
        if self._waiter is None:  # an answer after the answer (no request of ours)
            self.close()

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._headed:  # a chunked body's trailers: counted (bounded), never kept
            self._trailer_bytes += len(name) + len(value)
            return
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._headed = True
        status = self._status = self._parser.get_status_code()
        if status < 200:
            return  # an interim answer (100 Continue): the real one follows
        codings = []
        for name, value in self._headers:
            key = name.lower()
            if key == b"content-length":
                self._length = int(value)  # llhttp checked it is a number
            elif key == b"transfer-encoding":
                self._chunked = b"chunked" in value.lower()
            elif key == b"content-encoding":
                codings.append(value.decode("latin-1"))
        outgoing, limit = self._outgoing, self._limit
        assert outgoing is not None
        if status in _NO_BODY:
            self._length = 0
        if codings:
            coding = ", ".join(codings)
            error = coding_error(coding, status)
            if error is not None:
                self._finish(error)
                return
            self._coding = coding
        elif limit is not None and self._length is not None and self._length > limit:
            self._finish(too_large(outgoing, status, limit))  # refused unread
            return
        self._body = Body(self._coding, limit)

    def on_body(self, body: bytes) -> None:
        if self._body is not None:
            self._received += len(body)
            try:
                self._body.feed(body)
            except BodyTooLarge:
                assert self._outgoing is not None
                assert self._limit is not None
                self._finish(too_large(self._outgoing, self._status, self._limit))
            except zlib.error as exc:  # a body that does not inflate
                self._finish(httpx.DecodingError(str(exc)))

    def on_message_complete(self) -> None:
        if self._status < 200:
            self._reset_answer()
            self._started = True
            return
        self._complete()

    # -- the exchange ------------------------------------------------------------

    def _complete(self) -> None:
        body = self._body
        if body is None:  # refused in on_headers_complete
            return
        try:
            content = body.finish()
        except BodyTooLarge:
            assert self._outgoing is not None
            assert self._limit is not None
            self._finish(too_large(self._outgoing, self._status, self._limit))
            return
        except zlib.error as exc:
            self._finish(httpx.DecodingError(str(exc)))
            return
        headers = self._headers
        if self._coding is not None:  # the content is decoded: its coding and size are not
            headers = [
                (k, v)
                for k, v in headers
                if k.lower() not in (b"content-encoding", b"content-length", b"transfer-encoding")
            ]
        response = Answer(self._status, headers, content, self._reason)
        keep = self._parser.should_keep_alive() and not self.closed
        self._finish(response, keep)

    def _finish(self, result: Answer | Exception, keep: bool = False) -> None:
        waiter = self._waiter
        self._waiter = None
        self._body = None
        if not keep:
            self.close()
        if waiter is not None and not waiter.done():
            # two turns of the loop later: websockets hands a frame to its reader in
            # two turns, so a stream record the server sent before this answer (in the
            # same read of the sockets) is handled first, as it was over httpx
            self.loop.call_soon(_resolve, waiter, result, 1)

    def timed_out(self) -> None:
        waiter = self._waiter
        self._waiter = None
        self.close()
        if waiter is not None and not waiter.done():
            waiter.set_exception(_Timeout())

    def send(
        self, outgoing: Outgoing, data: bytes, limit: int | None
    ) -> asyncio.Future[Answer | Exception]:
        """Write ``data`` (the whole request) at once; the future of its answer."""
        assert self.transport is not None
        self._reset_answer()
        self._outgoing = outgoing
        self._limit = limit
        waiter = self._waiter = self.loop.create_future()
        if self.closed:
            # lost before the request went out (a new connection the server closed at
            # once, its close read before the exchange resumed): a write would be
            # dropped unseen, and the answer waited for until the deadline
            self._finish(httpx.RemoteProtocolError(_DISCONNECTED))
            return waiter
        self.transport.write(data)
        return waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _head(outgoing: Outgoing) -> bytes:
    """The request line and headers of ``outgoing`` (``LocalProtocolError`` on a CR or LF)."""
    lines = [f"{outgoing.method} {outgoing.target.decode('ascii')} HTTP/1.1"]
    for name, value in outgoing.headers:
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise httpx.LocalProtocolError(f"Illegal header value {value!r}")
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    try:
        return "\r\n".join(lines).encode("latin-1")
    except UnicodeEncodeError as exc:
        raise httpx.LocalProtocolError(f"header not latin-1: {exc}") from None


class Connections:
    """Kept-alive HTTP/1.1 connections per origin (scheme, host, port).

    At most ``max_connections`` open at once (more requests wait for one), at most
    ``max_keepalive`` idle per origin, each idle at most ``KEEPALIVE_EXPIRY`` s.
    """

    def __init__(self, max_connections: int = 100, max_keepalive: int = 20) -> None:
        self._idle: dict[tuple[bytes, bytes, int | None], list[_Connection]] = {}
        self._slots = asyncio.Semaphore(max_connections)
        self._max_keepalive = max_keepalive
        self._open: set[_Connection] = set()
        self._ssl: ssl.SSLContext | None = None

    async def exchange(
        self, outgoing: Outgoing, limit: int | None, timeout: float | None
    ) -> Answer | Exception | None:
        """Send ``outgoing`` and read its answer (whole body, at most ``limit`` bytes as
        decoded): the response, the error (httpx's for a transport failure,
        ``ServerError`` for a body too large or an unreadable coding), or None when
        ``timeout`` s passed first."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            data = _head(outgoing) + outgoing.body
        except httpx.LocalProtocolError as exc:
            return exc
        async with self._slots:
            connection = self._take(outgoing.origin, loop.time())
            if connection is None:
                try:
                    connection = await self._open_by(loop, outgoing.origin, deadline)
                except asyncio.TimeoutError:
                    return None
                except (OSError, ssl.SSLError, OverflowError) as exc:  # a port past 65535
                    return httpx.ConnectError(str(exc))
            waiter = connection.send(outgoing, data, limit)
            timer = None if deadline is None else loop.call_at(deadline, connection.timed_out)
            try:
                result = await waiter
            except _Timeout:
                return None
            finally:
                if timer is not None:
                    timer.cancel()
                if not waiter.done() or connection._waiter is not None:
                    connection.close()  # cancelled mid-exchange: its state is unknown
                self._release(outgoing.origin, connection, loop.time())
            return result

    async def _open_by(
        self,
        loop: asyncio.AbstractEventLoop,
        origin: tuple[bytes, bytes, int | None],
        deadline: float | None,
    ) -> _Connection:
        """A new connection to ``origin``, open by ``deadline`` (loop time, else
        ``asyncio.TimeoutError``)."""
        if deadline is None:
            return await self._connect(loop, origin)  # in this task: its result is ours
        task = loop.create_task(self._connect(loop, origin))
        try:
            return await within(task, deadline - loop.time())
        except BaseException:
            # a cancel may come after the connection is made and before this task
            # resumes: then the done task holds the one reference to an open socket.
            # Close whatever the task makes, now or when it ends.
            task.add_done_callback(self._unused)
            raise

    def _unused(self, task: asyncio.Task[_Connection]) -> None:
        if not task.cancelled() and task.exception() is None:
            connection = task.result()
            connection.close()
            self._open.discard(connection)

    def _take(self, origin: tuple[bytes, bytes, int | None], now: float) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < KEEPALIVE_EXPIRY:
                return connection
            connection.close()
            self._open.discard(connection)
        return None

    def _release(
        self, origin: tuple[bytes, bytes, int | None], connection: _Connection, now: float
    ) -> None:
        if connection.closed:
            self._open.discard(connection)
            return
        idle = self._idle.setdefault(origin, [])
        if len(idle) >= self._max_keepalive:
            connection.close()
            self._open.discard(connection)
            return
        connection.idle_since = now
        idle.append(connection)

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, origin: tuple[bytes, bytes, int | None]
    ) -> _Connection:
        scheme, host, port = origin
        name = host.decode("ascii")
        context: ssl.SSLContext | None = None
        if scheme == b"https":
            context = self._ssl
            if context is None:
                context = self._ssl = httpx.create_ssl_context()  # httpx's: certifi's roots
        elif scheme != b"http":
            raise OSError(f"unsupported scheme {scheme!r}")
        if port is None:
            port = 443 if context is not None else 80
        _, connection = await loop.create_connection(
            lambda: _Connection(loop),
            name.strip("[]"),
            port,
            ssl=context,
            server_hostname=name.strip("[]") if context is not None else None,
        )
        self._open.add(connection)
        return connection

    async def aclose(self) -> None:
        """Close every connection."""
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # asyncio closes the sockets on the loop's next turn
