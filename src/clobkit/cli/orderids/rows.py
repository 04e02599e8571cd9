"""What every stage of ``clobkit order-ids`` speaks: column layouts, value reading, the batch.

The stages hand on two types, defined here: ``Orders``, one batch of orders
as a reader made it (the hash columns, each row's number and whatever the
writers need of the input's rows), and ``Piece``, an item's output as a
writer made it. ``Hashed`` is what the hashing stage (``hashing``) adds.
The reading of a column's values is here too, the one home of it for the
readers and ``clobkit.dask``: ``read_values`` (Python values) and
``read_arrow`` (Arrow columns) with their tables (sides, flags, defaults of
nulls), and ``check_columns``, the rule of a usable set of columns. This
module imports no other stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ...core.arrow_values import values as arrow_values
from ...core.columns import FLAG, NULL, WORD, Column
from ...core.parse import BATCH_KEYWORDS, COLUMN_KINDS, V1_FIELDS, V2_FIELDS
from ...core.spec import SIDES as SIDE_NAMES
from ...errors import ValidationError

#: The value of an optional column where it is null (absent, an empty CSV cell, a JSON
#: null, an Arrow null, pandas' None / NA / NaN).
DEFAULTS: dict[str, object] = {
    "fee_rate_bps": 0,
    "nonce": 0,
    "expiration": 0,
    "metadata": None,
    "builder": None,
    "neg_risk": False,
}


# NamedTuples and a slotted class, not dataclasses: importing dataclasses costs
# every ``clobkit order-ids`` start 9 ms
class Layout(NamedTuple):
    """The columns of one order version: required, then optional (with ``DEFAULTS``)."""

    required: tuple[str, ...]
    optional: tuple[str, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        return self.required + self.optional

    @property
    def keywords(self) -> tuple[str, ...]:
        return tuple(BATCH_KEYWORDS[name] for name in self.fields)


_COMMON = ("token_id", "maker_amount", "taker_amount", "side", "salt")
#: By the hasher's version: 1, and 2 for V2 and V3 (one struct).
LAYOUTS = {  # the rules' fields of each version; a V2/V3 order's timestamp is required
    1: Layout(_COMMON, (*V1_FIELDS, "neg_risk")),
    2: Layout((*_COMMON, V2_FIELDS[0]), (*V2_FIELDS[1:], "neg_risk")),
}
V1 = LAYOUTS[1]
REQUIRED, FIELDS = V1.required, V1.fields
#: A side as a file may spell it: the rules' names in any case (looked up lowercased), or 0/1.
SIDES: dict[str, int] = {}
for _value, _name in enumerate(SIDE_NAMES):
    SIDES.update({_name: _value, _name.lower(): _value, _name.title(): _value, str(_value): _value})
#: ``neg_risk`` as text (any case): the spellings of the values ``order_id`` takes (a bool,
#: 0/1) and nothing else; an empty cell is a null (``DEFAULTS``), not a spelling.
FLAGS: dict[str, bool] = {"true": True, "1": True, "false": False, "0": False}


class InputError(Exception):
    """The input as a whole is unusable (no header, missing columns): a usage error."""


class Orders:
    """One batch of orders, as every reader hands it to the hashing stage and a writer.

    ``lines`` numbers the rows (a CSV or JSONL line, a Parquet row; a range for
    Parquet and a CSV block), ``columns`` holds the fields the hashing stage reads
    (each a list of Python values or a scalar for every row, or, ``arrow``, an
    Arrow array of only the fields the input has), ``rejects`` the rows the reader
    refused. The rest is what a writer needs of the input's rows: ``texts`` (each
    row's line, CSV and JSONL), ``cells`` (CSV: every field's text, by column; a
    CSV block: the Arrow text of the columns asked for), ``objects`` (JSONL: the
    decoded objects), ``table`` (Parquet: the record batch) or ``block`` (a CSV
    block: its bytes).
    """

    __slots__ = (
        "arrow",
        "block",
        "cells",
        "columns",
        "lines",
        "objects",
        "rejects",
        "table",
        "texts",
    )

    def __init__(
        self,
        lines: Sequence[int],
        columns: dict[str, object],
        rejects: list[tuple[int, str]] | None = None,
        *,
        texts: list[str] | None = None,
        cells: list[Any] | None = None,
        objects: list[Any] | None = None,
        table: Any = None,
        block: bytes | None = None,
        arrow: bool = False,
    ) -> None:
        self.lines = lines
        self.columns = columns
        self.rejects: list[tuple[int, str]] = [] if rejects is None else rejects
        self.texts = texts
        self.cells = cells
        self.objects = objects
        self.table = table
        self.block = block
        self.arrow = arrow


#: The hashing stage's answer for a batch: the ids (``None`` for a refused row; an Arrow
#: string array when none is), the signatures (None without signing), the refusals.
Hashed = tuple[Any, list[str] | None, list[tuple[int, str]]]


class Piece(NamedTuple):
    """An item's output, as a writer made it: what its output takes, the rows in it, the
    refusals (line or row numbers; a CSV block's count from its first line, 0)."""

    payload: Any
    written: int
    rejects: list[tuple[int, str]]


def _lines(lines: list[str], strip: Callable[[str], str]) -> list[str]:
    """The lines without their line ends (one C-level split when there is no CR)."""
    blob = "".join(lines)
    if "\r" in blob:
        return list(map(strip, lines))
    if blob.endswith("\n"):
        blob = blob[:-1]
    return blob.split("\n")


def _lookup(values: list[Any], table: dict[str, Any], null: object = None) -> list[Any]:
    """Strings through ``table`` (case ignored, spaces not: the core refuses " BUY" as
    the service refuses " 5"); unknown values unchanged, ``None`` as ``null``.

    Every other value is left for the core to accept or refuse (a bool side
    too, as ``order_id`` refuses ``side=True``).
    """

    def one(v: Any) -> Any:
        if type(v) is str:
            return table.get(v.lower(), v)
        return null if v is None else v

    if set(map(type, values)) == {str}:
        mapping = {v: one(v) for v in set(values)}
        return list(map(mapping.__getitem__, values))
    return list(map(one, values))


SIDE_KEYS = {k.lower(): v for k, v in SIDES.items()}
#: The columns whose strings are read through a table, and that table.
_TABLES: dict[str, dict[str, Any]] = {"side": SIDE_KEYS, "neg_risk": FLAGS}
_ZERO_WORD = "0x" + "00" * 32


def read_values(name: str, values: list[Any]) -> Any:
    """Column ``name``'s Python values as the core takes them (``None`` is a null).

    Sides and flags given as text go through ``SIDE_KEYS`` / ``FLAGS``; a null
    of an optional column is its default (one value for all when every row's
    is null). Anything else, a null of a required column too, is the core's
    to take or refuse, by row, with ``order_id``'s words.
    """
    if name in _TABLES:
        values = _lookup(values, _TABLES[name])
    if name not in DEFAULTS or None not in values:
        return values
    default = DEFAULTS[name]
    if values.count(None) == len(values):
        return default
    return [default if v is None else v for v in values]


def read_arrow(pa: Any, ac: Any, col: Any, name: str) -> Any:
    """An Arrow column of ``name`` as the core takes it, read as ``read_values`` reads
    Python values.

    A null of an optional column is its default, side and flag strings go
    through their tables on their distinct values. A column whose refusal
    the list path must word by row (a null in a required column, a string
    not in its table) comes back as its Python values (``column_values``).
    """
    if name in DEFAULTS:
        if pa.types.is_null(col.type):  # nulls only: typed as the field is
            kind = COLUMN_KINDS[BATCH_KEYWORDS[name]]
            typ = pa.binary(32) if kind == WORD else pa.bool_() if kind == FLAG else pa.int64()
            col = pa.nulls(len(col), typ)
        if col.null_count:
            col = fill_default(pa, ac, col, name)
    elif col.null_count:  # never hashed: order_id's words for a None, at its row
        values = column_values(col, name)
        return col if values is None else read_values(name, values)
    return _mapped(pa, ac, col, name) if name in _TABLES else col


def column_values(col: Any, name: str) -> list[Any] | None:
    """An Arrow column's values as the core's columnar path reads them (decimals and
    32-byte token ids as ints), ``None`` for a null; None for a type it refuses."""
    kw = BATCH_KEYWORDS[name]
    try:
        values = Column(col, kw, COLUMN_KINDS[kw]).values()
    except ValidationError:
        return None
    return [None if v is NULL else v for v in values]


def text_default(name: str) -> str:
    """The default of optional column ``name`` as text (a CSV cell, a string column)."""
    default = DEFAULTS[name]
    return _ZERO_WORD if default is None else str(default).lower()


#: Each optional column's default as text (``text_default``): a CSV reader's empty cell.
TEXT_DEFAULTS = {name: text_default(name) for name in DEFAULTS}


def _one_array(pa: Any, col: Any) -> Any:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def fill_default(pa: Any, ac: Any, col: Any, name: str) -> Any:
    """The nulls of optional column ``name`` as its default, in the column's own type
    (binary words keep theirs: the list path reads a None as zero)."""
    default = DEFAULTS[name]
    t = pa.types
    if t.is_dictionary(col.type):
        col = ac.decode(_one_array(pa, col))
    if t.is_string(col.type) or t.is_large_string(col.type):
        fill: object = TEXT_DEFAULTS[name]
    elif t.is_fixed_size_binary(col.type):
        fill = bytes(col.type.byte_width)
    elif default is None:
        return col
    else:
        fill = default
    try:
        return ac.fill_null(col, pa.scalar(fill, col.type))
    except (pa.ArrowException, TypeError, ValueError):
        return col  # a type the core refuses anyway, with the column's name


def _mapped(pa: Any, ac: Any, col: Any, name: str) -> Any:
    """A string column of ``side`` / ``neg_risk`` through its table (case ignored), mapped
    on its distinct values (a handful); its Python values when a row's is not in it."""
    t = pa.types
    stored = col.type.value_type if t.is_dictionary(col.type) else col.type
    if not (t.is_string(stored) or t.is_large_string(stored)):
        return col
    table, typ = _TABLES[name], pa.int8() if name == "side" else pa.bool_()
    col = _one_array(pa, col)
    if not len(col):  # (a Dask frame's meta may hold a placeholder category)
        return arrow_values(pa, [], typ)
    enc = col if t.is_dictionary(col.type) else ac.encode(col)
    found = [table.get(v.lower()) if v is not None else None for v in enc.dictionary.to_pylist()]
    if None in found and t.is_dictionary(col.type):  # a category no row uses, maybe
        enc = ac.encode(ac.decode(col))
        found = [table.get(v.lower()) for v in enc.dictionary.to_pylist()]
    if None in found:  # refused: the list path names its row with order_id's words
        return read_values(name, column_values(col, name) or col.to_pylist())
    return pa.DictionaryArray.from_arrays(enc.indices, arrow_values(pa, found, typ))


def _other_columns(layout: Layout) -> set[str]:
    return {name for other in LAYOUTS.values() for name in other.fields} - set(layout.fields)


def _other_version(obj: Any, layout: Layout) -> str:
    """Why a row that carries a column of the other order version is refused ("" if not)."""
    found = sorted(name for name in _other_columns(layout) if name in obj)
    if not found:
        return ""
    version = "V1" if layout is V1 else "V2/V3"
    return f"{', '.join(found)}: not a field of this wallet's {version} orders"


def _union_keys(objs: list[Any]) -> set[str]:
    keys: set[str] = set()
    for obj in objs:
        keys.update(obj)
    return keys


def check_columns(names: list[str], layout: Layout, where: str, lacks: str, header: str) -> None:
    """A usable set of column names, or ``InputError``: no duplicate, every required
    column (``where: lacks a, b``), no column of the other order version (``header has``)."""
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InputError(f"{where}: duplicate column(s) {', '.join(duplicates)}")
    missing = [name for name in layout.required if name not in names]
    if missing:
        raise InputError(
            f"{where}: {lacks} {', '.join(missing)}"
            f"{version_note(missing, layout)}{_separator_hint(names)}"
        )
    _refuse_other_version(names, layout, header)


def version_note(missing: list[str], layout: Layout, choose: str = "--exchange-version") -> str:
    """For missing columns only this wallet's order version has (a V1 file with a V2
    wallet lacks ``timestamp``): which version asks for them and what to do."""
    own = [name for name in missing if name not in _COMMON]
    if not own:
        return ""
    version = "V1" if layout is V1 else "V2/V3"
    return (
        f" (exchange version {version} orders need {', '.join(own)}: the version comes "
        f"from the wallet's exchange addresses unless {choose} sets it)"
    )


def _separator_hint(names: list[str]) -> str:
    """Why every column may seem missing: a header split on another separator
    (a spreadsheet's semicolon CSV), said with what to do."""
    for sep, what in ((";", "semicolon"), ("\t", "tab")):
        if any(sep in name for name in names):
            return (
                f" ({what}-separated? clobkit reads comma-separated CSV: "
                "save or convert the file with ',' as the separator)"
            )
    return ""


def _refuse_other_version(names: list[str], layout: Layout, where: str) -> None:
    """A column of the other order version is a mistake, never ignored."""
    why = _other_version(names, layout)
    if why:
        raise InputError(f"{where} has {why} (see --exchange-version)")
