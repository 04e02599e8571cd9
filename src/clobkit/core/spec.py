"""The API's rules, each written once: limits, names, topics and the error table.

Everything here restates the External Trading API text (sections 2, 3, 6, 7
and 8) as constants, plus, marked as such, the few names of clobkit's own that
several modules share: the sandbox's error codes and the environment the
client and the CLI read. The core, the client, the CLI, the sandbox and the
market maker import them; none of them restates a rule
(``tests/test_spec_literals.py`` checks). Pure data: importing this module
costs nothing.
"""

from __future__ import annotations

from decimal import Decimal

# ``typing`` stays off ``import clobkit``'s path (see docs/development.md): the
# Literal aliases are built on first use by ``__getattr__`` below, from the
# tuples that hold the values; type checkers read the spelled-out form.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, Literal

    SideName = Literal["BUY", "SELL"]
    OrderTypeName = Literal["FOK", "GTC", "GTD"]
    OutcomeName = Literal["a", "b"]
    OrderStatus = Literal[
        "pending", "signing", "submitted", "live", "matched", "won", "lost", "cancelled"
    ]

__all__ = [
    "API_PREFIX",
    "BODY_REFUSAL_CODES",
    "CANCELLED",
    "CLIENT_ORDER_ID_MAX",
    "CODE_DUPLICATE",
    "CODE_INVALID_EXPIRATION",
    "CODE_INVALID_FEE_RATE",
    "CODE_INVALID_MAKER_AMOUNT",
    "CODE_INVALID_PREFIX",
    "CODE_INVALID_PRICE",
    "CODE_INVALID_SALT",
    "CODE_INVALID_TAKER_AMOUNT",
    "CODE_INVALID_TOKEN",
    "CODE_MARKET_NOT_ACTIVE",
    "CODE_NOT_CANCELLABLE",
    "CODE_ORDER_NOT_FOUND",
    "CODE_RATE_LIMITED",
    "DECIMALS",
    "ENV_API_KEY",
    "ENV_API_SECRET",
    "ENV_BASE_URL",
    "ENV_CLOB_URL",
    "ENV_PRIVATE_KEY",
    "ENV_SENTINEL_TOKEN",
    "ERROR_BALANCE",
    "ERROR_BODY",
    "ERROR_BOOK_NOT_FOUND",
    "ERROR_EVENT_NOT_FOUND",
    "ERROR_INTERNAL",
    "ERROR_IP_FORBIDDEN",
    "ERROR_MARKET_NOT_FOUND",
    "ERROR_METHOD_NOT_ALLOWED",
    "ERROR_NOT_FOUND",
    "ERROR_ORDER_NOT_FOUND",
    "ERROR_PARAMS",
    "ERROR_RATE_LIMITED",
    "ERROR_UNAUTHORIZED",
    "FINAL_STATUSES",
    "LIST_STATUSES",
    "LIVE",
    "LOST",
    "MARKET_TOPIC_KINDS",
    "MATCHED",
    "MAX_FEE_RATE_BPS",
    "OPEN_STATUSES",
    "ORDER_STATUSES",
    "ORDER_TYPES",
    "OUTCOMES",
    "OUTCOME_A",
    "OUTCOME_B",
    "PAGE_SIZE_DEFAULT",
    "PAGE_SIZE_MAX",
    "PENDING",
    "RATE_LIMIT_PER_MINUTE",
    "RISK_CODE",
    "SALT_MAX",
    "SALT_RANGE",
    "SIDES",
    "SIGNING",
    "SINGLE_ORDER_MAX",
    "SUBMITTED",
    "UNIT",
    "UNIT_QUANTUM",
    "WON",
    "OrderStatus",
    "OrderTypeName",
    "OutcomeName",
    "SideName",
    "book_topic",
    "expiration_minimum",
    "expiration_refusal",
    "forbidden_scope",
    "user_orders_topic",
]

#: Path prefix of every endpoint (section 9).
API_PREFIX: Final = "/api/ext/v1"

# -- limits (section 8) ---------------------------------------------------------------
#: A raw order's salt lies in [0, SALT_MAX].
SALT_MAX: Final = 10**12
#: That range as clobkit's messages write it.
SALT_RANGE: Final = "[0, 10**12]"
#: The single-order maximum, USDC; it applies to every order, bonus-funded or not.
SINGLE_ORDER_MAX: Final = Decimal(50_000)
#: The most ``fee_rate_bps`` an order may carry: the exchange's ``MAX_FEE_RATE_BIPS``
#: (10%; the CTF exchange refuses a signed ``feeRateBps`` above it, so such an order
#: could rest but never match). The fee-rate query's ``base_fee`` lies within it too.
MAX_FEE_RATE_BPS: Final = 1_000
#: ``client_order_id`` is at most this many characters.
CLIENT_ORDER_ID_MAX: Final = 64
#: ``page_size`` / ``per_page`` / ``limit`` are at most this.
PAGE_SIZE_MAX: Final = 100
#: The page size the client asks for when the caller names none: the most it may.
PAGE_SIZE_DEFAULT: Final = PAGE_SIZE_MAX
#: Requests a minute per API key. The API text answers 429 past a threshold it does
#: not name; this is the sandbox's default and the budget ``mm.Desk`` assumes.
RATE_LIMIT_PER_MINUTE: Final = 6000
#: Amounts on the wire are integers of DECIMALS decimals: 1 USDC or 1 share is UNIT units.
DECIMALS: Final = 6
UNIT: Final = 10**DECIMALS
#: One unit as a Decimal (0.000001): the quantum of every USDC or share amount.
UNIT_QUANTUM: Final = Decimal((0, (1,), -DECIMALS))

