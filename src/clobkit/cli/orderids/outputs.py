"""The files ``clobkit order-ids``' writers write into: one file or a Parquet dataset.

The writers (``write_csv``, ``write_jsonl``, ``write_parquet``) make each
item's bytes or table; these put them on disk. Every output is created where
no planted link can redirect it and published whole (``_safe_files``'
principle; a reader never sees half of one):

- ``TextOut``: a CSV or JSONL file under a random name beside OUTPUT
  (``atomic_output``: created exclusively), its pieces written in the
  input's order at the offsets they get (``os.pwrite`` from a few writer
  threads, so the stage that hashes never waits for the disk), renamed to
  OUTPUT when complete;
- ``ParquetOut``: one Parquet file through ``atomic_output``, written in
  order by pyarrow's own file writer on the file it opened (Linux:
  ``/proc/self/fd/N`` names that open file, whatever its name becomes),
  else through the file's Python methods, buffered a MiB at a time;
- ``ParquetDataset``: a directory of Parquet files, ``part-000000.parquet``,
  ``part-000001.parquet``, ... numbered in the input's order (one per item
  the pipeline reads: a Parquet record batch, a CSV block, a batch of
  lines), each written whole by the thread that made it, several at once,
  into a new private directory beside OUTPUT (``mkdtemp``: created
  exclusively, mode 0700), with ``_manifest.json`` listing the files in
  order and their rows; the directory is renamed to OUTPUT when complete (a
  link at OUTPUT is replaced, never followed; a previous dataset of this
  command there is replaced; any other non-empty directory is refused).

A failure removes what was written; OUTPUT is then as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any

from ...core.safe_files import atomic_output
from .rows import InputError

__all__ = [
    "MANIFEST",
    "ParquetDataset",
    "ParquetOut",
    "TextOut",
    "check_dataset_target",
    "is_dataset",
    "part_name",
]

MANIFEST = "_manifest.json"  # "_": dataset readers (pyarrow, Dask, Spark) skip it
MANIFEST_FORMAT = "clobkit order-ids dataset"
_BUFFER = 1 << 20  # bytes pyarrow's writer gathers before each write through Python
PROC_FD = "/proc/self/fd"  # Linux: each open descriptor of this process, as a file to open


def is_dataset(path: str) -> bool:
    """Whether OUTPUT names a Parquet dataset: it ends in a separator or is a directory."""
    return path.endswith(("/", os.sep)) or Path(path).is_dir()


def part_name(index: int) -> str:
    """The file of item ``index`` (from 0): names sort in the input's order."""
    return f"part-{index:06d}.parquet"


class TextOut:
    """A text file written in order by several threads at the offsets each piece gets."""

    def __init__(self, path: str, writers: int) -> None:
        self._ctx: AbstractContextManager[IO[bytes]] = atomic_output(path, "wb")
        self._file = self._ctx.__enter__()
        self._fd = self._file.fileno()
        self._size = 0
        # a piece waits in memory until written: at most two per writer
        self._most = 2 * writers
        self._pending: deque[Future[None]] = deque()
        parallel = writers > 1 and hasattr(os, "pwrite")
        self._pool = ThreadPoolExecutor(writers, "clobkit-order-ids-write") if parallel else None

    def put(self, data: Any) -> None:
        """``data`` (bytes-like) next in the file; called in the input's order."""
        at, size = self._size, memoryview(data).nbytes
        self._size += size
        if not size:
            return
        if self._pool is None:
            _write_at(self._fd, data, at, positional=False)
            return
        self._pending.append(self._pool.submit(_write_at, self._fd, data, at))
        while len(self._pending) > self._most:
            self._pending.popleft().result()

    def close(self, ok: bool) -> None:
        """Every piece written and the file renamed to OUTPUT (``ok``), or removed."""
        error: BaseException | None = None
        try:
            while self._pending:
                self._pending.popleft().result()
        except BaseException as exc:
            error = exc
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
        failure = error if error is not None else (None if ok else _Abandoned())
        try:
            if failure is None:
                self._ctx.__exit__(None, None, None)
            else:
                self._ctx.__exit__(type(failure), failure, failure.__traceback__)
        finally:
            if error is not None:
                raise error


class _Abandoned(Exception):
    """Handed to the output's context when the run failed elsewhere: the file is removed."""


def _write_at(fd: int, data: Any, at: int, positional: bool = True) -> None:
    """All of ``data`` at offset ``at`` (``os.pwrite`` may write part of it), or, not
    ``positional``, at the file's position."""
    view = memoryview(data).cast("B")
    while view:
        done = os.pwrite(fd, view, at) if positional else os.write(fd, view)
        view, at = view[done:], at + done


