"""Input validation shared by both core twins: the canonical error of every bad input.

The pure twin validates with these functions; the compiled twin takes the
ordinary inputs in C and hands everything else here, so both raise the same
class with the same message. Nothing here hashes (no pycryptodome): the
compiled twin imports this module, never the pure twin.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence

from ..errors import OrderFieldError, SignatureInputError
from .columns import FLAG, SIDE, TOKEN, UINT, WORD
from .spec import API_PREFIX, SALT_MAX
from .wallet import UINT256_MAX

TYPE_CHECKING = False  # typing stays off ``import clobkit``'s path
if TYPE_CHECKING:
    from typing import Any

# ---------------------------------------------------------------------------
# Salts

_SALT_SPAN = SALT_MAX + 1
# 8-byte draws at or above this bound are rejected so ``draw % span`` is unbiased.
SALT_REJECT_FROM = (1 << 64) - (1 << 64) % _SALT_SPAN


def salts_from_bytes(data: bytes, n: int) -> list[int]:
    """Up to ``n`` salts from 8-byte little-endian draws, rejecting the biased tail."""
    data, n = as_bytes(data, "data"), parse_count(n)
    out: list[int] = []
    for i in range(0, len(data) - 7, 8):
        if len(out) == n:
            break
        draw = int.from_bytes(data[i : i + 8], "little")
        if draw < SALT_REJECT_FROM:
            out.append(draw % _SALT_SPAN)
    return out


#: Most salts one call draws: their 8-byte draws must fit one buffer's size.
MAX_COUNT = sys.maxsize // 8


def parse_count(n: object) -> int:
    """How many salts ``new_salts`` makes: a non-negative int up to ``MAX_COUNT``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise OrderFieldError("n", n, "must be a non-negative int")
    if n > MAX_COUNT:
        raise OrderFieldError("n", n, f"must be at most {MAX_COUNT}")
    return int.__index__(n)


# ---------------------------------------------------------------------------
# Order fields


def parse_side(value: object, field: str = "side") -> int:
    """0 for BUY, 1 for SELL, from a Side, "BUY"/"SELL" or 0/1."""
    if isinstance(value, str):
        if value == "BUY":
            return 0
        if value == "SELL":
            return 1
    elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return int(value)
    raise OrderFieldError(field, value, 'must be "BUY", "SELL", 0 or 1')


def parse_uint256(value: object, field: str) -> int:
    """An int or decimal digit string in [0, 2**256 - 1]."""
    # a subclass's own methods (comparisons, isdigit, to_bytes...) are never consulted:
    # the compiled twin reads the value itself
    if isinstance(value, int) and not isinstance(value, bool):
        number = int.__index__(value)
        if 0 <= number <= UINT256_MAX:
            return number
        raise OrderFieldError(field, value, "must lie in [0, 2**256 - 1]")
    if isinstance(value, str):
        text = str.__str__(value)
        if not (text.isascii() and text.isdigit()):
            raise OrderFieldError(field, value, "must be a non-negative decimal integer string")
        digits = text.lstrip("0")  # int() refuses a long string of zeros (digit limit)
        if len(digits) > 78 or (len(digits) == 78 and int(digits) > UINT256_MAX):
            raise OrderFieldError(field, value, "must lie in [0, 2**256 - 1]")
        return int(digits) if digits else 0
    raise OrderFieldError(field, value, "must be an int or a decimal integer string")


def parse_flag(value: object, field: str) -> bool:
    """A bool (or 0/1)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise OrderFieldError(field, value, "must be a bool")


#: Most hashing threads one batch uses: more than a few per core only adds
#: switching, and each native helper thread is kept alive between batches.
MAX_THREADS = 4 * (os.cpu_count() or 1)


def parse_threads(threads: object) -> int:
    """Worker count of a batch: None -> 1; above ``MAX_THREADS`` (4 per core) -> that."""
    if threads is None:
        return 1
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise OrderFieldError("threads", threads, "must be None or a positive int")
    return min(int.__index__(threads), MAX_THREADS)


def parse_width(width: object) -> int:
    """The byte width of each value ``append_column`` appends: a positive int."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise OrderFieldError("width", width, "must be a positive int")
    if width > sys.maxsize:
        raise OrderFieldError("width", width, f"must be at most {sys.maxsize}")
    return int.__index__(width)


def as_bytes(value: object, field: str) -> bytes:
    """The bytes of a bytes-like ``value`` (any buffer, copied in order), else the
    canonical error naming ``field``."""
    if type(value) is bytes:
        return value
    try:
        return bytes(memoryview(value))  # type: ignore[arg-type]
    except TypeError:
        raise bytes_like_error(field, value) from None


