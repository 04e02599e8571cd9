"""Sans-I/O operations: the effects (Send, Sleep, Gather), one HTTP Call, and the
runner that builds, sends, retries and parses calls.

Nothing here touches the network or sleeps. Every client call is an
*operation*: a generator that yields effects and receives their results.

* ``Send(request, timeout, limit)`` -> the answer (``_errors.Reply``: its whole body read
  within ``timeout`` seconds and at most ``limit`` bytes), or the ``ClobkitError`` of the
  failure (``_wire.failure_error``: the shells map their library's exceptions);
* ``Sleep(seconds)`` -> ``None``;
* ``Gather(operations)`` -> the list of their results, run concurrently;
* ``Receive(inbox, seconds)`` -> the next stream item of ``inbox``, or ``None``;
* ``Sign(signer, digests)`` -> their signatures (``"0x"`` + 130 hex each): the
  async shell awaits an ``AsyncSigner``, the sync one calls a ``Signer``; the
  signer's error is raised where the operation waits, before anything is sent.

``Client`` and ``AsyncClient`` only drive operations (``_sync.py`` /
``_async.py``), so request building, signing, retries, caching, validation and
response parsing are written once and the two clients cannot drift apart.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlencode, urlsplit

import msgspec

from ..core.jsondepth import json_too_deep
from ..core.select import RequestSigner
from ..core.types import OrderType, Side
from ..errors import (
    ApiError,
    ClobkitError,
    OutcomeUnknown,
    RateLimited,
    RiskControlError,
    ServerError,
    TransportError,
)
from ._config import ClientConfig
from ._decode import Shape
from ._errors import (
    UNKNOWN_OUTCOME,
    Reply,
    _error_from_response,
    refuses_every_copy,
    refuses_the_order,
    reply_text,
)
from ._wire import Origin, Outgoing

log = logging.getLogger("clobkit.client")
T = TypeVar("T")
_USER_AGENT = "clobkit-python"
_JSON = "application/json"
_LENGTH_ALWAYS = frozenset({"POST", "PUT", "PATCH"})  # Content-Length: 0 sent for these


class Send(NamedTuple):
    """Send ``request``; resume with the answer (``_errors.Reply``) or the
    ``clobkit.errors`` exception of the failure.

    The shell gives the whole exchange (connect, pool wait, send, headers, body) at
    most ``timeout`` seconds and reads at most ``limit`` body bytes; past either it
    resumes with a ``clobkit.errors.TimeoutError`` / ``ServerError``.
    """

    request: Outgoing
    timeout: float | None = None
    limit: int | None = None


class Sleep(NamedTuple):
    """Pause for ``seconds``; resume with ``None``."""

    seconds: float


class Gather(NamedTuple):
    """Run ``operations`` concurrently; resume with their results in order."""

    operations: list[Operation[Any]]


class Receive(NamedTuple):
    """Wait at most ``seconds`` for the next item of ``inbox`` (the queue a stream
    listener fills); resume with the item, or ``None`` when none came in time."""

    inbox: Any
    seconds: float


class Sign(NamedTuple):
    """Sign the 32-byte ``digests`` with ``signer`` (a raw order's exchange order);
    resume with their signatures."""

    signer: Any
    digests: list[bytes]


Effect = Send | Sleep | Gather | Receive | Sign
Operation = Generator[Effect, Any, T]


NEVER = 0  # never retried (POST /orders, DELETE)
SAFE = 1  # retried on transport errors, 429 and 5xx (GETs)
#: Retried as ``SAFE`` under an idempotency key (POST /orders/raw, its client_order_id):
#: once a copy's outcome is unknown, a later copy's refusal that depends on the
#: service's state does not settle it (``OutcomeUnknown``).
KEYED = 2


class Copies:
    """The copies of a keyed request: ``unknown_at``, the wall time (Unix s) the last
    copy without a definite answer was sent (0.0: none), which a later call of the
    same order starts from (``RawOrderResult.sent_at``)."""

    __slots__ = ("unknown_at",)

    def __init__(self, unknown_at: float = 0.0) -> None:
        self.unknown_at = unknown_at


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


class CallRunner:
    """Builds, signs, sends (as effects), retries and parses calls; the base of ``ClientCore``."""

    def __init__(self, config: ClientConfig, signer: RequestSigner) -> None:
        self.config = config
        self.signer = signer
        self._origin, base = split_url(config.base_url)
        self._base_path = base.partition("?")[0].rstrip("/")
        # the clocks and jitter are hooks: tests put fake ones in their place
        self.clock: Callable[[], float] = time.monotonic
        self.wall_clock: Callable[[], float] = time.time
        self.random: Callable[[], float] = random.random

    def __repr__(self) -> str:
        config = self.config
        return f"{type(self).__name__}(base_url={config.base_url!r}, api_key={config.api_key!r})"

    # -- requests -----------------------------------------------------------

    def build_outgoing(self, call: Call) -> Outgoing:
        """The signed request of ``call`` (see ``_wire.Outgoing``): the path under the
        base URL (or ``call.url``), the query form-encoded, signed over both."""
        params = _query(call.params)
        if call.url is not None:
            origin, target = split_url(call.url)
        else:
            origin, target = self._origin, self._base_path + call.path
        if params:
            target += ("&" if "?" in target else "?") + urlencode(params)
        body = call.body
        headers = [("Host", origin.netloc)]
        if body or call.method in _LENGTH_ALWAYS:
            headers.append(("Content-Length", str(len(body))))
        headers += [("Accept", _JSON), ("User-Agent", _USER_AGENT)]
        if body:
            headers.append(("Content-Type", _JSON))
        if call.signed:
            headers.extend(self.signer.headers(call.method, target, body).items())
        return Outgoing(call.method, origin, target, headers, body)

    def parse(self, call: Call, response: Reply) -> Any:
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

    def _parse(self, call: Call, response: Reply) -> Any:
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

    def _parse_slow(self, call: Call, shape: Shape[Any], response: Reply) -> Any:
        status = response.status_code
        try:
            raw = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            raw = None
            if status < 300:
                raise ServerError(
                    f"response is not JSON: {reply_text(response)[:200]!r}", status=status
                ) from None
        # an envelope whose success is not true (null, "no", [false]...) is no success
        if status >= 300 or (isinstance(raw, dict) and raw.get("success", True) is not True):
            raise _error_from_response(response, raw)
        data = raw.get("data") if isinstance(raw, dict) and "success" in raw else raw
        if data is None:
            return self._no_data(call, response)
        try:
            return shape.from_raw(data)
        except msgspec.ValidationError as exc:
            raise ServerError(f"unreadable response: {exc}", status=status) from None

    def _no_data(self, call: Call, response: Reply) -> Any:
        if call.default is not None:
            return call.default
        raise ServerError("successful response without data", status=response.status_code)

    def _parse_plain(self, response: Reply) -> Any:
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

    def keyed_outcome(self, error: ClobkitError, sent_at: float, copies: Copies) -> None:
        """A keyed copy sent at ``sent_at`` failed with ``error``: note it when its
        outcome is unknown. A refusal settles the order only when no earlier copy is
        unknown, or it holds for every copy, or the service read the key and refused
        the order once no earlier copy could land any more; else ``OutcomeUnknown``."""
        if isinstance(error, UNKNOWN_OUTCOME):
            copies.unknown_at = max(copies.unknown_at, sent_at)
            return
        if not copies.unknown_at or not isinstance(error, ApiError) or refuses_every_copy(error):
            return
        settles_at = copies.unknown_at + self.config.landing_time
        if sent_at >= settles_at and refuses_the_order(error):
            return  # no earlier copy can land any more, and the service holds none
        raise OutcomeUnknown(
            f"outcome unknown: an earlier copy got no definite answer and may have landed "
            f"(or land until {settles_at:.3f}, Unix s); a later copy was refused: {error}",
            refusal=error,
            settles_at=settles_at,
        ) from error

    def run(
        self, call: Call, until: float | None = None, copies: Copies | None = None
    ) -> Operation[Any]:
        """Send ``call``, retrying as its policy allows; return the parsed result.

        Each attempt gets ``timeout`` seconds (less when the call's budget,
        ``total_timeout``, or ``until``, a time of ``clock``, ends sooner); a retry
        whose wait would end past the budget is not made. A ``KEYED`` call notes in
        ``copies`` when its last copy of unknown outcome went out.
        """
        config = self.config
        attempt = 0
        budget_end = self.clock() + config.call_budget
        if until is not None:
            budget_end = min(budget_end, until)
        if copies is None:
            copies = Copies()
        while True:
            request = self.build_outgoing(call)
            started = self.clock()
            sent_at = self.wall_clock()
            timeout = max(0.0, min(config.timeout, budget_end - started))
            result = yield Send(request, timeout, config.max_response_bytes)
            try:
                if isinstance(result, BaseException):
                    raise result  # a ClobkitError as the shell made it, or a bug
                value = self.parse(call, result)
            except (ApiError, TransportError) as error:
                if call.retry == KEYED:
                    self.keyed_outcome(error, sent_at, copies)
                delay = self.retry_delay(call, attempt, error)
                where = f"{call.method} {request.target}"
                log.debug("%s failed (attempt %d): %s", where, attempt + 1, error)
                if delay is None or self.clock() + delay >= budget_end:
                    raise
                log.info("retrying %s in %.3f s after %s", where, delay, type(error).__name__)
            else:
                if log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "%s %s -> %d in %.1f ms",
                        call.method,
                        request.target,
                        result.status_code,
                        (self.clock() - started) * 1000,
                    )
                return value
            attempt += 1
            yield Sleep(delay)


def split_url(url: str) -> tuple[Origin, str]:
    """The origin of an absolute http(s) URL and its target (the raw path, ``/`` when
    empty, and query), as written: nothing is quoted again, since the target is what
    is signed. The URL was checked when the client was made (``_config.check_url``)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]  # never send a userinfo
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    origin = Origin(parts.scheme.lower(), parts.hostname or "", parts.port, netloc)
    return origin, target
