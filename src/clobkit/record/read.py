"""Read a recording back (``clobkit.record``'s reading half): its files, its markets
and events, its rows, in bounded memory.

A recording is read like any file from elsewhere, not trusted like code. A file
must be a regular file (never a FIFO or a device), ``markets.json`` at most
``MARKETS_FILE_BYTES`` and no deeper than JSON's bound, each field of the type
it is read as. A Parquet file's own count of what it holds is checked before a
value is decoded: at most ``MAX_FILE_ROWS`` rows, ``MAX_FILE_LEVELS`` levels
and ``MAX_FILE_BYTES`` of decoded columns (a few KB of run-length encoding can
claim millions of levels); its rows are then decoded one row group at a time,
their texts kept as Arrow dictionaries (one copy of each distinct text, however
many levels repeat it), and no book may hold more than ``MAX_BOOK_LEVELS`` levels
a side. A file past a bound is refused naming it and the bound. The recorder
rotates its files before they reach the bounds.
"""

from __future__ import annotations

import contextlib
import functools
import os
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from ..core.jsondepth import MAX_JSON_DEPTH, json_too_deep
from ..core.safe_files import open_regular, read_regular
from ..errors import ValidationError
from .frames import (
    MAX_BOOK_LEVELS,
    MAX_FILE_BYTES,
    MAX_FILE_LEVELS,
    MAX_FILE_ROWS,
    arrow,
    schema,
)
from .markets import RecordedEvent, RecordedMarket

__all__ = [
    "MARKETS_FILE",
    "MARKETS_FILE_BYTES",
    "MAX_BOOK_LEVELS",
    "MAX_FILE_BYTES",
    "MAX_FILE_LEVELS",
    "MAX_FILE_ROWS",
    "BookRow",
    "file_batches",
    "iter_rows",
    "read_events",
    "read_markets",
    "recording_files",
    "refused",
    "row_slices",
]

MARKETS_FILE = "markets.json"
#: The largest ``markets.json`` read (bytes): thousands of markets and their events.
MARKETS_FILE_BYTES = 16 << 20
_LEVEL_SIDES = ("bids", "asks")
_TEXT_COLUMNS = ("kind", "market_id", "token_id")
_INT_COLUMNS = ("seq", "recv_ns", "service_ms")


class BookRow(NamedTuple):
    """One row read back: a book (or a gap marker, with empty fields)."""

    seq: int
    recv_ns: int
    service_ms: int | None
    kind: str
    market_id: str | None
    token_id: str | None
    bids: list[tuple[str | None, str | None]]  # (price, size) strings, best first
    asks: list[tuple[str | None, str | None]]  # (None where the file holds a null)


def refused(path: str | os.PathLike[str], problem: str) -> ValidationError:
    """The one-line refusal of a recording's file: its name, then ``problem`` (cut to one
    line; the whole path is the error's value)."""
    said = " ".join(problem.split())
    return ValidationError("recording", os.fsdecode(path), f"{Path(path).name} {said[:300]}")


def recording_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The complete files of a recording, in order (``.part`` files are incomplete)."""
    return sorted(Path(directory).glob("book-*.parquet"))


# -- markets.json ------------------------------------------------------------------------------


def read_markets(directory: str | os.PathLike[str]) -> list[RecordedMarket]:
    """The markets a recording holds (its ``markets.json``)."""
    return [RecordedMarket(**msgspec.structs.asdict(m)) for m in _document(directory).markets]


def read_events(directory: str | os.PathLike[str]) -> list[RecordedEvent]:
    """The events of a recording's markets (none in a recording of format 1)."""
    return [RecordedEvent(**msgspec.structs.asdict(e)) for e in _document(directory).events]


def _document(directory: str | os.PathLike[str]) -> Any:
    """``markets.json`` read as the state file's rows are: a regular file within its
    bound, no deeper than JSON's bound, every field of its type (msgspec names it)."""
    path = Path(directory) / MARKETS_FILE
    try:
        data = read_regular(path, MARKETS_FILE_BYTES)
    except OSError as exc:
        problem = f"no readable {MARKETS_FILE}: {exc.strerror or exc}"
        raise ValidationError("recording", str(directory), problem) from None
    if json_too_deep(data):
        problem = f"{MARKETS_FILE} nests deeper than {MAX_JSON_DEPTH}"
        raise ValidationError("recording", str(directory), problem)
    try:
        return msgspec.json.decode(data, type=_document_type())
    except msgspec.ValidationError as exc:  # "Expected `int`, got `str` - at `$.markets[0]...`"
        field = str(exc).rpartition("at `$.")[2].rstrip("`") or "recording"
        raise ValidationError(field, str(directory), f"{exc} ({MARKETS_FILE})") from None
    except msgspec.DecodeError as exc:
        problem = f"no readable {MARKETS_FILE}: {exc}"
        raise ValidationError("recording", str(directory), problem) from None


