"""CSV and JSONL inputs of ``clobkit order-ids``, to any output format.

A CSV is read in byte blocks (the fast path, ``_orderids.csv_fast``, with
pyarrow and without signing) or in batches of lines (the exact reader, and
JSONL), each item parsed and hashed in the stage pool and made its output
piece there: the same format's rows with their ids (a CSV line plus its id,
a JSON object plus its key), or across formats an Arrow table of the
output's columns written as the output's format (``_orderids.convert``; a
dataset's file is written right there). The caller's thread reports each
item's refused rows in order and hands its piece to the output.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from itertools import chain, islice
from typing import IO, TYPE_CHECKING, Any, NamedTuple, TextIO

from .convert import (
    csv_cells,
    csv_header,
    csv_rows,
    json_text,
    jsonl_rows,
    kept_rows,
    output_names,
    parquet_options,
    text_schema,
    text_table,
)
from .csv_exact import CsvOrders, _split
from .csv_fast import available, engine, read_header, run_blocks
from .outputs import open_output
from .rows import Batch, InputError, Parsed, hash_batch
from .stages import item_threads, staged, workers_for

if TYPE_CHECKING:
    from .jsonl import JsonlOrders
    from .outputs import ParquetDataset, ParquetOut, TextOut
    from .run import Progress, _Job

__all__ = ["text_input"]


class Piece(NamedTuple):
    """An item's output: what the output takes (or, before ``_Made.piece``, the text or
    table of one batch), its rows, its refusals (line numbers, for a CSV block from its
    first line)."""

    payload: Any
    written: int
    rejects: list[tuple[int, str]]


class _Report:
    """The caller's side: each piece written, its refusals reported, the counts, the bar."""

    def __init__(self, out: TextOut | ParquetOut | ParquetDataset, bar: Progress, say: Any) -> None:
        self.out, self.bar, self.say = out, bar, say
        self.written = self.rejected = 0

    def piece(self, piece: Piece, at: int, first: int = 0) -> None:
        """``piece`` written; its refusals' line numbers moved by ``first``; ``at``: the
        input's bytes read by now."""
        self.out.put(piece.payload)
        if piece.rejects:
            self.bar.clear()
            for number, reason in sorted(piece.rejects):
                self.say(f"line {number + first}: {reason}")
        self.written += piece.written
        self.rejected += len(piece.rejects)
        self.bar.update(at, self.written)


def text_input(
    job: _Job, kind: str, raw: IO[bytes], out_kind: str, output_path: str, bar: Progress
) -> tuple[int, int]:
    """Every order of a CSV or JSONL file (``raw``) hashed into the output: (written,
    rejected). A file that is not UTF-8 raises UnicodeDecodeError."""
    source = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    fast = kind == "csv" and job.signer is None and available()
    if fast:
        header, rest = read_header(raw)  # the text wrapper is never read
        fmt: CsvOrders | JsonlOrders = CsvOrders(header.decode("utf-8-sig"), job.layout, False)
        lines: Iterator[str] = iter(())
    elif kind == "csv":
        fmt = CsvOrders(source.readline(), job.layout, job.signer is not None)
        lines = source
    else:
        from .jsonl import JsonlOrders  # msgspec: only for JSONL

        fmt = JsonlOrders(job.layout, job.signer is not None)
        lines = source
    made = _Made(job, kind, fmt, out_kind)
    if kind == "jsonl" and out_kind != "jsonl":
        first, lines = _first_object(source)
        made.jsonl_columns(first)
    out = open_output(out_kind, output_path, workers_for(job.threads), made.parquet)
    ok = False
    try:
        report = _Report(out, bar, job.say)
        if made.header is not None:
            out.put(made.header)
        if fast:
            _csv_blocks(job, raw, header, rest, made, report)
        else:
            _line_batches(job, kind, lines, made, report, raw)
        ok = True
    finally:
        out.close(ok)
    return report.written, report.rejected


