"""Record the market: every book update of some markets, as rows of Parquet (the data extra).

``await record(client, "rec/", market_ids=[...], duration=60)`` or, for more
control, ``Recorder(client, "rec/", markets)``; ``clobkit record`` is the same
on the command line. docs/backtesting.md describes the files; the sandbox
replays them (``clobkit sandbox --replay DIR``).

One row per message, not per level: the service sends a whole book with every
update of the ``market:<token>:book`` topic, so a row holds that book as
received (``bids`` and ``asks``, lists of ``{price, size}`` strings exactly as
sent). The hot path decodes a book frame with one typed decoder
(``decode_book_frame``, the recorder's ``Stream.decode``) and appends its fields
to column lists, keeping nothing per level but its two strings (no diffing);
any book of the recording is one row, so a replay needs no state to rebuild it;
and Parquet's dictionary and zstd encodings take out most of the repetition.

Rows are held in memory and written as one file at each rotation (every
``rotate_seconds``, or sooner when ``rotate_bytes`` of rows are held), to a
``.part`` name renamed when complete: a crash loses at most the rows of the
open file, never a written one, and memory stays bounded. Cancellation
(Ctrl-C) writes the open file before it returns. The book topics are spread over
streams (``topics_per_stream`` each); a reconnect of one writes a ``gap`` row and
a fresh REST ``snapshot`` of each of its books.

A row's ``recv_ns`` is when its message arrived: the stream stamps each frame as it
reads it (``StreamMessage.received_ns``), a snapshot row is stamped when its REST
answer came. Rows are written in the order taken off the stream, so books that
arrived while the snapshot was read follow its rows with earlier stamps: arrival
order is ``recv_ns`` (then ``seq``), which is how a replay reads them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.checks import positive_int, seconds
from ..core.safe_files import atomic_output, unsafe_directory
from ..core.spec import OUTCOME_A, OUTCOME_B, OUTCOMES, book_topic
from ..errors import ClobkitError, OrderBookNotFound, ValidationError
from .frames import (
    Book,
    Columns,
    Level,
    arrow,
    decode_book_frame,
    file_spans,
    rest_levels,
    row_bytes,
    schema,
    text_levels,
)
from .markets import RecordedEvent, RecordedMarket, resolve_events, resolve_markets
from .read import (
    MARKETS_FILE,
    BookRow,
    iter_rows,
    read_events,
    read_markets,
    recording_files,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from ..client import AsyncClient, Stream
    from ..models import Orderbook

log = logging.getLogger("clobkit.record")

__all__ = [
    "BOOK",
    "GAP",
    "MARKETS_FILE",
    "SNAPSHOT",
    "BookRow",
    "RecordStats",
    "RecordedEvent",
    "RecordedMarket",
    "Recorder",
    "RecordingWriter",
    "decode_book_frame",
    "iter_rows",
    "read_events",
    "read_markets",
    "record",
    "recording_files",
    "resolve_events",
    "resolve_markets",
]

BOOK = "book"  # a book message of the stream
SNAPSHOT = "snapshot"  # a book read over REST (at the start and after a reconnect)
GAP = "gap"  # the stream reconnected: messages may have been lost before this row
_ROW_BYTES = 200  # estimated bytes a row holds besides its levels (ints, column slots)
_LEVEL_BYTES = 130  # estimated bytes of one level held (two strings, two column slots)
_PRICE = attrgetter("price")
_SIZE = attrgetter("size")


@dataclasses.dataclass(slots=True, eq=False)
class RecordStats:
    """Counters of a recording so far (also its closing summary)."""

    markets: int
    started_ns: int
    updates: int = 0  # book messages received from the stream
    rows: int = 0  # rows handed to files (updates + snapshots + gaps)
    gaps: int = 0
    snapshots: int = 0  # books read over REST (at the start, after each reconnect)
    snapshot_failures: int = 0  # books not read over REST after a reconnect (read again)
    refused: int = 0  # book topics the service refused (their books: snapshots only)
    files: int = 0
    bytes: int = 0  # bytes of the files written
    lag_ms: int | None = None  # receive time minus the service's time, last update

    def line(self, now_ns: int | None = None) -> str:
        """A one-line summary: markets, updates (the books written, the stream's and the
        snapshots: the count a replay of the recording announces, less the stale books
        it leaves out), the stream's rate, files, bytes, lag."""
        elapsed = max(((now_ns or time.time_ns()) - self.started_ns) / 1e9, 1e-9)
        lag = "-" if self.lag_ms is None else f"{self.lag_ms} ms"
        books = self.updates + self.snapshots
        return (
            f"markets {self.markets}, updates {books:,} ({self.snapshots:,} snapshots, "
            f"{self.updates / elapsed:,.0f}/s from the stream), "
            f"gaps {self.gaps}, files {self.files}, {self.bytes / 1e6:,.2f} MB, lag {lag}"
            + (f", refused {self.refused} topics" if self.refused else "")
        )


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
        if not outcomes or set(outcomes) - set(OUTCOMES):
            a, b = OUTCOMES
            raise ValidationError("outcomes", outcomes, f"must be '{a}', '{b}' or '{a}{b}'")
        seconds(rotate_seconds, "rotate_seconds")
        positive_int(rotate_bytes, "rotate_bytes")
        self._pa = arrow()
        self._schema = schema()
        self.directory = Path(directory)
        self.markets = list(markets)
        self._token_market: dict[str, str] = {}
        for m in self.markets:
            if OUTCOME_A in outcomes:
                self._token_market[m.token_id_a] = m.market_id
            if OUTCOME_B in outcomes:
                self._token_market[m.token_id_b] = m.market_id
        self.rotate_seconds = rotate_seconds
        self.rotate_bytes = rotate_bytes
        #: The recorded markets' events, written to ``markets.json`` (``Recorder`` reads them).
        self.events: list[RecordedEvent] = []
        self.stats = RecordStats(len(self.markets), time.time_ns())
        self._seq = 0
        self._rows = Columns()
        self._held = 0  # estimated bytes of the rows held
        self._opened = time.monotonic()
        self._writing: asyncio.Task[None] | None = None
        self._rotating = asyncio.Lock()  # the run loop and each stream's consumer rotate
        self._warned = False  # about an unsafe directory, once

    # -- the hot path ------------------------------------------------------------------------

    def add(self, kind: str, token: str | None, data: Any, recv_ns: int) -> None:
        """Hold one row: a book message's ``data`` (as ``decode_book_frame`` gives it, or a
        dict as decoded), or a gap (``data`` None)."""
        if isinstance(data, Book):  # the hot path: the levels are kept as decoded
            self._hold(kind, token, data.bids, data.asks, data.updated_at_ms, recv_ns)
            return
        bids: list[Level] = []
        asks: list[Level] = []
        service_ms = None
        if isinstance(data, dict):
            bids, asks = text_levels(data.get("bids")), text_levels(data.get("asks"))
            stamp = data.get("updated_at_ms")
            if isinstance(stamp, int) and not isinstance(stamp, bool):
                service_ms = stamp
        self._hold(kind, token, bids, asks, service_ms, recv_ns)

    def _hold(
        self,
        kind: str,
        token: str | None,
        bids: list[Level],
        asks: list[Level],
        service_ms: int | None,
        recv_ns: int,
    ) -> None:
        rows = self._rows
        rows.seq.append(self._seq)
        rows.recv_ns.append(recv_ns)
        rows.service_ms.append(service_ms)
        rows.kind.append(kind)
        rows.market.append(None if token is None else self._token_market.get(token))
        rows.token.append(token)
        rows.bid_prices.extend(map(_PRICE, bids))
        rows.bid_sizes.extend(map(_SIZE, bids))
        rows.bid_counts.append(len(bids))
        rows.ask_prices.extend(map(_PRICE, asks))
        rows.ask_sizes.extend(map(_SIZE, asks))
        rows.ask_counts.append(len(asks))
        self._seq += 1
        self._held += _ROW_BYTES + _LEVEL_BYTES * (len(bids) + len(asks))
        if kind == BOOK:
            self.stats.updates += 1
            if service_ms is not None:
                self.stats.lag_ms = recv_ns // 1_000_000 - service_ms

    def due(self) -> bool:
        """True when the rows held should be written (``rotate``): time or size reached."""
        return (
            self._held >= self.rotate_bytes
            or time.monotonic() - self._opened >= self.rotate_seconds
        )

    # -- files -------------------------------------------------------------------------------

    def _table(self, rows: Columns) -> pa.Table:
        pa = self._pa
        kind_type = self._schema.field("kind").type
        arrays = [
            pa.array(rows.seq, pa.int64()),
            pa.array(rows.recv_ns, pa.int64()),
            pa.array(rows.service_ms, pa.int64()),
            pa.array(rows.kind, pa.string()).dictionary_encode().cast(kind_type),
            pa.array(rows.market, pa.string()).dictionary_encode(),
            pa.array(rows.token, pa.string()).dictionary_encode(),
            self._levels_array(rows.bid_prices, rows.bid_sizes, rows.bid_counts),
            self._levels_array(rows.ask_prices, rows.ask_sizes, rows.ask_counts),
        ]
        return pa.Table.from_arrays(arrays, schema=self._schema)

    def _levels_array(self, prices: list[str], sizes: list[str], counts: list[int]) -> pa.Array:
        """A column of levels from the flat prices and sizes and the count per row."""
        pa = self._pa
        level_type = self._schema.field("bids").type
        values = pa.StructArray.from_arrays(
            [pa.array(prices, pa.string()), pa.array(sizes, pa.string())],
            fields=list(level_type.value_type),
        )
        offsets = pa.array([0, *accumulate(counts)], pa.int32())
        return pa.ListArray.from_arrays(offsets, values, type=level_type)

    def _write(self, rows: Columns) -> None:
        """``rows`` as files, each within what a replay reads (``file_spans``: one file
        unless ``rotate_bytes`` is set past the bounds),
        each under a random ``.part`` name until it is whole (``atomic_output``: never
        through a link planted at either name)."""
        table = self._table(rows)
        # as a replay counts them from the file: an empty side takes a value too
        sides = zip(rows.bid_counts, rows.ask_counts, strict=True)
        counts = [max(b, 1) + max(a, 1) for b, a in sides]
        texts = row_bytes(rows)
        for start, stop in file_spans(counts, texts):
            first_ns = rows.recv_ns[start]
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(first_ns / 1e9))
            path = self.directory / f"book-{rows.seq[start]:012d}-{stamp}.parquet"
            with atomic_output(path) as file:
                part = table.slice(start, stop - start)
                self._pa.parquet.write_table(part, file, compression="zstd")
                size = file.tell()
            self.stats.files += 1
            self.stats.bytes += size

    async def rotate(self) -> None:
        """Write the rows held as one file (in a thread; at most one write in flight)."""
        async with self._rotating:  # else two callers could both take the same write
            await self._drain()
            rows, self._rows, self._held = self._rows, Columns(), 0
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

    def check_directory(self) -> None:
        """Refuse a directory that already holds a recording (its rows would mix; a link
        named ``markets.json`` counts), or whose name Parquet's writer cannot take (before
        any row is recorded); warn once about one other users can write into."""
        try:
            os.fsdecode(self.directory).encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(
                "directory", str(self.directory), "must be a UTF-8 path (Parquet's writer)"
            ) from None
        if os.path.lexists(self.directory / MARKETS_FILE) or recording_files(self.directory):
            raise ValidationError(
                "directory", str(self.directory), "already holds a recording: use a new one"
            )
        unsafe = None if self._warned else unsafe_directory(self.directory)
        if unsafe is not None:  # its files are written safely; what else is there is not
            self._warned = True
            log.warning("recording into an unsafe directory: %s", unsafe)

    def write_markets(self) -> None:
        """Write ``markets.json``: the recorded markets, their events (``events``) and the
        recording's start, what a replay serves. A used directory is refused."""
        self.check_directory()
        self.directory.mkdir(parents=True, exist_ok=True)
        info = {
            "format": 2,
            "started_ns": self.stats.started_ns,
            "markets": [m._asdict() for m in self.markets],
            "events": [e._asdict() for e in self.events],
        }
        with atomic_output(self.directory / MARKETS_FILE, "w") as file:
            file.write(json.dumps(info, indent=1) + "\n")


