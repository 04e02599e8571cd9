"""Reader: CSV for ``clobkit order-ids`` at speed, blocks of lines read natively.

Used when pyarrow is installed, no signing is asked for and the header has no
``order_id`` column. The file after the header is read in blocks of about
``BLOCK`` bytes cut after a line end (``blocks``, the reader thread). A block
is read on this path only if every line in it is plain: ``width`` fields,
each either unquoted (printable ASCII or tab, no quote, no comma) or quoted
RFC 4180 style (printable ASCII, tab and commas, doubled quotes), and each
line ends in LF or CRLF (no lone CR, no blank line). The core's
``csv_columns`` checks that and reads the order columns in one pass each
without the GIL (digits as uint64, sides and flags through their tables,
token ids and words as text; ``_csv_columns`` has the rule): on such lines
Python's csv reads the same fields, so ``FastCsv.block`` makes the block an
``Orders`` of Arrow columns, with the block's bytes (the CSV writer adds
``,`` and each id to each line) and the text of the columns another format's
writer asks for. A block that is not plain, or has a value the fast reading
does not take (not digits, past 2**64 - 1, an empty required cell), is in
doubt (None): the driver has the exact reader (``csv_exact``) read it, as
it does a block the hashing stage finds a row to refuse in, so the output
bytes and messages are the exact reader's for every input. Memory is bounded
by the block, not the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ...core.select import csv_columns
from .csv_exact import CsvOrders
from .process import import_pyarrow
from .rows import DEFAULTS, FLAGS, SIDE_KEYS, TEXT_DEFAULTS, Layout, Orders

__all__ = ["BLOCK", "ENABLED", "FastCsv", "available", "blocks", "engine", "read_header"]

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


def engine(layout: Layout, fmt: CsvOrders, texts: list[int]) -> FastCsv | None:
    """The fast reader of this file, or None: ``order_id`` is already a column (its rows
    are rewritten, not appended to). ``texts``: the fields whose text a writer wants."""
    return None if "order_id" in fmt.index else FastCsv(layout, fmt, texts)


class FastCsv:
    """The fast reader of one file: which fields to read, and how (``csv_columns``' specs)."""

    def __init__(self, layout: Layout, fmt: CsvOrders, texts: list[int]) -> None:
        import pyarrow as pa

        self.pa = pa
        self.width = fmt.width
        self.names: list[str] = []
        self.specs: list[tuple[Any, ...]] = []
        fields = layout.fields
        for name, i in fmt.index.items():
            if name in fields:
                self.names.append(name)
                self.specs.append(_spec(name, i))
        # a field the hashing reads as text already (a token id) is read once
        self.wanted = [(i, "text", None) for i in texts]
        self.all = self.specs + [spec for spec in self.wanted if spec not in self.specs]

    def block(self, data: bytes) -> Orders | None:
        """A block of whole lines as Arrow columns (the text of each field of ``texts`` as
        a string column, an empty cell a null), or None: in doubt.

        ``csv_columns`` reads the block without the GIL: a line of another shape, a
        value not of its field's kind (not digits, past 2**64 - 1, a side not in
        the table, an empty required cell) puts the block in doubt.
        """
        pa, specs = self.pa, self.all
        got = csv_columns(data, self.width, specs)
        if got is None:
            return None
        rows, cols = got
        arrays = [_array(pa, spec, rows, col) for spec, col in zip(specs, cols, strict=True)]
        columns = dict(zip(self.names, arrays, strict=False))
        cells = [arrays[specs.index(s)] for s in self.wanted]
        return Orders(range(rows), columns, cells=cells, block=data, arrow=True)


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
    return field, "text", TEXT_DEFAULTS.get(name)


def _array(pa: Any, spec: tuple[Any, ...], rows: int, col: Any) -> Any:
    """A ``csv_columns`` column as an Arrow array."""
    kind = spec[1]
    if kind == "text":
        valid, offsets, data = col
        buffers = [None if valid is None else pa.py_buffer(valid), pa.py_buffer(offsets)]
        return pa.Array.from_buffers(pa.string(), rows, [*buffers, pa.py_buffer(data)])
    typ = pa.uint64() if kind == "uint64" else pa.int8()
    return pa.Array.from_buffers(typ, rows, [None, pa.py_buffer(col)])


def blocks(raw: IO[bytes], rest: bytes, start: int) -> Iterator[tuple[bytes, int]]:
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
