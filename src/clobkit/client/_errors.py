"""Mapping a failed answer or transport failure to the clobkit.errors tree."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import httpx
import msgspec

from .._spec import (
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
    ClobkitError,
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
from ..errors import TimeoutError as ClobkitTimeoutError
from ._decode import _Envelope


class Reply(Protocol):
    """What the core reads of an answer: ``httpx.Response``, or the async client's
    lighter ``_http11.Answer`` (an httpx model costs about 30 us to build)."""

    @property
    def status_code(self) -> int: ...

    @property
    def content(self) -> bytes: ...

    @property
    def text(self) -> str: ...

    @property
    def headers(self) -> httpx.Headers: ...

    @property
    def reason_phrase(self) -> str: ...


class Sent(Protocol):
    """What an error's text names of a request (``httpx.Request`` or ``_ops.Outgoing``)."""

    @property
    def method(self) -> str: ...

    @property
    def url(self) -> httpx.URL: ...


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


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
    """The body as text, for an error's message: as httpx decodes it, else UTF-8 (a
    charset such as "hex" or "zlib" names a codec that httpx cannot decode with)."""
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


def transport_error(exc: BaseException, request: Sent) -> TransportError:
    """``TimeoutError`` or ``TransportError`` for an ``httpx`` failure (no headers in the text)."""
    where = f"{request.method} {request.url.copy_with(query=None)}"
    if isinstance(exc, httpx.TimeoutException):
        return ClobkitTimeoutError(f"{where}: timed out ({type(exc).__name__})")
    return TransportError(f"{where}: {type(exc).__name__}: {exc}")


def too_large(request: Sent, status: int, limit: int) -> ServerError:
    """The error of an answer (``status``) whose body is over ``limit`` bytes."""
    return ServerError(
        f"response body of {request.method} {request.url.copy_with(query=None)} is larger "
        f"than {limit} bytes (max_response_bytes)",
        status=status,
    )


def body_error(
    response: httpx.Response, size: int, limit: int | None, late: bool
) -> ClobkitError | None:
    """The error of a body ``size`` bytes long so far (``late``: past the deadline)."""
    request = response.request
    if limit is not None and size > limit:
        return too_large(request, response.status_code, limit)
    if late:
        return ClobkitTimeoutError(
            f"{request.method} {request.url.copy_with(query=None)}: timed out reading the response"
        )
    return None


def declared_size(response: httpx.Response) -> int:
    """The ``Content-Length`` of a response, or 0 when absent or unreadable."""
    try:
        return max(0, int(response.headers.get("Content-Length", "0")))
    except ValueError:
        return 0


_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def with_body(response: httpx.Response, body: bytes) -> httpx.Response:
    """A complete ``httpx.Response``: the status and headers of ``response``, and ``body``."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _BODY_HEADERS]
    return httpx.Response(
        response.status_code, headers=headers, content=body, request=response.request
    )


def attempt_timeout_error(request: Sent, seconds: float) -> ClobkitTimeoutError:
    """The error of an attempt that used up its ``seconds``."""
    where = f"{request.method} {request.url.copy_with(query=None)}"
    return ClobkitTimeoutError(f"{where}: no complete answer within {seconds:g} s")
