"""CSV for ``clobkit order-ids`` at speed: blocks of lines read natively, exact when in doubt.

Used when pyarrow is installed and no signing is asked for. The file after
the header is read in blocks of about ``BLOCK`` bytes cut after a line end.
A block takes the fast path only if every line in it is plain: ``width``
fields, each either unquoted (printable ASCII or tab, no quote, no comma) or
quoted RFC 4180 style (printable ASCII, tab and commas, doubled quotes), and
each line ends in LF or CRLF (no lone CR, no blank line). The core's
``csv_columns`` checks that and reads the order columns in one pass each
without the GIL (digits as uint64, sides and flags through their tables,
token ids and words as text; ``_csv_columns`` has the rule): on such lines
Python's csv reads the same fields, so the columns go straight into
``OrderHasher.order_ids(out="arrow")`` and each output row is the input
line plus ``,`` and its id (the core's ``append_column``, one pass of
copies). A block that is not plain, has a value the fast reading does not
take (not digits, past 2**64 - 1, an empty required cell), a value the core
refuses or a row ``POST /orders/raw`` would refuse is handed back whole to
the exact reader (``_orderids.csv_exact``), which words the errors with
their line numbers: the output bytes and messages are the exact reader's
for every input. Memory is bounded by the block, not the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any, TypeVar

from ...amounts import raw_amounts_flagged
from ...core.arrow_ids import ID_CHARS
from ...core.arrow_values import scalar
from ...core.parse import BATCH_KEYWORDS
from ...core.select import append_column, csv_columns
from ...core.spec import SALT_MAX
from ...errors import ValidationError
from ...order_id import OrderHasher
from .csv_exact import CsvOrders
from .process import import_pyarrow
from .rows import DEFAULTS, FLAGS, SIDE_KEYS, V1, Layout, text_default
from .stages import staged

__all__ = ["BLOCK", "ENABLED", "FastCsv", "available", "engine", "read_header", "run_blocks"]

T = TypeVar("T")  # what the exact reader makes of a block in doubt

BLOCK = 8 << 20  # bytes read at a time; a block grows only to hold one longer line
ENABLED = True  # tests turn the fast path off to compare with the exact reader

# integer columns besides token ids: digit strings are read as uint64
_NUMBERS = frozenset(
    ("maker_amount", "taker_amount", "salt", "fee_rate_bps", "nonce", "expiration", "timestamp")
)


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
    """The fast path of one file: which fields to read, and how (``csv_columns``' specs)."""

    def __init__(
        self, hasher: OrderHasher, layout: Layout, fmt: CsvOrders, threads: int | None
    ) -> None:
        import pyarrow as pa

        from ...core import arrow_compute as ac

        self.pa, self.ac = pa, ac
        self.hasher, self.layout, self.threads = hasher, layout, threads
        self.width = fmt.width
        self.names: list[str] = []
        self.specs: list[tuple[Any, ...]] = []
        for name, i in fmt.index.items():
            if name in layout.fields:
                self.names.append(name)
                self.specs.append(_spec(name, i))
        self.salt_max = scalar(pa, SALT_MAX, pa.uint64())

    def block(self, block: bytes) -> tuple[Any, int] | None:
        """The output rows of a block of whole lines (a buffer) and their count; None: in doubt."""
        got = self.columns(block, [])
        if got is None:
            return None
        ids, rows, _ = got
        # each line (its CR dropped: the shape allows one only before LF) + "," + its id
        return append_column(block, ids.buffers()[2], ID_CHARS), rows

    def columns(self, block: bytes, texts: list[int]) -> tuple[Any, int, list[Any]] | None:
        """(the ids of a block as an Arrow array, its rows, the text of each field of
        ``texts`` as an Arrow string column, an empty cell a null); None: in doubt.

        ``csv_columns`` reads the block without the GIL: a line of another shape, a
        value not of its field's kind (not digits, past 2**64 - 1, a side not in
        the table, an empty required cell) sends the block to the exact reader.
        """
        pa = self.pa
        # a field the hashing reads as text already (a token id) is read once
        wanted = [(i, "text", None) for i in texts]
        specs = self.specs + [spec for spec in wanted if spec not in self.specs]
        got = csv_columns(block, self.width, specs)
        if got is None:
            return None
        rows, cols = got
        arrays = [_array(pa, spec, rows, col) for spec, col in zip(specs, cols, strict=True)]
        ids = self._ids(dict(zip(self.names, arrays, strict=False)))
        return None if ids is None else (ids, rows, [arrays[specs.index(s)] for s in wanted])

    def _ids(self, columns: dict[str, Any]) -> Any:
        """The ids of a block's columns (an Arrow array), or None if any row needs the
        exact path (a value the core refuses, a row POST /orders/raw refuses)."""
        ac = self.ac
        args = {BATCH_KEYWORDS[name]: col for name, col in columns.items()}
        bad = raw_amounts_flagged(args["sides"], args["maker_amounts"], args["taker_amounts"])
        if self.layout is V1:  # POST /orders/raw's salt range
            bad = ac.or_(bad, ac.greater(args["salts"], self.salt_max))
        if ac.any_(bad):
            return None
        try:
            return self.hasher.order_ids(**args, threads=self.threads, out="arrow")
        except ValidationError:
            return None  # the exact reader names the row and the value


def _spec(name: str, field: int) -> tuple[Any, ...]:
    """How ``csv_columns`` reads field ``field`` for order column ``name``: as the exact
    reader reads its text (an empty cell of an optional column its default)."""
    default = DEFAULTS.get(name)
    if name == "side":
        return field, "map", None, SIDE_KEYS
    if name == "neg_risk":
        return field, "map", int(bool(default)), {k: int(v) for k, v in FLAGS.items()}
    if name in _NUMBERS:  # an int the core reads as the digits say
        return field, "uint64", None if name not in DEFAULTS else int(default)  # type: ignore[call-overload]
    # token ids (digits, maybe past 64 bits) and bytes32 words: text for the core
    return field, "text", text_default(name) if name in DEFAULTS else None


def _array(pa: Any, spec: tuple[Any, ...], rows: int, col: Any) -> Any:
    """A ``csv_columns`` column as an Arrow array."""
    kind = spec[1]
    if kind == "text":
        valid, offsets, data = col
        buffers = [None if valid is None else pa.py_buffer(valid), pa.py_buffer(offsets)]
        return pa.Array.from_buffers(pa.string(), rows, [*buffers, pa.py_buffer(data)])
    typ = pa.uint64() if kind == "uint64" else pa.int8()
    return pa.Array.from_buffers(typ, rows, [None, pa.py_buffer(col)])


def run_blocks(
    raw: IO[bytes],
    rest: bytes,
    start: int,
    first: int,
    *,
    block: Callable[[int, bytes], tuple[T, int] | None],
    exact: Callable[[int, bytes], tuple[T, int]],
    report: Callable[[T, int, int], None],
    workers: int = 1,
) -> None:
    """Every line after the header: blocks read, hashed and written in overlapping stages.

    ``workers`` blocks are worked on at once (``_orderids.stages.staged``): a
    reader thread cuts them, pool threads make each block's piece, and this
    thread reports them in order. ``block(index, data)`` makes (the piece, its
    line count) of a block on the fast path (``FastCsv``: ``csv_columns``, the
    core's hashing, the output's rows, all without the GIL) or returns None:
    in doubt.
    ``exact(index, data)`` then makes it through the exact reader, in the pool
    like a fast block, and returns (the piece, its line count). ``report(piece,
    bytes_read, first_line)`` writes a piece here, in order: ``first_line`` is
    the number of the block's first line (an exact piece's line numbers count
    from 0 in its block). ``start`` is the offset of ``rest`` in the file (no
    ``tell``: a pipe has none).
    """
    line = first

    def work(entry: tuple[int, bytes, int]) -> tuple[T, int]:
        """(the block's piece, its line count)."""
        index, data, _ = entry
        made = block(index, data)
        return exact(index, data) if made is None else made

    def finish(entry: tuple[int, bytes, int], result: tuple[T, int]) -> None:
        nonlocal line
        piece, lines = result
        report(piece, entry[2], line)
        line += lines

    numbered = ((i, data, at) for i, (data, at) in enumerate(_blocks(raw, rest, start)))
    staged(numbered, work, finish, workers)


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
