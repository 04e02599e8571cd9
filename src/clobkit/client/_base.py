"""Sans-I/O core of the clients: configuration, request building, response parsing.

Nothing here touches the network or sleeps. Every client call is an
*operation*: a generator that yields effects and receives their results.

* ``Send(request, timeout, limit)`` -> the ``httpx.Response`` (its whole body read
  within ``timeout`` seconds and at most ``limit`` bytes), or the exception raised;
* ``Sleep(seconds)`` -> ``None``;
* ``Gather(operations)`` -> the list of their results, run concurrently.

``Client`` and ``AsyncClient`` only drive operations (``_sync.py`` /
``_async.py``), so request building, signing, retries, caching, validation and
response parsing are written once and the two clients cannot drift apart.
"""

from __future__ import annotations

import logging
import math
import os
import random
import re
import reprlib
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any, Generic, NamedTuple, TypeVar, Union
from urllib.parse import quote

import httpx
import msgspec

from .._core import OrderHasher, RequestSigner, from_units, limit_amounts, market_amounts, new_salt
from .._core import to_units as _to_units
from .._jsondepth import json_too_deep
from .._types import OrderType, Side
from ..amounts import MAX_ORDER_USDC
from ..amounts import check_raw_amounts as _check_raw_amounts
from ..errors import (
    AmountError,
    ApiError,
    AuthenticationError,
    ClobkitError,
    InsufficientBalance,
    InvalidRequest,
    NotFound,
    OrderBookNotFound,
    OrderFieldError,
    PermissionDenied,
    RateLimited,
    RiskControlError,
    ServerError,
    SignatureInputError,
    TransportError,
    ValidationError,
)
from ..errors import TimeoutError as ClobkitTimeoutError
from ..models import (
    FINAL_STATUSES,
    OPEN_STATUSES,
    CancelResult,
    Event,
    EventPage,
    Market,
    MarketList,
    Order,
    Orderbook,
    OrderPage,
    PlacedOrder,
    PortfolioOrder,
    PortfolioOrderPage,
    Position,
    PositionPage,
    RawOrderResult,
    Reconnected,
    StreamMessage,
    WalletInfo,
)

__all__ = [
    "API_PREFIX",
    "MAX_ORDER_USDC",
    "ClientConfig",
    "ClientCore",
    "Gather",
    "Operation",
    "PreparedRawOrder",
    "Send",
    "Sleep",
]

log = logging.getLogger("clobkit.client")

T = TypeVar("T")
API_PREFIX = "/api/ext/v1"
WS_PATH = API_PREFIX + "/ws"
SALT_MAX = 10**12
CLIENT_ORDER_ID_MAX = 64
ORDER_STATUS_FILTERS = ("pending", "signing", "submitted", "live", "matched")
_USER_AGENT = "clobkit-python"
_JSON = "application/json"
_encoder = msgspec.json.Encoder(decimal_format="number")

# ---------------------------------------------------------------------------
# Effects


class Send(NamedTuple):
    """Send ``request``; resume with the ``httpx.Response`` or the exception raised.

    The shell gives the whole exchange (connect, send, headers, body) at most
    ``timeout`` seconds and reads at most ``limit`` body bytes; past either it
    resumes with a ``clobkit.errors.TimeoutError`` / ``ServerError``.
    """

    request: httpx.Request
    timeout: float | None = None
    limit: int | None = None


class Sleep(NamedTuple):
    """Pause for ``seconds``; resume with ``None``."""

    seconds: float


class Gather(NamedTuple):
    """Run ``operations`` concurrently; resume with their results in order."""

    operations: list[Operation[Any]]


Effect = Send | Sleep | Gather
Operation = Generator[Effect, Any, T]


# ---------------------------------------------------------------------------
# Configuration


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


@dataclass(frozen=True)
class ClientConfig:
    """Connection settings of a client. The API secret is not kept here.

    Times are seconds. ``timeout`` bounds one attempt as a whole (connect,
    send, headers and body: a server trickling bytes cannot stretch it), and
    ``total_timeout`` bounds a call with all its retries and waits (``None``:
    ``(max_retries + 1) * timeout + max_retry_after``); a retry that cannot
    start before it runs out is not made and the last error is raised.
    ``max_retries`` counts retries after the first try; backoff before retry
    *n* (from 0) is ``min(backoff_cap, backoff * 2**n)`` scaled by a random
    factor in [0.5, 1]. A ``Retry-After`` longer than ``max_retry_after`` is not
    waited for: the ``RateLimited`` error is raised. A response body over
    ``max_response_bytes`` (default 16 MiB) is refused with ``ServerError``.
    """

    base_url: str
    api_key: str
    clob_url: str
    ws_url: str
    timeout: float = 10.0
    max_retries: int = 3
    backoff: float = 0.2
    backoff_cap: float = 5.0
    max_retry_after: float = 30.0
    fee_rate_ttl: float = 300.0
    sign_query: bool = True
    total_timeout: float | None = None
    max_response_bytes: int = 16 * 1024 * 1024

    @property
    def call_budget(self) -> float:
        """Seconds one call may take with its retries (``total_timeout`` or its default)."""
        if self.total_timeout is not None:
            return self.total_timeout
        return (self.max_retries + 1) * self.timeout + self.max_retry_after

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        api_key: str | None,
        api_secret: str | None,
        *,
        clob_url: str | None = None,
        ws_url: str | None = None,
        **settings: Any,
    ) -> tuple[ClientConfig, RequestSigner]:
        """Settings from the arguments, else from the environment.

        ``CLOBKIT_BASE_URL``, ``CLOBKIT_API_KEY``, ``CLOBKIT_API_SECRET``,
        ``CLOBKIT_CLOB_URL`` (falls back to the base URL).
        """
        base = base_url or _env("CLOBKIT_BASE_URL")
        if not base:
            raise ValidationError("base_url", None, "is required (argument or CLOBKIT_BASE_URL)")
        base = _check_url(base.rstrip("/"), "base_url", ("http", "https"))
        key = api_key or _env("CLOBKIT_API_KEY")
        if not key:
            raise SignatureInputError("api_key", None, "is required (argument or CLOBKIT_API_KEY)")
        secret = api_secret or _env("CLOBKIT_API_SECRET")
        if not secret:
            raise SignatureInputError(
                "api_secret", "<hidden>", "is required (argument or CLOBKIT_API_SECRET)"
            )
        clob = clob_url or _env("CLOBKIT_CLOB_URL") or base
        clob = _check_url(clob.rstrip("/"), "clob_url", ("http", "https"))
        if ws_url is None:
            parsed = httpx.URL(base)
            scheme = "wss" if parsed.scheme == "https" else "ws"
            ws_url = str(parsed.copy_with(scheme=scheme, path=WS_PATH, query=None))
        ws = _check_url(ws_url, "ws_url", ("ws", "wss"))
        sign_query = settings.pop("sign_query", True)
        signer = RequestSigner(key, secret, sign_query=sign_query)
        config = cls(
            base_url=base,
            api_key=key,
            clob_url=clob,
            ws_url=ws,
            sign_query=sign_query,
            **settings,
        )
        config._validate()
        return config, signer

    def _validate(self) -> None:
        for name in ("timeout", "backoff", "backoff_cap", "max_retry_after", "fee_rate_ttl"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValidationError(name, value, "must be a non-negative number of seconds")
        total = self.total_timeout
        if total is not None and (
            isinstance(total, bool) or not isinstance(total, (int, float)) or not total > 0
        ):
            raise ValidationError("total_timeout", total, "must be None or a positive number")
        limit = self.max_response_bytes
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("max_response_bytes", limit, "must be a positive int")
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or self.max_retries < 0
        ):
            raise ValidationError("max_retries", self.max_retries, "must be a non-negative int")