def _first_object(source: TextIO) -> tuple[dict[str, Any] | None, Iterator[str]]:
    """The first JSON object of a JSONL input (its keys are a table's columns), and every
    line read, the ones read here first."""
    import msgspec

    read: list[str] = []
    for line in source:
        read.append(line)
        try:
            obj = msgspec.json.decode(line)
        except msgspec.DecodeError:
            continue  # a bad line: refused in its turn
        if isinstance(obj, dict):
            return obj, chain(read, source)
    return None, chain(read, source)


class _Made:
    """How an item becomes its piece, for one input and output format."""

    def __init__(self, job: _Job, kind: str, fmt: CsvOrders | JsonlOrders, out_kind: str) -> None:
        self.job, self.kind, self.fmt, self.out_kind = job, kind, fmt, out_kind
        self.same = kind == out_kind
        self.added = ["order_id"] + ([] if job.signer is None else ["signature"])
        self.names: list[str] = []
        self.index: list[int] = []  # CSV: each output column's field in the line
        self.header: bytes | None = None
        self.out: Any = None
        if isinstance(fmt, CsvOrders):
            if self.same:
                self.header = fmt.header.encode("utf-8") + b"\n"
            self.names = list(fmt.index)
            self.index = [fmt.index[name] for name in self.names if name not in self.added]
        self._arrow: tuple[Any, Any, Any, Any] | None = None
        if not self.same:
            self._columns()

    def jsonl_columns(self, first: dict[str, Any] | None) -> None:
        """A JSONL input's columns: the first object's keys."""
        self.names = [] if first is None else [str(key) for key in first]
        self._columns()

    def _columns(self) -> None:
        if self.out_kind == "csv":
            self.header = csv_header(output_names(self.names, self.added))

    def arrow(self) -> tuple[Any, Any, Any, Any]:
        """(pyarrow, its CSV module, the compute kernels, the output's schema)."""
        if self._arrow is None:
            try:
                from .process import import_pyarrow

                pa = import_pyarrow()
                import pyarrow.csv as pacsv

                from ...core import arrow_compute as ac
            except ImportError:
                from ...core.extras import install_hint

                raise InputError(
                    f"{self.out_kind.upper()} from {self.kind.upper()} needs pyarrow: "
                    + install_hint("data")
                ) from None
            self._arrow = pa, pacsv, ac, text_schema(pa, self.names, self.added)
        return self._arrow

    def parquet(self) -> tuple[Any, Any, Any, dict[str, Any]]:
        pa, _, _, schema = self.arrow()
        import pyarrow.parquet as pq

        return pa, pq, schema, parquet_options(schema.names, self.added, statistics=False)

    def render(self, index: int, table: Any, out: Any) -> Any:
        """A table of the output's columns as the output's piece (a work thread)."""
        pa, pacsv, ac, _ = self.arrow()
        if self.out_kind == "csv":
            return csv_rows(pa, pacsv, ac, table)
        if self.out_kind == "jsonl":
            return jsonl_rows(pa, ac, table)
        return out.made(index, table)

    def lines_output(self, parsed: Parsed, batch: Batch) -> Piece:
        """A hashed batch of lines as the same format's text (bytes) or, across formats,
        a table of the output's columns (rendered by ``render``)."""
        ids, sigs, late = batch
        if self.same:
            text = self.fmt.render(parsed, ids, sigs).encode("utf-8")
            return Piece(text, len(ids) - len(late), parsed.rejects + late)
        if self.kind == "jsonl":
            late = late + self._other_keys(parsed, ids)
        keep, done, kept_sigs = kept_rows((ids, sigs, late), parsed)
        if self.kind == "csv":
            rows = [csv_cells(_fields(parsed.texts[k]), self.index) for k in keep]
        else:
            assert parsed.objects is not None
            names = [name for name in self.names if name not in self.added]
            rows = [[json_text(parsed.objects[k].get(name)) for name in names] for k in keep]
        pa, _, _, schema = self.arrow()
        return Piece(
            text_table(pa, schema, rows, done, kept_sigs), len(done), parsed.rejects + late
        )

    def piece(self, index: int, made: list[Piece], out: Any) -> Piece:
        """An item's piece from its batches' outputs: their text joined, or their tables
        as one, rendered (one file of a dataset an item)."""
        written = sum(p.written for p in made)
        rejects = [r for p in made for r in p.rejects]
        if self.same:
            return Piece(b"".join(p.payload for p in made), written, rejects)
        pa, _, _, schema = self.arrow()
        tables = [p.payload for p in made] or [schema.empty_table()]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        return Piece(self.render(index, table, out), written, rejects)

    def _other_keys(self, parsed: Parsed, ids: list[str | None]) -> list[tuple[int, str]]:
        """Rows of a JSONL input with a key outside the output's columns: refused."""
        assert parsed.objects is not None
        allowed = set(self.names) | set(self.added)
        refused = []
        for k, obj in enumerate(parsed.objects):
            other = [key for key in obj if key not in allowed]
            if other and ids[k] is not None:
                ids[k] = None
                refused.append(
                    (
                        parsed.lines[k],
                        f"key {other[0]!r} is not a column of OUTPUT (its columns are the "
                        "keys of the first object)",
                    )
                )
        return refused


