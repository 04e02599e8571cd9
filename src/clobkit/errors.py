"""Every exception clobkit raises, in one tree.

::

    ClobkitError
    ├── ValidationError (ValueError)      bad input, caught before anything is sent
    │   ├── AmountError                   price, size, amount, tick, units
    │   ├── OrderFieldError               order-id fields: uint256, address, side, wallet
    │   ├── SignatureInputError           request-signing inputs: method, path, key, secret
    │   ├── InsufficientLiquidity         a book side cannot fill a FOK amount
    │   └── QuoteRefused                  a quote breaks a Quoter limit or the market minimum
    ├── ApiError                          the service answered ``success: false``
    │   ├── InvalidRequest        400     (``invalid request body`` and other 400s)
    │   │   ├── InsufficientBalance 400   (``insufficient balance``)
    │   │   └── ExpirationRefused 400     a GTD expiration too soon (also a ValidationError)
    │   ├── AuthenticationError   401     (``unauthorized``)
    │   ├── PermissionDenied      403     (``forbidden: missing scope <scope>``, IP whitelist)
    │   ├── NotFound              404
    │   │   └── OrderBookNotFound 200     (``Order book not found``, ``success: false``)
    │   ├── RateLimited           429     (``retry_after`` seconds, when the server said)
    │   ├── RiskControlError      500     (code ``ORDER_FAILED_PLACE_BET``)
    │   └── ServerError           5xx
    ├── TransportError                    the request never got an answer
    │   └── TimeoutError                  ... because it timed out
    ├── OutcomeUnknown                    a copy of unknown outcome may still land: a later
    │                                     refusal depending on the service's state proves nothing
    ├── SignerError                       a signer (a KMS key) gave no usable signature
    │   ├── SignerDenied                  the key's policy refused the call
    │   ├── SignerKeyError                the key: disabled, missing, of the wrong spec
    │   ├── SignerThrottled               throttled past the retries
    │   ├── SignerTimeout                 no answer in time
    │   └── SignatureMismatch             a signature that does not recover to the key
    └── MissingExtra (ImportError)        an optional part needs an extra: pip install ...

Validation errors carry ``field`` (the argument's name) and ``value`` (what was
given) and name both in their message; both core twins raise the same classes
for the same input. API errors carry ``status``, ``code`` and ``message``.
Signer errors carry ``key`` (the key's id or name) and ``cause`` (what went wrong).
"""

from __future__ import annotations

import builtins

from .core.spec import expiration_minimum, forbidden_scope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .core.resource import RawOrderResult

__all__ = [
    "AmountError",
    "ApiError",
    "AuthenticationError",
    "ClobkitError",
    "ExpirationRefused",
    "InsufficientBalance",
    "InsufficientLiquidity",
    "InvalidRequest",
    "MissingExtra",
    "NotFound",
    "OrderBookNotFound",
    "OrderFieldError",
    "OutcomeUnknown",
    "PermissionDenied",
    "QuoteRefused",
    "RateLimited",
    "RiskControlError",
    "ServerError",
    "SignatureInputError",
    "SignatureMismatch",
    "SignerDenied",
    "SignerError",
    "SignerKeyError",
    "SignerThrottled",
    "SignerTimeout",
    "TimeoutError",
    "TransportError",
    "ValidationError",
]


class ClobkitError(Exception):
    """Base of every exception raised by clobkit."""


class MissingExtra(ClobkitError, ImportError):
    """An optional part of clobkit needs an extra; the message names the ``pip install``."""


class ValidationError(ClobkitError, ValueError):
    """Bad input, rejected before any request is sent.

    ``field`` names the argument and ``value`` holds what was given.
    """

    def __init__(self, field: str, value: object, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field}: {reason} (got {_short_repr(value)})")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.field, self.value, self.reason))


class AmountError(ValidationError):
    """A price, size, amount, tick size or unit count that is not acceptable."""


