"""Local paths for pyarrow's Parquet reader and writer, never read as URIs.

Given a path string, pyarrow takes one that does not exist yet for a URI: an
output directory named ``nba:live`` fails ("Unrecognized filesystem type"),
after the rows are gathered, and ``file:/elsewhere`` writes elsewhere. With a
filesystem named, a path is only a path. Import this module only where
pyarrow is wanted: it imports pyarrow.
"""

from __future__ import annotations

import os
from typing import Any

from pyarrow.fs import LocalFileSystem

__all__ = ["LOCAL", "local"]

#: The ``filesystem`` to give pyarrow with a path of :func:`local`.
LOCAL: Any = LocalFileSystem()


def local(path: str | os.PathLike[str]) -> str:
    """``path`` absolute, for pyarrow with ``filesystem=LOCAL``:
    ``pq.read_table(local(p), filesystem=LOCAL)``."""
    return os.path.abspath(os.fsdecode(path))