def _check_url(url: str, field: str, schemes: tuple[str, ...]) -> str:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        raise ValidationError(field, url, "is not a valid URL") from None
    if parsed.scheme not in schemes or not parsed.host:
        raise ValidationError(field, url, f"must be an absolute {'/'.join(schemes)} URL")
    return url


# ---------------------------------------------------------------------------
# Envelopes and tolerant decoding


class _Envelope(msgspec.Struct, Generic[T]):
    success: bool = True
    data: T | None = None
    error: str | None = None
    code: str | None = None
    message: str | None = None
    detail: Any = None


_TIMESTAMP_KEY = re.compile(r"(_at|_date|_time)\Z|\Atimestamp\Z")
_ERROR_PATH = re.compile(r" - at `\$(.*)`\Z")
_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def _normalise_timestamps(value: Any) -> Any:
    """Turn epoch numbers (s or ms) and empty strings in timestamp fields into ISO text / None."""
    if isinstance(value, list):
        return [_normalise_timestamps(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(key, str) and _TIMESTAMP_KEY.search(key):
            if item == "":
                item = None
            elif isinstance(item, str) and item.isdigit():
                item = int(item)
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                seconds = item / 1000 if item > 10**11 else item
                try:
                    item = datetime.fromtimestamp(seconds, timezone.utc).isoformat()
                except (OverflowError, OSError, ValueError):
                    item = None
        out[key] = _normalise_timestamps(item)
    return out


def _drop_at(value: Any, path: str) -> bool:
    """Delete the dict key that ``path`` (``.a[0].b``) ends at; False if it is not a key."""
    steps = [(m.group(1), m.group(2)) for m in _PATH_STEP.finditer(path)]
    if not steps or steps[-1][0] is None:
        return False
    node = value
    for key, index in steps[:-1]:
        try:
            node = node[key] if key is not None else node[int(index)]
        except (KeyError, IndexError, TypeError):  # noqa: PERF203
            return False
    last = steps[-1][0]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    return False


def tolerant_convert(raw: Any, model: Any) -> Any:
    """Convert decoded JSON to ``model`` loosely: epoch or empty timestamps are
    normalised, and an optional field whose value cannot be read is dropped
    (it then takes its default) instead of failing the whole response."""
    raw = _normalise_timestamps(raw)
    for _ in range(64):
        try:
            return msgspec.convert(raw, model, strict=False)
        except msgspec.ValidationError as exc:  # noqa: PERF203
            m = _ERROR_PATH.search(str(exc))
            if m is None or not _drop_at(raw, m.group(1)):
                raise
            log.debug("ignoring an unreadable response field at $%s: %s", m.group(1), exc)
    return msgspec.convert(raw, model, strict=False)


class Shape(Generic[T]):
    """How the ``data`` of one endpoint's envelope becomes a ``T``.

    ``key`` names the wrapper object (``data.event``); a page model with
    ``items`` also accepts ``data`` as a bare array of ``item`` (guide shape).
    """

    def __init__(
        self,
        model: type[T],
        *,
        key: str | None = None,
        items: str | None = None,
        item: Any = None,
    ) -> None:
        self.model = model
        self.key = key
        self.items = items
        data_type: Any = model
        if key is not None:
            data_type = msgspec.defstruct(f"_{model.__name__}Wrap_{key}", [(key, model)])
        elif items is not None:
            data_type = Union[model, list[item]]  # noqa: UP007 - a runtime type expression
        self.decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(
            _Envelope[data_type],
            strict=False,
        )

    def from_data(self, data: Any) -> T:
        """The model from the typed-decoded ``data``."""
        if self.key is not None:
            return getattr(data, self.key)  # type: ignore[no-any-return]
        if self.items is not None and isinstance(data, list):
            return self.model(**{self.items: data})
        return data  # type: ignore[no-any-return]

    def from_raw(self, data: Any) -> T:
        """The model from untyped ``data``, leniently (slow path)."""
        if self.key is not None and isinstance(data, dict) and isinstance(data.get(self.key), dict):
            data = data[self.key]
        if self.items is not None and isinstance(data, list):
            data = {self.items: data}
        return tolerant_convert(data, self.model)  # type: ignore[no-any-return]


SHAPES: dict[str, Shape[Any]] = {
    "events": Shape(EventPage, items="events", item=Event),
    "event": Shape(Event, key="event"),
    "markets": Shape(MarketList, items="markets", item=Market),
    "market": Shape(Market, key="market"),
    "orderbook": Shape(Orderbook),
    "placed": Shape(PlacedOrder),
    "cancel": Shape(CancelResult),
    "orders": Shape(OrderPage, items="orders", item=Order),
    "order": Shape(Order, key="order"),
    "wallet": Shape(WalletInfo),
    "positions": Shape(PositionPage, items="positions", item=Position),
    "portfolio_orders": Shape(PortfolioOrderPage, items="orders", item=PortfolioOrder),
}


# ---------------------------------------------------------------------------
# Errors


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
    if code == "ORDER_FAILED_PLACE_BET":
        return RiskControlError(message, status=status, code=code, detail=detail)
    if status == 429:
        return RateLimited(
            message, status=status, code=code, retry_after=retry_after, detail=detail
        )
    cls: type[ApiError] = ApiError
    if "order book not found" in lower:
        cls = OrderBookNotFound
    elif status == 401:
        cls = AuthenticationError
    elif status == 403:
        cls = PermissionDenied
    elif status == 404 or code == "ORDER_NOT_FOUND":
        cls = NotFound
    elif "insufficient balance" in lower:
        cls = InsufficientBalance
    elif 400 <= status < 500 or (code or "").startswith("ORDER_INVALID"):
        cls = InvalidRequest
    elif status >= 500:
        cls = ServerError
    elif lower.endswith("not found"):
        cls = NotFound
    return cls(message, status=status, code=code, detail=detail)


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


def _error_from_response(response: httpx.Response, env: Any) -> ApiError:
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
        text = response.text.strip()
        message = text[:200] if text else (response.reason_phrase or f"HTTP {status}")
    retry_after = retry_after_seconds(response.headers.get("Retry-After"))
    return api_error(status, message, code, retry_after=retry_after, detail=detail)


def transport_error(exc: BaseException, request: httpx.Request) -> TransportError:
    """``TimeoutError`` or ``TransportError`` for an ``httpx`` failure (no headers in the text)."""
    where = f"{request.method} {request.url.copy_with(query=None)}"
    if isinstance(exc, httpx.TimeoutException):
        return ClobkitTimeoutError(f"{where}: timed out ({type(exc).__name__})")
    return TransportError(f"{where}: {type(exc).__name__}: {exc}")


def body_error(
    response: httpx.Response, size: int, limit: int | None, late: bool
) -> ClobkitError | None:
    """The error of a body ``size`` bytes long so far (``late``: past the deadline)."""
    request = response.request
    if limit is not None and size > limit:
        return ServerError(
            f"response body of {request.method} {request.url.copy_with(query=None)} is larger "
            f"than {limit} bytes (max_response_bytes)",
            status=response.status_code,
        )
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


def attempt_timeout_error(request: httpx.Request, seconds: float) -> ClobkitTimeoutError:
    """The error of an attempt that used up its ``seconds``."""
    where = f"{request.method} {request.url.copy_with(query=None)}"
    return ClobkitTimeoutError(f"{where}: no complete answer within {seconds:g} s")


# ---------------------------------------------------------------------------
# Calls


NEVER = 0  # never retried (POST /orders, DELETE)
SAFE = 1  # retried on transport errors, 429 and 5xx (GETs, POST /orders/raw with client_order_id)


class Call(NamedTuple):
    """One HTTP exchange: what to send, how to read the answer, whether to retry."""

    method: str
    path: str
    params: Mapping[str, Any] | None
    body: bytes
    shape: Shape[Any] | None
    retry: int
    signed: bool = True
    url: str | None = None  # absolute URL of an unsigned, non-envelope call (fee rate)
    default: Any = None  # result when a successful answer has no ``data``


def _query(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not params:
        return None
    out: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (OrderType, Side)):
            out[key] = str(value)
        else:
            out[key] = value
    return out or None


def _segment(value: object, field: str, error: type[ValidationError] = ValidationError) -> str:
    """A path parameter, percent-encoded."""
    if not isinstance(value, str) or not value.strip():
        raise error(field, value, "must be a non-empty string")
    return quote(value, safe="")


# ---------------------------------------------------------------------------
# Validation helpers (before anything is sent)


def _price(value: object, field: str, tick_size: object = "0.01") -> Decimal:
    """A price in [tick, 1 - tick] on the tick grid, checked by the core."""
    try:
        limit_amounts(Side.BUY, value, 1, tick_size)
    except AmountError as exc:
        if exc.field == "price":
            raise AmountError(field, value, exc.reason) from None
        raise
    return from_units(_to_units(value, field))


def _usdc(value: object, field: str) -> Decimal:
    """A positive USDC / share amount with at most 6 decimals, exactly."""
    units = _to_units(value, field)
    if units == 0:
        raise AmountError(field, value, "must be positive")
    return from_units(units)


def _outcome(value: object) -> str:
    if value not in ("a", "b"):
        raise OrderFieldError("outcome", value, "must be 'a' or 'b'")
    return str(value)


def _side_name(value: object) -> str:
    if isinstance(value, Side):
        return value.name
    if value in ("BUY", "SELL"):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return "BUY" if value == 0 else "SELL"
    raise OrderFieldError("side", value, "must be 'BUY', 'SELL', 0 or 1")


def _order_type(value: object, allowed: tuple[str, ...] = ("FOK", "GTC", "GTD")) -> str:
    text = value.value if isinstance(value, OrderType) else value
    if text not in allowed:
        raise OrderFieldError("order_type", value, f"must be one of {', '.join(allowed)}")
    return str(text)


def _expiration(value: object, order_type: str, now: float) -> int:
    """Unix seconds of a GTD expiration (required, in the future); 0 otherwise."""
    if value is None or value == 0:
        if order_type == "GTD":
            raise OrderFieldError("expiration", value, "is required for a GTD order")
        return 0
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise OrderFieldError("expiration", value, "must be a timezone-aware datetime")
        seconds = int(value.timestamp())
    elif isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        seconds = int(value)
    else:
        raise OrderFieldError("expiration", value, "must be Unix seconds or an aware datetime")
    if order_type != "GTD":
        raise OrderFieldError("expiration", value, f"applies to GTD orders only, not {order_type}")
    if seconds <= now:
        raise OrderFieldError("expiration", value, "must be in the future")
    return seconds


def _client_order_id(value: object) -> str:
    if value is None:
        return uuid.uuid4().hex
    if not isinstance(value, str) or not value or not value.isascii() or not value.isprintable():
        raise OrderFieldError("client_order_id", value, "must be a non-empty ASCII string")
    if len(value) > CLIENT_ORDER_ID_MAX:
        raise OrderFieldError(
            "client_order_id", value, f"must be at most {CLIENT_ORDER_ID_MAX} characters"
        )
    return value


def _uint(value: object, field: str, high: int | None = None) -> int:
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OrderFieldError(field, value, "must be a non-negative integer")
    if high is not None and value > high:
        raise OrderFieldError(field, value, f"must lie in [0, {high}]")
    return value


def _positive_int(value: object, field: str, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(field, value, "must be a positive int")
    if high is not None and value > high:
        raise ValidationError(field, value, f"must be at most {high}")
    return value


# ---------------------------------------------------------------------------
# Paging


class Pager:
    """Walks a paged list: ``params`` of the next page or ``None`` at the end."""

    def __init__(self, kind: str, params: dict[str, Any]) -> None:
        self.kind = kind
        self.params: dict[str, Any] | None = params

    def advance(self, page: Any) -> list[Any]:
        """Items of ``page``; moves ``params`` to the next page (or ``None``)."""
        params = self.params
        assert params is not None
        if self.kind == "events":
            items = list(page.events)
            limit = params.get("limit") or 20
            offset = (params.get("offset") or 0) + len(items)
            done = len(items) < limit or (
                page.total_count is not None and offset >= page.total_count
            )
            self.params = None if done or not items else {**params, "offset": offset}
            return items
        items = list(page.positions if self.kind == "positions" else page.orders)
        size_key = "page_size" if self.kind == "orders" else "per_page"
        size = params.get(size_key) or (20 if self.kind == "orders" else 10)
        number = params.get("page") or 1
        if self.kind == "orders":
            total = page.total_count
            done = total is not None and number * size >= total
        else:
            pages = page.pagination.total_pages
            done = pages is not None and number >= pages
        self.params = None if done or len(items) < size else {**params, "page": number + 1}
        return items


# ---------------------------------------------------------------------------
# Caches


class PreparedRawOrder(NamedTuple):
    """A raw order built and hashed but not sent: ``result.order_id`` is empty."""

    result: RawOrderResult
    body: bytes


class MarketInfo(NamedTuple):
    """What the raw-order flow needs of a market: its two tokens and ``neg_risk``."""

    token_id_a: str
    token_id_b: str
    neg_risk: bool

    def token(self, outcome: str) -> str:
        return self.token_id_a if outcome == "a" else self.token_id_b


def market_info(market: Market) -> MarketInfo | None:
    a, b = market.token_id("a"), market.token_id("b")
    if not a or not b:
        return None
    return MarketInfo(a, b, bool(market.neg_risk))


# ---------------------------------------------------------------------------
# The core


class ClientCore:
    """State and operations shared by ``Client`` and ``AsyncClient``.

    Holds the signer (the only holder of the secret), the caches (wallet and
    order hasher for the client's life, market tokens / ``neg_risk``, fee rate
    per token with a TTL) and builds every operation.
    """

    def __init__(self, config: ClientConfig, signer: RequestSigner) -> None:
        self.config = config
        self.signer = signer
        self._base = httpx.URL(config.base_url)
        self._base_path = self._base.raw_path.decode("ascii").rstrip("/")
        self._urls: dict[str, httpx.URL] = {}
        self.wallet: WalletInfo | None = None
        self.hasher: OrderHasher | None = None
        self.markets: dict[str, MarketInfo] = {}
        self.fee_rates: dict[str, tuple[int, float]] = {}
        self.clock: Callable[[], float] = time.monotonic
        self.wall_clock: Callable[[], float] = time.time
        self.random: Callable[[], float] = random.random

    def __repr__(self) -> str:
        return f"ClientCore(base_url={self.config.base_url!r}, api_key={self.config.api_key!r})"

    # -- requests -----------------------------------------------------------

    def build(self, call: Call) -> httpx.Request:
        """The signed ``httpx.Request`` of ``call``; the body is sent as the signed bytes."""
        params = _query(call.params)
        if call.url is not None:
            url = httpx.URL(call.url, params=params)
        else:
            cached = self._urls.get(call.path)  # parsing a URL costs more than signing it
            if cached is None:
                raw_path = (self._base_path + call.path).encode("ascii")
                cached = self._base.copy_with(raw_path=raw_path)
                if len(self._urls) >= 256:
                    self._urls.clear()
                self._urls[call.path] = cached
            url = cached
            if params:
                url = url.copy_merge_params(params)
        headers = {"Accept": _JSON, "User-Agent": _USER_AGENT}
        if call.body:
            headers["Content-Type"] = _JSON
        if call.signed:
            headers.update(
                self.signer.headers(call.method, url.raw_path.decode("ascii"), call.body)
            )
        return httpx.Request(call.method, url, headers=headers, content=call.body or None)

    def parse(self, call: Call, response: httpx.Response) -> Any:
        """The model of a response, or the ``ApiError`` it carries (raised).

        A body nested too deeply to decode is a ``ServerError``, never a bare
        ``RecursionError``.
        """
        try:
            if json_too_deep(response.content):
                raise RecursionError
            return self._parse(call, response)
        except RecursionError:
            raise ServerError(
                "response is nested too deeply to decode", status=response.status_code
            ) from None

    def _parse(self, call: Call, response: httpx.Response) -> Any:
        status = response.status_code
        content = response.content
        shape = call.shape
        if shape is None:
            return self._parse_plain(response)
        try:
            env = shape.decoder.decode(content)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return self._parse_slow(call, shape, response)
        if status >= 300 or not env.success:
            raise _error_from_response(response, env)
        if env.data is None:
            return self._no_data(call, response)
        return shape.from_data(env.data)

    def _parse_slow(self, call: Call, shape: Shape[Any], response: httpx.Response) -> Any:
        status = response.status_code
        try:
            raw = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            raw = None
            if status < 300:
                raise ServerError(
                    f"response is not JSON: {response.text[:200]!r}", status=status
                ) from None
        if status >= 300 or (isinstance(raw, dict) and raw.get("success") is False):
            raise _error_from_response(response, raw)
        data = raw.get("data") if isinstance(raw, dict) and "success" in raw else raw
        if data is None:
            return self._no_data(call, response)
        try:
            return shape.from_raw(data)
        except msgspec.ValidationError as exc:
            raise ServerError(f"unreadable response: {exc}", status=status) from None

    def _no_data(self, call: Call, response: httpx.Response) -> Any:
        if call.default is not None:
            return call.default
        raise ServerError("successful response without data", status=response.status_code)

    def _parse_plain(self, response: httpx.Response) -> Any:
        """A non-envelope JSON answer (the exchange's fee-rate query)."""
        try:
            raw = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            raw = None
        if response.status_code >= 300 or (isinstance(raw, dict) and raw.get("success") is False):
            raise _error_from_response(response, raw)
        return raw

    def retry_delay(self, call: Call, attempt: int, error: ClobkitError) -> float | None:
        """Seconds to wait before retry ``attempt`` (from 0), or ``None`` to give up."""
        config = self.config
        if call.retry == NEVER or attempt >= config.max_retries:
            return None
        if isinstance(error, RateLimited):
            if error.retry_after is not None:
                if error.retry_after > config.max_retry_after:
                    return None
                return error.retry_after + self.random() * config.backoff
        elif isinstance(error, RiskControlError) or (
            isinstance(error, ApiError) and error.status < 500
        ):
            return None
        delay = min(config.backoff_cap, config.backoff * 2.0**attempt)
        return delay * (0.5 + 0.5 * self.random())

    def run(self, call: Call) -> Operation[Any]:
        """Send ``call``, retrying as its policy allows; return the parsed result.

        Each attempt gets ``timeout`` seconds (less when the call's budget,
        ``total_timeout``, ends sooner); a retry whose wait would end past the
        budget is not made.
        """
        config = self.config
        attempt = 0
        budget_end = self.clock() + config.call_budget
        while True:
            request = self.build(call)
            started = self.clock()
            timeout = max(0.0, min(config.timeout, budget_end - started))
            result = yield Send(request, timeout, config.max_response_bytes)
            try:
                if isinstance(result, ClobkitError):
                    raise result
                if isinstance(result, BaseException):
                    if not isinstance(result, (httpx.RequestError, OSError)):
                        raise result
                    raise transport_error(result, request) from result
                value = self.parse(call, result)
            except (ApiError, TransportError) as error:
                delay = self.retry_delay(call, attempt, error)
                log.debug(
                    "%s %s failed (attempt %d): %s",
                    call.method,
                    request.url.raw_path.decode("ascii"),
                    attempt + 1,
                    error,
                )
                if delay is None or self.clock() + delay >= budget_end:
                    raise
                log.info(
                    "retrying %s %s in %.3f s after %s",
                    call.method,
                    request.url.raw_path.decode("ascii"),
                    delay,
                    type(error).__name__,
                )
            else:
                if log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "%s %s -> %d in %.1f ms",
                        call.method,
                        request.url.raw_path.decode("ascii"),
                        result.status_code,
                        (self.clock() - started) * 1000,
                    )
                return value
            attempt += 1
            yield Sleep(delay)

    # -- endpoints ------------------------------------------------------------

    def _get(
        self,
        path: str,
        shape: str,
        params: Mapping[str, Any] | None = None,
    ) -> Operation[Any]:
        return self.run(Call("GET", API_PREFIX + path, params, b"", SHAPES[shape], SAFE))

    def list_events(self, params: Mapping[str, Any]) -> Operation[EventPage]:
        return self._get("/events", "events", params)

    def get_event(self, id_or_slug: str) -> Operation[Event]:
        return self._get("/events/" + _segment(id_or_slug, "id_or_slug"), "event")

    def get_event_markets(self, event_id: str) -> Operation[list[Market]]:
        page = yield from self._get(f"/events/{_segment(event_id, 'event_id')}/markets", "markets")
        return list(page.markets)

    def search_markets(self, q: str, limit: int) -> Operation[list[Market]]:
        if not isinstance(q, str) or not q.strip():
            raise ValidationError("q", q, "must be a non-empty search string")
        _positive_int(limit, "limit", 100)
        page = yield from self._get("/markets", "markets", {"q": q, "limit": limit})
        for market in page.markets:
            self._remember(market)
        return list(page.markets)

    def get_market(self, market_id: str) -> Operation[Market]:
        market = yield from self._get(
            "/markets/" + _segment(market_id, "market_id", OrderFieldError), "market"
        )
        self._remember(market, detail=True)
        return market  # type: ignore[no-any-return]

    def get_orderbook(self, asset_id: str) -> Operation[Orderbook]:
        return self._get("/orderbooks/" + _segment(asset_id, "asset_id"), "orderbook")

    def list_orders(self, status: str | None, page: int, page_size: int) -> Operation[OrderPage]:
        if status is not None and status not in ORDER_STATUS_FILTERS:
            raise OrderFieldError(
                "status", status, f"must be one of {', '.join(ORDER_STATUS_FILTERS)}"
            )
        _positive_int(page, "page")
        _positive_int(page_size, "page_size", 100)
        params = {"status": status, "page": page, "page_size": page_size}
        return self._get("/orders", "orders", params)

    def get_order(self, order_id: str) -> Operation[Order]:
        return self._get("/orders/" + _segment(order_id, "order_id", OrderFieldError), "order")

    def get_wallet(self, refresh: bool = False) -> Operation[WalletInfo]:
        if self.wallet is None or refresh:
            wallet = yield from self._get("/wallet", "wallet")
            if self.wallet is None or wallet != self.wallet:
                self.hasher = OrderHasher(wallet)
            self.wallet = wallet
        return self.wallet

    def list_positions(self, page: int, per_page: int) -> Operation[PositionPage]:
        _positive_int(page, "page")
        _positive_int(per_page, "per_page", 100)
        return self._get("/portfolio/positions", "positions", {"page": page, "per_page": per_page})

    def list_portfolio_orders(
        self, side: object, page: int, per_page: int
    ) -> Operation[PortfolioOrderPage]:
        side_name = None if side is None else _side_name(side)
        _positive_int(page, "page")
        _positive_int(per_page, "per_page", 100)
        params = {"side": side_name, "page": page, "per_page": per_page}
        return self._get("/portfolio/orders", "portfolio_orders", params)

    def cancel_order(self, order_id: str) -> Operation[CancelResult]:
        path = API_PREFIX + "/orders/" + _segment(order_id, "order_id", OrderFieldError)
        default = CancelResult(order_id=order_id, status="cancelled")
        return self.run(Call("DELETE", path, None, b"", SHAPES["cancel"], NEVER, default=default))

    # -- pagers ---------------------------------------------------------------

    def events_pager(self, params: dict[str, Any]) -> Pager:
        return Pager("events", params)

    def orders_pager(self, status: str | None, page_size: int) -> Pager:
        return Pager("orders", {"status": status, "page": 1, "page_size": page_size})

    def positions_pager(self, per_page: int) -> Pager:
        return Pager("positions", {"page": 1, "per_page": per_page})

    def portfolio_orders_pager(self, side: object, per_page: int) -> Pager:
        return Pager("portfolio_orders", {"side": side, "page": 1, "per_page": per_page})

    def all_orders(self, status: str | None, page_size: int = 100) -> Operation[list[Order]]:
        """Every order of one status, all pages."""
        pager = self.orders_pager(status, page_size)
        orders: list[Order] = []
        while pager.params is not None:
            page = yield from self.page(pager)
            orders.extend(pager.advance(page))
        return orders

    def open_orders(self) -> Operation[list[Order]]:
        """Orders still trading (pending, signing, submitted, live), read concurrently."""
        lists = yield Gather([self.all_orders(status) for status in OPEN_STATUSES])
        return [order for orders in lists for order in orders]

    def page(self, pager: Pager) -> Operation[Any]:
        """The next page of ``pager`` (its ``params`` must not be ``None``)."""
        p = pager.params
        assert p is not None
        if pager.kind == "events":
            return self.list_events(p)
        if pager.kind == "orders":
            return self.list_orders(p["status"], p["page"], p["page_size"])
        if pager.kind == "positions":
            return self.list_positions(p["page"], p["per_page"])
        return self.list_portfolio_orders(p["side"], p["page"], p["per_page"])

    # -- place order ------------------------------------------------------------

    def place_order(
        self,
        market_id: str,
        *,
        side: object = "BUY",
        outcome: str | None = None,
        amount: object = None,
        shares: object = None,
        order_type: object = "FOK",
        limit_price: object = None,
        token_option: str | None = None,
        expiration: object = None,
        take_profit_price: object = None,
        stop_loss_price: object = None,
    ) -> Operation[PlacedOrder]:
        """``POST /orders``, validated first; never retried automatically."""
        body = self.order_body(
            market_id,
            side=side,
            outcome=outcome,
            amount=amount,
            shares=shares,
            order_type=order_type,
            limit_price=limit_price,
            token_option=token_option,
            expiration=expiration,
            take_profit_price=take_profit_price,
            stop_loss_price=stop_loss_price,
        )
        return self.run(Call("POST", API_PREFIX + "/orders", None, body, SHAPES["placed"], NEVER))

    def order_body(
        self,
        market_id: str,
        *,
        side: object,
        outcome: str | None,
        amount: object,
        shares: object,
        order_type: object,
        limit_price: object,
        token_option: str | None,
        expiration: object,
        take_profit_price: object,
        stop_loss_price: object,
    ) -> bytes:
        """The compact JSON body of ``POST /orders`` (validation per order type)."""
        _segment(market_id, "market_id", OrderFieldError)
        side_name = _side_name(side)
        kind = _order_type(order_type)
        body: dict[str, Any] = {"market_id": market_id}
        if outcome is not None:
            body["outcome"] = _outcome(outcome)
        elif side_name == "BUY" and kind == "FOK":
            raise OrderFieldError("outcome", None, "is required for a BUY FOK order ('a' or 'b')")
        price = None
        if kind != "FOK":
            if limit_price is None:
                raise AmountError("limit_price", None, f"is required for a {kind} order")
            price = _price(limit_price, "limit_price")
            if token_option not in ("yes", "no"):
                raise OrderFieldError(
                    "token_option", token_option, f"must be 'yes' or 'no' for a {kind} order"
                )
        elif limit_price is not None:
            price = _price(limit_price, "limit_price")
        if token_option is not None and token_option not in ("yes", "no"):
            raise OrderFieldError("token_option", token_option, "must be 'yes' or 'no'")
        if side_name == "BUY":
            if amount is None:
                raise AmountError("amount", None, "is required for a BUY order (USDC)")
            usdc = _usdc(amount, "amount")
            if usdc > MAX_ORDER_USDC:
                raise AmountError(
                    "amount", amount, f"exceeds the single-order maximum of {MAX_ORDER_USDC} USDC"
                )
            body["amount"] = usdc
        else:
            if amount is not None:
                body["amount"] = _usdc(amount, "amount")
        body["side"] = side_name
        if side_name == "SELL":
            if shares is None:
                raise AmountError("shares", None, "is required for a SELL order")
            count = _usdc(shares, "shares")
            if price is not None and count * price > MAX_ORDER_USDC:
                raise AmountError(
                    "shares",
                    shares,
                    f"at {price} exceeds the single-order maximum of {MAX_ORDER_USDC} USDC",
                )
            body["shares"] = count
        elif shares is not None:
            body["shares"] = _usdc(shares, "shares")
        body["order_type"] = kind
        if price is not None:
            body["limit_price"] = price
        if token_option is not None:
            body["token_option"] = token_option
        seconds = _expiration(expiration, kind, self.wall_clock())
        if seconds:
            body["expiration"] = seconds
        if take_profit_price is not None:
            body["take_profit_price"] = _price(take_profit_price, "take_profit_price")
        if stop_loss_price is not None:
            body["stop_loss_price"] = _price(stop_loss_price, "stop_loss_price")
        return _encoder.encode(body)

    # -- the raw-order flow -------------------------------------------------------

    def market_info(self, market_id: str) -> Operation[MarketInfo]:
        """Tokens and ``neg_risk`` of a market (cached for the client's life)."""
        info = self.markets.get(market_id)
        if info is None:
            market = yield from self.get_market(market_id)
            info = self.markets.get(market.id) or self.markets.get(market_id)
            if info is None:
                raise ServerError(
                    f"market {market.id}: the detail carries no token ids", status=200
                )
        return info

    def _remember(self, market: Market, *, detail: bool = False) -> None:
        """Cache a market's tokens and ``neg_risk``. Only the detail and search shapes
        carry ``neg_risk``; a detail without it (guide shape) is read as a CTF market."""
        if market.neg_risk is None and not detail:
            return
        info = market_info(market)
        if info is None:
            return
        if market.neg_risk is None:
            log.warning(
                "market %s has no neg_risk: hashing its orders for the CTF exchange", market.id
            )
        self.markets[market.id] = info

    def fee_rate(self, token_id: str, refresh: bool = False) -> Operation[int]:
        """``fee_rate_bps`` of a token from the exchange's fee-rate query (cached, TTL)."""
        _segment(token_id, "token_id", OrderFieldError)
        cached = self.fee_rates.get(token_id)
        now = self.clock()
        if cached is not None and cached[1] > now and not refresh:
            return cached[0]
        call = Call(
            "GET",
            "/fee-rate",
            {"token_id": token_id},
            b"",
            None,
            SAFE,
            signed=False,
            url=self.config.clob_url + "/fee-rate",
        )
        raw = yield from self.run(call)
        if isinstance(raw, dict) and "base_fee" not in raw and isinstance(raw.get("data"), dict):
            raw = raw["data"]
        fee = raw.get("base_fee") if isinstance(raw, dict) else None
        if isinstance(fee, float) and fee.is_integer():
            fee = int(fee)
        if isinstance(fee, bool) or not isinstance(fee, int) or fee < 0:
            shown = reprlib.repr(raw)  # bounded, whatever the answer holds
            raise ServerError(f"fee-rate answer without an integer base_fee: {shown}", status=200)
        self.fee_rates[token_id] = (fee, self.clock() + self.config.fee_rate_ttl)
        return fee

    def ensure_hasher(self) -> Operation[OrderHasher]:
        if self.hasher is None:
            yield from self.get_wallet()
        assert self.hasher is not None
        return self.hasher

    def prepare(self, market_ids: Iterable[str]) -> Operation[None]:
        """Warm the wallet, market and fee-rate caches concurrently."""
        ids = list(dict.fromkeys(market_ids))
        for market_id in ids:
            _segment(market_id, "market_id", OrderFieldError)
        yield Gather([self.ensure_hasher(), *(self._prepare_market(m) for m in ids)])
        return None

    def _prepare_market(self, market_id: str) -> Operation[None]:
        info = yield from self.market_info(market_id)
        yield Gather([self.fee_rate(info.token_id_a), self.fee_rate(info.token_id_b)])
        return None

    def place_raw_order(
        self,
        market_id: str,
        outcome: str,
        side: object,
        price: object,
        size: object = None,
        order_type: object = "GTC",
        expiration: object = None,
        client_order_id: str | None = None,
        *,
        amount: object = None,
        salt: object = None,
        nonce: object = 0,
        tick_size: object = "0.01",
        round_price: bool = False,
    ) -> Operation[RawOrderResult]:
        """Amounts from price and size (shares) or amount (USDC BUY / shares SELL)."""
        prepare = self.prepare_raw_order(
            market_id,
            outcome,
            side,
            price,
            size,
            order_type,
            expiration,
            client_order_id,
            amount=amount,
            salt=salt,
            nonce=nonce,
            tick_size=tick_size,
            round_price=round_price,
        )
        return self._prepared_and_sent(prepare)

    def place_raw_order_amounts(
        self,
        market_id: str,
        outcome: str,
        side: object,
        maker_amount: object,
        taker_amount: object,
        *,
        order_type: object = "GTC",
        expiration: object = None,
        client_order_id: str | None = None,
        salt: object = None,
        nonce: object = 0,
        fee_rate_bps: int | None = None,
    ) -> Operation[RawOrderResult]:
        """``POST /orders/raw`` with explicit 6-decimal units; retried under ``client_order_id``."""
        prepare = self.prepare_raw_order_amounts(
            market_id,
            outcome,
            side,
            maker_amount,
            taker_amount,
            order_type=order_type,
            expiration=expiration,
            client_order_id=client_order_id,
            salt=salt,
            nonce=nonce,
            fee_rate_bps=fee_rate_bps,
        )
        return self._prepared_and_sent(prepare)

    def _prepared_and_sent(self, prepare: Operation[PreparedRawOrder]) -> Operation[RawOrderResult]:
        prepared = yield from prepare
        return (yield from self.send_raw_order(prepared))

    def prepare_raw_order(
        self,
        market_id: str,
        outcome: str,
        side: object,
        price: object,
        size: object = None,
        order_type: object = "GTC",
        expiration: object = None,
        client_order_id: str | None = None,
        *,
        amount: object = None,
        salt: object = None,
        nonce: object = 0,
        tick_size: object = "0.01",
        round_price: bool = False,
    ) -> Operation[PreparedRawOrder]:
        """Everything of ``place_raw_order`` but the POST: amounts, salt, ``clob_order_id``,
        body. Validation errors raise at once; lookups run when the operation runs."""
        _segment(market_id, "market_id", OrderFieldError)
        outcome = _outcome(outcome)
        side_name = _side_name(side)
        if (size is None) == (amount is None):
            raise AmountError("size", size, "give exactly one of size (shares) or amount")
        if size is not None:
            amounts = limit_amounts(side_name, price, size, tick_size, round_price=round_price)
        else:
            amounts = market_amounts(side_name, price, amount, tick_size, round_price=round_price)
        return self.prepare_raw_order_amounts(
            market_id,
            outcome,
            side_name,
            amounts.maker_amount,
            amounts.taker_amount,
            order_type=order_type,
            expiration=expiration,
            client_order_id=client_order_id,
            salt=salt,
            nonce=nonce,
        )

    def prepare_raw_order_amounts(
        self,
        market_id: str,
        outcome: str,
        side: object,
        maker_amount: object,
        taker_amount: object,
        *,
        order_type: object = "GTC",
        expiration: object = None,
        client_order_id: str | None = None,
        salt: object = None,
        nonce: object = 0,
        fee_rate_bps: int | None = None,
    ) -> Operation[PreparedRawOrder]:
        """A raw order ready to send: its ``RawOrderResult`` (``order_id`` empty) and body."""
        _segment(market_id, "market_id", OrderFieldError)
        outcome = _outcome(outcome)
        side_int = 0 if _side_name(side) == "BUY" else 1
        maker = _uint(maker_amount, "maker_amount")
        taker = _uint(taker_amount, "taker_amount")
        _check_raw_amounts(side_int, maker, taker)
        kind = _order_type(order_type)
        seconds = _expiration(expiration, kind, self.wall_clock())
        coid = _client_order_id(client_order_id)
        salt_value = new_salt() if salt is None else _uint(salt, "salt", SALT_MAX)
        nonce_value = _uint(nonce, "nonce")
        if fee_rate_bps is not None:
            _uint(fee_rate_bps, "fee_rate_bps")
        # lookups: each returns at once when its cache is warm
        info = self.markets.get(market_id)
        if info is None:
            info = yield from self.market_info(market_id)
        hasher = self.hasher
        if hasher is None:
            hasher = yield from self.ensure_hasher()
        token_id = info.token(outcome)
        if fee_rate_bps is None:
            cached = self.fee_rates.get(token_id)
            if cached is not None and cached[1] > self.clock():
                fee_rate_bps = cached[0]
            else:
                fee_rate_bps = yield from self.fee_rate(token_id)
        # The API text's raw order is the V1 flow: its id is precomputed here.
        # A V2/V3 wallet's id covers the service's own timestamp, which the
        # request cannot carry: it is read back from the service, never guessed.
        precomputed = hasher.version == 1
        clob_order_id = (
            hasher.order_id(
                token_id=token_id,
                maker_amount=maker,
                taker_amount=taker,
                side=side_int,
                salt=salt_value,
                fee_rate_bps=fee_rate_bps,
                nonce=nonce_value,
                expiration=seconds,
                neg_risk=info.neg_risk,
            )
            if precomputed
            else ""
        )
        body = _encoder.encode(
            {
                "market_id": market_id,
                "outcome": outcome,
                "token_id": token_id,
                "maker_amount": str(maker),
                "taker_amount": str(taker),
                "side": side_int,
                "fee_rate_bps": fee_rate_bps,
                "order_type": kind,
                "salt": str(salt_value),
                "nonce": str(nonce_value),
                "expiration": str(seconds),
                "client_order_id": coid,
            }
        )
        result = RawOrderResult(
            order_id="",
            clob_order_id=clob_order_id,
            clob_order_id_precomputed=precomputed,
            client_order_id=coid,
            token_id=token_id,
            side=side_int,
            maker_amount=maker,
            taker_amount=taker,
            salt=salt_value,
            fee_rate_bps=fee_rate_bps,
            nonce=nonce_value,
            expiration=seconds,
            order_type=kind,
            neg_risk=info.neg_risk,
        )
        return PreparedRawOrder(result, body)

    def send_raw_order(self, prepared: PreparedRawOrder) -> Operation[RawOrderResult]:
        """``POST /orders/raw`` of a prepared order; retried safely under its
        ``client_order_id`` (the very same body each time)."""
        placed = yield from self.run(
            Call("POST", API_PREFIX + "/orders/raw", None, prepared.body, SHAPES["placed"], SAFE)
        )
        clob_order_id = prepared.result.clob_order_id
        if not prepared.result.clob_order_id_precomputed:
            # placed: a failure here leaves the order findable by client_order_id
            stored = yield from self.get_order(placed.order_id)
            clob_order_id = stored.clob_order_id or ""
        return msgspec.structs.replace(
            prepared.result,
            order_id=placed.order_id,
            clob_order_id=clob_order_id,
            notification_id=placed.notification_id,
        )

    # -- waiting on orders ------------------------------------------------------------

    def wait_statuses(self, statuses: Iterable[str] | str | None) -> frozenset[str]:
        """The statuses ``wait_for_order`` stops at (default: the final ones)."""
        if statuses is None:
            return frozenset(FINAL_STATUSES)
        chosen = frozenset([statuses] if isinstance(statuses, str) else statuses)
        if not chosen:
            raise OrderFieldError("statuses", statuses, "must name at least one order status")
        return chosen

    def deadline(self, timeout: float) -> float:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValidationError("timeout", timeout, "must be a non-negative number of seconds")
        return self.clock() + timeout

    def wait_timeout(
        self, order_id: str, statuses: frozenset[str], last: Order
    ) -> ClobkitTimeoutError:
        wanted = ", ".join(sorted(statuses))
        return ClobkitTimeoutError(
            f"order {order_id} did not reach {wanted} in time (last status {last.status})"
        )

    @staticmethod
    def stream_says(
        item: StreamMessage | Reconnected, order_id: str, statuses: frozenset[str]
    ) -> bool:
        """True when a stream item means the order must be read again."""
        if isinstance(item, Reconnected):
            return True
        if item.order_id != order_id:
            return False
        status = item.order.status if item.order is not None else None
        return status is None or status in statuses
