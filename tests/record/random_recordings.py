"""Hostile recordings for the replay's fuzz tests (issue #42): random rows of every type,
size, null and order, written with random Parquet encodings, and an oracle of what a
replay must make of them, written from the rules (docs/backtesting.md), not from
the replay's code.

A recording is a list of files, each a list of rows and an encoding. The oracle says
either that the recording must be refused, or the exact updates a replay applies,
in order: (ms, market, bids, asks), each side A-space cents -> shares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation, localcontext
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from clobkit.record import RecordedMarket, RecordingWriter

MARKET = RecordedMarket("00000000-0000-4000-8000-00000000000f", None, "Q", "41", "42")
TOKENS = (MARKET.token_id_a, MARKET.token_id_b, "43", None, "", "\u0664\u0661")
T0 = 1_764_547_200_000_000_000
UNIT = 10**6
KINDS = ("book", "snapshot", "gap")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


# a recording of the recorder's own values, then (about one in two) a few of them
# replaced by hostile ones: types, sizes, nulls, encodings; the order is random throughout
_price = st.integers(1, 99).map(lambda c: f"0.{c:02d}") | st.sampled_from(
    ["0.470", ".5", "5e-1", " 0.47", "1e-2", "0.99", "0.01", "4.7E-1"]
)
_size = st.decimals(Decimal("0.000001"), Decimal(10**6), places=6).map(str) | st.integers(1, 10**10)
_level = st.fixed_dictionaries({"price": _price, "size": _size})
_sides = st.lists(_level, max_size=4) | st.none()
_row = st.fixed_dictionaries(
    {
        "recv_ns": st.integers(-3, 40).map(lambda k: T0 + k * 250_000_000) | st.just(0),
        "service_ms": st.none() | st.integers(0, 40) | st.just(2**62),
        "kind": st.sampled_from(KINDS),
        "token_id": st.sampled_from(TOKENS[:2] * 3 + TOKENS[2:]),
        "bids": _sides,
        "asks": _sides,
    }
)
_HOSTILE: dict[str, st.SearchStrategy[Any]] = {
    "price": st.sampled_from(["0.475", "0", "1", "1.00", "-0.47", "NaN", "0.001", "Infinity"])
    | st.sampled_from(["1e999999999", "\u0660.\u0664\u0667", "0.4_7", "", "0x1", "0." + "4" * 70])
    | st.floats(0, 1.5)
    | st.just(float("nan"))
    | st.none()
    | st.text(max_size=8),
    "size": st.sampled_from(["0.0000001", "0", "-1", "1e11", "10000000000.000001", "abc"])
    | st.integers(-5, 0)
    | st.floats(0.5, 10**6)  # more than 6 decimals, most of them
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.none(),
    "level": st.none(),  # a null level
    "recv_ns": st.sampled_from([None, -1, 2**63 - 1]),
    "service_ms": st.sampled_from([-1, -(2**62)]),
    "kind": st.sampled_from([None, "", "BOOK", "b\u00f6ok", "gap "]),
    "book": st.integers(5, 6),  # a side of that many levels (past the bound set here)
    "rows": st.integers(8, 9),  # a file of that many rows (past the bound set here)
}
_mutation = st.tuples(
    st.sampled_from(sorted(_HOSTILE)), st.integers(0, 99), st.integers(0, 99), st.data()
)


def _mutate(files: list[tuple[list[dict[str, Any]], Any]], mutations: list[Any]) -> list[Any]:
    """``files`` with each mutation's hostile value put at a place it picks."""
    for field, f, k, data in mutations:
        file_rows = files[f % len(files)][0]
        if field == "rows":
            extra = data.draw(st.lists(_row, min_size=1, max_size=1))[0]
            file_rows += [extra] * (data.draw(_HOSTILE[field]) - len(file_rows))
            continue
        if not file_rows:
            continue
        row = file_rows[k % len(file_rows)]
        if field in ("recv_ns", "service_ms", "kind"):
            row[field] = data.draw(_HOSTILE[field])
            continue
        side = row["bids"] if k % 2 else row["asks"]
        if field == "book":
            row["bids"] = [{"price": "0.47", "size": "1"}] * data.draw(_HOSTILE[field])
        elif side:
            at = k % len(side)
            value = data.draw(_HOSTILE[field])
            side[at] = None if field == "level" else {**side[at], field: value}
    return files


@dataclass(frozen=True)
class Encoding:
    """How one file is written."""

    time_type: str  # recv_ns as int64, int32, float64 or string
    number_leaves: bool  # prices and sizes as float64 where every one is a number
    large_lists: bool
    dictionary: bool
    compression: str
    row_group: int
    page_version: str


