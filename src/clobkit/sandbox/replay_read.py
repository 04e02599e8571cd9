"""A recording read for a replay: its books in arrival order, in the engine's terms,
checked as the API's, in memory that grows with the books held, not the recording.

Every file is read three times, a row group at a time (``clobkit.record.read``
bounds each file): ``index`` reads the times, kinds and tokens alone (each file's
earliest arrival per block of rows, which tokens have books); ``check`` decodes
and checks every row and counts what a replay will apply; the replay itself then
reads the rows again as its clock reaches them. A file changed between the
readings stops the replay (its status says so).

**Arrival order** is ``recv_ns``, then the order written: a row is handed on once
no row still unread can arrive before it (the earliest arrival of every block
still unread, from the index), so rows written after a later one (a snapshot's,
the books that came while it was read) wait in memory; more than ``MAX_HELD``
rows and levels waiting is refused (a recording in no order at all).

**A book** of the API: each price on the 0.01 grid in [0.01, 0.99], each size a
positive amount of USDC with at most 6 decimals and at most ``MAX_LEVEL_USDC``;
``recv_ns`` and ``service_ms`` non-negative, ``kind`` one of the recorder's. A row
that breaks one is refused naming its file, row and field (``clobkit.core.checks``'
bounded reader says the range).
"""

from __future__ import annotations

import heapq
import os
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

from ..core.checks import MAX_NUMBER_TEXT, bounded, bounded_int
from ..errors import ValidationError
from ..record import BOOK, GAP, SNAPSHOT, RecordedMarket
from ..record.read import file_batches, recording_files, refused
from .state import UNIT

__all__ = [
    "MAX_HELD",
    "MAX_LEVEL_USDC",
    "Index",
    "ReplayUpdate",
    "Tally",
    "check",
    "index",
    "updates",
]

#: The most rows and levels (a row counts 1, plus its levels) held waiting for rows
#: that arrived before them.
MAX_HELD = 1_000_000
#: The largest size of one recorded level (USDC).
MAX_LEVEL_USDC = 10**10
#: The latest a recorded time may be (int64's: in ns, the year 2262).
MAX_NS = 2**63 - 1
_KINDS = (BOOK, SNAPSHOT, GAP)
_GAP = _KINDS.index(GAP)
_BLOCK = 4096  # rows of a file summarized by their earliest arrival
_INDEX_COLUMNS = ("recv_ns", "kind", "token_id")
_ROW_COLUMNS = ("recv_ns", "service_ms", "kind", "token_id", "bids", "asks")
_PRICE = (Decimal("0.01"), Decimal("0.99"))
_SIZE = (Decimal(1) / UNIT, Decimal(MAX_LEVEL_USDC))


class ReplayUpdate(NamedTuple):
    """One recorded book of a market, in the engine's terms: A-space cents -> share units
    (a level's recorded size is USDC)."""

    at_ms: int  # virtual (recorded receive) time
    market_id: str
    bids: dict[int, int]
    asks: dict[int, int]


@dataclass(frozen=True)
class _File:
    path: Path
    stamp: tuple[int, ...]  # what the file was when indexed (device, inode, size, mtime)
    rows: int
    suffix: list[int]  # the earliest arrival of the rows from each block of _BLOCK on


