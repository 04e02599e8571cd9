"""pyarrow for ``clobkit order-ids``, without numpy when the process is only that command.

pyarrow imports numpy whenever it is installed, but a file-to-file run never
converts a numpy array; numpy's import is about 0.1 s of the command's
start-up (a tenth of a million-order Parquet run). The command's own process
(``python -m clobkit order-ids``, the console script) blocks it before
anything is imported; a process that imports clobkit as a library never does.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["block_numpy", "import_pyarrow"]


def block_numpy() -> None:
    """Make ``import numpy`` fail in this process, if neither numpy nor pyarrow is loaded yet.

    Only for a process that runs the order-ids command and then exits: a
    pyarrow loaded without numpy stays without it.
    """
    if "numpy" not in sys.modules and "pyarrow" not in sys.modules:
        sys.modules["numpy"] = None  # type: ignore[assignment]  # the import system's "not there"


def import_pyarrow() -> Any:
    """``pyarrow``, imported without numpy if blocked and this pyarrow can do without it.

    A pyarrow that needs numpy (older releases) gets it: the block is lifted
    and the import retried. ImportError if pyarrow is not installed.
    """
    try:
        import pyarrow
    except ImportError:
        if "numpy" not in sys.modules or sys.modules["numpy"] is not None:
            raise
        del sys.modules["numpy"]
        for name in [m for m in sys.modules if m.partition(".")[0] == "pyarrow"]:
            del sys.modules[name]
        import pyarrow
    return pyarrow
