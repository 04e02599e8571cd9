"""Picks the compiled twin (``clobkit.core._core_c``) or the pure one (``clobkit.core.pure``).

``CLOBKIT_NO_EXTENSIONS=1`` forces the pure twin; otherwise the compiled twin
is used and, only when it is missing (a build without it), the pure one. A
compiled twin that is there but does not load (a broken build, a missing
symbol, an import inside it that fails) is an ``ImportError`` naming it,
never a silent fall back to a core about 50 times slower. ``IMPLEMENTATION``
says which is live: ``"c"`` or ``"python"``.
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


#: Whether ``CLOBKIT_NO_EXTENSIONS`` chose the pure twin (read here, and only here).
PURE_BY_CHOICE = os.environ.get("CLOBKIT_NO_EXTENSIONS", "") not in ("", "0")


def _load() -> tuple[ModuleType, str]:
    if PURE_BY_CHOICE:
        from . import pure as _core_py

        return _core_py, "python"
    try:
        # ``import`` of the dotted name: its ModuleNotFoundError names exactly the
        # module that is missing (``from . import`` words every failure alike)
        import clobkit.core._core_c as core_c
    except ModuleNotFoundError as exc:
        if exc.name != "clobkit.core._core_c":  # something it imports is missing: broken
            raise _broken(exc) from exc
        from . import pure as _core_py

        return _core_py, "python"
    except ImportError as exc:
        raise _broken(exc) from exc
    return core_c, "c"


def _broken(exc: ImportError) -> ImportError:
    return ImportError(
        f"clobkit's compiled core clobkit.core._core_c is installed but does not load ({exc}); "
        "reinstall clobkit, or set CLOBKIT_NO_EXTENSIONS=1 to use the pure-Python core",
        name="clobkit.core._core_c",
    )


_impl, IMPLEMENTATION = _load()

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