class OrderFieldError(ValidationError):
    """An order field that does not fit its EIP-712 type (uint256, address, side)."""


class SignatureInputError(ValidationError):
    """A request-signing input that cannot be signed (method, path, key, secret)."""


class InsufficientLiquidity(ValidationError):
    """The book side cannot fill the whole amount (FOK)."""


class QuoteRefused(ValidationError):
    """A wanted quote (``clobkit.mm``) breaks a limit of its ``Quoter`` (open orders,
    position, notional), the market's minimum order size, or repeats a side and
    price; refused before anything is sent."""


class ApiError(ClobkitError):
    """The service answered with ``success: false``.

    ``status`` is the HTTP status, ``code`` the optional error code string,
    ``message`` the ``error`` string of the envelope and ``detail`` the
    server's optional explanation (``signature mismatch``), shown after it.
    ``order``: see ``TransportError``.
    """

    order: RawOrderResult | None = None

    def __init__(
        self, message: str, *, status: int, code: str | None = None, detail: str | None = None
    ) -> None:
        super().__init__(self._answered(message, status, code, detail))

    def _answered(self, message: str, status: int, code: str | None, detail: str | None) -> str:
        """Keep the answer's parts; the error's text."""
        self.message = message
        self.status = status
        self.code = code
        self.detail = detail
        text = f"{status}: {message}" if code is None else f"{status} {code}: {message}"
        if detail and not message.endswith(detail):  # a message that says it already
            text += f": {detail}"
        return text

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_api_error,
            (type(self), self.message, self.status, self.code, self.detail),
        )


def _rebuild_api_error(
    cls: type[ApiError], message: str, status: int, code: str | None, detail: str | None = None
) -> ApiError:
    return cls(message, status=status, code=code, detail=detail)


class InvalidRequest(ApiError):
    """400: the body or parameters were refused."""


class InsufficientBalance(InvalidRequest):
    """400 ``insufficient balance``."""


class ExpirationRefused(InvalidRequest, ValidationError):
    """400 ``ORDER_INVALID_EXPIRATION``: the service refused a GTD order's expiration as
    too close to its clock (not in the future, or less than its minimum ahead).

    Both an ``ApiError`` (``status``, ``code``, ``message``, ``detail``: the service's
    words) and a ``ValidationError`` (``field`` ``expiration``): the input was wrong,
    though only the service could tell. ``minimum`` is the seconds ahead it asks for
    (0 when it named none but "in the future").
    """

    def __init__(
        self, message: str, *, status: int, code: str | None = None, detail: str | None = None
    ) -> None:
        text = self._answered(message, status, code, detail)
        self.field = "expiration"
        self.reason = detail or message
        self.value: object = None  # the expiration sent is in ``reason``, as the service saw it
        self.minimum = expiration_minimum(self.reason)
        Exception.__init__(self, text)  # not ValidationError's (field, value, reason)


class AuthenticationError(ApiError):
    """401 ``unauthorized``: missing or bad key, signature, timestamp or nonce."""


class PermissionDenied(ApiError):
    """403: a scope is missing (``scope`` names it) or the IP is not whitelisted."""

    @property
    def scope(self) -> str | None:
        prefix = forbidden_scope("")
        return self.message[len(prefix) :] if self.message.startswith(prefix) else None


class NotFound(ApiError):
    """404: the event, market or order does not exist (or is not the caller's)."""


class OrderBookNotFound(NotFound):
    """200 with ``success: false``: the asset has no active order book."""