@functools.cache
def _document_type() -> Any:
    """What ``markets.json`` holds: the markets, the events (format 2), its format and
    start; each market and event a struct of the record's fields and types (an
    unknown key is refused, as in a state file's rows)."""
    market, event = _row_type(RecordedMarket), _row_type(RecordedEvent)
    return msgspec.defstruct(
        "MarketsFile",
        [
            ("markets", list[market]),  # type: ignore[valid-type]
            ("events", list[event], []),  # type: ignore[valid-type]
            ("format", int, 1),
            ("started_ns", typing.Optional[int], None),  # noqa: UP045 - a runtime type
        ],
        forbid_unknown_fields=True,
    )


def _row_type(record: Any) -> Any:
    """A msgspec struct of ``record``'s fields (a NamedTuple), their types and defaults."""
    hints = typing.get_type_hints(record)
    defaults = record._field_defaults
    spec = [(n, hints[n], defaults[n]) if n in defaults else (n, hints[n]) for n in record._fields]
    return msgspec.defstruct(f"{record.__name__}Row", spec, forbid_unknown_fields=True)


# -- the Parquet files -------------------------------------------------------------------------


@contextlib.contextmanager
def _opened(path: Path, stamp: tuple[int, ...] | None) -> Iterator[Any]:
    """``path`` as a ``pyarrow.parquet.ParquetFile`` whose counts are within the bounds,
    its texts read as dictionaries (module doc)."""
    pa = arrow()
    try:
        file = open_regular(path)
    except OSError as exc:
        raise refused(path, f"cannot be read: {exc.strerror or exc}") from None
    with file:
        st = os.fstat(file.fileno())
        if stamp is not None and stamp != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
            raise refused(path, "changed since the replay read it first")
        try:
            meta = pa.parquet.read_metadata(file)
        except (OSError, ValueError, pa.ArrowException) as exc:
            problem = f"is no recording file of clobkit record ({type(exc).__name__}: {exc})"
            raise refused(path, problem) from None
        _check_counts(path, meta)  # before anything is decoded
        texts = [
            c.path
            for c in (meta.schema.column(i) for i in range(meta.num_columns))
            if c.physical_type == "BYTE_ARRAY"
            and c.path.split(".")[0] in (*_TEXT_COLUMNS, *_LEVEL_SIDES)
        ]
        try:
            # no pre-buffering (on by default): it reads the Python file object from
            # Arrow's I/O pool, a thread that needs the GIL and, still alive at the
            # interpreter's exit, aborted it ("terminate called without an active
            # exception"); every read here is on the caller's thread (see below)
            parquet = pa.parquet.ParquetFile(
                file, metadata=meta, read_dictionary=texts, pre_buffer=False
            )
        except (OSError, KeyError, ValueError, TypeError, pa.ArrowException) as exc:
            problem = f"is no recording file of clobkit record ({type(exc).__name__}: {exc})"
            raise refused(path, problem) from None
        yield parquet


def _check_counts(path: Path, meta: Any) -> None:
    """The file's rows, levels and decoded bytes, as its metadata counts them, within
    the bounds (before anything is decoded). Only the columns read count: a level's
    count is the most values of any leaf of its side's column."""
    read = set(schema().names)
    rows = levels = decoded = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        values: dict[str, int] = {}
        for c in range(group.num_columns):
            column = group.column(c)
            top = column.path_in_schema.split(".")[0]
            if top in read:
                decoded += max(column.total_uncompressed_size, 0)
                values[top] = max(values.get(top, 0), column.num_values)
        levels += sum(n for top, n in values.items() if top in _LEVEL_SIDES)
        # a column of plain values holds one a row: more is no row group of ours
        rows += max(group.num_rows, *(n for t, n in values.items() if t not in _LEVEL_SIDES), 0)
    rows = max(rows, meta.num_rows)
    if rows > MAX_FILE_ROWS:
        raise refused(path, f"holds {rows:,} rows: a file holds at most {MAX_FILE_ROWS:,}")
    if levels > MAX_FILE_LEVELS:  # (an empty or null side counts one)
        problem = f"counts {levels:,} levels in its metadata: a file holds at most"
        raise refused(path, f"{problem} {MAX_FILE_LEVELS:,}")
    if decoded > MAX_FILE_BYTES:
        raise refused(
            path, f"decodes to {decoded:,} bytes: a file decodes to at most {MAX_FILE_BYTES:,}"
        )


def file_batches(
    path: Path, columns: tuple[str, ...] | None = None, *, stamp: tuple[int, ...] | None = None
) -> Iterator[Any]:
    """The rows of one file as ``pyarrow.RecordBatch`` es, a row group at a time, of the
    ``columns`` named (all the recorder's by default) in the recorder's types, its
    texts as dictionaries; a file that is none, or past a bound, is refused
    (``ValidationError`` naming it), and so is one that is no longer ``stamp``
    (device, inode, size and modification time when it was read before)."""
    pa = arrow()
    want = schema()
    names = list(columns or want.names)
    with _opened(path, stamp) as parquet:
        for g in range(parquet.metadata.num_row_groups):
            try:
                # one thread: Arrow's pool reading through a Python file object can
                # abort the process at its exit ("terminate called without an active
                # exception", seen here under load; apache/arrow #34314, #50482), and
                # a recording's row group is small
                table = parquet.read_row_group(g, columns=names, use_threads=False)
                conformed = [_conform(pa, table.column(n), want.field(n).type) for n in names]
                table = pa.table(conformed, names=names)
            except (OSError, KeyError, ValueError, TypeError, pa.ArrowException) as exc:
                problem = f"is no recording file of clobkit record ({type(exc).__name__}: {exc})"
                raise refused(path, problem) from None
            for batch in table.to_batches():
                _check_books(path, batch)
                yield batch


