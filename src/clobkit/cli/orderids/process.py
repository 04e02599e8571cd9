"""pyarrow for ``clobkit order-ids``, set up for a process that runs only that command.

pyarrow imports numpy whenever it is installed, but a file-to-file run never
converts a numpy array; numpy's import is about 0.1 s of the command's
start-up (a tenth of a million-order Parquet run). The command's own process
(``python -m clobkit order-ids``, the console script) blocks it before
anything is imported, and picks Arrow's memory pool; a process that imports
clobkit as a library never does either.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["block_numpy", "for_command", "import_pyarrow", "keep_freed_memory"]

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20  # bytes: glibc's largest on 64 bits; a block's buffers are below
_TRIM_THRESHOLD = 1 << 30  # bytes of free memory the heap keeps instead of handing back


def for_command() -> None:
    """Set up this process, which runs ``clobkit order-ids`` and exits, before pyarrow loads.

    numpy is blocked (``block_numpy``), Arrow's default memory pool is the
    C allocator unless ``ARROW_DEFAULT_MEMORY_POOL`` (Arrow's own setting)
    says otherwise, and that allocator keeps what it frees
    (``keep_freed_memory``). A short-lived process pays for every page it
    touches first, and on a VM more so after an idle moment (the host takes freed
    pages back). On the project's 2-core VM, with mimalloc, pyarrow's
    default, 1M orders took 0.62 to 0.76 s (Parquet) and 0.97 s (CSV) with
    0.3 to 0.7 s of system time; with the C allocator 0.54 to 0.59 s and
    0.81 s (medians of alternated runs, docs/scale.md).
    """
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    block_numpy()
    keep_freed_memory()


def keep_freed_memory() -> bool:
    """Have glibc's ``malloc`` keep the memory this process frees for its next requests:
    True where it was set (Linux with glibc, and no ``GLIBC_TUNABLES`` or ``MALLOC_*``
    setting of the user's).

    Every item of the pipeline (a CSV block's columns, a record batch, its output)
    gets new buffers of several MiB, and frees them when written. glibc serves
    those above its mmap threshold with fresh pages and gives the heap's freed
    top back to the system, so each item paid its pages' first touch again: on
    the project's 2-core VM, a CSV of 2,000,000 orders into a dataset took 130,000
    page faults and 4.2 s of CPU; with both thresholds raised (mallopt, glibc's
    public API), 41,000 and 3.6 s. Memory stays bounded by the pipeline's depth:
    what is kept is what the deepest moment used.
    """
    if not sys.platform.startswith("linux") or any(
        name == "GLIBC_TUNABLES" or name.startswith("MALLOC_") for name in os.environ
    ):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ValueError, OSError, AttributeError):  # another libc (musl): as it is
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )


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
