"""``clobkit order-ids``: offline ``clob_order_id`` of every order in a CSV or JSONL file.

The file is read in batches of lines (memory stays flat whatever its size);
each batch is parsed column-wise and hashed by ``OrderHasher.order_ids`` in a
worker thread while the next batch is parsed. Every order is one line (a
CSV field may be quoted but may not span lines). Output rows are the input
lines, unchanged, plus ``order_id`` (and ``signature`` when signing). A row
that cannot be hashed is reported as ``line N: reason`` and left out of the
output. The wallet's exchange version (or ``version=``) decides the columns:
V1 orders carry ``fee_rate_bps``, ``nonce``, ``expiration``; V2/V3 orders a
``timestamp`` (milliseconds) and optional ``metadata`` / ``builder``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, TextIO, cast

import msgspec

from ._columns import NULL, Column
from ._core import IMPLEMENTATION
from ._jsondepth import json_too_deep
from ._parse import BATCH_KEYWORDS, COLUMN_KINDS, parse_side
from ._spec import SALT_MAX
from .amounts import check_raw_amounts, raw_amounts_flagged
from .errors import AmountError, ValidationError
from .order_id import OrderHasher
from .signing import OrderSigner

__all__ = ["DEFAULT_BATCH", "run"]

DEFAULT_BATCH = 50_000
MAX_BATCH = 10_000_000  # lines per batch; more only costs memory
WALLET_MAX = 1 << 20  # bytes: a GET /wallet answer is a few hundred

#: The value of an optional column that is absent or empty.
DEFAULTS: dict[str, object] = {
    "fee_rate_bps": 0,
    "nonce": 0,
    "expiration": 0,
    "metadata": None,
    "builder": None,
    "neg_risk": False,
}


@dataclass(frozen=True)
class Layout:
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
LAYOUTS = {
    1: Layout(_COMMON, ("fee_rate_bps", "nonce", "expiration", "neg_risk")),
    2: Layout((*_COMMON, "timestamp"), ("metadata", "builder", "neg_risk")),
}
V1 = LAYOUTS[1]
REQUIRED, FIELDS = V1.required, V1.fields
SIDES: dict[str, int] = {}
for _name, _value in (("BUY", 0), ("SELL", 1)):
    SIDES.update({_name: _value, _name.lower(): _value, _name.title(): _value, str(_value): _value})
FLAGS: dict[str, bool] = {
    "true": True,
    "1": True,
    "yes": True,
    "false": False,
    "0": False,
    "no": False,
    "": False,
}


class InputError(Exception):
    """The input as a whole is unusable (no header, missing columns): a usage error."""


@dataclass
class Parsed:
    """One batch: the rows that parsed (line number, text) and the hash columns."""

    lines: list[int]
    texts: list[str]  # each row's line, without its line end
    columns: dict[str, object]  # field -> one value per row, or a scalar for all
    objects: list[Any] | None = None  # JSONL: the decoded objects
    rejects: list[tuple[int, str]] = field(default_factory=list)


def _lines(lines: list[str], strip: Callable[[str], str]) -> list[str]:
    """The lines without their line ends (one C-level split when there is no CR)."""
    blob = "".join(lines)
    if "\r" in blob:
        return list(map(strip, lines))
    if blob.endswith("\n"):
        blob = blob[:-1]
    return blob.split("\n")


def _lookup(values: list[Any], table: dict[str, Any]) -> list[Any]:
    """Strings through ``table`` (case and spaces ignored); unknown values unchanged.

    ``None`` reads as ``False`` (an absent flag); other values are left for the
    core to accept or refuse.
    """

    def one(v: Any) -> Any:
        if type(v) is str:
            return table.get(v.strip().lower(), v)
        return False if v is None else v

    if set(map(type, values)) == {str}:
        mapping = {v: one(v) for v in set(values)}
        return list(map(mapping.__getitem__, values))
    return list(map(one, values))


SIDE_KEYS = {k.lower(): v for k, v in SIDES.items()}


class CsvOrders:
    """CSV with a header row; ``order_id`` (and ``signature``) added, or replaced when present."""

    def __init__(self, header: str, layout: Layout = V1, signed: bool = False) -> None:
        text = header.rstrip("\r\n")
        if not text.strip():
            raise InputError("line 1: no header row")
        try:
            names = [name.strip() for name in next(csv.reader([text], strict=True))]
        except csv.Error as exc:
            raise InputError(f"line 1: the header is not valid CSV ({exc})") from None
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InputError(f"line 1: duplicate column(s) {', '.join(duplicates)}")
        missing = [name for name in layout.required if name not in names]
        if missing:
            raise InputError(f"line 1: the header lacks the column(s) {', '.join(missing)}")
        _refuse_other_version(names, layout, "line 1: the header")
        self.layout = layout
        self.width = len(names)
        self.index = {name: i for i, name in enumerate(names)}
        added = ("order_id", "signature") if signed else ("order_id",)
        # where each added value goes: an existing column (replaced) or a new one
        self.targets = [self.index.get(name) for name in added]
        self.appended = all(i is None for i in self.targets)
        new = [name for name in added if name not in self.index]
        self.header = ",".join([text, *new])

    def parse(self, first: int, lines: list[str]) -> Parsed:
        texts = _lines(lines, _strip_eol)
        numbers = list(range(first, first + len(texts)))
        rejects: list[tuple[int, str]] = []
        width = self.width
        blob = ",".join(texts)
        if '"' not in blob and set(map(str.count, texts, repeat(","))) == {width - 1}:
            flat = blob.split(",")  # every line has exactly width fields
            transposed = [flat[i::width] for i in range(width)]
        else:
            keep = []
            rows = []
            for k, text in enumerate(texts):
                row = _split(text)
                if isinstance(row, str):
                    rejects.append((numbers[k], row))
                elif len(row) == width:
                    keep.append(k)
                    rows.append(row)
                elif len(row) > 1 or row[0].strip():  # a blank line is not a row
                    rejects.append((numbers[k], f"expected {width} fields, got {len(row)}"))
            texts = [texts[k] for k in keep]
            numbers = [numbers[k] for k in keep]
            transposed = [list(column) for column in zip(*rows, strict=True)] or [
                [] for _ in range(width)
            ]
        spaces = " " in blob or "\t" in blob
        columns: dict[str, object] = {}
        for name in self.layout.fields:
            i = self.index.get(name)
            if i is None:
                columns[name] = DEFAULTS[name]
                continue
            values: list[Any] = transposed[i]
            if spaces:
                values = list(map(str.strip, values))
            if name == "side":
                values = _lookup(values, SIDE_KEYS)
            elif name == "neg_risk":
                values = _lookup(values, FLAGS)
            elif name in DEFAULTS and "" in values:
                values = [DEFAULTS[name] if v == "" else v for v in values]
            columns[name] = values
        return Parsed(numbers, texts, columns, None, rejects)

    def render(self, parsed: Parsed, ids: list[str | None], sigs: list[str] | None) -> str:
        texts, added = _kept(parsed.texts, ids, sigs)
        if not texts:
            return ""
        if self.appended:
            return "\n".join(map(",".join, zip(texts, *added, strict=True))) + "\n"
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for text, *values in zip(texts, *added, strict=True):
            row = _split(text)
            assert isinstance(row, list)
            for target, value in zip(self.targets, values, strict=True):
                if target is None:
                    row.append(value)
                else:
                    row[target] = value
            writer.writerow(row)
        return buffer.getvalue()


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _split(text: str) -> list[str] | str:
    """The fields of one CSV line, or why it is malformed."""
    if '"' not in text:
        return text.split(",")
    try:
        return next(csv.reader([text], strict=True), [""])
    except csv.Error as exc:
        return f"malformed CSV ({exc}; a field may not span lines)"


_decode = msgspec.json.decode


class _Blank:
    """A blank JSONL line: not a row."""


_BLANK = _Blank()


def _decode_line(text: str) -> object:
    if not text.strip():
        return _BLANK
    try:
        if json_too_deep(text.encode("utf-8", "surrogatepass")):
            raise RecursionError  # before the decoder can overflow the C stack
        return _decode(text)
    except msgspec.DecodeError as exc:
        return _Bad(f"invalid JSON ({exc})")
    except RecursionError:
        return _Bad("invalid JSON (nested too deeply)")


class _Bad(str):
    """A JSONL line that is not JSON; the string is the reason."""


class JsonlOrders:
    """One JSON object per line; ``order_id`` (and ``signature``) is added to each object."""

    header = None

    def __init__(self, layout: Layout = V1, signed: bool = False) -> None:
        self.layout = layout
        self.signed = signed
        self.added = ("order_id", "signature") if signed else ("order_id",)
        self.append = "".join(f', "{name}": "{{}}"' for name in self.added)
        self.append = "{}" + self.append + "}}\n"

    def parse(self, first: int, lines: list[str]) -> Parsed:
        texts = _lines(lines, str.rstrip)
        try:
            # lines one by one only when the batch as a whole may nest too deeply
            if json_too_deep("\n".join(texts).encode("utf-8", "surrogatepass")):
                raise RecursionError
            objs: list[Any] = list(map(_decode, texts))
        except (msgspec.DecodeError, RecursionError):
            objs = list(map(_decode_line, texts))
        numbers = list(range(first, first + len(texts)))
        rejects: list[tuple[int, str]] = []
        dicts = set(map(type, objs)) == {dict}
        layout = self.layout
        columns = {
            name: list(map(dict.get, objs, repeat(name))) if dicts else [] for name in layout.fields
        }
        if (
            not dicts
            or any(None in columns[name] for name in layout.required)
            or _other_version(_union_keys(objs), layout)
        ):
            keep = []
            for k, obj in enumerate(objs):
                if obj is _BLANK:
                    continue
                if isinstance(obj, _Bad):
                    rejects.append((numbers[k], str(obj)))
                elif not isinstance(obj, dict):
                    rejects.append((numbers[k], "not a JSON object"))
                else:
                    missing = [name for name in layout.required if obj.get(name) is None]
                    other = _other_version(obj, layout)
                    if missing:
                        rejects.append((numbers[k], f"missing {', '.join(missing)}"))
                    elif other:
                        rejects.append((numbers[k], other))
                    else:
                        keep.append(k)
            objs = [objs[k] for k in keep]
            texts = [texts[k] for k in keep]
            numbers = [numbers[k] for k in keep]
            columns = {name: list(map(dict.get, objs, repeat(name))) for name in layout.fields}
        final: dict[str, object] = {}
        for name, values in columns.items():
            if name == "side":
                final[name] = _lookup(values, SIDE_KEYS)
            elif name == "neg_risk":
                final[name] = _lookup(values, FLAGS)
            elif name in DEFAULTS:
                if values.count(None) == len(values):
                    final[name] = DEFAULTS[name]
                elif None in values:
                    final[name] = [DEFAULTS[name] if v is None else v for v in values]
                else:
                    final[name] = values
            else:
                final[name] = values
        return Parsed(numbers, texts, final, objs, rejects)

    def render(self, parsed: Parsed, ids: list[str | None], sigs: list[str] | None) -> str:
        assert parsed.objects is not None
        objs = parsed.objects
        texts, added = _kept(parsed.texts, ids, sigs)
        if len(texts) != len(objs):
            objs = [o for o, oid in zip(objs, ids, strict=True) if oid is not None]
        if not texts:
            return ""
        blob = "".join(texts)
        if not any(f'"{name}"' in blob for name in self.added):
            if set(map(_LAST, texts)) != {"}"}:  # trailing spaces
                texts = list(map(str.rstrip, texts))
            return "".join(map(self.append.format, map(_CUT_LAST, texts), *added))
        parts = []
        for obj, *values in zip(objs, *added, strict=True):
            obj.update(zip(self.added, values, strict=True))
            parts.append(json.dumps(obj, ensure_ascii=False) + "\n")
        return "".join(parts)


_CUT_LAST = itemgetter(slice(None, -1))
_LAST = itemgetter(slice(-1, None))


def _kept(
    texts: list[str], ids: list[str | None], sigs: list[str] | None
) -> tuple[list[str], list[list[str]]]:
    """The rows that got an id, and the values to add to them (ids, then signatures)."""
    done = cast("list[str]", ids)  # no None left once filtered below
    if None in ids:
        keep = [k for k, oid in enumerate(ids) if oid is not None]
        texts = [texts[k] for k in keep]
        done = [done[k] for k in keep]
        sigs = None if sigs is None else [sigs[k] for k in keep]
    return texts, [done] if sigs is None else [done, sigs]


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


def _refuse_other_version(names: list[str], layout: Layout, where: str) -> None:
    """A column of the other order version is a mistake, never ignored."""
    why = _other_version(names, layout)
    if why:
        raise InputError(f"{where} has {why} (see --exchange-version)")


Batch = tuple[list[str | None], list[str] | None, list[tuple[int, str]]]


def hash_batch(
    hasher: OrderHasher,
    parsed: Parsed,
    threads: int | None,
    layout: Layout = V1,
    signer: OrderSigner | None = None,
) -> Batch:
    """Order ids of a batch (``None`` for a row refused), their signatures, the refusals."""
    n = len(parsed.lines)
    if n == 0:
        return [], None if signer is None else [], []
    cols = [parsed.columns[name] for name in layout.fields]
    batch = dict(zip(layout.keywords, cols, strict=True))
    try:
        if signer is None:
            done: list[str] = hasher.order_ids(**batch, threads=threads)
            return _refuse_unservable(parsed, list[str | None](done), None, [], layout)
        signed = hasher.sign_many(signer, **batch, threads=threads)
        ids = list[str | None]([s.order_id for s in signed])
        return _refuse_unservable(parsed, ids, [s.signature for s in signed], [], layout)
    except ValidationError:
        pass
    # one row at a time: the core names the field and value of each bad row
    ids = []
    sigs: list[str] | None = None if signer is None else []
    rejects: list[tuple[int, str]] = []
    seqs = [not isinstance(c, (str, int)) and isinstance(c, Sequence) for c in cols]
    for i, line in enumerate(parsed.lines):
        row = [c[i] if seq else c for c, seq in zip(cols, seqs, strict=True)]  # type: ignore[index]
        order = dict(zip(layout.fields, row, strict=True))
        try:
            if sigs is None:
                ids.append(hasher.order_id(**order))
            else:
                one = hasher.sign(signer, **order)
                ids.append(one.order_id)
                sigs.append(one.signature)
        except ValidationError as exc:
            ids.append(None)
            if sigs is not None:
                sigs.append("")
            rejects.append((line, str(exc)))
    return _refuse_unservable(parsed, ids, sigs, rejects, layout)


def _too_big(salt: object) -> bool:
    if type(salt) is str:
        digits = salt.lstrip("0")
        return len(digits) > 13 or (len(digits) == 13 and digits > "1000000000000")
    return type(salt) is int and salt > SALT_MAX


def _column(parsed: Parsed, name: str) -> list[Any]:
    values = parsed.columns[name]
    return values if isinstance(values, list) else [values] * len(parsed.lines)


def _refuse_unservable(
    parsed: Parsed,
    ids: list[str | None],
    sigs: list[str] | None,
    rejects: list[tuple[int, str]],
    layout: Layout = V1,
) -> Batch:
    """Rows the service would refuse get no id: a salt outside [0, 10**12] (POST
    /orders/raw, V1 orders), or amounts that break the raw-order ratio rule
    (zero, an implied price outside (0, 1), over the single-order maximum).

    The exchange struct hashes any uint256, so the core does not refuse these;
    an id for an order the service will not take is a lost order.
    """
    salts = _column(parsed, "salt")
    raw_flow = layout is V1  # the salt range is POST /orders/raw's rule
    bad = [i for i, salt in enumerate(salts) if raw_flow and _too_big(salt) and ids[i] is not None]
    for i in bad:
        ids[i] = None
        rejects.append(
            (
                parsed.lines[i],
                f"salt: must lie in [0, 10**12] for POST /orders/raw (got {salts[i]!r})",
            )
        )
    # the hashed rows passed the core's checks: their amounts read as ints
    makers, takers = _column(parsed, "maker_amount"), _column(parsed, "taker_amount")
    sides = _column(parsed, "side")
    rows = [i for i, oid in enumerate(ids) if oid is not None]
    # hashed rows have sides the core took (str or int): a handful of values
    side_of = {key: parse_side(key[1]) for key in {(type(sides[i]), sides[i]) for i in rows}}
    if len(rows) == len(ids):
        triples = zip(
            [side_of[(type(v), v)] for v in sides], map(int, makers), map(int, takers), strict=True
        )
    else:
        triples = zip(
            [side_of[(type(sides[i]), sides[i])] for i in rows],
            [int(makers[i]) for i in rows],
            [int(takers[i]) for i in rows],
            strict=True,
        )
    for i, (side, maker, taker) in zip(rows, triples, strict=True):
        try:
            check_raw_amounts(side, maker, taker)
        except AmountError as exc:  # noqa: PERF203 - rare: one row in many
            ids[i] = None
            rejects.append((parsed.lines[i], f"{exc} (POST /orders/raw refuses it)"))
    rejects.sort()
    return ids, sigs, rejects


def load_wallet(path: str) -> dict[str, Any]:
    """The ``GET /wallet`` data from a file: the data itself or the saved envelope."""
    try:
        with open(path, "rb") as file:
            data = file.read(WALLET_MAX + 1)
    except OSError as exc:
        raise InputError(f"cannot read the wallet {path}: {exc.strerror or exc}") from None
    if len(data) > WALLET_MAX:
        raise InputError(
            f"the wallet {path} is over {WALLET_MAX:,} bytes: not a GET /wallet answer"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"the wallet {path} is not UTF-8 text ({exc.reason})") from None
    try:
        if json_too_deep(data):
            raise RecursionError  # before the decoder can overflow the C stack
        obj = json.loads(text)
    except ValueError as exc:
        raise InputError(f"the wallet {path} is not JSON ({exc})") from None
    except RecursionError:
        raise InputError(f"the wallet {path} is not JSON (nested too deeply)") from None
    if isinstance(obj, dict) and ("success" in obj or list(obj) == ["data"]):  # an envelope
        if obj.get("success", True) is not True:
            raise InputError(f"the wallet {path} is a failed response: {obj.get('error')}")
        obj = obj.get("data")
    if not isinstance(obj, dict):
        raise InputError(f"the wallet {path} must hold the GET /wallet data or its envelope")
    return obj


def _same(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file (the same path, a symlink or a hard link)."""
    try:
        return a.samefile(b)
    except OSError:
        return False