def _conform(pa: Any, column: Any, want: Any) -> Any:
    """A column in the recorder's type, its texts left as (or made) dictionaries: an
    integer of any width, a text as a dictionary of strings, a list of levels."""
    if pa.types.is_integer(want):
        return column.cast(want)  # safe: a value past int64, or a fraction, raises
    if pa.types.is_dictionary(want):
        return _text(pa, column)
    if column.type == _levels_type(pa):
        return column  # as the recorder writes it (and read_dictionary reads it)
    kind = column.type
    if pa.types.is_large_list(kind):
        column = column.cast(pa.list_(kind.value_type))
        kind = column.type
    if not pa.types.is_list(kind) or not pa.types.is_struct(kind.value_type):
        raise TypeError(f"{kind} is not a list of levels")
    names = [kind.value_type.field(i).name for i in range(kind.value_type.num_fields)]
    if names != ["price", "size"]:
        raise TypeError(f"a level holds {names}, not price and size")
    chunks = []
    for chunk in column.chunks:
        values = chunk.values  # the levels the offsets point into
        levels = pa.StructArray.from_arrays(
            [_text(pa, values.field(i)) for i in range(2)],
            names=names,
            mask=values.is_null() if values.null_count else None,
        )
        mask = chunk.is_null() if chunk.null_count else None
        chunks.append(pa.ListArray.from_arrays(chunk.offsets, levels, mask=mask))
    return pa.chunked_array(chunks, type=_levels_type(pa))


def _levels_type(pa: Any) -> Any:
    """A side's levels as read: price and size as dictionaries of strings."""
    text = pa.dictionary(pa.int32(), pa.string())
    return pa.list_(pa.struct([("price", text), ("size", text)]))


def _text(pa: Any, column: Any) -> Any:
    """Texts as a dictionary of strings (a number as its text)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        if pa.types.is_string(kind.value_type):
            return column
        column = column.cast(kind.value_type)  # then as any other type
        kind = column.type
    if not pa.types.is_string(kind):
        column = column.cast(pa.string())  # numbers, large strings, UTF-8 bytes
    return column.dictionary_encode()


def _check_books(path: Path, batch: Any) -> None:
    """No book of ``batch`` holds more than ``MAX_BOOK_LEVELS`` levels a side."""
    pa = arrow()
    import pyarrow.compute as pc

    for side in _LEVEL_SIDES:
        if side not in batch.schema.names:
            continue
        lengths = pc.list_value_length(batch.column(side))
        most = pc.max(lengths).as_py()
        if most is not None and most > MAX_BOOK_LEVELS:
            row = pc.index(lengths, pa.scalar(most, lengths.type)).as_py()
            raise refused(
                path,
                f"row {row}: {side} holds {most:,} levels: a book holds at most "
                f"{MAX_BOOK_LEVELS:,} a side",
            )


def iter_rows(directory: str | os.PathLike[str]) -> Iterator[BookRow]:
    """Every row of a recording, in the order written (``seq``), read a row group at a
    time; ``recv_ns`` orders them as they arrived (``clobkit.record``'s doc). A null
    level reads as ``(None, None)``."""
    for path in recording_files(directory):
        for batch in file_batches(path):
            for part in row_slices(batch):
                yield from _book_rows(part)


#: The most levels turned into Python objects at once (a slice of a row group).
SLICE_LEVELS = 65_536


def row_slices(batch: Any, levels: int = SLICE_LEVELS) -> Iterator[Any]:
    """``batch`` in consecutive slices of at most ``levels`` levels (or one row)."""
    import pyarrow.compute as pc

    counts = None
    for side in _LEVEL_SIDES:
        if side in batch.schema.names:
            n = pc.list_value_length(batch.column(side)).fill_null(0).to_numpy()
            counts = n if counts is None else counts + n
    if counts is None or int(counts.sum()) <= levels:
        yield batch
        return
    start = held = 0
    for i, n in enumerate(counts.tolist()):
        if held + n > levels and i > start:
            yield batch.slice(start, i - start)
            start, held = i, 0
        held += n
    yield batch.slice(start)


def _book_rows(batch: Any) -> Iterator[BookRow]:
    values = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    for i in range(batch.num_rows):
        yield BookRow(
            values["seq"][i],
            values["recv_ns"][i],
            values["service_ms"][i],
            values["kind"][i],
            values["market_id"][i],
            values["token_id"][i],
            _levels(values["bids"][i]),
            _levels(values["asks"][i]),
        )


def _levels(levels: list[Any] | None) -> list[tuple[str | None, str | None]]:
    """A book side's levels as (price, size) texts (none for a null side)."""
    none = {"price": None, "size": None}
    return [((lv or none)["price"], (lv or none)["size"]) for lv in levels or ()]