@dataclass(frozen=True)
class Index:
    """A recording's files, ready to be read in arrival order (``index``)."""

    files: list[_File]
    later: list[int]  # the earliest arrival in the files after each one (MAX_NS + 1: none)
    tokens: dict[str, tuple[str, bool]]  # a served token -> (market, mirrored: token b)
    books: int  # rows other than gaps

    def bound(self, f: int, row: int) -> int:
        """No row of file ``f`` from ``row`` on, nor of a later file, arrived before this."""
        file = self.files[f]
        here = file.suffix[row // _BLOCK] if row < file.rows else MAX_NS + 1
        return min(here, self.later[f])


@dataclass
class Tally:
    """What a reading of the updates counted."""

    updates: int = 0
    stale: int = 0  # books older (service time) than the last one taken of their market
    first_ms: int | None = None
    last_ms: int | None = None
    markets: set[str] = field(default_factory=set)


def _stamp(path: Path) -> tuple[int, ...]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def index(directory: str | os.PathLike[str], markets: list[RecordedMarket]) -> Index:
    """Read a recording's arrival times, kinds and tokens (module doc); refuse a file
    past a bound, a time or kind out of range, and a recording with books but none of
    a market its ``markets.json`` lists."""
    files: list[_File] = []
    listed = [t for m in markets for t in (m.token_id_a, m.token_id_b)]
    seen: set[str] = set()  # the listed tokens of the rows that are no gap
    books = 0
    for path in recording_files(directory):
        try:
            stamp = _stamp(path)
        except OSError as exc:
            raise refused(path, f"cannot be read: {exc.strerror or exc}") from None
        mins: list[int] = []
        rows = 0
        for batch in file_batches(path, _INDEX_COLUMNS, stamp=stamp):
            # imported once a file passed its counts (a refused bomb never loads them)
            import numpy as np
            import pyarrow as pa
            import pyarrow.compute as pc

            recv = _times(path, batch, rows)
            kinds = _kinds(path, batch, rows)
            tokens = batch.column("token_id")
            book = kinds != _GAP
            books += int(book.sum())
            codes = _codes(tokens.indices)[book]
            # which listed token each text is (no other text made a Python string)
            found = pc.index_in(tokens.dictionary, value_set=pa.array(listed, pa.string()))
            which = np.append(_codes(found), -1)[np.unique(codes)]
            seen.update(listed[k] for k in which[which >= 0].tolist())
            start = rows % _BLOCK
            if start:  # the rest of the last block first
                take = min(_BLOCK - start, len(recv))
                mins[-1] = min(mins[-1], int(recv[:take].min()))
                recv = recv[take:]
            mins += [int(recv[k : k + _BLOCK].min()) for k in range(0, len(recv), _BLOCK)]
            rows += batch.num_rows
        suffix = list(accumulate(reversed(mins), min))[::-1]  # the earliest from each on
        files.append(_File(path, stamp, rows, suffix))
    later = [MAX_NS + 1] * len(files)
    for f in range(len(files) - 2, -1, -1):
        after = files[f + 1]
        later[f] = min(later[f + 1], after.suffix[0] if after.suffix else MAX_NS + 1)
    served = _served(markets, seen)
    if books and not any(t in served for t in seen):
        raise ValidationError(
            "recording", books, "has no book row of a market its markets.json lists"
        )
    return Index(files, later, served, books)


def _served(markets: list[RecordedMarket], seen: set[str]) -> dict[str, tuple[str, bool]]:
    """The tokens whose books a replay takes: each market's token a, or its token b
    (mirrored) where token a has no book in the recording."""
    served: dict[str, tuple[str, bool]] = {}
    for m in markets:
        served[m.token_id_a] = (m.market_id, False)
    for m in markets:
        if m.token_id_a not in seen and m.token_id_b not in served:
            served[m.token_id_b] = (m.market_id, True)
    return served


def _codes(indices: Any) -> Any:
    """A dictionary column's indices as an int64 array, -1 where null."""
    import numpy as np

    return np.asarray(indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _where(path: Path, row: int) -> str:
    return f"{path.name} row {row:,}"


def _again(exc: ValidationError, path: Path, row: int, field: str | None = None) -> ValidationError:
    """``exc`` naming the file and row it came from."""
    return ValidationError(field or exc.field, exc.value, f"{exc.reason} ({_where(path, row)})")


def _times(path: Path, batch: Any, first: int) -> Any:
    """The batch's ``recv_ns`` (int64), each present and non-negative."""
    import numpy as np

    column = batch.column("recv_ns")
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValidationError(
            "recv_ns", None, f"must be an int in every row ({_where(path, first + row)})"
        )
    recv = np.asarray(column.to_numpy(), dtype=np.int64)
    if len(recv) and recv.min() < 0:
        row = int(np.argmax(recv < 0))
        try:
            bounded_int(int(recv[row]), "recv_ns", 0, MAX_NS, unit="ns")
        except ValidationError as exc:
            raise _again(exc, path, first + row) from None
    return recv


def _kinds(path: Path, batch: Any, first: int) -> Any:
    """The batch's kinds as indices of ``_KINDS``; another (or none) is refused."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    column = batch.column("kind")
    known = pc.index_in(column.dictionary, value_set=pa.array(_KINDS))
    lookup = np.append(np.asarray(known.fill_null(-1).to_numpy(zero_copy_only=False), np.int64), -1)
    kinds = lookup[_codes(column.indices)]  # -1 (null) picks the appended -1
    if len(kinds) and kinds.min() < 0:
        row = int(np.argmax(kinds < 0))
        value = column[row].as_py()
        reason = f"must be {', '.join(_KINDS)} ({_where(path, first + row)})"
        raise ValidationError("kind", value, reason)
    return kinds


# -- the rows, checked, in arrival order -------------------------------------------------------


class _Row(NamedTuple):
    """A row a replay takes: a gap, or a book of a served token (A-space levels)."""

    recv_ns: int
    market_id: str  # "" for a gap
    service_ms: int | None
    bids: dict[int, int]
    asks: dict[int, int]
    weight: int  # 1, plus its levels


_NONE: dict[int, int] = {}  # the levels of a row read only to be counted (``check``)


def _level_value(text: object, name: str) -> int:
    """A level's price (cents) or size (units of USDC), read by the bounded reader."""
    if name == "price":
        return int(bounded(text, name, *_PRICE, places=2, text=True) * 100)
    return int(bounded(text, name, *_SIZE, places=6, text=True, unit="USDC") * UNIT)


def _values(texts: list[object], name: str) -> list[int | None]:
    """Each text's value (``_level_value``), None where it is refused."""
    out: list[int | None] = []
    for text in texts:
        try:
            out.append(_level_value(text, name))
        except ValidationError:
            out.append(None)
    return out


def _parsed(path: Path, values: Any, offsets: Any, first: int, what: tuple[str, str]) -> Any:
    """Each level's price in cents or size in units (int64), every one checked: each
    distinct text once, one longer than any number never made a Python string."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    side, name = what
    codes = _codes(values.indices)
    used = np.unique(codes)
    valid = used[used >= 0]
    lengths = _codes(pc.binary_length(values.dictionary))
    short = valid[lengths[valid] <= MAX_NUMBER_TEXT]
    read = _values(values.dictionary.take(pa.array(short, pa.int64())).to_pylist(), name)
    lookup = np.zeros(len(values.dictionary) + 1, dtype=np.int64)  # the last: null's
    lookup[short] = [v or 0 for v in read]
    bad = [c for c, v in zip(short.tolist(), read, strict=True) if v is None]
    bad += valid[lengths[valid] > MAX_NUMBER_TEXT].tolist()
    bad += [-1] if len(used) and used[0] < 0 else []  # a null price or size, or level
    if not bad:
        return lookup[codes]
    at = int(np.flatnonzero(np.isin(codes, bad))[0])  # the first refused level, in order
    row = int(np.searchsorted(offsets, at, side="right")) - 1
    code = int(codes[at])
    text = None  # (a long one cut: still longer than any number)
    if code >= 0:
        text = pc.utf8_slice_codeunits(values.dictionary.slice(code, 1), 0, 80)[0].as_py()
    try:
        _level_value(text, name)
    except ValidationError as exc:
        raise _again(exc, path, first + row, f"{side}[{at - int(offsets[row])}].{name}") from None
    raise AssertionError("a refused value was accepted")  # pragma: no cover


def _levels(
    path: Path, batch: Any, side: str, first: int
) -> tuple[list[int], list[int], list[int]]:
    """A side's levels of every row of ``batch``: the offsets of each row's levels, each
    level's price (cents) and shares (units showing its USDC size), checked."""
    import numpy as np
    import pyarrow.compute as pc

    column = batch.column(side)
    lengths = np.asarray(pc.list_value_length(column).fill_null(0).to_numpy(), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    price, size = column.flatten().flatten()  # nulls of a level, or of a side, carried down
    cents = _parsed(path, price, offsets, first, (side, "price"))
    units = _parsed(path, size, offsets, first, (side, "size"))
    # a level's size is USDC, floor(shares * price) in units: the fewest shares
    # showing that size give the same size back (units <= 10**16: no overflow)
    shares = -(-units * 100 // np.maximum(cents, 1))
    return offsets.tolist(), cents.tolist(), shares.tolist()


def _book(side: tuple[list[int], list[int], list[int]], row: int, mirror: bool) -> dict[int, int]:
    """Row ``row``'s levels of one side as A-space cents -> shares (equal prices added)."""
    offsets, cents, shares = side
    lo, hi = offsets[row], offsets[row + 1]
    prices = cents[lo:hi] if not mirror else [100 - c for c in cents[lo:hi]]
    book = dict(zip(prices, shares[lo:hi], strict=True))
    if len(book) < hi - lo:  # a price twice: its sizes add up
        book = {}
        for price, n in zip(prices, shares[lo:hi], strict=True):
            book[price] = book.get(price, 0) + n
    return book


def _service(path: Path, batch: Any, first: int) -> list[int | None]:
    """The batch's ``service_ms``: each absent or non-negative."""
    values: list[int | None] = batch.column("service_ms").to_pylist()
    for row, ms in enumerate(values):
        if ms is not None and ms < 0:
            try:
                bounded_int(ms, "service_ms", 0, MAX_NS, unit="ms")
            except ValidationError as exc:
                raise _again(exc, path, first + row) from None
    return values


def _decode(
    path: Path, batch: Any, first: int, idx: Index, books: bool
) -> list[tuple[int, int, _Row]]:
    """The rows of ``batch`` a replay takes, each (recv_ns, row, _Row); every row checked."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    recv = _times(path, batch, first).tolist()
    kinds = _kinds(path, batch, first).tolist()
    service = _service(path, batch, first)
    sides = {side: _levels(path, batch, side, first) for side in ("bids", "asks")}
    tokens = batch.column("token_id")
    served = list(idx.tokens)
    found = pc.index_in(tokens.dictionary, value_set=pa.array(served, pa.string()))
    lookup = np.append(np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), np.int64), -1)
    which = lookup[_codes(tokens.indices)].tolist()
    out = []
    for row, recv_ns in enumerate(recv):
        if kinds[row] == _GAP:
            out.append((recv_ns, first + row, _Row(recv_ns, "", None, _NONE, _NONE, 1)))
            continue
        if which[row] < 0:
            continue  # another token's row (or token b where token a was recorded)
        market_id, mirror = idx.tokens[served[which[row]]]
        bids, asks = (sides["asks"], sides["bids"]) if mirror else (sides["bids"], sides["asks"])
        weight = 1 + sum(s[0][row + 1] - s[0][row] for s in sides.values())
        levels = (_book(bids, row, mirror), _book(asks, row, mirror)) if books else (_NONE, _NONE)
        out.append((recv_ns, first + row, _Row(recv_ns, market_id, service[row], *levels, weight)))
    out.sort(key=lambda item: item[0])  # stable: in the order written within a ns
    return out


def _arrival(idx: Index, books: bool) -> Iterator[_Row]:
    """The rows a replay takes, in arrival order (module doc)."""
    pending: list[tuple[int, int, _Row]] = []  # sorted by (recv_ns, position written)
    held = 0
    position = 0  # rows of the files before this one
    for f, file in enumerate(idx.files):
        first = 0
        for batch in file_batches(file.path, _ROW_COLUMNS, stamp=file.stamp):
            new = [
                (t, position + row, r) for t, row, r in _decode(file.path, batch, first, idx, books)
            ]
            pending = list(heapq.merge(pending, new))
            first += batch.num_rows
            cut = bisect_right(pending, (idx.bound(f, first), float("inf")))
            for _, _, row in pending[:cut]:
                yield row
            pending = pending[cut:]
            held = sum(r.weight for _, _, r in pending)
            if held > MAX_HELD:
                raise refused(
                    file.path,
                    f"row {first - 1:,}: more than {MAX_HELD:,} rows and levels wait for rows "
                    "that arrived before them (recv_ns): the rows are in no arrival order",
                )
        position += file.rows
    for _, _, row in pending:
        yield row


def updates(idx: Index, tally: Tally | None = None) -> Iterator[ReplayUpdate]:
    """The recorded books in the engine's terms, in arrival order; a market's book whose
    service time is older than the last one taken is left out (counted in ``tally``),
    and a gap starts the comparison afresh (``replay``'s module doc)."""
    return _updates(idx, tally, books=True)


def check(idx: Index) -> Tally:
    """Read and check every row (a ``ValidationError`` names the first bad one); what a
    replay of the recording will apply."""
    tally = Tally()
    for _ in _updates(idx, tally, books=False):
        pass
    return tally


def _updates(idx: Index, tally: Tally | None, *, books: bool) -> Iterator[ReplayUpdate]:
    served: dict[str, int] = {}  # market -> the service time of its last book taken
    for r in _arrival(idx, books):
        if not r.market_id:  # a gap: the service may have restarted, its clock too
            served.clear()
            continue
        if r.service_ms is not None:
            if r.service_ms < served.get(r.market_id, r.service_ms):
                if tally is not None:
                    tally.stale += 1  # superseded before it arrived
                continue
            served[r.market_id] = r.service_ms
        at_ms = r.recv_ns // 1_000_000
        if tally is not None:
            tally.updates += 1
            tally.last_ms = at_ms
            if tally.first_ms is None:
                tally.first_ms = at_ms
            tally.markets.add(r.market_id)
        yield ReplayUpdate(at_ms, r.market_id, r.bids, r.asks)
