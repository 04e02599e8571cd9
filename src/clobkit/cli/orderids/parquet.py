"""Parquet for ``clobkit order-ids``: streamed by record batch, hashed from the Arrow columns.

Every input column is kept with its Arrow type and ``order_id`` (and
``signature``) appended; a refused row is reported as ``row N: reason``.
pyarrow is imported only when a Parquet file is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...amounts import raw_amounts_flagged
from ...core.arrow_values import scalar
from ...core.arrow_values import values as arrow_values
from ...core.columns import Column
from ...core.parse import BATCH_KEYWORDS, COLUMN_KINDS
from ...core.spec import SALT_MAX
from ...errors import ValidationError
from ...order_id import OrderHasher
from ...signing import Signer
from .convert import csv_header, csv_rows, jsonl_rows, parquet_options
from .outputs import open_output
from .process import import_pyarrow
from .rows import (
    DEFAULTS,
    V1,
    Batch,
    InputError,
    Layout,
    Parsed,
    _refuse_unservable,
    check_columns,
    column_values,
    hash_batch,
    read_arrow,
    read_values,
)
from .stages import item_threads, staged, workers_for

if TYPE_CHECKING:
    from .run import Progress


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


def _arrow_batch(
    pa: Any,
    ac: Any,
    hasher: OrderHasher,
    batch: Any,
    first: int,
    layout: Layout,
    threads: int | None,
    signer: Signer | None,
) -> Batch:
    """Ids, signatures and refusals of one Parquet record batch.

    The ids are one Arrow string array when no row is refused, else a list
    with None for each refused row.
    """
    args = _arguments(pa, ac, batch, layout)
    lines = range(first, first + batch.num_rows)  # no Python int per row unless one is wanted
    try:
        if signer is None:
            # an Arrow string array, no Python object per id: a list only if a row is refused
            found: Any = hasher.order_ids(**args, threads=threads, out="arrow")
            sigs = None
        else:
            signed = hasher.sign_many(signer, **args, threads=threads)
            found = [s.order_id for s in signed]
            sigs = [s.signature for s in signed]
    except ValidationError:
        return _row_by_row(hasher, batch, lines, layout, threads, signer)
    return _service_rules(pa, ac, batch, args["sides"], layout, lines, found, sigs)


def _arguments(pa: Any, ac: Any, batch: Any, layout: Layout) -> dict[str, Any]:
    """``order_ids``' keyword arguments: the batch's columns as ``read_arrow`` reads them."""
    names = set(batch.schema.names)
    return {
        BATCH_KEYWORDS[name]: read_arrow(pa, ac, batch.column(name), name)
        for name in layout.fields
        if name in names
    }


def _row_by_row(
    hasher: OrderHasher,
    batch: Any,
    lines: range,
    layout: Layout,
    threads: int | None,
    signer: Signer | None,
) -> Batch:
    """A batch the core refused as a whole, through Python values: it names each bad row."""
    names = set(batch.schema.names)
    columns: dict[str, object] = {}
    for name in layout.fields:
        if name in names:
            col = batch.column(name)
            # the values the core's columnar path reads (decimals as ints...), as read_arrow
            values = column_values(col, name)
            columns[name] = read_values(name, col.to_pylist() if values is None else values)
        else:
            columns[name] = DEFAULTS[name]
    return hash_batch(hasher, Parsed(lines, [], columns), threads, layout, signer)


def _service_rules(
    pa: Any,
    ac: Any,
    batch: Any,
    sides: Any,
    layout: Layout,
    lines: range,
    found: Any,
    sigs: list[str] | None,
) -> Batch:
    """The service's own rules on the rows the core took (column-wise first when it can):
    ``found`` (an Arrow array or a list of ids) as it is when none is refused, else a list
    with None for each refused row."""
    rows = _flagged(pa, ac, batch, sides, layout)
    idx = range(batch.num_rows) if rows is None else rows
    if not idx:
        return found, sigs, []
    ids = found if isinstance(found, list) else found.to_pylist()
    take = arrow_values(pa, idx, pa.int64())
    cols: dict[str, list[Any]] = {
        name: ac.take(batch.column(name), take).to_pylist()
        for name in ("salt", "maker_amount", "taker_amount")
    }
    taken = ac.take(sides, take)
    taken = ac.decode(taken) if pa.types.is_dictionary(taken.type) else taken
    cols["side"] = taken.to_pylist()
    final: dict[str, object] = {
        k: [int(v) if isinstance(v, Decimal) else v for v in vs] for k, vs in cols.items()
    }
    sub = [ids[i] for i in idx]
    sub, _, rejects = _refuse_unservable(
        Parsed([lines[i] for i in idx], [], final), sub, None, [], layout
    )
    for k, i in enumerate(idx):
        ids[i] = sub[k]
    return ids, sigs, rejects


def _flagged(pa: Any, ac: Any, batch: Any, sides: Any, layout: Layout) -> list[int] | None:
    """Rows the service's rules may refuse, found column-wise (None: integer columns only)."""
    t = pa.types
    makers, takers, salts = (batch.column(n) for n in ("maker_amount", "taker_amount", "salt"))
    if not (t.is_integer(makers.type) and t.is_integer(takers.type) and t.is_integer(salts.type)):
        return None
    if t.is_dictionary(sides.type):
        sides = ac.decode(sides)
    if not t.is_integer(sides.type):
        return None
    bad = raw_amounts_flagged(ac.cast(sides, pa.int8()), makers, takers)
    if layout is V1:  # POST /orders/raw's salt range
        u64 = pa.uint64()  # the core took the salts: none is negative
        bad = ac.or_(bad, ac.greater(ac.cast(salts, u64), scalar(pa, SALT_MAX, u64)))
    flagged: list[int] = ac.nonzero(bad).to_pylist()
    return flagged


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