def _fields(text: str) -> list[str]:
    """The fields of a line the exact reader took (it parsed: a list)."""
    fields = _split(text)
    assert isinstance(fields, list)
    return fields


def _csv_blocks(
    job: _Job, raw: IO[bytes], header: bytes, rest: bytes, made: _Made, report: _Report
) -> None:
    """A CSV in byte blocks, natively (``_orderids.csv_fast``); a block in doubt through
    the exact reader, a batch at a time."""
    fmt = made.fmt
    assert isinstance(fmt, CsvOrders)
    per_item = item_threads(job.threads)
    fast = engine(job.hasher, job.layout, fmt, per_item)

    def block(index: int, data: bytes) -> tuple[Piece, int] | None:
        """A fast block's piece and its lines, or None: in doubt (a pool thread)."""
        if fast is None:
            return None
        if made.same:
            got = fast.block(data)
            return None if got is None else (Piece(got[0], got[1], []), got[1])
        columns = fast.columns(data, made.index)
        if columns is None:
            return None
        ids, rows, arrays = columns
        pa, _, _, schema = made.arrow()
        table = pa.Table.from_arrays([*arrays, ids], schema=schema)
        return Piece(made.render(index, table, report.out), rows, []), rows

    def exact(index: int, data: bytes) -> tuple[Piece, int]:
        """A block in doubt: its piece (lines numbered from 0) and its line count."""
        lines = io.StringIO(data.decode("utf-8"), newline="")
        done: list[Piece] = []
        count = 0
        while batch := list(islice(lines, job.batch_size)):
            parsed = fmt.parse(count, batch)
            count += len(batch)
            done.append(
                made.lines_output(parsed, hash_batch(job.hasher, parsed, per_item, job.layout))
            )
        return made.piece(index, done, report.out), count

    run_blocks(
        raw,
        rest,
        len(header) + len(rest),
        2,
        block=block,
        exact=exact,
        report=report.piece,
        workers=workers_for(job.threads),
    )


def _line_batches(
    job: _Job,
    kind: str,
    lines: Iterator[str] | TextIO,
    made: _Made,
    report: _Report,
    raw: IO[bytes],
) -> None:
    """A CSV (exact reader) or JSONL in batches of lines: read on a thread, parsed,
    hashed and made pieces in a pool, written here in order (``_orderids.stages``)."""
    fmt = made.fmt
    per_item = item_threads(job.threads)
    first_line = 2 if kind == "csv" else 1

    def batches() -> Iterator[tuple[int, int, list[str]]]:
        """(index, first line number, lines) of each batch (the reader thread)."""
        first = first_line
        index = 0
        while batch := list(islice(lines, job.batch_size)):
            yield index, first, batch
            first += len(batch)
            index += 1

    def work(entry: tuple[int, int, list[str]]) -> Piece:
        index, first, batch = entry
        parsed = fmt.parse(first, batch)
        hashed = hash_batch(job.hasher, parsed, per_item, job.layout, job.signer)
        return made.piece(index, [made.lines_output(parsed, hashed)], report.out)

    def finish(entry: tuple[int, int, list[str]], piece: Piece) -> None:
        report.piece(piece, raw.tell())  # the bar: the share of the input read by now

    staged(batches(), work, finish, workers_for(job.threads))
