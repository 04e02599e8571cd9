"""``clobkit bench``: clobkit against the libraries people use today, in one process.

Loaded only by ``clobkit bench`` (or ``python -m clobkit.bench``), never by
``import clobkit``. The same work runs through clobkit and through every peer
that is installed (the ``bench`` extra brings them all: ``clobkit extras bench``; a
missing one is skipped with a line saying so), and every peer's result is
compared with clobkit's on the same inputs. One module per job:

- ``_timing``: settings, contenders, the floors F (five Keccak-f[1600]
  permutations through ``hashlib.sha3_256``) and S (one SHA-256 compression),
  interleaved best-of-N rounds;
- ``order_ids``: V1 order ids; ``orders_v2``: V2 order ids and signed V2
  orders (with the ECDSA floor E); ``amounts``: amounts; ``request_headers``:
  request signing; ``files``: ``clobkit order-ids`` on CSV, Parquet and JSONL;
- ``memory``: peak memory of a large ``order_ids`` batch (subprocesses);
- ``scaling``: ``clobkit bench --scaling``, threads against processes at 2 to
  16 workers for every batch kind, the command and Dask;
- ``machine``, ``run``, ``report``, ``cli``: the report and the command line.
"""

from __future__ import annotations

from ._timing import DEFAULT, QUICK, Settings
from .cli import main
from .memory import measure_memory, memory_child
from .report import format_markdown, format_text, write_png
from .run import run

__all__ = [
    "DEFAULT",
    "QUICK",
    "Settings",
    "format_markdown",
    "format_text",
    "main",
    "measure_memory",
    "memory_child",
    "run",
    "write_png",
]