def bytes_like_error(field: str, value: object) -> OrderFieldError:
    """A value that is not bytes-like (no buffer): ``type`` named, not its repr."""
    return OrderFieldError(field, f"<{type(value).__name__}>", "must be bytes-like")


def column_size_error(size: int, lines: int, width: int) -> OrderFieldError:
    """``append_column``'s values do not hold ``width`` bytes for each of ``lines`` lines."""
    return OrderFieldError(
        "values", f"<{size} bytes>", f"must hold {width} bytes for each of the {lines} lines"
    )


def changed_length_error(name: str, size: int) -> OrderFieldError:
    """A sequence argument of ``order_ids`` no longer has the batch's length (a list
    another thread, or a value's own code, changed during the call)."""
    return OrderFieldError(name, f"<{size} items>", "changed length")


def is_scalar(value: object) -> bool:
    """A batch argument given once for every order (broadcast); bytes are one bytes32."""
    return isinstance(value, (str, int, bytes, bytearray, memoryview)) or not isinstance(
        value, Sequence
    )


def batch_length(columns: Mapping[str, object]) -> int:
    """The common length of the sequence arguments of ``order_ids`` (1 if none)."""
    n: int | None = None
    first = ""
    for name, value in columns.items():
        if is_scalar(value):
            continue
        size = len(value)  # type: ignore[arg-type]
        if n is None:
            n, first = size, name
        elif size != n:
            raise OrderFieldError(
                name, f"<{size} items>", f"has a different length than {first} ({n})"
            )
    return 1 if n is None else n


def parse_word(value: object, field: str) -> int:
    """A bytes32 (``metadata``, ``builder``) as the big-endian integer of its 32 bytes.

    None is zero; otherwise 32 bytes, or ``0x`` followed by 64 hex digits.
    """
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 32:
            raise OrderFieldError(field, value, f"must be 32 bytes, not {len(raw)}")
        return int.from_bytes(raw, "big")
    if isinstance(value, str):
        text = str.__str__(value)  # a subclass's own len() or slicing is not consulted
        if len(text) != 66 or text[:2] not in ("0x", "0X") or not _HEXDIGITS.issuperset(text[2:]):
            raise OrderFieldError(field, value, "must be 0x followed by 64 hex digits")
        return int(text[2:], 16)
    raise OrderFieldError(field, value, "must be None, 32 bytes or 0x followed by 64 hex digits")


_HEXDIGITS = frozenset("0123456789abcdefABCDEF")


