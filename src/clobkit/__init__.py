"""clobkit: exact, fast order tooling for a sports prediction-market External Trading API.

The core (amounts, salts, order ids, request signing) runs on a compiled twin
when it is built and on a pure-Python twin otherwise; ``IMPLEMENTATION`` says
which (``"c"`` or ``"python"``). ``import clobkit`` loads the core only: the
client (httpx, websockets) and order signing (coincurve) load on first use of
``Client`` / ``AsyncClient`` / ``OrderSigner`` / ``SignedOrder``, the typed
models (msgspec) on first use of ``WalletInfo``, and the enums on first use of
``Side`` / ``OrderType``.
"""

from __future__ import annotations

from . import errors
from .amounts import (
    Amounts,
    from_units,
    limit_amounts,
    market_amounts,
    market_price,
    to_units,
)
from .auth import RequestSigner, signature, verify_signature
from .core.select import IMPLEMENTATION
from .core.types import lazy as _lazy
from .order_id import OrderHasher, sign_order_id
from .salt import new_salt, new_salts

# typing stays off this path (docs/development.md, "Import time"); type checkers
# read the names below, the run time finds them through __getattr__.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .client import AsyncClient, Client
    from .core.enums import OrderType, Side
    from .models import WalletInfo
    from .signing import OrderSigner, SignedOrder

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    "AsyncClient": "clobkit.client",
    "Client": "clobkit.client",
    "OrderSigner": "clobkit.signing",
    "SignedOrder": "clobkit.signing",
    "WalletInfo": "clobkit.models",
    "OrderType": "clobkit.core.enums",
    "Side": "clobkit.core.enums",
}


__getattr__ = _lazy(globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