class RateLimited(ApiError):
    """429: too many requests; ``retry_after`` is in seconds when the server said."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 429,
        code: str | None = None,
        retry_after: float | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code, detail=detail)
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_rate_limited,
            (self.message, self.status, self.code, self.retry_after, self.detail),
        )


def _rebuild_rate_limited(
    message: str,
    status: int,
    code: str | None,
    retry_after: float | None,
    detail: str | None = None,
) -> RateLimited:
    return RateLimited(message, status=status, code=code, retry_after=retry_after, detail=detail)


class RiskControlError(ApiError):
    """500 ``ORDER_FAILED_PLACE_BET``: a per-order, daily, monthly or frequency limit."""


class ServerError(ApiError):
    """5xx other than a risk-control refusal."""


class TransportError(ClobkitError):
    """The request did not get an answer (connection refused, reset, protocol error).

    ``order`` (here and on ``ApiError``): on a raw order whose outcome the error
    leaves unknown (no answer, 5xx, 429), the order as prepared and sent
    (``client_order_id``, ``clob_order_id`` where precomputed, the body's
    fields; ``order_id`` once the service named it), for
    ``resolve_raw_order``; else ``None``.
    """

    order: RawOrderResult | None = None


class OutcomeUnknown(ClobkitError):
    """A raw order of which a copy got no definite answer (timeout, dropped
    connection, 5xx, 429) and a later copy, under the same ``client_order_id``,
    was refused for a reason that depends on the service's state (balance, risk
    control, rate limit, a fee rate or market status): the earlier copy may still
    land, so the order is neither placed nor refused yet.

    ``refusal`` is the later answer (an ``ApiError``); ``order`` the order as sent
    (for ``resolve_raw_order``); ``settles_at`` the Unix time (s) after which no
    copy can land any more (``order.sent_at`` plus the client's ``landing_time``),
    so that a refusal from then on proves the order was never placed.
    """

    order: RawOrderResult | None = None

    def __init__(self, message: str, *, refusal: ApiError | None = None, settles_at: float = 0.0):
        super().__init__(message)
        self.refusal = refusal
        self.settles_at = settles_at

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_outcome_unknown, (str(self), self.refusal, self.settles_at))


def _rebuild_outcome_unknown(
    message: str, refusal: ApiError | None, settles_at: float
) -> OutcomeUnknown:
    return OutcomeUnknown(message, refusal=refusal, settles_at=settles_at)


class SignerError(ClobkitError):
    """A signer gave no usable signature: ``key`` names the key (a KMS key id or
    resource name), ``cause`` says why. Nothing was signed, so nothing was sent."""

    def __init__(self, key: str, cause: str) -> None:
        self.key = key
        self.cause = cause
        super().__init__(f"signer key {key}: {cause}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.key, self.cause))


class SignerDenied(SignerError):
    """The key's policy (IAM) refused the call: ``kms:Sign`` / ``cloudkms.signerVerifier``."""


class SignerKeyError(SignerError):
    """The key cannot sign orders: disabled, pending deletion, missing, or not a
    secp256k1 signing key (``ECC_SECG_P256K1``, ``EC_SIGN_SECP256K1_SHA256``)."""


class SignerThrottled(SignerError):
    """The KMS throttled the calls (a quota) past the signer's retries."""


class SignerTimeout(SignerError, builtins.TimeoutError):
    """The KMS gave no answer within the signer's ``timeout``."""


class SignatureMismatch(SignerError):
    """A signature the KMS returned does not recover to the key's public key (read
    once at start): a tampered answer, or another key behind the same name."""


class TimeoutError(TransportError, builtins.TimeoutError):  # noqa: A001 - mirrors httpx's naming
    """The request timed out."""


def _short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters; an int too long to write, by its size.

    An int past Python's digit limit for ``str`` (``sys.set_int_max_str_digits``,
    4,300 by default), or a container holding one, cannot be written: the error
    naming it must still be raised, so it says what it can.
    """
    if isinstance(value, int) and value.bit_length() > _REPR_BITS:
        return f"<int of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except ValueError:  # a huge int inside a container, or a repr that refuses
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ints above this size are named by it: far below the digit limit (4,300 digits
# is about 14,000 bits), and writing thousands of digits only to cut them is waste
_REPR_BITS = 1024