# -- names (sections 2 and 3) ---------------------------------------------------------
#: A market's two outcomes (section 1), each with its token (``token_id_a``, ``_b``).
OUTCOME_A: Final = "a"
OUTCOME_B: Final = "b"
OUTCOMES: Final[tuple[OutcomeName, OutcomeName]] = (OUTCOME_A, OUTCOME_B)
#: Order sides; the index is the exchange's ``uint8 side``.
SIDES: Final[tuple[SideName, SideName]] = ("BUY", "SELL")
#: Time in force: FOK fills at once or is killed; GTC and GTD rest.
ORDER_TYPES: Final[tuple[OrderTypeName, ...]] = ("FOK", "GTC", "GTD")
#: Order statuses named by the API text (section 2), one name each: code compares
#: and sets these names, never the strings, and types a status ``OrderStatus``.
PENDING: Final = "pending"
SIGNING: Final = "signing"
SUBMITTED: Final = "submitted"
LIVE: Final = "live"
MATCHED: Final = "matched"
WON: Final = "won"
LOST: Final = "lost"
CANCELLED: Final = "cancelled"
#: The statuses in lifecycle order.
ORDER_STATUSES: Final[tuple[OrderStatus, ...]] = (
    PENDING,
    SIGNING,
    SUBMITTED,
    LIVE,
    MATCHED,
    WON,
    LOST,
    CANCELLED,
)
#: Statuses of an order that may still change by trading.
OPEN_STATUSES: Final[tuple[OrderStatus, ...]] = (PENDING, SIGNING, SUBMITTED, LIVE)
#: Statuses after which an order no longer trades.
FINAL_STATUSES: Final[tuple[OrderStatus, ...]] = (MATCHED, WON, LOST, CANCELLED)
#: The values ``GET /orders?status=`` accepts.
LIST_STATUSES: Final[tuple[OrderStatus, ...]] = (*OPEN_STATUSES, MATCHED)

# alias name -> the tuple of its values
_LITERALS = {
    "SideName": SIDES,
    "OrderTypeName": ORDER_TYPES,
    "OrderStatus": ORDER_STATUSES,
    "OutcomeName": OUTCOMES,
}


def __getattr__(name: str) -> object:
    """The ``Literal`` aliases, made on first use (PEP 562)."""
    values = _LITERALS.get(name)
    if values is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import typing

    literal: Any = typing.Literal  # a type expression built at run time
    alias = literal[values]
    globals()[name] = alias  # later lookups skip this function
    return alias


# -- WebSocket topics (section 6) -----------------------------------------------------
def user_orders_topic(user_id: str) -> str:
    """The topic of one user's order updates."""
    return f"user:{user_id}:orders"


#: What a market topic carries: the token's book, or its price.
MARKET_TOPIC_KINDS: Final = ("book", "price")


def book_topic(token_id: str, kind: str = "book") -> str:
    """The topic of one outcome token's book (``kind`` "book") or price ("price")."""
    return f"market:{token_id}:{kind}"


