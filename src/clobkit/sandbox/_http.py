"""uvicorn's h11 protocol with a deadline on receiving each request, JSON for bad requests,
and one write per answer.

uvicorn times out idle keep-alive connections but nothing else: a client that
connects and sends nothing, or trickles a request's head or body, holds its
connection for ever. Here a request must arrive whole (head and body) within
``request_timeout`` seconds of its first byte (or of the connection opening);
past that the connection is closed. A request h11 cannot parse (a non-ASCII
target, a head past ``h11_max_incomplete_event_size``) is answered with a 400
in the sandbox's JSON envelope instead of uvicorn's plain text.

uvicorn writes an answer's head and body to the socket separately: two
system calls, and on loopback the peer wakes for each. ``_Coalescing`` holds
what is written during one turn of the event loop and writes it at once (at
the end of the answer, or the turn); a WebSocket taken over from the
connection writes its frames the same way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import msgspec
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["GuardedH11Protocol"]

_RECEIVING = (h11.IDLE, h11.SEND_BODY)


class _Coalescing:
    """A transport whose writes within one turn of the loop reach the socket as one write.

    Everything else is the wrapped transport's; whatever is held is written
    before the transport is closed, aborted or half-closed, and at the latest
    in the loop's next turn.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Write what is held (one system call when the socket takes it all)."""
        if self._held:
            data = b"".join(self._held) if len(self._held) > 1 else self._held[0]
            self._held = []
            if not self._transport.is_closing():
                self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._held))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()


class GuardedH11Protocol(H11Protocol):
    """:class:`H11Protocol` plus a per-request receive deadline (``request_timeout`` seconds)."""

    def __init__(self, *args: Any, request_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._request_timeout = request_timeout
        self._read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = _Coalescing(transport, self.loop)  # type: ignore[assignment]
        self._arm()  # a connection that never sends a byte is closed too

    def on_response_complete(self) -> None:
        flush = getattr(self.transport, "flush", None)
        if flush is not None:
            flush()  # the whole answer is written: send it now, not a turn later
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # The deadline runs from a request's first byte; a request read whole needs none.
        if self._receiving():
            self._arm()
        else:
            self._disarm()

    def _receiving(self) -> bool:
        """True while part of a request has arrived and the rest has not."""
        if self.transport.get_protocol() is not self:
            return False  # upgraded to a WebSocket: that protocol owns the connection now
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return True
        return state is h11.IDLE and bool(self.conn.trailing_data[0])

    def _arm(self) -> None:
        if self._read_deadline is None:
            self._read_deadline = self.loop.call_later(self._request_timeout, self._expired)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _expired(self) -> None:
        self._read_deadline = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        if self.conn.their_state in _RECEIVING:
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        body = msgspec.json.encode(
            {"success": False, "error": "bad request", "detail": "malformed HTTP request"}
        )
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            output = self.conn.send(event)
            if output:
                self.transport.write(output)
        self.transport.close()
