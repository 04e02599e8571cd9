"""CSV for ``clobkit order-ids`` at speed: blocks of lines through pyarrow, exact when in doubt.

Used when pyarrow is installed and no signing is asked for. The file after
the header is read in blocks of about ``BLOCK`` bytes cut after a line end.
A block takes the fast path only if every line in it is plain: ``width``
fields, each either unquoted (printable ASCII or tab, no quote, no comma) or
quoted RFC 4180 style (printable ASCII, tab and commas, doubled quotes), and
each line ends in LF or CRLF (no lone CR, no blank line). One RE2 match over
the block checks that. On such lines pyarrow's reader and Python's csv give
the same fields, so the block's columns go from pyarrow straight into
``OrderHasher.order_ids(out="arrow")`` and each output row is the input line
plus ``,`` and its id (the core's ``append_column``, one pass of copies). A
block that fails the check, has a value the core refuses or a row
``POST /orders/raw`` would refuse is
handed back whole to the exact reader (``_orderids.csv_exact``), which words the
errors with their line numbers: the output bytes and messages are the exact
reader's for every input. Memory is bounded by the block, not the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any, TypeVar

from .._arrow_ids import ID_CHARS
from .._arrow_values import scalar, values
from .._core import append_column
from .._parse import BATCH_KEYWORDS
from .._spec import SALT_MAX
from ..amounts import raw_amounts_flagged
from ..errors import OrderFieldError, ValidationError
from ..order_id import OrderHasher
from .csv_exact import CsvOrders
from .process import import_pyarrow
from .rows import DEFAULTS, FLAGS, SIDE_KEYS, V1, Layout, text_default
from .stages import staged

__all__ = ["BLOCK", "ENABLED", "FastCsv", "available", "engine", "read_header", "run_blocks"]

T = TypeVar("T")  # what the exact reader makes of a block in doubt

BLOCK = 8 << 20  # bytes read at a time; a block grows only to hold one longer line
ENABLED = True  # tests turn the fast path off to compare with the exact reader

# integer columns besides token ids: digit strings are read as uint64 before hashing
_NUMBERS = frozenset(
    ("maker_amount", "taker_amount", "salt", "fee_rate_bps", "nonce", "expiration", "timestamp")
)

# the line shapes on which pyarrow's reader and Python's csv (strict) agree
_PLAIN = r"[\t\x20\x21\x23-\x2b\x2d-\x7e]*"  # printable ASCII or tab, no quote or comma
_QUOTED = r'"(?:[\t\x20\x21\x23-\x7e]|"")*"'  # commas inside; a quote only doubled
_FIELD = f"(?:{_PLAIN}|{_QUOTED})"


def read_header(raw: IO[bytes]) -> tuple[bytes, bytes]:
    """The header line as ``TextIOWrapper(newline="").readline`` ends it, and the bytes after.

    The line ends at the first LF, CR or CRLF (universal newlines).
    """
    buf = b""
    while True:
        more = raw.read(1 << 16)
        buf += more
        ends = [i for i in (buf.find(b"\r"), buf.find(b"\n")) if i >= 0]
        if ends:
            end = min(ends)
            if buf[end] == 0x0D and end + 1 == len(buf) and more:
                continue  # a CR last: is it a CRLF?
            end += 2 if buf[end : end + 2] == b"\r\n" else 1
            return buf[:end], buf[end:]
        if not more:
            return buf, b""


def available() -> bool:
    """Whether the fast path can run here (pyarrow installed, not turned off)."""
    if not ENABLED:
        return False
    try:
        import_pyarrow()  # only whether it is there (without numpy in the command's process)
    except ImportError:
        return False
    return True


def engine(
    hasher: OrderHasher, layout: Layout, fmt: CsvOrders, threads: int | None
) -> FastCsv | None:
    """The fast path for this file, or None: ``order_id`` is already a column (rewritten rows)."""
    return FastCsv(hasher, layout, fmt, threads) if fmt.appended else None


class FastCsv:
    """The fast path of one file: its column map, reader options and line pattern."""

    def __init__(
        self, hasher: OrderHasher, layout: Layout, fmt: CsvOrders, threads: int | None
    ) -> None:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        from .. import _arrow_compute as ac

        self.pa, self.ac, self.pacsv = pa, ac, pacsv
        self.hasher, self.layout, self.threads = hasher, layout, threads
        width = fmt.width
        names = [f"f{i}" for i in range(width)]
        self.columns = {name: names[i] for name, i in fmt.index.items() if name in layout.fields}
        line = _FIELD + f"(?:,{_FIELD})" * (width - 1)
        self.pattern = f"^(?:{line}\\r?\\n)*(?:{line})?$"
        self.read = pacsv.ReadOptions(column_names=names, use_threads=True, block_size=1 << 20)
        self.parse = pacsv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False)
        self.convert = pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()),
            include_columns=list(self.columns.values()),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        )
        self.salt_max = scalar(pa, SALT_MAX, pa.uint64())
        self.empty = scalar(pa, "", pa.string())
        # an empty cell of an optional column is its default, as the exact reader reads it
        self.defaults = {name: scalar(pa, text_default(name), pa.string()) for name in DEFAULTS}

    def block(self, block: bytes) -> tuple[Any, int] | None:
        """The output rows of a block of whole lines (a buffer) and their count; None: in doubt."""
        try:
            return self._block(block)
        except self.pa.ArrowException:  # anything pyarrow will not do: the exact reader will
            return None

    def _block(self, block: bytes) -> tuple[Any, int] | None:
        pa, ac = self.pa, self.ac
        whole = pa.Array.from_buffers(
            pa.large_binary(),
            1,
            [None, values(pa, [0, len(block)], pa.int64()).buffers()[1], pa.py_buffer(block)],
        )
        if not ac.matches(whole, self.pattern)[0].as_py():
            return None
        table = self.pacsv.read_csv(pa.BufferReader(block), self.read, self.parse, self.convert)
        ids = self._ids(table)
        if ids is None:
            return None
        # each line (its CR dropped: the pattern allows one only before LF) + "," + its id;
        # append_column counts the lines: a row pyarrow read differently refuses the block
        try:
            rows = append_column(block, ids.buffers()[2], ID_CHARS)
        except OrderFieldError:
            return None
        return rows, table.num_rows

    def _ids(self, table: Any) -> Any:
        """The ids of a parsed block (an Arrow array), or None if any row needs the exact path."""
        pa, ac = self.pa, self.ac
        args: dict[str, Any] = {}
        for name, column in self.columns.items():
            col = table.column(column)
            if name in self.defaults:  # an empty cell of an optional column: its default
                empty = ac.equal(col, self.empty)
                if ac.any_(empty):  # (no copy of a column that has none)
                    col = ac.if_else(empty, self.defaults[name], col)
            if name == "side":
                col = self._mapped(col, SIDE_KEYS, pa.int8())
            elif name == "neg_risk":
                col = self._mapped(col, FLAGS, pa.bool_())
            elif name in _NUMBERS:
                col = self._digits(col)
            if col is None:
                return None
            args[BATCH_KEYWORDS[name]] = col
        # the rows POST /orders/raw refuses: any sends the block to the exact reader
        makers, takers, salts = (args[k] for k in ("maker_amounts", "taker_amounts", "salts"))
        if not all(pa.types.is_uint64(c.type) for c in (makers, takers, salts)):
            return None  # digits beyond 2**64 - 1, or not digits: the exact reader's case
        bad = raw_amounts_flagged(args["sides"], makers, takers)
        if self.layout is V1:  # POST /orders/raw's salt range
            bad = ac.or_(bad, ac.greater(salts, self.salt_max))
        if ac.any_(bad):
            return None
        try:
            return self.hasher.order_ids(**args, threads=self.threads, out="arrow")
        except ValidationError:
            return None  # the exact reader names the row and the value

    def _digits(self, col: Any) -> Any:
        """A column of decimal digit strings as uint64 (the value the core reads from them).

        Anything else (an empty cell, a sign, a value past 2**64 - 1) stays a
        string column, for the core to take or refuse as the exact reader's.
        """
        pa, ac = self.pa, self.ac
        if not ac.all_(ac.is_decimal(col)):
            return col
        try:
            return ac.cast(col, pa.uint64())
        except pa.ArrowException:  # past 2**64 - 1
            return col

    def _mapped(self, col: Any, table: dict[str, Any], typ: Any) -> Any:
        """A string column through ``table`` as the exact reader maps it; None: a value is not."""
        pa, ac = self.pa, self.ac
        distinct = ac.unique(col)
        mapped = [table.get(v.lower()) for v in distinct.to_pylist()]
        if None in mapped:
            return None
        return ac.take(values(pa, mapped, typ), ac.index_in(col, distinct))


def run_blocks(
    fast: FastCsv | None,
    raw: IO[bytes],
    rest: bytes,
    start: int,
    first: int,
    *,
    write: Callable[[Any], None],
    exact: Callable[[bytes], tuple[T, int]],
    emit: Callable[[int, T, int], None],
    done: Callable[[int, int], None],
    workers: int = 1,
) -> None:
    """Every line after the header: blocks read, hashed and written in overlapping stages.

    ``workers`` blocks are worked on at once (``_orderids.stages.staged``): a
    reader thread cuts them, pool threads run ``fast.block`` on them (the RE2 check,
    pyarrow's reader and kernels, the core's hashing and ``append_column``,
    all without the GIL), and this thread writes them in order. With ``fast``
    None every block goes to the exact reader.

    ``start`` is the offset of ``rest`` in the file (no ``tell``: a pipe has
    none). ``exact(block)`` runs a block in doubt through the exact reader, in
    the pool like a fast block, and returns (what it made, its line count);
    ``emit(first_line, made, bytes_read)`` writes that here, in order (it
    reports and counts its own rows); ``done(bytes_read, rows)`` counts the
    rows of a fast block.
    """
    line = first

    def work(entry: tuple[bytes, int]) -> tuple[bool, Any, int]:
        """(whether fast, the output or what ``exact`` made, the line count)."""
        made = fast.block(entry[0]) if fast is not None else None
        return (True, *made) if made is not None else (False, *exact(entry[0]))

    def finish(entry: tuple[bytes, int], result: tuple[bool, Any, int]) -> None:
        nonlocal line
        is_fast, made, lines = result
        if is_fast:
            write(made)
            done(entry[1], lines)
        else:
            emit(line, made, entry[1])
        line += lines

    staged(_blocks(raw, rest, start), work, finish, workers)


def _blocks(raw: IO[bytes], rest: bytes, start: int) -> Iterator[tuple[bytes, int]]:
    """Blocks of whole lines, up to ``BLOCK`` bytes (a longer line makes a block of its own),
    each with the count of bytes read so far (``start`` is the offset of ``rest``)."""
    read = start
    eof = False
    while True:
        if len(rest) < BLOCK and not eof:
            chunk = raw.read(BLOCK - len(rest))
            read += len(chunk)
            eof = not chunk
            rest += chunk
        if not rest:
            return
        cut = rest.rfind(b"\n", 0, BLOCK) + 1 or rest.find(b"\n") + 1
        if not cut:
            if not eof:
                chunk = raw.read(BLOCK)
                read += len(chunk)
                eof = not chunk
                rest += chunk
                continue
            cut = len(rest)
        block, rest = rest[:cut], rest[cut:]
        yield block, read - len(rest)
