"""Writer: Parquet for ``clobkit order-ids``, one file or a dataset of files.

Each item's hashed batches become one table of the output's columns
(``convert.Tables``: a Parquet input's own columns and types, a text input's
as strings, ``order_id`` and ``signature`` last). Into one file
(``outputs.ParquetOut``) each item is a row group, written in the input's
order while the next items are hashed; into a dataset
(``outputs.ParquetDataset``) each item is a file of its own, written whole by
the work thread that made it. The writer's settings are
``convert.parquet_options``: the ids plain and uncompressed, the other
columns snappy with a dictionary (a Parquet input's: where its first row
group has one), min/max statistics only on a Parquet input's own types.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .convert import Tables
from .outputs import ParquetDataset, ParquetOut
from .rows import Hashed, Orders, Piece

__all__ = ["ParquetWriter"]


class ParquetWriter:
    """A Parquet output (``dataset``: a directory of files): each item's piece
    (``piece``, a work thread) through ``put``, in the input's order.

    ``dictionaries``: the columns to write with a dictionary (a Parquet input's),
    None for a text input's (every column but the ids and the salts).
    """

    def __init__(
        self, path: str, dataset: bool, tables: Tables, dictionaries: Sequence[str] | None
    ) -> None:
        pa, schema, options = tables.parquet(dictionaries)  # pyarrow first: without numpy
        import pyarrow.parquet as pq

        self.tables = tables
        self.sink: ParquetOut | ParquetDataset
        if dataset:
            self.sink = ParquetDataset(pq, path, schema, options)
        else:
            self.sink = ParquetOut(pq, pa, path, schema, options)

    def piece(self, index: int, done: list[tuple[Orders, Hashed]]) -> Piece:
        """An item's rows as its table (one file, written by the writer in order) or
        written as its own file (a dataset): a work thread."""
        table, written, rejects = self.tables.joined(done)
        return Piece(self.sink.made(index, table), written, rejects)

    def put(self, payload: Any) -> None:
        """An item's piece, next in the file (a dataset's is written already)."""
        self.sink.put(payload)

    def close(self, ok: bool) -> None:
        """The output complete and renamed to OUTPUT (``ok``), or removed."""
        self.sink.close(ok)
