"""A response body read under ``max_response_bytes``, counted after decoding.

``Body`` takes the bytes of a body as they arrive (after any chunked transfer
coding) and keeps at most ``limit`` bytes of what they decode to: gzip and
deflate are inflated by a ``zlib.decompressobj`` asked for no more output than
the room left under the limit, so a small answer that inflates to gigabytes
stops after ``limit + 1`` bytes instead of being inflated whole first. Stacked
codings (``gzip, gzip``) and codings the client cannot read are refused: the
client asks for none (it sends no ``Accept-Encoding``), and refusing them keeps
one bounded inflater per body. Both clients use it.
"""

from __future__ import annotations

import zlib
from typing import Any

from ..errors import ClobkitError, ServerError
from ._errors import too_large
from ._wire import Failure, Outgoing, failure_error

__all__ = ["Body", "BodyTooLarge", "coding_error", "refusal", "unreadable"]

#: Compressed input handed to the inflater per call: its output is bounded anyway,
#: and a small slice keeps ``unconsumed_tail`` (a copy of the input left) small.
_SLICE = 64 * 1024


class BodyTooLarge(Exception):
    """The decoded body went past the limit (the shell raises its ``ServerError``)."""


def coding_error(value: str, status: int) -> ServerError | None:
    """The error of an answer with ``Content-Encoding: value``, or None when readable."""
    codings = [c.strip().lower() for c in value.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if len(codings) > 1:
        return ServerError(f"response has stacked content codings {value!r}", status=status)
    if codings and codings[0] not in ("gzip", "x-gzip", "deflate"):
        return ServerError(f"response has an unknown content coding {value!r}", status=status)
    return None


def refusal(
    outgoing: Outgoing, status: int, coding: str | None, length: int | None, limit: int | None
) -> ClobkitError | None:
    """The error refusing an answer before its body is read (a coding the client cannot
    read; an uncoded body declared ``length`` bytes long, over ``limit``), or None."""
    if coding is not None:
        return coding_error(coding, status)
    if length is not None and limit is not None and length > limit:
        return too_large(outgoing, status, limit)
    return None


def unreadable(
    exc: BodyTooLarge | zlib.error, outgoing: Outgoing, status: int, limit: int | None
) -> ClobkitError:
    """The error of a body that went past ``limit`` or does not inflate."""
    if isinstance(exc, BodyTooLarge):
        assert limit is not None
        return too_large(outgoing, status, limit)
    return failure_error(Failure.UNDECODABLE, outgoing, str(exc))


class Body:
    """The decoded bytes of one body, at most ``limit`` of them (``None``: no limit)."""

    __slots__ = ("_chunks", "_head", "_inflater", "limit", "size")

    def __init__(self, coding: str | None, limit: int | None) -> None:
        """``coding``: the answer's ``Content-Encoding`` (checked by ``coding_error``)."""
        self.limit = limit
        self.size = 0
        self._chunks: list[bytes] = []
        self._inflater: Any = None  # zlib's decompress object (its type has no public name)
        #: the first bytes of a deflate body, until they tell its format; None after
        self._head: bytes | None = None
        name = "" if coding is None else coding.strip().lower()
        if name in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif name == "deflate":
            self._head = b""

    def feed(self, data: bytes) -> None:
        """Take the next body bytes; ``BodyTooLarge`` once the decoded size passes the limit."""
        if not data:
            return
        if self._head is not None:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return
            self._head = None
            # RFC 9110 deflate is the zlib format (a 2-byte header, a multiple of 31,
            # method 8); some servers send raw deflate instead
            zlib_format = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS if zlib_format else -zlib.MAX_WBITS)
        inflater = self._inflater
        if inflater is None:
            self._keep(data)
            return
        for start in range(0, len(data), _SLICE):
            pending = data[start : start + _SLICE]
            while pending and not inflater.eof:
                room = _SLICE if self.limit is None else min(_SLICE, self.limit - self.size + 1)
                self._keep(inflater.decompress(pending, room))
                pending = inflater.unconsumed_tail

    def _keep(self, out: bytes) -> None:
        if out:
            self.size += len(out)
            if self.limit is not None and self.size > self.limit:
                self._chunks.clear()
                raise BodyTooLarge
            self._chunks.append(out)

    def finish(self) -> bytes:
        """The whole decoded body (the inflater flushed); ``zlib.error`` when cut short."""
        if self._head:
            raise zlib.error("deflate body of one byte")
        inflater = self._inflater
        while inflater is not None and not inflater.eof:
            # output zlib still holds back, as bounded as ``feed``'s
            room = _SLICE if self.limit is None else min(_SLICE, self.limit - self.size + 1)
            out = inflater.decompress(inflater.unconsumed_tail, room)
            if not out:
                raise zlib.error("compressed body ends before its end of stream")
            self._keep(out)
        chunks = self._chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
