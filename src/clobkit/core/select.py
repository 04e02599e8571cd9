"""The live twin's names: the compiled core (``clobkit.core._core_c``) or the pure one
(``clobkit.core.pure``), as ``choice`` decided. ``IMPLEMENTATION`` says which is
live: ``"c"`` or ``"python"``.
"""

from __future__ import annotations

from .choice import COMPILED, IMPLEMENTATION, PURE_BY_CHOICE

TYPE_CHECKING = False  # typing stays off ``import clobkit``'s path
if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "IMPLEMENTATION",
    "PURE_BY_CHOICE",
    "OrderHasher",
    "RequestSigner",
    "append_column",
    "csv_columns",
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


if COMPILED is not None:
    _impl: ModuleType = COMPILED
else:
    from . import pure as _impl

if TYPE_CHECKING:
    from .pure import (
        OrderHasher,
        RequestSigner,
        append_column,
        csv_columns,
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
    csv_columns = _impl.csv_columns
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
