"""Reader: Parquet for ``clobkit order-ids``, streamed by record batch as Arrow columns.

``ParquetOrders`` opens the file (its own Arrow schema is the output's, every
input column kept with its type), refuses a missing column or a column whose
type cannot hold its field once, by name, before any row, and reads it a row
group at a time (``batches``, the reader thread). Each record batch becomes an
``Orders``: the hash columns as ``read_arrow`` reads them, the record batch
itself (what a writer keeps), its rows numbered from 1. pyarrow is imported
only when a Parquet file is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...core.columns import Column
from ...core.parse import BATCH_KEYWORDS, COLUMN_KINDS
from ...errors import ValidationError
from .process import import_pyarrow
from .rows import InputError, Layout, Orders, check_columns, read_arrow

__all__ = ["ParquetOrders", "check_types"]


class ParquetOrders:
    """The reader of one Parquet file: ``schema`` its own Arrow schema, ``read`` the string
    columns read as dictionaries, ``dictionaries`` the columns to write with them,
    ``rows`` its row count."""

    def __init__(self, input_path: str, layout: Layout) -> None:
        pa, pq, ac = _pyarrow()
        self.pa, self.ac, self.layout = pa, ac, layout
        self.source, self.schema, self.read, self.dictionaries = _open(pa, pq, input_path)
        names = list(self.schema.names)
        check_columns(names, layout, input_path, "no column(s)", input_path)
        check_types(pa, ac, self.schema, layout, input_path)
        self.names = names
        self.rows = self.source.metadata.num_rows
        self.unreadable = (pa.ArrowException,)  # the file's fault: a usage error

    def batches(self, batch_size: int) -> Iterator[tuple[int, Any]]:
        """Each record batch of ``batch_size`` rows at most with its first row's number."""
        return _numbered(_batches(self.source, batch_size))

    def orders(self, first: int, batch: Any) -> Orders:
        """A record batch whose first row is row ``first``."""
        columns = _arguments(self.pa, self.ac, batch, self.layout)
        lines = range(first, first + batch.num_rows)  # no Python int per row unless wanted
        return Orders(lines, columns, table=batch, arrow=True)


def _pyarrow() -> tuple[Any, Any, Any]:
    """pyarrow, pyarrow.parquet and the compute kernels (not ``pyarrow.compute``: 50 ms)."""
    try:
        pa = import_pyarrow()  # without numpy in the command's process
        import pyarrow.parquet as pq

        from ...core import arrow_compute as ac
    except ImportError:
        from ...core.extras import install_hint

        raise InputError(f"Parquet needs pyarrow: {install_hint('data')}") from None
    return pa, pq, ac


def check_types(pa: Any, ac: Any, schema: Any, layout: Layout, where: str) -> None:
    """Refuse a column whose type cannot hold its field (a float64 ``maker_amount``, as
    pandas writes after a NaN; a bool ``side``) once, by name, before any row is read.

    The core's columnar rule decides (``_columns.Column``) on an empty column of
    the type as ``read_arrow`` reads it (a string ``neg_risk`` through ``FLAGS``;
    a column of nulls only of an optional field, its default), as
    ``clobkit.dask`` refuses it from a frame's dtypes.
    """
    for name in layout.fields:
        if name not in schema.names:
            continue
        col = read_arrow(pa, ac, pa.array([], schema.field(name).type), name)
        kw = BATCH_KEYWORDS[name]
        try:
            Column(col, name, COLUMN_KINDS[kw])
        except ValidationError as exc:
            raise InputError(f"{where}: {exc}") from None


def _arguments(pa: Any, ac: Any, batch: Any, layout: Layout) -> dict[str, Any]:
    """The hash columns (by field) of a record batch, as ``read_arrow`` reads them."""
    names = set(batch.schema.names)
    return {
        name: read_arrow(pa, ac, batch.column(name), name)
        for name in layout.fields
        if name in names
    }


def _batches(source: Any, batch_size: int) -> Iterator[Any]:
    """The record batches of a Parquet file, ``batch_size`` rows at most, a row group at a time.

    A whole row group is read at once (its columns decoded in parallel, several
    times faster than ``iter_batches``); memory is bounded by the row group.
    """
    for group in range(source.metadata.num_row_groups):
        yield from source.read_row_group(group, use_threads=True).to_batches(batch_size)


def _dictionary_columns(meta: Any) -> tuple[list[str], list[str]]:
    """(string columns to read as dictionaries, columns to write with dictionaries).

    Decided from the first row group's column chunks. A dictionary-encoded
    data page stores at most 4 bytes a row (a 32-bit index). A chunk whose
    plain size beyond its stored dictionary page is over 4 bytes a row either
    holds plain pages (the writer fell back from its dictionary at its size
    limit) or a dictionary large for its rows: its values are mostly
    distinct, and it is read and written plain, where a dictionary only costs
    a hash per value. Any other dictionary column repeats its values: a
    string one is read as an Arrow dictionary (its values decoded and parsed
    once each, not once per row), and each is written with a dictionary.
    """
    read: list[str] = []
    write: list[str] = []
    if meta.num_row_groups == 0:
        return read, write
    group = meta.row_group(0)
    for i in range(group.num_columns):
        chunk = group.column(i)
        if not chunk.has_dictionary_page or "." in chunk.path_in_schema:
            continue  # no dictionary, or a nested column: as pyarrow reads it
        page = chunk.data_page_offset - chunk.dictionary_page_offset  # stored size
        if chunk.total_uncompressed_size - page > 4 * max(chunk.num_values, 1):
            continue
        write.append(chunk.path_in_schema)
        if chunk.physical_type == "BYTE_ARRAY":
            read.append(chunk.path_in_schema)
    return read, write


def _open(pa: Any, pq: Any, input_path: str) -> tuple[Any, Any, list[str], list[str]]:
    """(the file, its own Arrow schema, string columns read as dictionaries, columns to
    write with dictionaries)."""
    from ...core.local_files import LOCAL, local

    try:
        source = pq.ParquetFile(local(input_path), filesystem=LOCAL)
        schema = source.schema_arrow  # the file's own types: the output keeps them
        read, dictionaries = _dictionary_columns(source.metadata)
        if read:
            source = pq.ParquetFile(local(input_path), read_dictionary=read, filesystem=LOCAL)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{input_path} is not a readable Parquet file ({exc})") from None
    return source, schema, read, dictionaries


def _numbered(batches: Iterator[Any]) -> Iterator[tuple[int, Any]]:
    """Each record batch with the row number of its first row (from 1)."""
    first = 1
    for batch in batches:
        yield first, batch
        first += batch.num_rows