encodings = st.builds(
    Encoding,
    time_type=st.sampled_from(["int64", "int32", "float64", "string"]),
    number_leaves=st.booleans(),
    large_lists=st.booleans(),
    dictionary=st.booleans(),
    compression=st.sampled_from(["none", "snappy", "zstd", "gzip"]),
    row_group=st.sampled_from([1, 2, 5, 1000]),
    page_version=st.sampled_from(["1.0", "2.0"]),
)
recordings = st.builds(
    _mutate,
    st.lists(st.tuples(st.lists(_row, max_size=7), encodings), min_size=1, max_size=3),
    st.lists(_mutation, max_size=2) | st.just([]),
)


# -- writing -----------------------------------------------------------------------------------


def write(directory: Path, files: list[tuple[list[dict[str, Any]], Encoding]]) -> None:
    """The recording: markets.json (the recorder's), then each file as encoded."""
    RecordingWriter(directory, [MARKET]).write_markets()
    seq = 0
    for k, (file_rows, enc) in enumerate(files):
        table = _table(file_rows, enc, seq)
        seq += len(file_rows)
        path = directory / f"book-{k:012d}-20251201T000000.parquet"
        pq.write_table(
            table,
            path,
            compression=enc.compression,
            row_group_size=enc.row_group,
            use_dictionary=enc.dictionary,
            data_page_version=enc.page_version,
        )


def _table(file_rows: list[dict[str, Any]], enc: Encoding, seq: int) -> pa.Table:
    times = [r["recv_ns"] for r in file_rows]
    if enc.time_type == "int32":
        times = [None if t is None else t % 2**31 for t in times]  # what fits, said below
    time_type = {"int64": pa.int64(), "int32": pa.int32()}.get(enc.time_type, pa.int64())
    recv = pa.array(times, time_type)
    if enc.time_type in ("float64", "string"):  # (a float rounds past 2**53, as written)
        recv = recv.cast(pa.float64() if enc.time_type == "float64" else pa.string(), safe=False)
    leaf = pa.float64() if _numbers_only(file_rows, enc) else pa.string()
    level = pa.struct([("price", leaf), ("size", leaf)])
    kind = pa.large_list(level) if enc.large_lists else pa.list_(level)
    return pa.table(
        {
            "seq": pa.array(range(seq, seq + len(file_rows)), pa.int64()),
            "recv_ns": recv,
            "service_ms": pa.array([r["service_ms"] for r in file_rows], pa.int64()),
            "kind": pa.array([r["kind"] for r in file_rows], pa.string()),
            "market_id": pa.array([MARKET.market_id] * len(file_rows), pa.string()),
            "token_id": pa.array([r["token_id"] for r in file_rows], pa.string()),
            "bids": pa.array([_side(r["bids"], leaf) for r in file_rows], kind),
            "asks": pa.array([_side(r["asks"], leaf) for r in file_rows], kind),
        }
    )


def _numbers_only(file_rows: list[dict[str, Any]], enc: Encoding) -> bool:
    """Whether every price and size of the file can be written as a float64."""
    values = [v for r in file_rows for side in ("bids", "asks") for lv in r[side] or () if lv
              for v in lv.values()]  # fmt: skip
    return enc.number_leaves and all(
        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values
    )


def _side(side: list[Any] | None, leaf: pa.DataType) -> list[Any] | None:
    if side is None:
        return None
    out: list[dict[str, Any] | None] = []
    for lv in side:
        if lv is None:
            out.append(None)
        elif pa.types.is_floating(leaf):
            out.append({k: None if v is None else float(v) for k, v in lv.items()})
        else:
            out.append({k: _text(v) for k, v in lv.items()})
    return out


def _text(value: Any) -> str | None:
    """A level's value as the file holds it when its leaves are strings."""
    if value is None or isinstance(value, str):
        return value
    return pa.array([value]).cast(pa.string())[0].as_py()  # type: ignore[no-any-return]


# -- the oracle --------------------------------------------------------------------------------


class Refused(Exception):
    """The oracle's verdict: the recording must be refused."""


def expected(
    files: list[tuple[list[dict[str, Any]], Encoding]], bounds: dict[str, int]
) -> tuple[list[Any], int]:
    """The updates a replay applies (at_ms, market, bids, asks) and the stale books, or
    ``Refused``; ``bounds``: the readers' (MAX_BOOK_LEVELS, MAX_FILE_ROWS, MAX_FILE_LEVELS)."""
    with localcontext(Context(prec=400)):  # exact: the oracle never rounds
        return _expected(files, bounds)