class _Unset:
    """Default of the version-specific order fields: "not given" (unlike an explicit 0)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
# what each batch keyword holds, for its columnar (pyarrow / numpy) form
COLUMN_KINDS = {
    "token_ids": TOKEN,
    "maker_amounts": UINT,
    "taker_amounts": UINT,
    "sides": SIDE,
    "salts": UINT,
    "fee_rate_bps": UINT,
    "nonces": UINT,
    "expirations": UINT,
    "timestamps": UINT,
    "metadatas": WORD,
    "builders": WORD,
    "neg_risk": FLAG,
}
#: The ``order_ids`` keyword of each ``order_id`` keyword (a file's column names).
BATCH_KEYWORDS = {
    "token_id": "token_ids",
    "maker_amount": "maker_amounts",
    "taker_amount": "taker_amounts",
    "side": "sides",
    "salt": "salts",
    "fee_rate_bps": "fee_rate_bps",
    "nonce": "nonces",
    "expiration": "expirations",
    "timestamp": "timestamps",
    "metadata": "metadatas",
    "builder": "builders",
    "neg_risk": "neg_risk",
}

V1_FIELDS = ("fee_rate_bps", "nonce", "expiration")
V2_FIELDS = ("timestamp", "metadata", "builder")
V1_COLUMNS = ("fee_rate_bps", "nonces", "expirations")
V2_COLUMNS = ("timestamps", "metadatas", "builders")


def check_version_fields(version: int, given: Sequence[object], batch: bool = False) -> None:
    """Refuse a field of the other order version, and a V2/V3 order without a timestamp.

    ``given`` holds the six version-specific arguments in signature order
    (``fee_rate_bps, nonce, expiration, timestamp, metadata, builder``, plural
    in a batch), ``UNSET`` where the caller left them out. Never ignored
    silently: an explicit ``nonce=0`` on a V2 order is refused too.
    """
    names = (V1_COLUMNS + V2_COLUMNS) if batch else (V1_FIELDS + V2_FIELDS)
    foreign = range(3, 6) if version == 1 else range(3)
    for k in foreign:
        if given[k] is not UNSET:
            other = "V2/V3" if version == 1 else "V1"
            raise OrderFieldError(
                names[k],
                given[k],
                f"is a {other} order field, and this wallet's orders are V{version} "
                "(OrderHasher.version)",
            )
    if version != 1 and given[3] is UNSET:
        raise OrderFieldError(
            names[3], None, f"is required on a V{version} order (milliseconds since the epoch)"
        )


# ---------------------------------------------------------------------------
# Request signing

HIDDEN = "<hidden>"


# str's own methods, not the value's: a str subclass cannot override them (re
# reads the characters too, so these answer what the regexes they replace did).
def _visible_ascii(text: str) -> bool:
    """Non-empty printable ASCII without spaces: ``[\\x21-\\x7e]+``."""
    return (
        str.isascii(text)
        and str.isprintable(text)
        and str.find(text, " ") < 0
        and str.__len__(text) > 0
    )


def _ascii_letters(text: str) -> bool:
    """Non-empty ASCII letters: ``[A-Za-z]+``."""
    return str.isascii(text) and str.isalpha(text)


def parse_secret(secret: object) -> bytes:
    """The HMAC key: the UTF-8 bytes of the secret string as issued."""
    if isinstance(secret, str):
        try:
            key = str.encode(secret, "utf-8")  # a subclass's own encode() is not consulted
        except UnicodeEncodeError:  # a lone surrogate; its message would quote the secret
            raise SignatureInputError("api_secret", HIDDEN, "must be valid UTF-8 text") from None
    elif isinstance(secret, (bytes, bytearray, memoryview)):
        key = bytes(secret)
    else:
        raise SignatureInputError("api_secret", HIDDEN, "must be a str or bytes")
    if not key:
        raise SignatureInputError("api_secret", HIDDEN, "must not be empty")
    return key


def parse_token(value: object, field: str) -> str:
    """A header-safe token (key, nonce): printable ASCII without spaces."""
    if not isinstance(value, str) or not _visible_ascii(value):
        raise SignatureInputError(field, value, "must be a non-empty printable ASCII string")
    return str.__str__(value)  # a plain str, also for a str subclass (both twins)


def parse_method(method: object) -> str:
    """HTTP method, upper-cased."""
    if not isinstance(method, str) or not _ascii_letters(method):
        raise SignatureInputError("method", method, "must be an HTTP method such as GET or POST")
    return str.upper(method)


def parse_path(path: object) -> str:
    """Request path (and query) as sent: printable ASCII starting with '/'."""
    if not isinstance(path, str) or not str.startswith(path, "/") or not _visible_ascii(path):
        raise SignatureInputError(
            "path", path, "must start with '/' and be printable ASCII (percent-encode the rest)"
        )
    return str.__str__(path)


def service_base_url(url: str) -> str:
    """The service's base URL as clobkit joins paths to it: no trailing ``/``, and no
    trailing ``/api/ext/v1`` either (every API path starts with it; the sandbox's
    banner prints the API's URL with it), so both spellings reach the same host."""
    base = url.rstrip("/")
    if base.endswith(API_PREFIX):
        base = base[: -len(API_PREFIX)].rstrip("/")
    return base


def parse_timestamp(timestamp: object) -> str:
    """Milliseconds since the epoch as a decimal string."""
    if isinstance(timestamp, int) and not isinstance(timestamp, bool) and timestamp >= 0:
        try:
            return int.__repr__(timestamp)  # the digits, also for an IntEnum
        except ValueError:  # more digits than Python writes (sys.set_int_max_str_digits)
            pass
    if isinstance(timestamp, str) and str.isascii(timestamp) and str.isdigit(timestamp):
        return str.__str__(timestamp)
    raise SignatureInputError("timestamp", timestamp, "must be non-negative milliseconds")


def parse_body(body: object) -> bytes:
    """Body bytes exactly as sent (a str is sent as UTF-8)."""
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        try:
            return str.encode(body, "utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: no bytes can carry it
            raise SignatureInputError(
                "body", body, f"is not valid UTF-8 text (a lone surrogate at {exc.start})"
            ) from None
    raise SignatureInputError("body", body, "must be bytes or str")


def iter_requests(requests: Any) -> Iterator[Any]:
    """The batch of ``headers_many`` as an iterator; anything else refused by name."""
    try:
        batch: Iterator[Any] = iter(requests)
    except TypeError:
        raise SignatureInputError(
            "requests", requests, "must be an iterable of (method, path[, body]) requests"
        ) from None
    return batch


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
