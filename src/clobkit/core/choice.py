"""Which twin of the core is live: the compiled one (``clobkit.core._core_c``) or the pure one.

``CLOBKIT_NO_EXTENSIONS=1`` forces the pure twin; otherwise the compiled twin
is used and, only when it is missing (a build without it), the pure one. A
compiled twin that is there but does not load (a broken build, a missing
symbol, an import inside it that fails) is an ``ImportError`` naming it,
never a silent fall back to a core about 50 times slower.

This module decides without importing the pure twin, so that what the twins
call back into (the signing of orders) can ask which core is live, and use the
live Keccak, without an import circle: ``select`` builds the twin's names on it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing stays off ``import clobkit``'s path
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

__all__ = ["COMPILED", "IMPLEMENTATION", "PURE_BY_CHOICE", "keccak256"]

#: Whether ``CLOBKIT_NO_EXTENSIONS`` chose the pure twin (read here, and only here).
PURE_BY_CHOICE = os.environ.get("CLOBKIT_NO_EXTENSIONS", "") not in ("", "0")


def _compiled() -> ModuleType | None:
    """The compiled twin when it is to be live; None for the pure twin."""
    if PURE_BY_CHOICE:
        return None
    try:
        # ``import`` of the dotted name: its ModuleNotFoundError names exactly the
        # module that is missing (``from . import`` words every failure alike)
        import clobkit.core._core_c as core_c
    except ModuleNotFoundError as exc:
        if exc.name != "clobkit.core._core_c":  # something it imports is missing: broken
            raise _broken(exc) from exc
        return None
    except ImportError as exc:
        raise _broken(exc) from exc
    return core_c


def _broken(exc: ImportError) -> ImportError:
    return ImportError(
        f"clobkit's compiled core clobkit.core._core_c is installed but does not load ({exc}); "
        "reinstall clobkit, or set CLOBKIT_NO_EXTENSIONS=1 to use the pure-Python core",
        name="clobkit.core._core_c",
    )


#: The compiled twin's module when it is live, else None.
COMPILED = _compiled()
#: Which twin is live: ``"c"`` or ``"python"``.
IMPLEMENTATION = "python" if COMPILED is None else "c"

#: Keccak-256 of the live twin (bytes in, 32 bytes out).
keccak256: Callable[[bytes], bytes]
if COMPILED is not None:
    keccak256 = COMPILED.keccak256
else:
    from .keccak_pure import keccak256
