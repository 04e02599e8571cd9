"""``csv_columns``: a block of plain CSV lines read into columns (both twins' rule).

``csv_columns(block, width, columns)`` is the fast CSV path of
``clobkit order-ids`` (``_orderids.csv_fast``): a block whose every line is
plain (``width`` fields, each unquoted, without quotes or commas, or quoted
with only doubled quotes inside; printable ASCII and tabs; LF or CRLF line
ends, the last line may end the block instead) is read into the columns
asked for, where Python's csv module (strict) reads the same fields. Anything
else returns ``None``: the caller reads that block the exact way.

``columns`` is a list of tuples, one per column wanted (a field may be asked
for twice, in two kinds):

- ``(field, "text", empty)``: the field's text (quotes taken off, doubled
  quotes single) as an Arrow string column's buffers ``(validity or None,
  int32 offsets, data)``; an empty field is a null (``empty`` None) or the
  text ``empty``;
- ``(field, "uint64", empty)``: decimal digits (leading zeros allowed) as
  uint64 values (8 bytes each, native order); an empty field is ``empty``,
  or with ``empty`` None refuses the block;
- ``(field, "map", empty, table)``: the field looked up, ASCII case ignored,
  in ``table`` (lowercase ASCII keys of at most 15 bytes, int8 values), as
  int8 values; an empty field as for ``uint64``.

The result is ``(rows, [column, ...])``, or ``None`` when a line is not
plain, a value is not of its kind, or a text column holds more than
2**31 - 1 bytes. ``parse_columns`` checks ``columns`` for both twins; the
pure twin's body is ``csv_columns`` here.
"""

from __future__ import annotations

import csv
import re
from array import array
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..errors import OrderFieldError
from .parse import as_bytes, parse_width

__all__ = ["KINDS", "csv_columns", "parse_columns"]

KINDS = ("text", "uint64", "map")  # the C side's CK_CSV_TEXT, CK_CSV_U64, CK_CSV_MAP
KEY_MAX = 15  # bytes of a map key (CK_CSV_KEY_MAX)
TEXT_MAX = (1 << 31) - 1  # bytes of a text column: int32 offsets

#: A parsed column: (field, kind index, empty value or None, table as ((key, value), ...)).
Spec = tuple[int, int, Any, tuple[tuple[bytes, int], ...]]


def parse_columns(columns: object, width: int) -> list[Spec]:
    """``columns`` checked: each ``(field, kind, empty[, table])`` as ``Spec``; an
    ``OrderFieldError`` naming the column and what is wrong otherwise."""
    if not isinstance(columns, list | tuple) or type(columns) not in (list, tuple):
        raise OrderFieldError("columns", columns, "must be a list of (field, kind, empty) tuples")
    return [_column(f"columns[{i}]", spec, width) for i, spec in enumerate(columns)]


def _column(name: str, spec: object, width: int) -> Spec:
    if type(spec) is not tuple or len(spec) not in (3, 4):
        raise OrderFieldError(name, spec, "must be a (field, kind, empty[, table]) tuple")
    field, kind, empty, *rest = spec
    if type(field) is not int or not 0 <= field < width:
        raise OrderFieldError(f"{name} field", field, f"must be an int in [0, {width - 1}]")
    if kind not in KINDS or type(kind) is not str:
        raise OrderFieldError(f"{name} kind", kind, f"must be one of {', '.join(KINDS)}")
    if (kind == "map") != bool(rest):
        raise OrderFieldError(name, spec, "takes a table if and only if its kind is map")
    if kind == "text":
        if empty is not None and not (type(empty) is str and empty.isascii()):
            raise OrderFieldError(f"{name} empty", empty, "must be None or an ASCII str")
        return field, 0, None if empty is None else empty.encode("ascii"), ()
    low, high = (0, (1 << 64) - 1) if kind == "uint64" else (-128, 127)
    if empty is not None and (type(empty) is not int or not low <= empty <= high):
        raise OrderFieldError(f"{name} empty", empty, f"must be None or an int in [{low}, {high}]")
    if kind == "uint64":
        return field, 1, empty, ()
    return field, 2, empty, _table(f"{name} table", rest[0])


