"""One format's rows written as another's: every conversion goes through an Arrow table.

``clobkit order-ids`` writes any input format as any output format. Rows of
the same format keep their own bytes (a CSV line plus its id, a JSON object
plus its key); across formats each hashed item becomes an Arrow table of the
output's columns, which is then written as Parquet, CSV or JSONL:

- from CSV, the header's columns, each cell's text as a string (an empty
  cell a null); from JSONL, the keys of the first object, each value a
  string (a JSON string as it is, any other value as its JSON text, an
  absent key or a null a null; a row with another key is refused, named);
  from Parquet, its own columns and types;
- ``order_id`` (and ``signature``) last, as strings (an input column of
  either name is replaced);
- to CSV: pyarrow's CSV writer (strings quoted, a null an empty cell,
  binary values as ``0x`` hex), under a header of the names; to JSONL: one
  object a row (binary values as ``0x`` hex, decimals as numbers).

Text formats carry text: a CSV read into Parquet keeps each value's text
(``007`` stays ``007``; a token id past 64 bits stays whole), typed as
the reader of the Parquet file chooses.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

import msgspec

from .rows import Batch, Parsed

__all__ = [
    "csv_header",
    "csv_rows",
    "jsonl_rows",
    "output_names",
    "parquet_options",
    "text_schema",
    "text_table",
]

#: Columns whose values never repeat: a dictionary only costs a hash per value.
DISTINCT = frozenset(("salt",))


def output_names(names: Sequence[str], added: Sequence[str]) -> list[str]:
    """The output's columns: the input's, less any ``added`` one, then ``added``."""
    return [name for name in names if name not in added] + list(added)


def text_schema(pa: Any, names: Sequence[str], added: Sequence[str]) -> Any:
    """The Arrow schema of a text input's output: every column a string."""
    return pa.schema([pa.field(name, pa.string()) for name in output_names(names, added)])


def parquet_options(
    names: Sequence[str], added: Sequence[str], dictionaries: Any = None, statistics: bool = True
) -> dict[str, Any]:
    """``ParquetWriter``'s settings: ``added`` (random hex) plain, uncompressed and without
    min/max statistics, which only cost time on them; the others snappy, with a dictionary
    (``dictionaries``, else every column but ``DISTINCT`` ones) and, with ``statistics``,
    min/max statistics.

    A text input's columns are strings: their min/max sort as text (``"9"`` after
    ``"10"``), no use to a numeric filter, and took about 45% of the writer's time
    (677 against 385 ns an order on this project's 2-core machine): not written.
    """
    kept = [name for name in names if name not in added]
    if dictionaries is None:
        dictionaries = [name for name in kept if name not in DISTINCT]
    return {
        "use_dictionary": [name for name in dictionaries if name not in added],
        "compression": {**dict.fromkeys(kept, "snappy"), **dict.fromkeys(added, "none")},
        "write_statistics": kept if statistics else False,
    }


def text_table(
    pa: Any,
    schema: Any,
    rows: list[list[str | None]],
    ids: list[str],
    sigs: list[str] | None,
) -> Any:
    """The output table of text rows (one value a column of ``schema`` but the added
    ones, each a str or None) and their ids (and signatures)."""
    width = len(schema) - 1 - (sigs is not None)
    columns: list[Sequence[str | None]] = [[row[i] for row in rows] for i in range(width)]
    columns.append(ids)
    if sigs is not None:
        columns.append(sigs)
    arrays = [pa.array(values, pa.string()) for values in columns]
    return pa.Table.from_arrays(arrays, schema=schema)


def kept_rows(batch: Batch, parsed: Parsed) -> tuple[list[int], list[str], list[str] | None]:
    """(indexes of the rows that got an id, their ids, their signatures)."""
    ids, sigs, _ = batch
    keep = [k for k, oid in enumerate(ids) if oid is not None]
    done = [oid for oid in ids if oid is not None]
    return keep, done, None if sigs is None else [sigs[k] for k in keep]


def csv_cells(fields: list[str], index: list[int]) -> list[str | None]:
    """A CSV row's cells in the output's order (``index``: the input's field of each),
    an empty cell a null."""
    return [fields[i] or None for i in index]


_ENCODE = msgspec.json.Encoder(decimal_format="number").encode


def json_text(value: Any) -> str | None:
    """A JSON value as a text cell: a string as it is, None as a null, any other value
    as its JSON text."""
    if value is None or type(value) is str:
        return value
    return _ENCODE(value).decode("utf-8")


def csv_header(names: Sequence[str]) -> bytes:
    """The header line of a CSV output (a name quoted only where it must be)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(names)
    return buffer.getvalue().encode("utf-8")


def _printable(pa: Any, ac: Any, table: Any) -> Any:
    """``table`` with its binary columns as ``0x`` hex strings and its dictionaries
    decoded (what a text format can hold)."""
    t = pa.types
    for i, field in enumerate(table.schema):
        col = table.column(i)
        if t.is_dictionary(field.type):
            col = ac.decode(col.combine_chunks())
        if t.is_binary(col.type) or t.is_fixed_size_binary(col.type) or t.is_large_binary(col.type):
            col = pa.array(
                [None if v is None else "0x" + v.hex() for v in col.to_pylist()], pa.string()
            )
        if col is not table.column(i):
            table = table.set_column(i, field.name, col)
    return table


def csv_rows(pa: Any, pacsv: Any, ac: Any, table: Any) -> Any:
    """A table's rows as CSV lines (no header), by pyarrow's CSV writer."""
    sink = pa.BufferOutputStream()
    if table.num_rows:
        pacsv.write_csv(_printable(pa, ac, table), sink, pacsv.WriteOptions(include_header=False))
    return sink.getvalue()


def jsonl_rows(pa: Any, ac: Any, table: Any) -> bytes:
    """A table's rows as JSON objects, one a line."""
    rows = _printable(pa, ac, table).to_pylist()
    return b"".join(_ENCODE(row) + b"\n" for row in rows)
