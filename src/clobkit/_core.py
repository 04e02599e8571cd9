"""Picks the compiled twin (``clobkit._core_c``) or the pure one (``clobkit._core_py``).

``CLOBKIT_NO_EXTENSIONS=1`` forces the pure twin; otherwise the compiled twin
is used and, only when it is missing, the pure one. ``IMPLEMENTATION`` says
which is live: ``"c"`` or ``"python"``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing stays off ``import clobkit``'s path
if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "IMPLEMENTATION",
    "OrderHasher",
    "RequestSigner",
    "append_column",
    "from_units",
    "keccak256",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "new_salt",
    "new_salts",
    "sha256_hex",
    "signature",
    "to_units",
    "verify_signature",
]


def _load() -> tuple[ModuleType, str]:
    if os.environ.get("CLOBKIT_NO_EXTENSIONS", "") not in ("", "0"):
        from . import _core_py

        return _core_py, "python"
    try:
        from . import _core_c
    except ImportError:
        from . import _core_py

        return _core_py, "python"
    return _core_c, "c"


_impl, IMPLEMENTATION = _load()

if TYPE_CHECKING:
    from ._core_py import (
        OrderHasher,
        RequestSigner,
        append_column,
        from_units,
        keccak256,
        limit_amounts,
        market_amounts,
        market_price,
        new_salt,
        new_salts,
        sha256_hex,
        signature,
        to_units,
        verify_signature,
    )
else:
    OrderHasher = _impl.OrderHasher
    RequestSigner = _impl.RequestSigner
    append_column = _impl.append_column
    from_units = _impl.from_units
    keccak256 = _impl.keccak256
    limit_amounts = _impl.limit_amounts
    market_amounts = _impl.market_amounts
    market_price = _impl.market_price
    new_salt = _impl.new_salt
    new_salts = _impl.new_salts
    sha256_hex = _impl.sha256_hex
    signature = _impl.signature
    to_units = _impl.to_units
    verify_signature = _impl.verify_signature
