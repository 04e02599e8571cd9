"""Writer: CSV for ``clobkit order-ids``, a header row, then one row per order kept.

From a CSV input each row is its input line unchanged plus ``,`` and its
``order_id`` (and ``signature``): joined as text for the exact reader's
lines, the core's ``append_column`` for a fast block (one pass of copies,
without the GIL); when the header already has one of those columns, the
rows are rewritten with the new values in place. From any other input, a
batch's table of the output's columns (``convert.Tables``) is written by
pyarrow's CSV writer (strings quoted, a null an empty cell, binary values as
``0x`` hex) under a header of its names (``write_text.TextWriter``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from ...core.arrow_ids import ID_CHARS
from ...core.select import append_column
from .convert import Tables, output_names, printable
from .rows import Hashed, Orders
from .write_text import TextWriter

__all__ = ["CsvWriter", "csv_header", "csv_rows"]


class CsvWriter(TextWriter):
    """A CSV output: ``header`` first, then each item's rows.

    ``header``: a CSV input's header line as written (its rows are kept as they
    are), or None: the rows are ``tables``' tables.
    """

    def __init__(
        self,
        path: str,
        writers: int,
        names: Sequence[str],
        added: Sequence[str],
        header: str | None,
        tables: Tables,
    ) -> None:
        super().__init__(path, writers, header is not None, tables)
        if header is None:
            self.header = csv_header(output_names(names, added))
        else:
            new = [name for name in added if name not in names]
            self.header = (",".join([header, *new]) + "\n").encode("utf-8")
        # where each added value goes: an existing column (replaced) or a new one
        self.targets = [list(names).index(n) if n in names else None for n in added]
        self.appended = all(i is None for i in self.targets)
        self.sink.put(self.header)

    def lines(self, orders: Orders, hashed: Hashed) -> Any:
        """The kept lines of a CSV input with their ids (and signatures): a fast block's
        through the core's ``append_column`` (every row has its id)."""
        ids, sigs, _ = hashed
        if orders.block is not None:
            return append_column(orders.block, ids.buffers()[2], ID_CHARS)
        return self._lines(orders, ids, sigs).encode("utf-8")

    def table_rows(self, pa: Any, ac: Any, table: Any) -> Any:
        return csv_rows(pa, ac, table)

    def _lines(self, orders: Orders, ids: list[str | None], sigs: list[str] | None) -> str:
        """The kept lines of a CSV input with their ids (and signatures)."""
        assert orders.texts is not None
        assert orders.cells is not None
        keep = (
            range(len(ids)) if None not in ids else [k for k, i in enumerate(ids) if i is not None]
        )
        if not keep:
            return ""
        texts = orders.texts if len(keep) == len(ids) else [orders.texts[k] for k in keep]
        added = [[ids[k] for k in keep]] if len(keep) < len(ids) else [ids]
        if sigs is not None:
            added.append([sigs[k] for k in keep])
        if self.appended:
            return "\n".join(map(",".join, zip(texts, *added, strict=True))) + "\n"
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        cells = orders.cells
        for k, *values in zip(keep, *added, strict=True):
            row = [column[k] for column in cells]
            for target, value in zip(self.targets, values, strict=True):
                if target is None:
                    row.append(value)
                else:
                    row[target] = value
            writer.writerow(row)
        return buffer.getvalue()


def csv_header(names: Sequence[str]) -> bytes:
    """The header line of a CSV output (a name quoted only where it must be)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(names)
    return buffer.getvalue().encode("utf-8")


def csv_rows(pa: Any, ac: Any, table: Any) -> Any:
    """A table's rows as CSV lines (no header), by pyarrow's CSV writer."""
    import pyarrow.csv as pacsv

    sink = pa.BufferOutputStream()
    if table.num_rows:
        pacsv.write_csv(printable(pa, ac, table), sink, pacsv.WriteOptions(include_header=False))
    return sink.getvalue()