def _table(name: str, table: object) -> tuple[tuple[bytes, int], ...]:
    if type(table) is not dict:
        raise OrderFieldError(name, table, "must be a dict of lowercase str keys to ints")
    pairs = []
    for key, value in table.items():
        if (
            type(key) is not str
            or not key.isascii()
            or not 0 < len(key) <= KEY_MAX
            or key != key.lower()
            or '"' in key  # (a cell's quote is doubled in the block: never a key)
        ):
            raise OrderFieldError(
                name,
                key,
                f"keys must be lowercase ASCII str of 1 to {KEY_MAX} characters, no quote",
            )
        if type(value) is not int or not -128 <= value <= 127:
            raise OrderFieldError(name, value, "values must be ints in [-128, 127]")
        pairs.append((key.encode("ascii"), value))
    return tuple(pairs)


_PLAIN = rb"[\t\x20\x21\x23-\x2b\x2d-\x7e]*"
_QUOTED = rb'"(?:[\t\x20\x21\x23-\x7e]|"")*"'
_FIELD = rb"(?:" + _PLAIN + rb"|" + _QUOTED + rb")"


@lru_cache(maxsize=8)
def _line(width: int) -> re.Pattern[bytes]:
    return re.compile(_FIELD + (rb"," + _FIELD) * (width - 1))


def csv_columns(block: object, width: object, columns: object) -> Any:
    """The pure twin: see the module's docstring."""
    data = as_bytes(block, "block")
    w = parse_width(width)
    specs = parse_columns(columns, w)
    if w > TEXT_MAX or len(data) > TEXT_MAX:
        return None  # (offsets of 31 bits; no line of so many fields): read the exact way
    pieces = data.split(b"\n")
    last = pieces.pop()  # after the last LF: a line without one, or nothing
    lines = [p[:-1] if p.endswith(b"\r") else p for p in pieces]
    if last:
        lines.append(last)
    line = _line(w)
    if not all(line.fullmatch(text) for text in lines):
        return None
    # (an empty line, a lone empty field when width is 1, is [] to csv.reader)
    rows = [next(csv.reader([text.decode("ascii")], strict=True)) or [""] for text in lines]
    out = []
    for field, kind, empty, table in specs:
        cells = [row[field] for row in rows]
        made = (_text, _uint64, _mapped)[kind](cells, empty, table)
        if made is None:
            return None
        out.append(made)
    return len(rows), out


def _text(cells: list[str], empty: bytes | None, _: object) -> Any:
    offsets = array("i", [0])
    data = bytearray()
    valid = bytearray(b"\xff" * ((len(cells) + 7) // 8))
    nulls = 0
    for r, cell in enumerate(cells):
        if cell:
            data += cell.encode("ascii")
        elif empty is not None:
            data += empty
        else:
            valid[r >> 3] &= ~(1 << (r & 7)) & 0xFF
            nulls += 1
        if len(data) > TEXT_MAX:
            return None
        offsets.append(len(data))
    return (bytes(valid) if nulls else None), offsets.tobytes(), bytes(data)


def _uint64(cells: list[str], empty: int | None, _: object) -> bytes | None:
    def read(cell: str) -> int | None:
        digits = cell.lstrip("0")  # (int() refuses past 4,300 digits, zeros too)
        if not (cell.isascii() and cell.isdigit()) or len(digits) > 20:
            return None
        value = int(digits or "0")
        return value if value < 1 << 64 else None

    return _values("Q", cells, empty, read)


def _mapped(cells: list[str], empty: int | None, table: tuple[tuple[bytes, int], ...]) -> Any:
    lookup = {key.decode("ascii"): value for key, value in table}
    # ASCII letters only are folded (the C side's rule); the block is ASCII
    return _values("b", cells, empty, lambda cell: lookup.get(cell.lower()))


def _values(
    code: str, cells: list[str], empty: int | None, read: Callable[[str], int | None]
) -> bytes | None:
    """Each cell read (an empty one is ``empty``) into an array of ``code``; None if a
    cell is refused (``read`` gives None, or it is empty and ``empty`` is None)."""
    values = array(code)
    for cell in cells:
        value = empty if not cell else read(cell)
        if value is None:
            return None
        values.append(value)
    return values.tobytes()
