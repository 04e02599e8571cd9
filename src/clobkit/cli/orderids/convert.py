"""The output table of ``clobkit order-ids``: every conversion between formats goes through it.

``clobkit order-ids`` writes any input format as any output format. Rows of
the same text format keep their own bytes (the CSV and JSONL writers); across
formats, and into Parquet, each hashed batch becomes an Arrow table of the
output's columns (``Tables``), which the writer of the output's format then
writes:

- from CSV, the header's columns, each cell's text as a string (an empty
  cell a null); from JSONL, the keys of the first object, each value a
  string (a JSON string as it is, any other value as its JSON text, an
  absent key or a null a null; a row with another key is refused, named);
  from Parquet, its own columns and types;
- ``order_id`` (and ``signature``) last, as strings (an input column of
  either name is replaced).

Text formats carry text: a CSV read into Parquet keeps each value's text
(``007`` stays ``007``; a token id past 64 bits stays whole), typed as
the reader of the Parquet file chooses. Used by the writers only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...core.arrow_values import values as arrow_values
from .rows import Hashed, InputError, Orders

__all__ = [
    "Tables",
    "encode_json",
    "json_text",
    "output_names",
    "parquet_options",
    "printable",
    "text_schema",
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


#: A JSON value's text (bytes), decimals as numbers.
encode_json = msgspec.json.Encoder(decimal_format="number").encode


def json_text(value: Any) -> str | None:
    """A JSON value as a text cell: a string as it is, None as a null, any other value
    as its JSON text."""
    if value is None or type(value) is str:
        return value
    return encode_json(value).decode("utf-8")


def printable(pa: Any, ac: Any, table: Any) -> Any:
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


class Tables:
    """How a hashed batch of one input becomes a table of the output's columns.

    ``names``: the input's columns (a CSV header's, a JSONL input's first object's
    keys, a Parquet file's); ``added``: ``order_id`` (and ``signature``). For a
    Parquet input, ``schema`` is its own Arrow schema and ``read`` its columns
    read as dictionaries (written back with their own types); a text input's
    columns are strings, and pyarrow is imported at the first table
    (``InputError`` when it is not installed).
    """

    def __init__(
        self,
        kind: str,
        out_kind: str,
        names: Sequence[str],
        added: Sequence[str],
        schema: Any = None,
        read: Sequence[str] = (),
    ) -> None:
        self.kind, self.out_kind = kind, out_kind
        self.names, self.added, self.read = list(names), list(added), list(read)
        self.kept = [name for name in self.names if name not in self.added]
        self._input_schema = schema
        self._arrow: tuple[Any, Any, Any] | None = None

    def arrow(self) -> tuple[Any, Any, Any]:
        """(pyarrow, the compute kernels, the output's schema)."""
        if self._arrow is None:
            try:
                from .process import import_pyarrow

                pa = import_pyarrow()
                from ...core import arrow_compute as ac
            except ImportError:
                from ...core.extras import install_hint

                raise InputError(
                    f"{self.out_kind.upper()} from {self.kind.upper()} needs pyarrow: "
                    + install_hint("data")
                ) from None
            if self._input_schema is None:
                schema = text_schema(pa, self.names, self.added)
            else:
                schema = _output_schema(pa, self._input_schema, self.added)
            self._arrow = pa, ac, schema
        return self._arrow

    def parquet(self, dictionaries: Sequence[str] | None) -> tuple[Any, Any, dict[str, Any]]:
        """(pyarrow, the output's schema, ``ParquetWriter``'s settings): ``dictionaries``
        the columns to write with a dictionary (a Parquet input's), None for a text
        input's (``parquet_options``' default; its strings get no min/max statistics)."""
        pa, _, schema = self.arrow()
        text = dictionaries is None
        return pa, schema, parquet_options(schema.names, self.added, dictionaries, not text)

    def joined(self, done: list[tuple[Orders, Hashed]]) -> tuple[Any, int, list[tuple[int, str]]]:
        """(the table of an item's batches, its rows, its refusals, the readers' and the
        hashing's and this step's): one batch's table as it is, several concatenated."""
        pa, _, schema = self.arrow()
        made = [self.table(orders, hashed) for orders, hashed in done]
        rejects = [r for _, _, refused in made for r in refused]
        tables = [table for table, _, _ in made] or [schema.empty_table()]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        return table, sum(n for _, n, _ in made), rejects

    def table(self, orders: Orders, hashed: Hashed) -> tuple[Any, int, list[tuple[int, str]]]:
        """(the table of one hashed batch, its rows, its refusals)."""
        pa, ac, schema = self.arrow()
        ids, sigs, late = hashed
        rejects = orders.rejects + late
        if orders.table is not None:  # Parquet: the record batch, its ids added
            batch = _record_batch(pa, ac, orders.table, hashed, self.added, self.read, schema)
            return batch, len(batch), rejects
        if orders.block is not None:  # a CSV block: its text columns and its ids
            assert orders.cells is not None
            table = pa.Table.from_arrays([*orders.cells, ids], schema=schema)
            return table, len(table), rejects
        if orders.objects is not None:  # JSONL: a row with a key of its own is refused
            rejects = rejects + self._other_keys(orders, ids)
        keep = [k for k, oid in enumerate(ids) if oid is not None]
        done = [oid for oid in ids if oid is not None]
        columns: list[Sequence[str | None]]
        if orders.objects is not None:
            objs = orders.objects
            columns = [[json_text(objs[k].get(name)) for k in keep] for name in self.kept]
        else:  # CSV: each kept column's cells, an empty cell a null
            assert orders.cells is not None
            index = [self.names.index(name) for name in self.kept]
            cells = orders.cells
            columns = [[cells[i][k] or None for k in keep] for i in index]
        columns.append(done)
        if sigs is not None:
            columns.append([sigs[k] for k in keep])
        arrays = [pa.array(values, pa.string()) for values in columns]
        return pa.Table.from_arrays(arrays, schema=schema), len(done), rejects

    def _other_keys(self, orders: Orders, ids: list[str | None]) -> list[tuple[int, str]]:
        """Rows of a JSONL input with a key outside the output's columns: refused."""
        assert orders.objects is not None
        allowed = set(self.names) | set(self.added)
        refused = []
        for k, obj in enumerate(orders.objects):
            other = [key for key in obj if key not in allowed]
            if other and ids[k] is not None:
                ids[k] = None
                refused.append(
                    (
                        orders.lines[k],
                        f"key {other[0]!r} is not a column of OUTPUT (its columns are the "
                        "keys of the first object)",
                    )
                )
        return refused


def _output_schema(pa: Any, schema: Any, added: list[str]) -> Any:
    """The input's schema with the ``added`` string columns last (replacing any of them)."""
    for name in added:
        if name in schema.names:
            schema = schema.remove(schema.get_field_index(name))
    for name in added:
        schema = schema.append(pa.field(name, pa.string()))
    return schema


def _record_batch(
    pa: Any, ac: Any, batch: Any, hashed: Hashed, added: list[str], read: list[str], schema: Any
) -> Any:
    """The output record batch of a hashed Parquet record batch."""
    ids, sigs, rejects = hashed
    if rejects:
        keep = arrow_values(pa, [oid is not None for oid in ids], pa.bool_())
        batch = ac.filter_(batch, keep)
        sigs = None if sigs is None else [s for s, k in zip(sigs, ids, strict=True) if k]
        ids = [oid for oid in ids if oid is not None]
    for name in added:
        if name in batch.schema.names:
            batch = batch.drop_columns([name])
    for name in read:  # read as dictionaries: written back with the file's types
        if name in added:
            continue  # replaced: dropped above
        i = batch.schema.get_field_index(name)
        batch = batch.set_column(i, name, ac.cast(batch.column(i), schema.field(name).type))
    if isinstance(ids, list):
        ids = arrow_values(pa, ids, pa.string())
    batch = batch.append_column("order_id", ids)
    if sigs is not None:
        batch = batch.append_column("signature", arrow_values(pa, sigs, pa.string()))
    return batch
