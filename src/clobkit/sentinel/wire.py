"""The heartbeat on the wire, written once for both ends (the desk's ``Beacon`` and the
sentinel's listener): its body, its signature, and the bounds the listener holds it to.

A heartbeat is ``POST /heartbeat`` with a small JSON body (``Heartbeat``) and two
headers: ``X-Sentinel-Timestamp`` (Unix ms) and ``X-Sentinel-Signature``, the hex
HMAC-SHA256 of ``<timestamp>\\n<body>`` keyed by the shared token
(``CLOBKIT_SENTINEL_TOKEN``). The token itself never travels; a heartbeat is refused
when its signature is wrong, its timestamp is more than ``SKEW_SECONDS`` off the
sentinel's clock, or its ``seq`` is not above the last one accepted of its ``session``
(a replay).
"""

from __future__ import annotations

import hashlib
import hmac
import os

import msgspec

from ..core.spec import ENV_SENTINEL_TOKEN
from ..errors import ValidationError

__all__ = [
    "BODY_MAX",
    "HALTED",
    "HEALTH_PATH",
    "LEFT",
    "PATH",
    "QUOTING",
    "SIGNATURE_HEADER",
    "SKEW_SECONDS",
    "STATES",
    "TIMESTAMP_HEADER",
    "TOKEN_MIN",
    "Heartbeat",
    "Reply",
    "read_token",
    "sign",
]

PATH = "/heartbeat"
HEALTH_PATH = "/health"
TIMESTAMP_HEADER = "X-Sentinel-Timestamp"
SIGNATURE_HEADER = "X-Sentinel-Signature"
#: The most bytes a heartbeat's body may have (413 past it, unread).
BODY_MAX = 4096
#: How far (s) a heartbeat's timestamp may lie from the sentinel's clock.
SKEW_SECONDS = 30.0
#: The fewest characters of a token (a shorter one is refused at start).
TOKEN_MIN = 16

QUOTING = "quoting"
"""A heartbeat's ``state``: the desk quotes."""
HALTED = "halted"
"""A heartbeat's ``state``: the desk's kill switch fired (``reason`` says why): an
orderly halt, still watched."""
LEFT = "left"
"""A heartbeat's ``state``: the desk left on purpose; the sentinel stops watching it."""
#: What a desk may say of itself in a heartbeat.
STATES = (QUOTING, HALTED, LEFT)

_TEXT_MAX = 200  # characters of a desk's name or a reason


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One heartbeat: ``session`` (a desk's run, random), ``seq`` (counts from 1 within
    it), ``desk`` (a name for the log), ``state`` (``quoting``, ``halted``, ``left``),
    ``reason`` (why it halted or left), ``open_orders`` (what it knows rests)."""

    session: str
    seq: int
    desk: str
    state: str
    reason: str | None = None
    open_orders: int = 0

    def __post_init__(self) -> None:
        if not 8 <= len(self.session) <= 64 or not self.session.isalnum():
            raise ValueError("session must be 8 to 64 letters and digits")
        if not 1 <= self.seq < 2**63:
            raise ValueError("seq must be a positive int64")
        if not 0 < len(self.desk) <= _TEXT_MAX or not self.desk.isprintable():
            raise ValueError(f"desk must be 1 to {_TEXT_MAX} printable characters")
        if self.state not in STATES:
            raise ValueError(f"state must be one of {', '.join(STATES)}")
        if self.reason is not None and (
            len(self.reason) > _TEXT_MAX or not self.reason.isprintable()
        ):
            raise ValueError(f"reason must be at most {_TEXT_MAX} printable characters")
        if not 0 <= self.open_orders < 2**31:
            raise ValueError("open_orders must be a non-negative int32")


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """The sentinel's answer to an accepted heartbeat: ``timeout``, the seconds of
    silence after which it cancels every order of the account."""

    ok: bool
    timeout: float


def sign(token: bytes, timestamp_ms: int, body: bytes) -> str:
    """The ``X-Sentinel-Signature`` of ``body`` sent at ``timestamp_ms``."""
    message = str(timestamp_ms).encode("ascii") + b"\n" + body
    return hmac.new(token, message, hashlib.sha256).hexdigest()


def read_token(token: str | None = None) -> bytes:
    """The shared token: ``token``, else ``CLOBKIT_SENTINEL_TOKEN``; a ``ValidationError``
    when there is none or it is shorter than ``TOKEN_MIN`` characters."""
    value = os.environ.get(ENV_SENTINEL_TOKEN, "") if token is None else token
    if not isinstance(value, str) or len(value.strip()) < TOKEN_MIN:
        shown = "(not set)" if not value else f"({len(value)} characters)"
        raise ValidationError(
            "token",
            shown,
            f"the sentinel's token must have {TOKEN_MIN} characters at least: set "
            f"{ENV_SENTINEL_TOKEN} the same for the desk and the sentinel",
        )
    return value.strip().encode("utf-8")
