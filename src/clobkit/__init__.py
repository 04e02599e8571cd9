"""clobkit: exact, fast order tooling for a sports prediction-market External Trading API.

The core (amounts, salts, order ids, request signing) runs on a compiled twin
when it is built and on a pure-Python twin otherwise; ``IMPLEMENTATION`` says
which (``"c"`` or ``"python"``).
"""

from __future__ import annotations

from . import errors
from ._core import IMPLEMENTATION
from .amounts import (
    Amounts,
    OrderType,
    Side,
    from_units,
    limit_amounts,
    market_amounts,
    market_price,
    to_units,
)
from .auth import RequestSigner, signature, verify_signature
from .client import AsyncClient, Client
from .order_id import OrderHasher, WalletInfo, sign_order_id
from .salt import new_salt, new_salts
from .signing import OrderSigner, SignedOrder

__version__ = "0.1.0"

__all__ = [
    "IMPLEMENTATION",
    "Amounts",
    "AsyncClient",
    "Client",
    "OrderHasher",
    "OrderSigner",
    "OrderType",
    "RequestSigner",
    "Side",
    "SignedOrder",
    "WalletInfo",
    "__version__",
    "errors",
    "from_units",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "new_salt",
    "new_salts",
    "sign_order_id",
    "signature",
    "to_units",
    "verify_signature",
]