def run_parquet(
    hasher: OrderHasher,
    layout: Layout,
    signer: Signer | None,
    input_path: str,
    out_kind: str,
    output_path: str,
    *,
    threads: int | None,
    batch_size: int,
    bar: Progress,
    say: Callable[[str], None],
) -> tuple[int, int]:
    """Parquet in, any output, in stages: (written, rejected).

    Row groups are read (their columns decoded in pyarrow's threads) while
    earlier record batches are hashed and made the output's pieces in the
    stage pool (a dataset's files written there, several at once) and the
    pieces before them are written by this thread, in the file's order
    (``_orderids.stages.staged``).
    """
    pa, pq, ac = _pyarrow()
    source, schema, read, dictionaries = _open(pa, pq, input_path)
    check_columns(list(schema.names), layout, input_path, "no column(s)", input_path)
    check_types(pa, ac, schema, layout, input_path)
    added = ["order_id"] + ([] if signer is None else ["signature"])
    schema = _output_schema(pa, schema, added)
    options = parquet_options(schema.names, added, dictionaries)
    out = open_output(
        out_kind, output_path, workers_for(threads), lambda: (pa, pq, schema, options)
    )
    run = _Run(pa, ac, hasher, layout, signer, item_threads(threads), bar, say)
    run.output(added, read, schema, _renderer(pa, ac, out_kind, out), out)
    run.total = max(source.metadata.num_rows, 1)
    ok = False
    try:
        if out_kind == "csv":
            out.put(csv_header(schema.names))
        items = ((i, *entry) for i, entry in enumerate(_numbered(_batches(source, batch_size))))
        staged(items, run.work, run.finish, workers_for(threads))
        ok = True
    except pa.ArrowException as exc:
        raise InputError(f"{input_path}: {exc}") from None
    finally:
        out.close(ok)
    return run.written, run.rejected


class _Run:
    """One Parquet input's stages: an item's work (a pool thread), its finish (this one)."""

    def __init__(
        self,
        pa: Any,
        ac: Any,
        hasher: OrderHasher,
        layout: Layout,
        signer: Signer | None,
        per_item: int,
        bar: Progress,
        say: Callable[[str], None],
    ) -> None:
        self.pa, self.ac, self.hasher, self.layout, self.signer = pa, ac, hasher, layout, signer
        self.per_item, self.bar, self.say = per_item, bar, say
        self.written = self.rejected = self.done = 0
        self.total = 1

    def output(self, added: list[str], read: list[str], schema: Any, render: Any, out: Any) -> None:
        """What the output needs: the added columns, the dictionary-read ones, its schema,
        how a batch becomes its piece and where the pieces go."""
        self.added, self.read, self.schema, self.render, self.out = added, read, schema, render, out

    def work(self, entry: tuple[int, int, Any]) -> tuple[Any, int, list[tuple[int, str]]]:
        """One record batch hashed and made the output's piece (in a pool thread)."""
        index, first, batch = entry
        pa, ac = self.pa, self.ac
        result = _arrow_batch(
            pa, ac, self.hasher, batch, first, self.layout, self.per_item, self.signer
        )
        made, kept, rejects = _output(pa, ac, batch, result, self.added, self.read, self.schema)
        return self.render(index, made), kept, rejects

    def finish(self, _: object, result: tuple[Any, int, list[tuple[int, str]]]) -> None:
        """Refusals reported and the piece written, in the file's order (this thread)."""
        piece, kept, rejects = result
        _report(rejects, self.bar, self.say)
        self.out.put(piece)  # Parquet: encoded and compressed while the next are hashed
        self.written += kept
        self.rejected += len(rejects)
        self.done += kept + len(rejects)
        self.bar.update(int(self.done / self.total * self.bar.total), self.written)


def _report(rejects: list[tuple[int, str]], bar: Progress, say: Callable[[str], None]) -> None:
    """Each refused row said as ``row N: reason``, the bar out of its way."""
    for number, reason in rejects:
        bar.clear()
        say(f"row {number}: {reason}")


def _renderer(pa: Any, ac: Any, out_kind: str, out: Any) -> Callable[[int, Any], Any]:
    """How an output record batch becomes the output's piece (in a pool thread)."""
    if out_kind == "csv":
        import pyarrow.csv as pacsv

        return lambda _, batch: csv_rows(pa, pacsv, ac, batch)
    if out_kind == "jsonl":
        return lambda _, batch: jsonl_rows(pa, ac, batch)
    made: Callable[[int, Any], Any] = out.made
    return made


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


def _output_schema(pa: Any, schema: Any, added: list[str]) -> Any:
    """The input's schema with the ``added`` string columns last (replacing any of them)."""
    for name in added:
        if name in schema.names:
            schema = schema.remove(schema.get_field_index(name))
    for name in added:
        schema = schema.append(pa.field(name, pa.string()))
    return schema


def _numbered(batches: Iterator[Any]) -> Iterator[tuple[int, Any]]:
    """Each record batch with the row number of its first row (from 1)."""
    first = 1
    for batch in batches:
        yield first, batch
        first += batch.num_rows


def _output(
    pa: Any,
    ac: Any,
    batch: Any,
    result: Batch,
    added: list[str],
    read: list[str],
    schema: Any,
) -> tuple[Any, int, list[tuple[int, str]]]:
    """(the output record batch, its row count, the refusals) of a hashed batch."""
    ids, sigs, rejects = result
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
    return batch, len(ids), rejects
