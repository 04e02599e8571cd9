"""What the sans-I/O core and the transports exchange, in clobkit's own types.

* ``Outgoing``: a signed request exactly as it is sent (method, origin, target,
  headers, body), built by ``_ops.CallRunner.build_outgoing``;
* ``Answer``: a complete answer (status, headers, the body read whole and decoded);
* ``Failure``: what went wrong on the wire, in words that name no library. Each
  transport maps its library's exceptions onto these in one table
  (``_session.FAILURES`` for aiohttp, ``_transport.FAILURES`` for httpcore), and
  ``failure_error`` makes the ``clobkit.errors`` exception of one, so the same
  failure reads the same on both clients.

Nothing here imports an HTTP library.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import NamedTuple, Protocol

from ..errors import ClobkitError, TransportError
from ..errors import TimeoutError as ClobkitTimeoutError

__all__ = [
    "Answer",
    "Failure",
    "HeaderView",
    "Origin",
    "Outgoing",
    "RawHeaders",
    "attempt_timeout_error",
    "failure_error",
    "lookup_failure",
]


class Origin(NamedTuple):
    """Where a request goes: ``scheme`` ("http"/"https"), ``host`` (an IPv6 address
    without brackets), ``port`` (None: the scheme's) and ``netloc`` (host and port as
    the URL writes them: the ``Host`` header)."""

    scheme: str
    host: str
    port: int | None
    netloc: str


class Outgoing:
    """A signed request: ``method``, ``origin``, ``target`` (the raw path and query,
    exactly as signed and sent), ``headers`` (``Host`` and ``Content-Length`` included)
    and ``body``. Both transports send it as it is."""

    __slots__ = ("body", "headers", "method", "origin", "target")

    def __init__(
        self,
        method: str,
        origin: Origin,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
    ) -> None:
        self.method = method
        self.origin = origin
        self.target = target
        self.headers = headers
        self.body = body

    @property
    def url(self) -> str:
        """The absolute URL (query included)."""
        origin = self.origin
        return f"{origin.scheme}://{origin.netloc}{self.target}"

    @property
    def where(self) -> str:
        """The method and the URL without its query, as an error's text names a request
        (a query may carry what a log should not)."""
        origin = self.origin
        path = self.target.partition("?")[0]
        return f"{self.method} {origin.scheme}://{origin.netloc}{path}"

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), or None."""
        lower = name.lower()
        return next((v for k, v in self.headers if k.lower() == lower), None)


class HeaderView(Protocol):
    """What the core reads of an answer's headers: one value by name, any case."""

    def get(self, key: str, /) -> str | None: ...


class RawHeaders:
    """Headers as ``(name, value)`` byte pairs (latin-1), read by name in any case."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        self._raw = list(raw)

    def get(self, key: str, /) -> str | None:
        name = key.lower().encode("latin-1")
        for k, v in self._raw:
            if k.lower() == name:
                return v.decode("latin-1")
        return None


def _charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` value, or None."""
    if not content_type:
        return None
    for parameter in content_type.split(";")[1:]:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


class Answer:
    """A complete answer: ``status_code``, ``headers`` (by name, any case), ``content``
    (the body, decoded and whole) and ``reason_phrase``; what the core reads of one."""

    __slots__ = ("content", "headers", "reason_phrase", "status_code")

    def __init__(self, status: int, headers: HeaderView, content: bytes, reason: str) -> None:
        self.status_code = status
        self.headers = headers
        self.content = content
        self.reason_phrase = reason

    @property
    def text(self) -> str:
        """The body as text in its ``charset`` (else UTF-8, bad bytes replaced);
        ``LookupError`` for a charset that names no text encoding."""
        charset = _charset(self.headers.get("Content-Type")) or "utf-8"
        return self.content.decode(charset, "replace")


class Failure(enum.Enum):
    """What went wrong on the wire (the words of the error's text)."""

    CONNECT = "could not connect"
    TLS = "TLS failed"
    PROXY = "the proxy failed"
    DISCONNECTED = "server disconnected without sending an answer"
    LOST = "connection lost"
    CUT = "answer cut short"
    MALFORMED = "malformed answer"
    UNDECODABLE = "body does not decode"
    UNSENDABLE = "request cannot be sent"
    TIMEOUT = "timed out"


def lookup_failure(
    table: Mapping[type[BaseException], Failure], exc: BaseException
) -> Failure | None:
    """The ``Failure`` of ``exc`` in ``table``: its own class's entry, else its nearest
    base class's; None when no class of it is listed."""
    for cls in type(exc).__mro__:
        kind = table.get(cls)
        if kind is not None:
            return kind
    return None


def failure_error(
    kind: Failure, outgoing: Outgoing, detail: str = "", timeout: float | None = None
) -> ClobkitError:
    """The ``clobkit.errors`` exception of a failure: ``TimeoutError`` for ``TIMEOUT``
    (naming the attempt's ``timeout`` in seconds), else ``TransportError``; ``detail``
    (the library's or the OS's words) in parentheses. No header is named."""
    if kind is Failure.TIMEOUT:
        return attempt_timeout_error(outgoing, timeout)
    text = f"{outgoing.where}: {kind.value}"
    return TransportError(f"{text} ({detail})" if detail else text)


def attempt_timeout_error(outgoing: Outgoing, seconds: float | None) -> ClobkitTimeoutError:
    """The error of an attempt that used up its ``seconds``."""
    if seconds is None:
        return ClobkitTimeoutError(f"{outgoing.where}: timed out")
    return ClobkitTimeoutError(f"{outgoing.where}: no complete answer within {seconds:g} s")