# -- the error table (section 7): the ``error`` strings and codes -----------------------
ERROR_BODY: Final = "invalid request body"
ERROR_PARAMS: Final = "invalid request parameters"
ERROR_BALANCE: Final = "insufficient balance"
ERROR_UNAUTHORIZED: Final = "unauthorized"
ERROR_ORDER_NOT_FOUND: Final = "order not found"
ERROR_MARKET_NOT_FOUND: Final = "Market not found"
ERROR_EVENT_NOT_FOUND: Final = "Event not found"
ERROR_BOOK_NOT_FOUND: Final = "Order book not found"
#: The status table's texts (section 7), as the sandbox answers them.
ERROR_NOT_FOUND: Final = "not found"
ERROR_RATE_LIMITED: Final = "rate limit exceeded"
ERROR_INTERNAL: Final = "internal error"
#: The sandbox's own texts, where the API text gives a status only (docs/sandbox.md).
ERROR_METHOD_NOT_ALLOWED: Final = "method not allowed"
ERROR_IP_FORBIDDEN: Final = "forbidden: ip not whitelisted"
#: Code of a risk-control breach (answered 500).
RISK_CODE: Final = "ORDER_FAILED_PLACE_BET"
#: Code of an order detail (``GET /orders/{id}``) that is unknown or not the caller's.
CODE_ORDER_NOT_FOUND: Final = "ORDER_NOT_FOUND"
#: Codes of a raw order's refused fields, as the API text names them.
CODE_INVALID_SALT: Final = "ORDER_INVALID_SALT"
CODE_INVALID_MAKER_AMOUNT: Final = "ORDER_INVALID_MAKER_AMOUNT"
CODE_INVALID_TAKER_AMOUNT: Final = "ORDER_INVALID_TAKER_AMOUNT"
#: The prefix those codes share. clobkit's reading, not the text's: the text's list
#: of codes is "not shown", so the client takes any ``ORDER_INVALID*`` as a refusal.
CODE_INVALID_PREFIX: Final = "ORDER_INVALID"
# The sandbox's own codes, where the API text names none (docs/sandbox.md): the
# client and the market maker read CODE_DUPLICATE, so it is written here once.
#: A raw order's ``clob_order_id`` names an order that already exists.
CODE_DUPLICATE: Final = "ORDER_DUPLICATE"
#: A cancel of an order that is not a live limit order (a FOK, or one no longer live).
CODE_NOT_CANCELLABLE: Final = "ORDER_NOT_CANCELLABLE"
#: A raw order's token is not one of its market's outcomes.
CODE_INVALID_TOKEN: Final = "ORDER_INVALID_TOKEN"
#: A raw order's fee rate is not the market's.
CODE_INVALID_FEE_RATE: Final = "ORDER_INVALID_FEE_RATE"
#: A raw order's implied price is off the grid or outside (0, 1).
CODE_INVALID_PRICE: Final = "ORDER_INVALID_PRICE"
#: An order on a market that is not active, or a settlement of a settled one.
CODE_MARKET_NOT_ACTIVE: Final = "MARKET_NOT_ACTIVE"
#: A 429's code (the API text shows no body for it).
CODE_RATE_LIMITED: Final = "RATE_LIMITED"
#: A GTD order's expiration too close to the service's clock: not in the future, or
#: under the service's minimum (the sandbox's ``min_expiration_seconds``; the API text
#: names none). Not a refusal of the body alone: whether it holds depends on when a
#: copy arrives, so it is left out of ``BODY_REFUSAL_CODES``.
CODE_INVALID_EXPIRATION: Final = "ORDER_INVALID_EXPIRATION"
#: The refusals of a raw order that hold for every copy of the same body: they judge
#: the body's own fields (its form, the salt, the amounts and their ratio, the token
#: of the market), never the service's state. clobkit's reading: any other refusal
#: (balance, risk control, rate limit, 5xx, a fee rate or market status that changed)
#: may depend on when a copy arrived, so it proves nothing of a copy still in flight.
BODY_REFUSAL_CODES: Final = frozenset(
    {
        CODE_INVALID_SALT,
        CODE_INVALID_MAKER_AMOUNT,
        CODE_INVALID_TAKER_AMOUNT,
        CODE_INVALID_TOKEN,
        CODE_INVALID_PRICE,
    }
)


_EXPIRATION_AT_LEAST = "at least "
_EXPIRATION_AHEAD = " s ahead"


def expiration_refusal(expiration: int, now_ms: int, minimum: int) -> str:
    """The sandbox's words (``CODE_INVALID_EXPIRATION``) for a GTD ``expiration`` (Unix
    s) refused at ``now_ms`` (its clock, ms) when its minimum is ``minimum`` seconds."""
    ahead = expiration - now_ms / 1000
    need = f"{_EXPIRATION_AT_LEAST}{minimum}{_EXPIRATION_AHEAD}" if minimum else "in the future"
    return (
        f"expiration {expiration} (Unix s) is {ahead:.3f} s ahead of the service's clock:"
        f" a GTD order's must be {need}"
    )


def expiration_minimum(text: str) -> int:
    """The minimum (s) that an ``expiration_refusal`` text names (0: none, only "in the
    future")."""
    _, found, rest = text.partition(_EXPIRATION_AT_LEAST)
    digits, ahead, _ = rest.partition(_EXPIRATION_AHEAD)
    return int(digits) if found and ahead and digits.isdigit() and len(digits) < 10 else 0


def forbidden_scope(scope: str) -> str:
    """The ``error`` of a request whose key lacks ``scope``."""
    return f"forbidden: missing scope {scope}"


# -- clobkit's environment (not the API's): where the client and the CLI connect -------
#: The service's host (the CLI's ``--base-url``, ``Client(base_url=)``).
ENV_BASE_URL: Final = "CLOBKIT_BASE_URL"
ENV_API_KEY: Final = "CLOBKIT_API_KEY"
ENV_API_SECRET: Final = "CLOBKIT_API_SECRET"
#: The fee-rate host; the base URL when unset.
ENV_CLOB_URL: Final = "CLOBKIT_CLOB_URL"
#: The order-signing key of the CLI (never argv).
ENV_PRIVATE_KEY: Final = "CLOBKIT_PRIVATE_KEY"
#: The secret a desk and ``clobkit sentinel`` share: heartbeats are signed with it
#: (HMAC-SHA256), and the sentinel refuses any other (never argv).
ENV_SENTINEL_TOKEN: Final = "CLOBKIT_SENTINEL_TOKEN"
