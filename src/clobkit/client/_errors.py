"""Mapping a failed answer or transport failure to the clobkit.errors tree."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import msgspec

from ..core.spec import (
    BODY_REFUSAL_CODES,
    CODE_DUPLICATE,
    CODE_INVALID_EXPIRATION,
    CODE_INVALID_PREFIX,
    CODE_ORDER_NOT_FOUND,
    ERROR_BALANCE,
    ERROR_BODY,
    ERROR_BOOK_NOT_FOUND,
    ERROR_MARKET_NOT_FOUND,
    ERROR_NOT_FOUND,
    RISK_CODE,
)
from ..errors import (
    ApiError,
    AuthenticationError,
    ExpirationRefused,
    InsufficientBalance,
    InvalidRequest,
    NotFound,
    OrderBookNotFound,
    OutcomeUnknown,
    PermissionDenied,
    RateLimited,
    RiskControlError,
    ServerError,
    TransportError,
)
from ._decode import _Envelope
from ._wire import HeaderView, Outgoing


class Reply(Protocol):
    """What the core reads of an answer: ``_wire.Answer``, or any object with the same
    fields (the core's tests feed their own)."""

    @property
    def status_code(self) -> int: ...

    @property
    def content(self) -> bytes: ...

    @property
    def text(self) -> str: ...

    @property
    def headers(self) -> HeaderView: ...

    @property
    def reason_phrase(self) -> str: ...


#: The longest wait a ``Retry-After`` is read as (s): a year. Anything longer (a date
#: in year 9999, a number of 400 digits) is past any ``max_retry_after`` all the same.
RETRY_AFTER_CAP = 365 * 86400.0


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header (delta-seconds or an HTTP date): a finite
    number in [0, ``RETRY_AFTER_CAP``], or None when the value says nothing readable.
    Never raises: a server's header is no reason for an exception."""
    if not value:
        return None
    try:
        seconds: float | None = float(value)
    except ValueError:
        seconds = _date_seconds(value)
    if seconds is None or math.isnan(seconds):
        return None
    return min(RETRY_AFTER_CAP, max(0.0, seconds))


def _date_seconds(value: str) -> float | None:
    """Seconds from now to the HTTP date ``value``, or None when it is no date
    (a year of 30 digits overflows the parser; a year past 9999 is refused by datetime)."""
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return (when - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# the texts compared with an answer's ``error`` in lower case
_BOOK_NOT_FOUND = ERROR_BOOK_NOT_FOUND.lower()
_BALANCE = ERROR_BALANCE.lower()


def api_error(
    status: int,
    message: str,
    code: str | None = None,
    *,
    retry_after: float | None = None,
    detail: str | None = None,
) -> ApiError:
    """The ``clobkit.errors`` class for a failed response (section 7)."""
    lower = message.lower()
    if code == RISK_CODE:
        return RiskControlError(message, status=status, code=code, detail=detail)
    if status == 429:
        return RateLimited(
            message, status=status, code=code, retry_after=retry_after, detail=detail
        )
    cls: type[ApiError] = ApiError
    if _BOOK_NOT_FOUND in lower:
        cls = OrderBookNotFound
    elif status == 401:
        cls = AuthenticationError
    elif status == 403:
        cls = PermissionDenied
    elif status == 404 or code == CODE_ORDER_NOT_FOUND:
        cls = NotFound
    elif _BALANCE in lower:
        cls = InsufficientBalance
    elif code == CODE_INVALID_EXPIRATION and status == 400:
        cls = ExpirationRefused
    elif 400 <= status < 500 or (code or "").startswith(CODE_INVALID_PREFIX):
        cls = InvalidRequest
    elif status >= 500:
        cls = ServerError
    elif lower.endswith(ERROR_NOT_FOUND):
        cls = NotFound
    return cls(message, status=status, code=code, detail=detail)


#: Failures after which a request may or may not have taken effect.
UNKNOWN_OUTCOME = (TransportError, ServerError, RateLimited, OutcomeUnknown)
"""The exception classes after which a request may or may not have taken effect
(catch them to resolve an order by its key: ``resolve_raw_order``)."""


def refuses_every_copy(error: ApiError) -> bool:
    """Whether a raw order's refusal judges only its body (``_spec.BODY_REFUSAL_CODES``,
    an ``invalid request body``, a market that does not exist), so that every copy of
    the same body is refused alike. Any other refusal may depend on when a copy
    arrived (balance, risk control, rate limit, 5xx): it proves nothing of a copy
    still in flight."""
    if error.code is not None:
        return error.code in BODY_REFUSAL_CODES
    if error.status == 400:
        return error.message.lower() == ERROR_BODY
    return error.status == 404 and error.message.lower() == ERROR_MARKET_NOT_FOUND.lower()


def refuses_the_order(error: ApiError) -> bool:
    """Whether an answer to a raw order is a refusal of the order itself (a 400, a
    market not found, a risk-control breach): the service read the order's key
    first and holds none under it. Not so an answer before the key was read (401,
    403, a gateway's 408, 413, 429, 5xx) or a duplicate's (``CODE_DUPLICATE``: an
    order of that id exists)."""
    if error.code == CODE_DUPLICATE:
        return False
    if isinstance(error, RiskControlError) or refuses_every_copy(error):
        return True
    return isinstance(error, InvalidRequest) and error.status == 400


_DETAIL_MAX = 500  # characters of a server's detail kept on the error


def _detail(value: Any) -> str | None:
    """The envelope's ``detail`` as short text (a server may send any JSON there)."""
    if value is None or value == "":
        return None
    text: str
    if isinstance(value, str):
        text = value
    else:
        try:
            text = msgspec.json.encode(value).decode()
        except (TypeError, ValueError, RecursionError, msgspec.EncodeError):
            return None
    return text if len(text) <= _DETAIL_MAX else text[: _DETAIL_MAX - 3] + "..."


def reply_text(response: Reply) -> str:
    """The body as text, for an error's message: in its charset, else UTF-8 (a
    charset such as "hex" or "zlib" names a codec that decodes no text)."""
    try:
        return response.text
    except (AssertionError, LookupError, TypeError, ValueError):
        return response.content.decode("utf-8", "replace")


def _error_from_response(response: Reply, env: Any) -> ApiError:
    status = response.status_code
    message: str | None = None
    code: str | None = None
    detail: str | None = None
    if isinstance(env, _Envelope):
        message, code, detail = env.error or env.message, env.code, _detail(env.detail)
    elif isinstance(env, dict):
        err, code = env.get("error") or env.get("message"), env.get("code")
        message = err if isinstance(err, str) else (None if err is None else str(err)[:200])
        code = code if isinstance(code, str) else None
        detail = _detail(env.get("detail"))
    if not message:
        text = reply_text(response).strip()
        message = text[:200] if text else (response.reason_phrase or f"HTTP {status}")
    retry_after = retry_after_seconds(response.headers.get("Retry-After"))
    return api_error(status, message, code, retry_after=retry_after, detail=detail)


def too_large(request: Outgoing, status: int, limit: int) -> ServerError:
    """The error of an answer (``status``) whose body is over ``limit`` bytes."""
    return ServerError(
        f"response body of {request.where} is larger than {limit} bytes (max_response_bytes)",
        status=status,
    )