def _expected(
    files: list[tuple[list[dict[str, Any]], Encoding]], bounds: dict[str, int]
) -> tuple[list[Any], int]:
    read: list[tuple[int, int, dict[str, Any], bool]] = []  # (recv_ns, position, row, floats)
    for file_rows, enc in files:
        _check_file(file_rows, bounds)
        floats = _numbers_only(file_rows, enc)
        for r in file_rows:
            read.append((_time(r["recv_ns"], enc), len(read), r, floats))
    for _, _, r, floats in read:
        _check_row(r, floats)
    books = [r for _, _, r, _ in read if r["kind"] != "gap"]
    with_a = any(r["token_id"] == MARKET.token_id_a for r in books)
    served = {MARKET.token_id_a: False} | ({} if with_a else {MARKET.token_id_b: True})
    if books and not any(r["token_id"] in served for r in books):
        raise Refused("no book of a listed market")
    out, stale, last = [], 0, None
    for recv, _, r, floats in sorted(read, key=lambda item: item[:2]):
        if r["kind"] == "gap":
            last = None
        elif r["token_id"] in served:
            ms = r["service_ms"]
            if ms is not None and last is not None and ms < last:
                stale += 1
                continue
            last = last if ms is None else ms
            mirror = served[r["token_id"]]
            bids = _book(r["asks" if mirror else "bids"], mirror, floats)
            asks = _book(r["bids" if mirror else "asks"], mirror, floats)
            out.append((recv // 1_000_000, MARKET.market_id, bids, asks))
    return out, stale


def _check_row(r: dict[str, Any], floats: bool) -> None:
    """A row of the API's: its kind, its service time, each level's price and size."""
    if r["kind"] not in KINDS:
        raise Refused("kind")
    if r["service_ms"] is not None and r["service_ms"] < 0:
        raise Refused("service_ms")
    for side in ("bids", "asks"):
        for lv in r[side] or ():
            if lv is None:
                raise Refused("a null level")
            _cents(_as_file(lv["price"], floats))
            _units(_as_file(lv["size"], floats))


def _check_file(file_rows: list[dict[str, Any]], bounds: dict[str, int]) -> None:
    """A file's counts within the bounds: rows, levels as its metadata counts them (an
    empty or null side takes one value), levels a side of each book."""
    if len(file_rows) > bounds["MAX_FILE_ROWS"]:
        raise Refused("rows")
    sides = [r[side] for r in file_rows for side in ("bids", "asks")]
    if sum(max(len(s or ()), 1) for s in sides) > bounds["MAX_FILE_LEVELS"]:
        raise Refused("levels of a file")
    if any(len(s or ()) > bounds["MAX_BOOK_LEVELS"] for s in sides):
        raise Refused("levels of a book")


def _time(value: Any, enc: Encoding) -> int:
    if value is None:
        raise Refused("recv_ns null")
    if enc.time_type == "int32":
        value %= 2**31
    if enc.time_type == "float64":
        value = int(float(value))  # as the file holds it: 2**63 - 1 rounds up to 2**63
    if value < 0:
        raise Refused("recv_ns negative")
    if value >= 2**63:
        raise Refused("recv_ns past int64")
    return int(value)


def _as_file(value: Any, floats: bool) -> Any:
    """What the replay reads for a level's value: its text (a float64 leaf's too)."""
    if floats and value is not None:
        return _text(float(value))
    return _text(value)


def _cents(text: Any) -> int:
    number = _number(text)
    if not Decimal("0.01") <= number <= Decimal("0.99") or number * 100 % 1:
        raise Refused(f"price {text!r}")
    return int(number * 100)


def _units(text: Any) -> int:
    number = _number(text)
    if not Decimal("0.000001") <= number <= Decimal(10**10) or number * UNIT % 1:
        raise Refused(f"size {text!r}")
    return int(number * UNIT)


def _number(text: Any) -> Decimal:
    if not isinstance(text, str) or len(text) > 64 or not _NUMBER.fullmatch(text.strip()):
        raise Refused(f"not a number: {text!r}")
    try:
        return Decimal(text.strip())
    except InvalidOperation:
        raise Refused(f"not a number: {text!r}") from None


def _book(side: list[Any] | None, mirror: bool, floats: bool) -> dict[int, int]:
    book: dict[int, int] = {}
    for lv in side or ():
        cents = _cents(_as_file(lv["price"], floats))
        units = _units(_as_file(lv["size"], floats))
        shares = -(-units * 100 // cents)  # the fewest shares showing that USDC
        price = 100 - cents if mirror else cents
        book[price] = book.get(price, 0) + shares
    return book
