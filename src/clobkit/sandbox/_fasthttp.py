"""The common request without h11: one whole, plain HTTP/1.1 request read and answered directly.

h11 spends about as much per request as the sandbox's own work: an event
object, validation and a state machine step for the request, its headers,
body and end, and again for the answer. Most requests are the same simple
shape, so ``plain_request`` reads exactly that shape (a GET, POST or DELETE,
whole in one read, a ``Host``, at most a ``Content-Length`` body, only
visible-ASCII header values, nothing that changes framing or the connection)
and ``FastCycle`` runs the app and writes the answer as uvicorn's h11 cycle
does, byte for byte. Anything else returns ``None`` and goes to h11, which
answers it (malformed requests included) as before.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

__all__ = ["INCOMPLETE", "MAX_BODY", "FastCycle", "PlainRequest", "path_of", "plain_request"]

_REQUEST_LINE = re.compile(rb"(GET|POST|DELETE) (/[\x21-\x7e]*) HTTP/1\.1\Z")
# Header lines: a token, a colon, a visible-ASCII value (inner spaces), optional spaces around.
_HEADERS = re.compile(
    rb"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+: *(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)? *\r\n)*"
)
# Headers that change framing, the connection or the protocol: h11 handles those requests.
_H11_ONLY = frozenset((b"transfer-encoding", b"upgrade", b"expect", b"te", b"trailer"))

#: The largest body read here (a longer one streams through h11 to the app's guard).
MAX_BODY = 65536
#: ``plain_request``'s answer for a plain head whose body has not all arrived yet.
INCOMPLETE = "incomplete"

PlainRequest = tuple[str, bytes, list[tuple[bytes, bytes]], bytes]


def plain_request(data: bytes, max_head: int) -> PlainRequest | str | None:
    """(method, target, headers with lower-case names, body) of ``data`` when it is exactly one
    plain request; ``INCOMPLETE`` when it is the start of one (head whole, body not yet);
    else None. ``max_head``: the longest head h11 would accept."""
    end = data.find(b"\r\n\r\n")
    if end < 0 or end > max_head:
        return None
    first = data.find(b"\r\n", 0, end + 2)
    line = _REQUEST_LINE.match(data, 0, first)
    if line is None or _HEADERS.fullmatch(data, first + 2, end + 2) is None:
        return None
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    hosts = 0
    for raw in data[first + 2 : end].split(b"\r\n") if end > first else ():
        name, _, value = raw.partition(b":")
        name = name.lower()
        value = value.strip(b" ")
        if name in _H11_ONLY:
            return None
        if name == b"host":
            hosts += 1
        elif name == b"connection":
            if value.lower() != b"keep-alive":
                return None
        elif name == b"content-length":
            if length is not None or not value.isdigit() or len(value) > 18:
                return None
            length = int(value)
        headers.append((name, value))
    body = data[end + 4 :]
    if hosts != 1 or len(body) > (length or 0) or (length or 0) > MAX_BODY:
        return None  # no Host (h11 refuses it), a pipelined request, or a long body
    if len(body) < (length or 0):
        return INCOMPLETE
    return line.group(1).decode("ascii"), line.group(2), headers, body


def path_of(target: bytes) -> tuple[str, bytes, bytes]:
    """(decoded path, raw path, query string) of a request target, as uvicorn splits it."""
    raw_path, _, query = target.partition(b"?")
    return unquote(raw_path.decode("ascii")), raw_path, query


class FastCycle:
    """One plain request's ASGI cycle, with the attributes uvicorn's protocol reads of a cycle.

    ``send`` writes the head (the server's default headers first, then the
    app's) and the body to ``transport`` as h11 formats them; an answer that
    says ``Connection: close``, or one after a shutdown began, closes the
    connection once complete.
    """

    def __init__(
        self,
        body: bytes,
        transport: asyncio.Transport,
        default_headers: list[tuple[bytes, bytes]],
        phrases: dict[int, bytes],
        logger: logging.Logger,
        on_response: Callable[[], None],
        flow: Any,
    ) -> None:
        """``flow``: uvicorn's FlowControl of the connection (``write_paused``, ``drain``)."""
        self.flow = flow
        self.body = body
        self.transport = transport
        self.default_headers = default_headers
        self.phrases = phrases
        self.logger = logger
        self.on_response = on_response
        self.message_event = asyncio.Event()
        self.disconnected = False
        self.keep_alive = True
        self.response_started = False
        self.response_complete = False
        self._read = False
        self._close = False
        self._length = 0

    async def run_asgi(self, app: Callable[..., Awaitable[None]], scope: dict[str, Any]) -> None:
        try:
            await app(scope, self.receive, self.send)
        except BaseException as exc:
            self.logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                await self._send_500()
            else:
                self.transport.close()
        else:
            if not self.response_started and not self.disconnected:
                self.logger.error("ASGI callable returned without starting response.")
                await self._send_500()
            elif not self.response_complete and not self.disconnected:
                self.logger.error("ASGI callable returned without completing response.")
                self.transport.close()
        finally:
            self.on_response = lambda: None

    async def _send_500(self) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": 500,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"connection", b"close"),
                ],
            }
        )
        await self.send({"type": "http.response.body", "body": b"Internal Server Error"})

    async def receive(self) -> dict[str, Any]:
        if not self._read and not self.disconnected:
            self._read = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        if not self.disconnected and not self.response_complete:
            await self.message_event.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            if message["type"] != "http.response.start":
                raise RuntimeError(f"Expected 'http.response.start', got '{message['type']}'.")
            self.response_started = True
            status = message["status"]
            head = [b"HTTP/1.1 %d %s\r\n" % (status, self.phrases.get(status, b""))]
            length = None
            for name, value in [*self.default_headers, *message.get("headers", [])]:
                head.append(b"%s: %s\r\n" % (name, value))
                lower = name.lower()
                if lower == b"content-length":
                    length = int(value)
                elif lower == b"connection" and b"close" in value.lower():
                    self._close = True
            if length is None:  # h11 would frame it as chunked: not a shape the sandbox answers
                raise RuntimeError("a plain answer needs a Content-Length")
            self._length = length
            head.append(b"\r\n")
            self.transport.write(b"".join(head))
            return
        if self.response_complete:
            raise RuntimeError(f"Unexpected '{message['type']}' after the response completed.")
        if message["type"] != "http.response.body":
            raise RuntimeError(f"Expected 'http.response.body', got '{message['type']}'.")
        body = message.get("body", b"")
        self._length -= len(body)
        if self._length < 0:
            raise RuntimeError("the body is longer than its Content-Length")
        if body:
            self.transport.write(body)
        if message.get("more_body", False):
            return
        if self._length:
            raise RuntimeError("the body is shorter than its Content-Length")
        self.response_complete = True
        self.message_event.set()
        if self._close or not self.keep_alive:
            self.transport.close()
        self.on_response()
