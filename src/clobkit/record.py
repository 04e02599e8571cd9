"""Record the market: every book update of some markets, as rows of Parquet (the data extra).

``await record(client, "rec/", market_ids=[...], duration=60)`` or, for more
control, ``Recorder(client, "rec/", markets)``; ``clobkit record`` is the same
on the command line. docs/backtesting.md describes the files; the sandbox
replays them (``clobkit sandbox --replay DIR``).

One row per message, not per level: the service sends a whole book with every
update of the ``market:<token>:book`` topic, so a row holds that book as
received (``bids`` and ``asks``, lists of ``{price, size}`` strings exactly as
sent). The hot path appends the decoded message and nothing else; any book of
the recording is one row, so a replay needs no state to rebuild it; and
Parquet's dictionary and zstd encodings take out most of the repetition.

Rows are held in memory and written as one file at each rotation (every
``rotate_seconds``, or sooner when ``rotate_bytes`` of rows are held), to a
``.part`` name renamed when complete: a crash loses at most the rows of the
open file, never a written one, and memory stays bounded. Cancellation
(Ctrl-C) writes the open file before it returns. A reconnect of the stream
writes a ``gap`` row and a fresh REST ``snapshot`` of every book.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ._spec import book_topic
from .errors import MissingExtra, OrderBookNotFound, ValidationError

if TYPE_CHECKING:
    import pyarrow as pa

    from .client import AsyncClient, Stream
    from .models import Orderbook

__all__ = [
    "BOOK",
    "GAP",
    "MARKETS_FILE",
    "SNAPSHOT",
    "BookRow",
    "RecordStats",
    "RecordedMarket",
    "Recorder",
    "RecordingWriter",
    "iter_rows",
    "read_markets",
    "record",
    "resolve_markets",
]

BOOK = "book"  # a book message of the stream
SNAPSHOT = "snapshot"  # a book read over REST (at the start and after a reconnect)
GAP = "gap"  # the stream reconnected: messages may have been lost before this row
MARKETS_FILE = "markets.json"
_ROW_BYTES = 600  # estimated bytes of Python objects a row holds besides its levels
_LEVEL_BYTES = 300  # estimated bytes of one level held (a dict of two strings)


def _pa() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ModuleNotFoundError as exc:
        raise MissingExtra(
            f"recording needs the data extra (missing {exc.name}): pip install 'clobkit[data]'"
        ) from None
    return pa


def _schema() -> pa.Schema:
    pa = _pa()
    level = pa.list_(pa.struct([("price", pa.string()), ("size", pa.string())]))
    return pa.schema(
        [
            ("seq", pa.int64()),  # the message's number in the recording, from 0
            ("recv_ns", pa.int64()),  # receive time, ns since the epoch (this machine)
            ("service_ms", pa.int64()),  # the book's updated_at_ms (the service's clock)
            ("kind", pa.dictionary(pa.int8(), pa.string())),  # book | snapshot | gap
            ("market_id", pa.dictionary(pa.int32(), pa.string())),
            ("token_id", pa.dictionary(pa.int32(), pa.string())),
            ("bids", level),  # best first, as sent
            ("asks", level),
        ]
    )


class RecordedMarket(NamedTuple):
    """A market being recorded: its id, event, question and the two outcome tokens."""

    market_id: str
    event_id: str | None
    question: str | None
    token_id_a: str
    token_id_b: str


class BookRow(NamedTuple):
    """One row read back: a book (or a gap marker, with empty fields)."""

    seq: int
    recv_ns: int
    service_ms: int | None
    kind: str
    market_id: str | None
    token_id: str | None
    bids: list[tuple[str, str]]  # (price, size) strings, best first
    asks: list[tuple[str, str]]


class RecordStats:
    """Counters of a recording so far (also its closing summary)."""

    __slots__ = ("bytes", "files", "gaps", "lag_ms", "markets", "rows", "started_ns", "updates")

    def __init__(self, markets: int, started_ns: int) -> None:
        self.markets = markets
        self.updates = 0  # book messages received from the stream
        self.rows = 0  # rows handed to files (updates + snapshots + gaps)
        self.gaps = 0
        self.files = 0
        self.bytes = 0  # bytes of the files written
        self.lag_ms: int | None = None  # receive time minus the service's time, last update
        self.started_ns = started_ns

    def line(self, now_ns: int | None = None) -> str:
        """A one-line summary: markets, updates (and their rate), files, bytes, lag."""
        elapsed = max(((now_ns or time.time_ns()) - self.started_ns) / 1e9, 1e-9)
        lag = "-" if self.lag_ms is None else f"{self.lag_ms} ms"
        return (
            f"markets {self.markets}, updates {self.updates:,} ({self.updates / elapsed:,.0f}/s), "
            f"gaps {self.gaps}, files {self.files}, {self.bytes / 1e6:,.2f} MB, lag {lag}"
        )


async def resolve_markets(
    client: AsyncClient,
    *,
    market_ids: Iterable[str] = (),
    event_ids: Iterable[str] = (),
    leagues: Iterable[str] = (),
) -> list[RecordedMarket]:
    """The markets named by id, by event (all its markets) and by league (the markets of
    its events not ended), each once, in that order."""
    found: dict[str, RecordedMarket] = {}

    def add(m: Any, event_id: str | None) -> None:
        if m.token_id_a and m.token_id_b and m.id not in found:
            event = m.event_id or event_id
            found[m.id] = RecordedMarket(m.id, event, m.question, m.token_id_a, m.token_id_b)

    for market_id in market_ids:
        add(await client.get_market(market_id), None)
    events = list(event_ids)
    for league in leagues:
        events += [e.id async for e in client.iter_events(league=league) if not e.ended]
    for event_id in events:
        for m in await client.get_event_markets(event_id):
            add(m, event_id)
    return list(found.values())


def _levels(levels: Any) -> list[dict[str, str]]:
    return [{"price": str(lv.price), "size": str(lv.size)} for lv in levels]


def _text_levels(levels: Any) -> list[dict[str, str]]:
    """Levels whose price or size is not a string (a number on the wire) as strings."""
    if not isinstance(levels, list):
        return []
    return [
        {"price": str(lv.get("price")), "size": str(lv.get("size"))}
        for lv in levels
        if isinstance(lv, dict)
    ]


class RecordingWriter:
    """The files of a recording: rows held, then written at each rotation (module doc).

    ``Recorder`` feeds it from the stream; a program of its own (a converter, a
    synthetic day) may call ``add`` and ``flush`` directly.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        markets: Sequence[RecordedMarket],
        *,
        outcomes: str = "ab",
        rotate_seconds: float = 30.0,
        rotate_bytes: int = 32 << 20,
    ) -> None:
        if not markets:
            raise ValidationError("markets", list(markets), "name at least one market")
        if not outcomes or set(outcomes) - {"a", "b"}:
            raise ValidationError("outcomes", outcomes, "must be 'a', 'b' or 'ab'")
        if not rotate_seconds > 0:
            raise ValidationError("rotate_seconds", rotate_seconds, "must be positive")
        if isinstance(rotate_bytes, bool) or not isinstance(rotate_bytes, int) or rotate_bytes < 1:
            raise ValidationError("rotate_bytes", rotate_bytes, "must be a positive int")
        self._pa = _pa()
        self._schema = _schema()
        self.directory = Path(directory)
        self.markets = list(markets)
        self._token_market: dict[str, str] = {}
        for m in self.markets:
            if "a" in outcomes:
                self._token_market[m.token_id_a] = m.market_id
            if "b" in outcomes:
                self._token_market[m.token_id_b] = m.market_id
        self.rotate_seconds = rotate_seconds
        self.rotate_bytes = rotate_bytes
        self.stats = RecordStats(len(self.markets), time.time_ns())
        self._seq = 0
        self._rows: list[tuple[int, int, int | None, str, str | None, str | None, Any, Any]] = []
        self._held = 0  # estimated bytes of the rows held
        self._opened = time.monotonic()
        self._writing: asyncio.Task[None] | None = None

    # -- the hot path ------------------------------------------------------------------------

    def add(self, kind: str, token: str | None, data: Any, recv_ns: int) -> None:
        """Hold one row: a book message's ``data`` (a dict as decoded), or a gap."""
        market = None if token is None else self._token_market.get(token)
        bids = asks = ()
        service_ms = None
        if isinstance(data, dict):
            bids = data.get("bids") or ()
            asks = data.get("asks") or ()
            stamp = data.get("updated_at_ms")
            if isinstance(stamp, int) and not isinstance(stamp, bool):
                service_ms = stamp
                if kind == BOOK:
                    self.stats.lag_ms = recv_ns // 1_000_000 - stamp
        self._rows.append((self._seq, recv_ns, service_ms, kind, market, token, bids, asks))
        self._seq += 1
        self._held += _ROW_BYTES + _LEVEL_BYTES * (len(bids) + len(asks))
        if kind == BOOK:
            self.stats.updates += 1

    def due(self) -> bool:
        """True when the rows held should be written (``rotate``): time or size reached."""
        return (
            self._held >= self.rotate_bytes
            or time.monotonic() - self._opened >= self.rotate_seconds
        )

    # -- files -------------------------------------------------------------------------------

    def _table(self, rows: list[Any]) -> pa.Table:
        pa = self._pa
        columns = list(zip(*rows, strict=True))
        level_type = self._schema.field("bids").type
        levels = []
        for column in (columns[6], columns[7]):
            try:
                levels.append(pa.array(column, type=level_type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # noqa: PERF203 - numbers on the wire
                levels.append(pa.array([_text_levels(c) for c in column], type=level_type))
        arrays = [
            pa.array(columns[0], pa.int64()),
            pa.array(columns[1], pa.int64()),
            pa.array(columns[2], pa.int64()),
            pa.array(columns[3], pa.string()).dictionary_encode().cast(self._schema[3].type),
            pa.array(columns[4], pa.string()).dictionary_encode(),
            pa.array(columns[5], pa.string()).dictionary_encode(),
            *levels,
        ]
        return pa.Table.from_arrays(arrays, schema=self._schema)

    def _write(self, rows: list[Any]) -> None:
        """One complete file of ``rows``, under a ``.part`` name until it is whole."""
        table = self._table(rows)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(rows[0][1] / 1e9))
        path = self.directory / f"book-{rows[0][0]:012d}-{stamp}.parquet"
        part = path.with_name(path.name + ".part")
        self._pa.parquet.write_table(table, part, compression="zstd")
        os.replace(part, path)
        self.stats.files += 1
        self.stats.bytes += path.stat().st_size

    async def rotate(self) -> None:
        """Write the rows held as one file (in a thread; at most one write in flight)."""
        await self._drain()
        rows, self._rows, self._held = self._rows, [], 0
        self._opened = time.monotonic()
        if rows:
            self.stats.rows += len(rows)
            self._writing = asyncio.create_task(asyncio.to_thread(self._write, rows))

    async def _drain(self) -> None:
        writing = self._writing
        if writing is not None:
            await asyncio.shield(writing)  # a cancelled caller leaves the write to flush
            self._writing = None

    async def flush(self) -> None:
        """Write everything held and wait for the writes (what cancellation does)."""
        await self.rotate()
        await self._drain()

    def write_markets(self) -> None:
        """Write ``markets.json``: the recorded markets and the recording's start. A
        directory that already holds a recording is refused (its rows would mix)."""
        if (self.directory / MARKETS_FILE).exists() or recording_files(self.directory):
            raise ValidationError(
                "directory", str(self.directory), "already holds a recording: use a new one"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        info = {
            "format": 1,
            "started_ns": self.stats.started_ns,
            "markets": [m._asdict() for m in self.markets],
        }
        (self.directory / MARKETS_FILE).write_text(json.dumps(info, indent=1) + "\n")


class Recorder(RecordingWriter):
    """Records the book topics of ``markets`` into ``directory`` until cancelled.

    ``await Recorder(client, "rec/", markets).run(duration=60)``; ``run``
    returns its ``RecordStats`` (also ``stats`` while it runs) and writes the
    open file when cancelled. ``on_progress(stats)`` is called every
    ``progress_seconds``. ``outcomes``: which tokens' books ("a", "b" or both);
    the other options go to ``RecordingWriter``.
    """

    def __init__(
        self,
        client: AsyncClient,
        directory: str | os.PathLike[str],
        markets: Sequence[RecordedMarket],
        *,
        on_progress: Callable[[RecordStats], None] | None = None,
        progress_seconds: float = 1.0,
        **options: Any,
    ) -> None:
        super().__init__(directory, markets, **options)
        self.client = client
        self._topics = {book_topic(t): t for t in self._token_market}
        self.on_progress = on_progress
        self.progress_seconds = progress_seconds

    async def snapshot(self) -> None:
        """Hold a REST snapshot of every recorded book (an empty one where none exists)."""

        async def one(token: str) -> Orderbook | None:
            with contextlib.suppress(OrderBookNotFound):
                return await self.client.get_orderbook(token)
            return None

        tokens = list(self._token_market)
        books = await asyncio.gather(*(one(t) for t in tokens))
        now = time.time_ns()
        for token, book in zip(tokens, books, strict=True):
            data: dict[str, Any] = {"bids": [], "asks": []}
            if book is not None:
                data = {
                    "bids": _levels(book.bids),
                    "asks": _levels(book.asks),
                    "updated_at_ms": book.updated_at_ms,
                }
            self.add(SNAPSHOT, token, data, now)

    async def _consume(self, stream: Stream) -> None:
        from .models import Reconnected

        topics = self._topics
        async for item in stream:
            recv = time.time_ns()
            if isinstance(item, Reconnected):
                self.add(GAP, None, None, recv)
                self.stats.gaps += 1
                await self.snapshot()
            elif item.type == "data" and item.topic in topics:
                self.add(BOOK, topics[item.topic], item.data, recv)
            if self._held >= self.rotate_bytes:
                await self.rotate()

    async def run(self, duration: float | None = None) -> RecordStats:
        """Record until cancelled (or for ``duration`` seconds); the open file is written
        before this returns or re-raises."""
        self.write_markets()
        stream = self.client.stream(list(self._topics), max_queue=100_000)
        deadline = None if duration is None else time.monotonic() + duration
        progress = time.monotonic() + self.progress_seconds
        consumer: asyncio.Task[None] | None = None
        try:
            await stream.start()
            await self.snapshot()
            # the consumer alone takes items off the stream; this loop rotates, reports
            # and stops it (a timeout around each read could drop an item as it arrives)
            consumer = asyncio.create_task(self._consume(stream))
            while not consumer.done():
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                wake = min(self._opened + self.rotate_seconds, progress, now + 0.25)
                if deadline is not None:
                    wake = min(wake, deadline)
                await asyncio.wait({consumer}, timeout=max(wake - now, 0))
                if self.due():
                    await self.rotate()
                if self.on_progress is not None and time.monotonic() >= progress:
                    progress = time.monotonic() + self.progress_seconds
                    self.on_progress(self.stats)
            if consumer.done():
                consumer.result()  # the stream's failure, if it failed
        finally:
            if consumer is not None and not consumer.done():
                consumer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await consumer
            try:
                await self.flush()
            finally:
                await stream.close()
        return self.stats


async def record(
    client: AsyncClient,
    directory: str | os.PathLike[str],
    *,
    market_ids: Iterable[str] = (),
    event_ids: Iterable[str] = (),
    leagues: Iterable[str] = (),
    duration: float | None = None,
    **options: Any,
) -> RecordStats:
    """Record the books of the markets named (by id, event or league) into ``directory``
    for ``duration`` seconds (default: until cancelled); ``options`` go to ``Recorder``."""
    markets = await resolve_markets(
        client, market_ids=market_ids, event_ids=event_ids, leagues=leagues
    )
    if not markets:
        raise ValidationError("markets", [], "no market with two tokens matched")
    return await Recorder(client, directory, markets, **options).run(duration)


# -- reading back ------------------------------------------------------------------------------


def recording_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The complete files of a recording, in order (``.part`` files are incomplete)."""
    return sorted(Path(directory).glob("book-*.parquet"))


def read_markets(directory: str | os.PathLike[str]) -> list[RecordedMarket]:
    """The markets a recording holds (its ``markets.json``)."""
    path = Path(directory) / MARKETS_FILE
    try:
        info = json.loads(path.read_text())
        return [RecordedMarket(**m) for m in info["markets"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problem = f"no readable {MARKETS_FILE}: {exc}"
        raise ValidationError("recording", str(directory), problem) from None


def iter_rows(directory: str | os.PathLike[str]) -> Iterator[BookRow]:
    """Every row of a recording, in the order received."""
    pq = _pa().parquet
    for path in recording_files(directory):
        table = pq.read_table(path)
        for r in table.to_pylist():
            yield BookRow(
                r["seq"],
                r["recv_ns"],
                r["service_ms"],
                r["kind"],
                r["market_id"],
                r["token_id"],
                [(lv["price"], lv["size"]) for lv in r["bids"] or ()],
                [(lv["price"], lv["size"]) for lv in r["asks"] or ()],
            )


def level_decimal(levels: list[tuple[str, str]]) -> list[tuple[Decimal, Decimal]]:
    """Levels read exactly (``Decimal`` price and size)."""
    return [(Decimal(p), Decimal(s)) for p, s in levels]