class Recorder(RecordingWriter):
    """Records the book topics of ``markets`` into ``directory`` until cancelled.

    ``await Recorder(client, "rec/", markets).run(duration=60)``; ``run``
    returns its ``RecordStats`` (also ``stats`` while it runs) and writes the
    open file when cancelled. ``on_progress(stats)`` is called every
    ``progress_seconds``. ``outcomes``: which tokens' books ("a", "b" or both);
    the other options go to ``RecordingWriter``. The book topics are spread over
    WebSockets of at most ``topics_per_stream`` (500) each: a service caps the
    topics of one connection (the sandbox at 1,000). A topic the service refuses is
    logged and counted (``stats.refused``): its book is then only in the snapshots.
    """

    def __init__(
        self,
        client: AsyncClient,
        directory: str | os.PathLike[str],
        markets: Sequence[RecordedMarket],
        *,
        on_progress: Callable[[RecordStats], None] | None = None,
        progress_seconds: float = 1.0,
        topics_per_stream: int = 500,
        **options: Any,
    ) -> None:
        super().__init__(directory, markets, **options)
        self.client = client
        self._topics = {book_topic(t): t for t in self._token_market}
        self.on_progress = on_progress
        self.progress_seconds = progress_seconds
        self.topics_per_stream = positive_int(topics_per_stream, "topics_per_stream")
        #: The streams of the last ``run`` (their ``frames``, ``reconnects``,
        #: ``down_since``), ``topics_per_stream`` book topics on each.
        self.streams: list[Stream] = []
        self._min_sizes: dict[str, str] = {}  # token -> min_order_size of its first book
        self._unread: set[str] = set()  # tokens whose snapshot after a reconnect failed
        self._reread_at = 0.0  # time.monotonic() of the next try to read them
        self._reread_wait = 0.0

    async def snapshot(self, tokens: Iterable[str] | None = None) -> None:
        """Hold a REST snapshot of every recorded book (of ``tokens`` when given; an empty
        one where none exists)."""

        async def one(token: str) -> tuple[Orderbook | None, int]:
            book = None
            with contextlib.suppress(OrderBookNotFound):
                book = await self.client.get_orderbook(token)
            # stamped when its answer came, as a stream frame is when it came: a book
            # that reached the stream during the read sorts before it (module doc)
            return book, time.time_ns()

        chosen = list(self._token_market if tokens is None else tokens)
        answers = await asyncio.gather(*(one(t) for t in chosen))
        self._hold_books(chosen, answers)

    async def _resnapshot(self, tokens: Iterable[str]) -> None:
        """``snapshot(tokens)`` during a recording: a failure (after the client's retries)
        leaves the tokens to read again later, 1 s doubling to 30 s, and the recording on
        (the stream's books go on; the replay takes the next one)."""
        chosen = list(tokens)
        self._unread.difference_update(chosen)
        try:
            await self.snapshot(chosen)
        except ClobkitError as exc:
            self.stats.snapshot_failures += 1
            self._unread.update(chosen)
            wait = self._reread_wait = min(max(self._reread_wait * 2, 1.0), 30.0)
            self._reread_at = time.monotonic() + wait
            log.warning("books not read after a reconnect (%s); again in %g s", exc, wait)
        else:
            self._reread_wait = 0.0

    def _hold_books(
        self, tokens: list[str], answers: Sequence[tuple[Orderbook | None, int]]
    ) -> None:
        self.stats.snapshots += len(tokens)
        for token, (book, arrived) in zip(tokens, answers, strict=True):
            if book is None:
                self._hold(SNAPSHOT, token, [], [], None, arrived)
            else:
                bids, asks = rest_levels(book.bids), rest_levels(book.asks)
                self._hold(SNAPSHOT, token, bids, asks, book.updated_at_ms, arrived)
                if book.min_order_size is not None:
                    self._min_sizes.setdefault(token, str(book.min_order_size))
        sizes = self._min_sizes  # the market's, on either token's book (--outcomes b)
        self.markets = [
            m._replace(
                min_order_size=sizes.get(m.token_id_a) or sizes.get(m.token_id_b, m.min_order_size)
            )
            for m in self.markets
        ]

    async def describe(self) -> None:
        """Read what a replay needs besides the books: the markets' events (``events``) and
        fee rates (left ``None`` where the service does not answer them)."""
        self.events = await resolve_events(
            self.client, [m.event_id for m in self.markets if m.event_id]
        )

        async def fee(m: RecordedMarket) -> RecordedMarket:
            with contextlib.suppress(ClobkitError):
                return m._replace(fee_rate_bps=await self.client.get_fee_rate(m.token_id_a))
            return m

        self.markets = list(await asyncio.gather(*(fee(m) for m in self.markets)))

    async def _consume(self, stream: Stream) -> None:
        from ..models import Reconnected

        topics = self._topics
        async for item in stream:
            # the item's arrival, not now: a consumer held up (a snapshot's REST reads,
            # a rotation) would stamp it later than it came
            arrived = item.received_ns or time.time_ns()
            if isinstance(item, Reconnected):
                self.add(GAP, None, None, arrived)
                self.stats.gaps += 1
                self.stats.refused = len(self.refused)  # subscribed anew: none refused yet
                # its own books were lost; another stream's went on
                await self._resnapshot(topics[t] for t in item.topics if t in topics)
            elif item.type == "data" and item.topic in topics:
                self.add(BOOK, topics[item.topic], item.data, arrived)
            elif item.type == "error":  # the stream said it and keeps it (refused)
                self.stats.refused = len(self.refused)
            if self._held >= self.rotate_bytes:
                await self.rotate()

    @property
    def refused(self) -> dict[str, str]:
        """The book topics the service refused in the last ``run``, with its words: each
        until subscribed again (a reconnect) or a message comes on it (its streams'
        ``refused``)."""
        return {t: r for s in self.streams for t, r in s.refused.items()}

    def _open_streams(self) -> list[Stream]:
        topics, per = list(self._topics), self.topics_per_stream
        streams = [
            self.client.stream(topics[k : k + per], max_queue=100_000)
            for k in range(0, len(topics), per)
        ]
        for stream in streams:
            stream.decode = decode_book_frame
        self.streams = streams
        return streams

    @property
    def stream(self) -> Stream | None:
        """The first of ``streams`` (``None`` before a run)."""
        return self.streams[0] if self.streams else None

    async def _tend(self, consumers: list[asyncio.Task[None]], deadline: float | None) -> None:
        """Rotate, read the books left unread and report, until ``deadline`` (monotonic
        s) or until a consumer ends (its stream failed)."""
        progress = time.monotonic() + self.progress_seconds
        while not any(c.done() for c in consumers):
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            # the next chore: a rotation, a progress line (only when one is shown: an
            # unshown one's time never moves on, and waiting for it spun a core), the
            # deadline, or a look at the books left unread
            wake = min(self._opened + self.rotate_seconds, now + 0.25)
            if self.on_progress is not None:
                wake = min(wake, progress)
            if deadline is not None:
                wake = min(wake, deadline)
            await asyncio.wait(
                consumers, timeout=max(wake - now, 0), return_when=asyncio.FIRST_COMPLETED
            )
            if self.due():
                await self.rotate()
            if self._unread and time.monotonic() >= self._reread_at:
                await self._resnapshot(self._unread)
            if self.on_progress is not None and time.monotonic() >= progress:
                progress = time.monotonic() + self.progress_seconds
                self.on_progress(self.stats)

    async def run(self, duration: float | None = None) -> RecordStats:
        """Record until cancelled (or for ``duration`` seconds); the open file is written
        before this returns or re-raises."""
        if duration is not None:  # NaN never came: it recorded for ever
            duration = seconds(duration, "duration")
        self.check_directory()
        await self.describe()
        streams = self._open_streams()
        deadline = None if duration is None else time.monotonic() + duration
        consumers: list[asyncio.Task[None]] = []
        try:
            for stream in streams:
                await stream.start()
            await self.snapshot()
            self.write_markets()  # with the markets' minimum sizes from the first books
            # the consumers alone take items off the streams; this loop rotates, reports
            # and stops them (a timeout around each read could drop an item as it arrives)
            consumers = [asyncio.create_task(self._consume(s)) for s in streams]
            await self._tend(consumers, deadline)
            for consumer in consumers:
                if consumer.done():
                    consumer.result()  # a stream's failure, if one failed
        finally:
            for consumer in consumers:
                if not consumer.done():
                    consumer.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await consumer
            try:
                await self.flush()
            finally:
                for stream in streams:
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
    if duration is not None:  # before any request
        seconds(duration, "duration")
    markets = await resolve_markets(
        client, market_ids=market_ids, event_ids=event_ids, leagues=leagues
    )
    if not markets:
        raise ValidationError("markets", [], "no market with two tokens matched")
    return await Recorder(client, directory, markets, **options).run(duration)