def _check_output(target: Path, source: Path, wallet: Path) -> None:
    """OUTPUT is neither INPUT nor the wallet, and is not a read-only file."""
    if _same(target, source):
        raise InputError("OUTPUT must not be INPUT (same file)")
    if _same(target, wallet):
        raise InputError("OUTPUT must not be the --wallet file (same file)")
    if target.is_dir():
        raise InputError(f"OUTPUT {target} is a directory")
    # root may write any file, so the mode bits count too
    if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
        raise InputError(f"OUTPUT {target} is read-only: not replaced")


def format_of(path: str) -> str:
    """``csv``, ``jsonl`` or ``parquet``, from the file name."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise InputError(f"{path}: unknown format (use a .csv, .jsonl, .ndjson or .parquet file)")


# ---------------------------------------------------------------------------
# Parquet: streamed by row group, hashed from the Arrow columns


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("Parquet needs pyarrow: pip install 'clobkit[data]'") from None
    return pa, pq


def _mapped(pa: Any, col: Any, table: dict[str, Any], typ: Any) -> Any:
    """A string column through ``table`` (case and spaces ignored), as the CSV path reads it.

    Mapped on the column's distinct values (a handful); a value not in the
    table is left for the core to refuse, with its row.
    """
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return col
    enc = col.dictionary_encode()
    values = [table.get(v.strip().lower(), v) for v in enc.dictionary.to_pylist()]
    if any(isinstance(v, str) for v in values):
        return col
    return pa.DictionaryArray.from_arrays(enc.indices, pa.array(values, typ))


_ZERO_WORD = "0x" + "00" * 32


def _fill_default(pa: Any, col: Any, name: str) -> Any:
    """Nulls of an optional column read as its default, as empty CSV cells do."""
    default = DEFAULTS[name]
    t = pa.types
    if t.is_string(col.type) or t.is_large_string(col.type):
        fill: object = _ZERO_WORD if default is None else ("false" if default is False else "0")
    elif t.is_fixed_size_binary(col.type):
        fill = bytes(col.type.byte_width)
    elif default is None:
        return col
    else:
        fill = default
    try:
        return col.fill_null(pa.scalar(fill, col.type))
    except (pa.ArrowException, TypeError, ValueError):
        return col  # a type the core refuses anyway, with the column's name


def _arrow_batch(
    pa: Any,
    hasher: OrderHasher,
    batch: Any,
    first: int,
    layout: Layout,
    threads: int | None,
    signer: OrderSigner | None,
) -> Batch:
    """Ids (None for a refused row), signatures and refusals of one Parquet record batch."""
    names = set(batch.schema.names)
    args: dict[str, Any] = {}
    for name in layout.fields:
        if name not in names:
            continue
        col = batch.column(name)
        if name in DEFAULTS and col.null_count:
            col = _fill_default(pa, col, name)
        if name == "side":
            col = _mapped(pa, col, SIDE_KEYS, pa.int8())
        elif name == "neg_risk":
            col = _mapped(pa, col, FLAGS, pa.bool_())
        args[BATCH_KEYWORDS[name]] = col
    n = batch.num_rows
    lines = list(range(first, first + n))
    try:
        if signer is None:
            ids = list[str | None](hasher.order_ids(**args, threads=threads))
            sigs = None
        else:
            signed = hasher.sign_many(signer, **args, threads=threads)
            ids = [s.order_id for s in signed]
            sigs = [s.signature for s in signed]
    except ValidationError:
        # row by row through Python values: the core names each bad row
        columns: dict[str, object] = {}
        for name in layout.fields:
            if name in names:
                kw = BATCH_KEYWORDS[name]
                try:  # the values the core's columnar path reads (decimals as ints...)
                    values = Column(batch.column(name), kw, COLUMN_KINDS[kw]).values()
                except ValidationError:
                    values = batch.column(name).to_pylist()
                values = [None if v is NULL else v for v in values]
                if name in DEFAULTS:
                    values = [DEFAULTS[name] if v is None else v for v in values]
                columns[name] = values
        for name in layout.optional:
            columns.setdefault(name, DEFAULTS[name])
        for name in ("side", "neg_risk"):
            given = columns[name]
            if isinstance(given, list):
                columns[name] = _lookup(given, SIDE_KEYS if name == "side" else FLAGS)
        return hash_batch(hasher, Parsed(lines, [], columns), threads, layout, signer)
    # the service's own rules, on the rows the core took (column-wise first when it can)
    rows = _flagged(pa, batch, args["sides"], layout)
    idx = range(n) if rows is None else rows
    if not idx:
        return ids, sigs, []
    take = pa.array(idx, pa.int64())
    cols: dict[str, list[Any]] = {
        name: batch.column(name).take(take).to_pylist()
        for name in ("salt", "maker_amount", "taker_amount")
    }
    sides = args["sides"].take(take)
    sides = sides.dictionary_decode() if pa.types.is_dictionary(sides.type) else sides
    cols["side"] = [int(v) if isinstance(v, bool) else v for v in sides.to_pylist()]
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


def _flagged(pa: Any, batch: Any, sides: Any, layout: Layout) -> list[int] | None:
    """Rows the service's rules may refuse, found column-wise (None: integer columns only)."""
    import pyarrow.compute as pc

    t = pa.types
    makers, takers, salts = (batch.column(n) for n in ("maker_amount", "taker_amount", "salt"))
    if not (t.is_integer(makers.type) and t.is_integer(takers.type) and t.is_integer(salts.type)):
        return None
    if t.is_dictionary(sides.type):
        sides = sides.dictionary_decode()
    if not (t.is_integer(sides.type) or t.is_boolean(sides.type)):
        return None
    bad = raw_amounts_flagged(sides.cast(pa.int8()), makers, takers)
    if layout is V1:  # POST /orders/raw's salt range
        bad = pc.or_(bad, pc.greater(salts, pa.scalar(SALT_MAX, salts.type)))
    flagged: list[int] = pc.indices_nonzero(bad).to_pylist()
    return flagged


