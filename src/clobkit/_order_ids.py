"""``clobkit order-ids``: offline ``clob_order_id`` of every raw order in a CSV or JSONL file.

The file is read in batches of lines (memory stays flat whatever its size);
each batch is parsed column-wise and hashed by ``OrderHasher.order_ids`` in a
worker thread while the next batch is parsed. Every order is one line (a
CSV field may be quoted but may not span lines). Output rows are the input
lines, unchanged, plus ``order_id``. A row that cannot be hashed is reported
as ``line N: reason`` and left out of the output.
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
from itertools import islice, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, TextIO, cast

import msgspec

from ._core import IMPLEMENTATION
from ._core_py import parse_side
from ._jsondepth import json_too_deep
from .amounts import check_raw_amounts
from .errors import AmountError, ValidationError
from .order_id import OrderHasher

__all__ = ["DEFAULT_BATCH", "run"]

DEFAULT_BATCH = 50_000
MAX_BATCH = 10_000_000  # lines per batch; more only costs memory
WALLET_MAX = 1 << 20  # bytes: a GET /wallet answer is a few hundred
SALT_MAX = 10**12  # the service's range for raw-order salts
REQUIRED = ("token_id", "maker_amount", "taker_amount", "side", "salt")
OPTIONAL = ("fee_rate_bps", "nonce", "expiration", "neg_risk")
FIELDS = REQUIRED + OPTIONAL
# keyword of OrderHasher.order_ids for each field, and the default of the optional ones
KEYWORDS = (
    "token_ids",
    "maker_amounts",
    "taker_amounts",
    "sides",
    "salts",
    "fee_rate_bps",
    "nonces",
    "expirations",
    "neg_risk",
)
DEFAULTS: dict[str, object] = {"fee_rate_bps": 0, "nonce": 0, "expiration": 0, "neg_risk": False}
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
    """CSV with a header row; ``order_id`` is appended (or replaced when present)."""

    def __init__(self, header: str) -> None:
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
        missing = [name for name in REQUIRED if name not in names]
        if missing:
            raise InputError(f"line 1: the header lacks the column(s) {', '.join(missing)}")
        self.width = len(names)
        self.index = {name: i for i, name in enumerate(names)}
        self.id_column = self.index.get("order_id")
        self.header = text if self.id_column is not None else text + ",order_id"

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
        for name in FIELDS:
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
                values = ["0" if v == "" else v for v in values]
            columns[name] = values
        return Parsed(numbers, texts, columns, None, rejects)

    def render(self, parsed: Parsed, ids: list[str | None]) -> str:
        texts = parsed.texts
        done = cast("list[str]", ids)  # no None left once filtered below
        if None in ids:
            texts = [t for t, oid in zip(texts, ids, strict=True) if oid is not None]
            done = [oid for oid in ids if oid is not None]
        if not texts:
            return ""
        if self.id_column is None:
            return "\n".join(map(",".join, zip(texts, done, strict=True))) + "\n"
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for text, oid in zip(texts, done, strict=True):
            row = _split(text)
            assert isinstance(row, list)
            row[self.id_column] = oid
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
    """One JSON object per line; ``order_id`` is added to each object."""

    header = None

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
        columns = {
            name: list(map(dict.get, objs, repeat(name))) if dicts else [] for name in FIELDS
        }
        if not dicts or any(None in columns[name] for name in REQUIRED):
            keep = []
            for k, obj in enumerate(objs):
                if obj is _BLANK:
                    continue
                if isinstance(obj, _Bad):
                    rejects.append((numbers[k], str(obj)))
                elif not isinstance(obj, dict):
                    rejects.append((numbers[k], "not a JSON object"))
                else:
                    missing = [name for name in REQUIRED if obj.get(name) is None]
                    if missing:
                        rejects.append((numbers[k], f"missing {', '.join(missing)}"))
                    else:
                        keep.append(k)
            objs = [objs[k] for k in keep]
            texts = [texts[k] for k in keep]
            numbers = [numbers[k] for k in keep]
            columns = {name: list(map(dict.get, objs, repeat(name))) for name in FIELDS}
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

    def render(self, parsed: Parsed, ids: list[str | None]) -> str:
        assert parsed.objects is not None
        texts, objs = parsed.texts, parsed.objects
        if None in ids:
            keep = [k for k, oid in enumerate(ids) if oid is not None]
            texts = [texts[k] for k in keep]
            objs = [objs[k] for k in keep]
            ids = [ids[k] for k in keep]
        if not texts:
            return ""
        if '"order_id"' not in "".join(texts):
            if set(map(_LAST, texts)) != {"}"}:  # trailing spaces
                texts = list(map(str.rstrip, texts))
            return "".join(map(_WITH_ID.format, map(_CUT_LAST, texts), ids))
        parts = []
        for obj, oid in zip(objs, ids, strict=True):
            obj["order_id"] = oid
            parts.append(json.dumps(obj, ensure_ascii=False) + "\n")
        return "".join(parts)


_CUT_LAST = itemgetter(slice(None, -1))
_LAST = itemgetter(slice(-1, None))
_WITH_ID = '{}, "order_id": "{}"}}\n'


def hash_batch(
    hasher: OrderHasher, parsed: Parsed, threads: int | None
) -> tuple[list[str | None], list[tuple[int, str]]]:
    """Order ids of a batch (``None`` for a row the core refused) and the refusals."""
    n = len(parsed.lines)
    if n == 0:
        return [], []
    cols = [parsed.columns[name] for name in FIELDS]
    try:
        done: list[str] = hasher.order_ids(
            **dict(zip(KEYWORDS, cols, strict=True)), threads=threads
        )
        return _refuse_unservable(parsed, list[str | None](done), [])
    except ValidationError:
        pass
    # one row at a time: the core names the field and value of each bad row
    ids: list[str | None] = []
    rejects: list[tuple[int, str]] = []
    seqs = [not isinstance(c, (str, int)) and isinstance(c, Sequence) for c in cols]
    for i, line in enumerate(parsed.lines):
        row = [c[i] if seq else c for c, seq in zip(cols, seqs, strict=True)]  # type: ignore[index]
        try:
            ids.append(hasher.order_id(**dict(zip(FIELDS, row, strict=True))))
        except ValidationError as exc:
            ids.append(None)
            rejects.append((line, str(exc)))
    return _refuse_unservable(parsed, ids, rejects)


def _too_big(salt: object) -> bool:
    if type(salt) is str:
        digits = salt.lstrip("0")
        return len(digits) > 13 or (len(digits) == 13 and digits > "1000000000000")
    return type(salt) is int and salt > SALT_MAX


def _column(parsed: Parsed, name: str) -> list[Any]:
    values = parsed.columns[name]
    return values if isinstance(values, list) else [values] * len(parsed.lines)


def _refuse_unservable(
    parsed: Parsed, ids: list[str | None], rejects: list[tuple[int, str]]
) -> tuple[list[str | None], list[tuple[int, str]]]:
    """Rows the service would refuse get no id: a salt outside [0, 10**12] (POST
    /orders/raw), or amounts that break the raw-order ratio rule (zero, an
    implied price outside (0, 1), over the single-order maximum).

    The exchange struct hashes any uint256, so the core does not refuse these;
    an id for an order the service will not take is a lost order.
    """
    salts = _column(parsed, "salt")
    bad = [i for i, salt in enumerate(salts) if _too_big(salt) and ids[i] is not None]
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
    return ids, rejects


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
    """``csv`` or ``jsonl``, from the file name."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    raise InputError(f"{path}: unknown format (use a .csv, .jsonl or .ndjson file)")


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
) -> Summary:
    """Hash every order of ``input_path`` into ``output_path``; ``report`` gets each rejection.

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
        hasher = OrderHasher(load_wallet(wallet))
    except ValidationError as exc:
        raise InputError(f"the wallet {wallet}: {exc}") from None
    say = report or (lambda text: print(text, file=sys.stderr))
    try:
        raw = open(source_path, "rb")  # noqa: SIM115 - closed through source
        source = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot read {input_path}: {exc.strerror or exc}") from None
    part = target.with_name(f".{target.name}.part")
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
                fmt = CsvOrders(source.readline())
                out.write(fmt.header + "\n")
                line = 2
            else:
                fmt = JsonlOrders()
                line = 1
            with ThreadPoolExecutor(1, thread_name_prefix="clobkit-order-ids") as pool:
                pending: tuple[Parsed, Future[Any]] | None = None

                def finish(parsed: Parsed, job: Future[Any]) -> None:
                    nonlocal written, rejected
                    ids, late = job.result()
                    out.write(fmt.render(parsed, ids))
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
                    job = pool.submit(hash_batch, hasher, parsed, threads)
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