class ParquetOut:
    """One Parquet file, written in order through ``atomic_output``."""

    def __init__(self, pq: Any, pa: Any, path: str, schema: Any, options: dict[str, Any]) -> None:
        self._ctx: AbstractContextManager[IO[bytes]] = atomic_output(path, "wb")
        file = self._ctx.__enter__()
        try:
            self._stream = _native_stream(pa, file)
            self._writer = pq.ParquetWriter(self._stream, schema, **options)
        except BaseException as exc:
            self._ctx.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def made(self, index: int, table: Any) -> Any:
        """What the writer needs of an item (a work thread): the table itself."""
        return table

    def put(self, table: Any) -> None:
        """The next item's rows, in the input's order (one row group a record batch)."""
        for batch in table.to_batches() if hasattr(table, "to_batches") else [table]:
            self._writer.write_batch(batch)

    def close(self, ok: bool) -> None:
        try:
            self._writer.close()
            self._stream.close()
        except BaseException as exc:
            self._ctx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        if ok:
            self._ctx.__exit__(None, None, None)
        else:
            gone = _Abandoned()
            self._ctx.__exit__(_Abandoned, gone, None)


def _native_stream(pa: Any, file: IO[bytes]) -> Any:
    """pyarrow's output stream onto ``file``, the file ``atomic_output`` opened.

    On Linux ``/proc/self/fd/N`` opens the file that descriptor N holds, never
    a path another user could swap: pyarrow's native writer then writes it
    without the GIL. Through the file's Python methods instead (each write
    taking the GIL and copying into Python), 2,000,000 orders' file took 9 to
    21% more CPU on the project's 2-core machine (buffered a MiB at a time); it is
    the way left where /proc is not.
    """
    proc = f"{PROC_FD}/{file.fileno()}"
    if os.path.exists(proc):
        return pa.OSFile(proc, "w")
    return pa.output_stream(file, buffer_size=_BUFFER)


class ParquetDataset:
    """A directory of Parquet files, each item's written whole by the thread that made it."""

    def __init__(self, pq: Any, path: str, schema: Any, options: dict[str, Any]) -> None:
        self._pq, self._schema, self._options = pq, schema, options
        self._final = Path(path.rstrip("/" + os.sep) or path)
        self._dir = Path(
            tempfile.mkdtemp(prefix=f".{self._final.name}.", suffix=".part", dir=self._final.parent)
        )
        self._rows: dict[int, int] = {}

    def made(self, index: int, table: Any) -> None:
        """Item ``index``'s rows written as its own file (a work thread)."""
        from ...core.local_files import LOCAL, local

        target = local(self._dir / part_name(index))
        with self._pq.ParquetWriter(target, self._schema, filesystem=LOCAL, **self._options) as w:
            for batch in table.to_batches() if hasattr(table, "to_batches") else [table]:
                w.write_batch(batch)
        self._rows[index] = table.num_rows

    def put(self, _: object) -> None:
        """Nothing left to write in order: each file was written by its item's thread."""

    def close(self, ok: bool) -> None:
        """The manifest written and the directory renamed to OUTPUT (``ok``), or removed."""
        try:
            if ok:
                if not self._rows:  # no item: one empty file keeps the schema
                    self.made(0, self._schema.empty_table())
                self._publish()
        finally:
            if self._dir.exists():
                shutil.rmtree(self._dir)

    def _publish(self) -> None:
        files = [{"path": part_name(i), "rows": self._rows[i]} for i in sorted(self._rows)]
        manifest = {
            "format": MANIFEST_FORMAT,
            "order": "the files in this list's order, each file's rows in order, are the "
            "input's rows in order (the names sort the same way)",
            "rows": sum(self._rows.values()),
            "files": files,
        }
        with atomic_output(self._dir / MANIFEST, "w") as f:
            f.write(json.dumps(manifest, indent=1) + "\n")
        os.chmod(self._dir, 0o777 & ~_umask())
        _replace_directory(self._dir, self._final)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_dataset_target(path: str, *keep: str) -> None:
    """OUTPUT can take a dataset: absent, a link, an empty directory or a previous dataset
    of this command that holds none of ``keep`` (INPUT, the wallet); ``InputError`` if not."""
    final = Path(path.rstrip("/" + os.sep) or path)
    if final.is_symlink() or not final.exists():
        return
    if not final.is_dir():
        raise InputError(f"OUTPUT {final} is a file: a Parquet dataset is a directory")
    inside = [k for k in keep if Path(k).resolve().is_relative_to(final.resolve())]
    if inside:
        raise InputError(f"OUTPUT {final} holds {inside[0]}: not replaced")
    if any(final.iterdir()) and not (final / MANIFEST).is_file():
        raise InputError(
            f"OUTPUT {final} is a directory that holds other files than a dataset of "
            "clobkit order-ids: not replaced"
        )


def _replace_directory(new: Path, final: Path) -> None:
    """``new`` renamed to ``final``: a link there removed (never followed), a previous
    dataset moved aside, removed once ``new`` is in place (put back if it could not be)."""
    check_dataset_target(str(final))  # again: it may have changed while we wrote
    if final.is_symlink():
        final.unlink()
    old: Path | None = None
    if final.is_dir() and any(final.iterdir()):
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old", dir=final.parent))
        os.replace(final, old)  # onto the empty directory just made
    try:
        os.replace(new, final)  # onto nothing, or an empty directory
    except BaseException:
        if old is not None:
            os.replace(old, final)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