def _run_parquet(
    hasher: OrderHasher,
    layout: Layout,
    signer: OrderSigner | None,
    input_path: str,
    part: Path,
    threads: int | None,
    batch_size: int,
    bar: Progress,
    say: Callable[[str], None],
) -> tuple[int, int]:
    """Parquet in, Parquet out, one record batch at a time: (written, rejected)."""
    pa, pq = _pyarrow()
    try:
        source = pq.ParquetFile(input_path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{input_path} is not a readable Parquet file ({exc})") from None
    schema = source.schema_arrow
    names = list(schema.names)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InputError(f"{input_path}: duplicate column(s) {', '.join(duplicates)}")
    missing = [name for name in layout.required if name not in names]
    if missing:
        raise InputError(f"{input_path}: no column(s) {', '.join(missing)}")
    _refuse_other_version(names, layout, input_path)
    added = ["order_id"] + ([] if signer is None else ["signature"])
    for name in added:
        if name in names:
            schema = schema.remove(schema.get_field_index(name))
    for name in added:
        schema = schema.append(pa.field(name, pa.string()))
    total = max(source.metadata.num_rows, 1)
    written = rejected = done = 0
    # ids are random hex: dictionaries and compression only cost time on them
    plain = dict.fromkeys(added, "none")
    with (
        pq.ParquetWriter(
            part,
            schema,
            use_dictionary=[name for name in schema.names if name not in added],
            compression={**dict.fromkeys(schema.names, "snappy"), **plain},
        ) as writer,
        ThreadPoolExecutor(1, thread_name_prefix="clobkit-order-ids") as pool,
    ):
        pending: tuple[Any, Future[Any]] | None = None

        def finish(batch: Any, job: Future[Any]) -> None:
            nonlocal written, rejected, done
            ids, sigs, rejects = job.result()
            for number, reason in rejects:
                bar.clear()
                say(f"row {number}: {reason}")
            if rejects:
                keep = pa.array([oid is not None for oid in ids])
                batch = batch.filter(keep)
                sigs = None if sigs is None else [s for s, k in zip(sigs, ids, strict=True) if k]
                ids = [oid for oid in ids if oid is not None]
            for name in added:
                if name in batch.schema.names:
                    batch = batch.drop_columns([name])
            batch = batch.append_column("order_id", pa.array(ids, pa.string()))
            if sigs is not None:
                batch = batch.append_column("signature", pa.array(sigs, pa.string()))
            writer.write_batch(batch)
            written += len(ids)
            rejected += len(rejects)
            done += batch.num_rows + len(rejects)
            bar.update(int(done / total * bar.total), written)

        first = 1
        try:
            for batch in source.iter_batches(batch_size=batch_size):
                job = pool.submit(_arrow_batch, pa, hasher, batch, first, layout, threads, signer)
                first += batch.num_rows
                if pending is not None:
                    finish(*pending)
                pending = (batch, job)
            if pending is not None:
                finish(*pending)
        except pa.ArrowException as exc:
            raise InputError(f"{input_path}: {exc}") from None
    return written, rejected


class Progress:
    """A progress bar on stderr: share of the input read, orders done, rate."""

    def __init__(self, total: int, enabled: bool, stream: TextIO) -> None:
        self.total = max(total, 1)
        self.enabled = enabled
        self.stream = stream
        self.start = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def update(self, done_bytes: int, orders: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.shown and now - self.last < 0.1:
            return
        self.last = now
        fraction = min(1.0, done_bytes / self.total)
        filled = int(fraction * 30)
        rate = orders / max(now - self.start, 1e-9)
        bar = "#" * filled + "." * (30 - filled)
        self.stream.write(f"\r[{bar}] {fraction:4.0%}  {orders:,} orders  {rate:,.0f}/s ")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()
            self.shown = False


@dataclass
class Summary:
    """What a run did."""

    written: int
    rejected: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.written / self.seconds if self.seconds > 0 else 0.0


def run(
    wallet: str,
    input_path: str,
    output_path: str,
    *,
    threads: int | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: bool | None = None,
    report: Callable[[str], None] | None = None,
    version: int | None = None,
    signer: OrderSigner | None = None,
) -> Summary:
    """Hash every order of ``input_path`` into ``output_path``; ``report`` gets each rejection.

    ``version`` (1, 2 or 3) overrides the order version the wallet's exchange
    addresses imply; with ``signer`` each row also gets its ``signature``.
    Raises ``InputError`` when the input as a whole cannot be used.
    """
    kind = format_of(input_path)
    if format_of(output_path) != kind:
        raise InputError(f"OUTPUT must have the format of INPUT ({kind})")
    source_path, target = Path(input_path), Path(output_path)
    if not 1 <= batch_size <= MAX_BATCH:
        raise InputError(f"--batch-size must lie in [1, {MAX_BATCH:,}] (got {batch_size})")
    _check_output(target, source_path, Path(wallet))
    try:
        hasher = OrderHasher(load_wallet(wallet), version=version)
    except ValidationError as exc:
        raise InputError(f"the wallet {wallet}: {exc}") from None
    layout = LAYOUTS[1 if hasher.version == 1 else 2]
    signed = signer is not None
    say = report or (lambda text: print(text, file=sys.stderr))
    part = target.with_name(f".{target.name}.part")
    if kind == "parquet":
        try:
            size = os.stat(source_path).st_size
        except OSError as exc:
            raise InputError(f"cannot read {input_path}: {exc.strerror or exc}") from None
        bar = Progress(size, sys.stderr.isatty() if progress is None else progress, sys.stderr)
        started = time.perf_counter()
        try:
            written, rejected = _run_parquet(
                hasher, layout, signer, input_path, part, threads, batch_size, bar, say
            )
            os.replace(part, target)
        except OSError as exc:
            raise InputError(f"cannot write {output_path}: {exc.strerror or exc}") from None
        finally:
            bar.clear()
            if part.exists():
                part.unlink()
        return Summary(written, rejected, time.perf_counter() - started)
    try:
        raw = open(source_path, "rb")  # noqa: SIM115 - closed through source
        source = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot read {input_path}: {exc.strerror or exc}") from None
    bar = Progress(
        os.fstat(raw.fileno()).st_size,
        sys.stderr.isatty() if progress is None else progress,
        sys.stderr,
    )
    try:
        out = open(part, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        source.close()
        raise InputError(f"cannot write {output_path}: {exc.strerror or exc}") from None
    started = time.perf_counter()
    written = rejected = 0
    try:
        with source, out:
            fmt: CsvOrders | JsonlOrders
            if kind == "csv":
                fmt = CsvOrders(source.readline(), layout, signed)
                out.write(fmt.header + "\n")
                line = 2
            else:
                fmt = JsonlOrders(layout, signed)
                line = 1
            with ThreadPoolExecutor(1, thread_name_prefix="clobkit-order-ids") as pool:
                pending: tuple[Parsed, Future[Any]] | None = None

                def finish(parsed: Parsed, job: Future[Any]) -> None:
                    nonlocal written, rejected
                    ids, sigs, late = job.result()
                    out.write(fmt.render(parsed, ids, sigs))
                    rejects = sorted(parsed.rejects + late)
                    if rejects:
                        bar.clear()
                        for number, reason in rejects:
                            say(f"line {number}: {reason}")
                    written += len(ids) - len(late)
                    rejected += len(rejects)
                    bar.update(raw.tell(), written)

                while True:
                    lines = list(islice(source, batch_size))
                    if not lines:
                        break
                    parsed = fmt.parse(line, lines)
                    line += len(lines)
                    job = pool.submit(hash_batch, hasher, parsed, threads, layout, signer)
                    if pending is not None:
                        finish(*pending)
                    pending = (parsed, job)
                if pending is not None:
                    finish(*pending)
        os.replace(part, target)
    except UnicodeDecodeError as exc:
        raise InputError(f"{input_path} is not UTF-8 text ({exc.reason})") from None
    finally:
        bar.clear()
        if part.exists():
            part.unlink()
    return Summary(written, rejected, time.perf_counter() - started)


def describe(summary: Summary, output_path: str) -> str:
    """The one-line summary printed after a run."""
    text = (
        f"{summary.written:,} order ids -> {output_path} in {summary.seconds:.2f} s "
        f"({summary.rate:,.0f} orders/s, {IMPLEMENTATION} core)"
    )
    if summary.rejected:
        text += f"; {summary.rejected:,} row{'' if summary.rejected == 1 else 's'} rejected"
    return text
