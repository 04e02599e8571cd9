"""The API's rules, each written once: limits, names, topics and the error table.

Everything here restates the External Trading API text (sections 3, 6, 7 and
8) as constants. The core, the client, the CLI and the sandbox import them;
none of them restates a rule. Pure data: importing this module costs nothing.
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
    OrderStatus = Literal[
        "pending", "signing", "submitted", "live", "matched", "won", "lost", "cancelled"
    ]

__all__ = [
    "API_PREFIX",
    "CLIENT_ORDER_ID_MAX",
    "ERROR_BALANCE",
    "ERROR_BODY",
    "ERROR_BOOK_NOT_FOUND",
    "ERROR_EVENT_NOT_FOUND",
    "ERROR_MARKET_NOT_FOUND",
    "ERROR_ORDER_NOT_FOUND",
    "ERROR_PARAMS",
    "ERROR_UNAUTHORIZED",
    "FINAL_STATUSES",
    "LIST_STATUSES",
    "MARKET_TOPIC_KINDS",
    "OPEN_STATUSES",
    "ORDER_STATUSES",
    "ORDER_TYPES",
    "PAGE_SIZE_MAX",
    "RATE_LIMIT_PER_MINUTE",
    "RISK_CODE",
    "SALT_MAX",
    "SIDES",
    "SINGLE_ORDER_MAX",
    "UNIT",
    "OrderStatus",
    "OrderTypeName",
    "SideName",
    "book_topic",
    "forbidden_scope",
    "user_orders_topic",
]

#: Path prefix of every endpoint (section 9).
API_PREFIX: Final = "/api/ext/v1"

# -- limits (section 8) ---------------------------------------------------------------
#: A raw order's salt lies in [0, SALT_MAX].
SALT_MAX: Final = 10**12
#: The single-order maximum, USDC; it applies to every order, bonus-funded or not.
SINGLE_ORDER_MAX: Final = Decimal(50_000)
#: ``client_order_id`` is at most this many characters.
CLIENT_ORDER_ID_MAX: Final = 64
#: ``page_size`` / ``per_page`` / ``limit`` are at most this.
PAGE_SIZE_MAX: Final = 100
#: Requests a minute per API key. The API text answers 429 past a threshold it does
#: not name; this is the sandbox's default and the budget ``mm.Desk`` assumes.
RATE_LIMIT_PER_MINUTE: Final = 6000
#: Amounts on the wire are integers of 6 decimals: 1 USDC or 1 share is this many units.
UNIT: Final = 1_000_000

# -- names (sections 2 and 3) ---------------------------------------------------------
#: Order sides; the index is the exchange's ``uint8 side``.
SIDES: Final[tuple[SideName, SideName]] = ("BUY", "SELL")
#: Time in force: FOK fills at once or is killed; GTC and GTD rest.
ORDER_TYPES: Final[tuple[OrderTypeName, ...]] = ("FOK", "GTC", "GTD")
#: Order statuses named by the API text, in lifecycle order.
ORDER_STATUSES: Final[tuple[OrderStatus, ...]] = (
    "pending",
    "signing",
    "submitted",
    "live",
    "matched",
    "won",
    "lost",
    "cancelled",
)
#: Statuses of an order that may still change by trading.
OPEN_STATUSES: Final[tuple[OrderStatus, ...]] = ("pending", "signing", "submitted", "live")
#: Statuses after which an order no longer trades.
FINAL_STATUSES: Final[tuple[OrderStatus, ...]] = ("matched", "won", "lost", "cancelled")
#: The values ``GET /orders?status=`` accepts.
LIST_STATUSES: Final[tuple[OrderStatus, ...]] = (*OPEN_STATUSES, "matched")

# alias name -> the tuple of its values
_LITERALS = {"SideName": SIDES, "OrderTypeName": ORDER_TYPES, "OrderStatus": ORDER_STATUSES}


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
#: Code of a risk-control breach (answered 500).
RISK_CODE: Final = "ORDER_FAILED_PLACE_BET"


def forbidden_scope(scope: str) -> str:
    """The ``error`` of a request whose key lacks ``scope``."""
    return f"forbidden: missing scope {scope}"
