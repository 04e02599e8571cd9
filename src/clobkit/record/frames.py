"""The recorder's hot path: a book frame decoded by one typed decoder into structs the
garbage collector does not track, the rows held as column lists until a rotation, and the
Arrow schema they are written with (``clobkit.record`` re-exports ``decode_book_frame``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from ..core.jsondepth import json_too_deep
from ..core.spec import book_topic
from ..errors import MissingExtra
from ..models import StreamMessage

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "MAX_BOOK_LEVELS",
    "MAX_FILE_BYTES",
    "MAX_FILE_LEVELS",
    "MAX_FILE_ROWS",
    "Book",
    "BookFrame",
    "Columns",
    "Level",
    "arrow",
    "decode_book_frame",
    "file_spans",
    "rest_levels",
    "row_bytes",
    "schema",
    "text",
    "text_levels",
]


#: The most levels one side of one recorded book may hold (a book on the 0.01 grid
#: has at most 99).
MAX_BOOK_LEVELS = 1_000
#: The most rows one file of a recording may hold.
MAX_FILE_ROWS = 250_000
#: The most levels (bids and asks; an empty or null side counts one) one file may hold.
MAX_FILE_LEVELS = 500_000
#: The most bytes one file's columns may take decoded (Parquet's uncompressed size).
MAX_FILE_BYTES = 16 << 20


def arrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ModuleNotFoundError as exc:
        from ..core.extras import install_hint

        raise MissingExtra(
            f"recording needs the data extra (missing {exc.name}): {install_hint('data')}"
        ) from None
    return pa


def schema() -> pa.Schema:
    pa = arrow()
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


# gc=False: none of these can be part of a reference cycle (strings, ints, lists of
# levels), and tracking them made the collector's passes the recorder's main cost
class Level(msgspec.Struct, gc=False):
    """One level of a book as sent (the API sends prices and sizes as strings)."""

    price: str
    size: str


class Book(msgspec.Struct, gc=False):
    """A book message's data, only what a row keeps (other fields are skipped unread)."""

    bids: list[Level]
    asks: list[Level]
    updated_at_ms: int | None = None


class BookFrame(msgspec.Struct, gc=False):
    type: str
    topic: str
    data: Book


_decode_book_frame = msgspec.json.Decoder(BookFrame).decode
_BOOK_PREFIX, _BOOK_SUFFIX = book_topic("@").split("@")


def decode_book_frame(raw: bytes) -> StreamMessage | None:
    """A stream frame of a book, decoded straight into what a row holds (``Stream.decode``);
    ``None`` for any other frame, or a book of another shape (numbers for prices, ``null``
    levels), which the stream then reads as usual and ``add`` turns into text."""
    if json_too_deep(raw):
        return None
    try:
        frame = _decode_book_frame(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    topic = frame.topic
    if not (topic.startswith(_BOOK_PREFIX) and topic.endswith(_BOOK_SUFFIX)):
        return None  # another topic's data that happens to have bids and asks
    # stamped here, as the stream reads the frame: the stream need not copy the message
    # to stamp it (a second allocation per book frame)
    return StreamMessage(type=frame.type, topic=topic, data=frame.data, received_ns=time.time_ns())


def text_levels(levels: Any) -> list[Level]:
    """Levels as decoded into dicts, their price and size as text (a number as written)."""
    if not isinstance(levels, list | tuple):
        return []
    return [
        Level(text(lv.get("price")), text(lv.get("size"))) for lv in levels if isinstance(lv, dict)
    ]


def text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def rest_levels(levels: Any) -> list[Level]:
    return [Level(str(lv.price), str(lv.size)) for lv in levels]


class Columns:
    """The rows held until the next rotation, column by column, a book's levels flattened
    (prices, sizes, and the count per row): nothing held per level but its two strings,
    and no container per row for the garbage collector to walk."""

    __slots__ = (
        "ask_counts",
        "ask_prices",
        "ask_sizes",
        "bid_counts",
        "bid_prices",
        "bid_sizes",
        "kind",
        "market",
        "recv_ns",
        "seq",
        "service_ms",
        "token",
    )

    def __init__(self) -> None:
        self.seq: list[int] = []
        self.recv_ns: list[int] = []
        self.service_ms: list[int | None] = []
        self.kind: list[str] = []
        self.market: list[str | None] = []
        self.token: list[str | None] = []
        self.bid_prices: list[str] = []
        self.bid_sizes: list[str] = []
        self.bid_counts: list[int] = []
        self.ask_prices: list[str] = []
        self.ask_sizes: list[str] = []
        self.ask_counts: list[int] = []

    def __len__(self) -> int:
        return len(self.seq)


def row_bytes(rows: Columns) -> list[int]:
    """Each row's bytes of text as a file holds it undecoded at worst (its levels'
    prices and sizes, each with its 4-byte length, and its ids)."""
    out = []
    at_bid = at_ask = 0
    for k, (b, a) in enumerate(zip(rows.bid_counts, rows.ask_counts, strict=True)):
        texts = rows.bid_prices[at_bid : at_bid + b] + rows.bid_sizes[at_bid : at_bid + b]
        texts += rows.ask_prices[at_ask : at_ask + a] + rows.ask_sizes[at_ask : at_ask + a]
        ids = len(rows.market[k] or "") + len(rows.token[k] or "")
        out.append(sum(map(len, texts)) + 4 * len(texts) + ids + 40)
        at_bid, at_ask = at_bid + b, at_ask + a
    return out


def file_spans(counts: list[int], texts: list[int]) -> Iterator[tuple[int, int]]:
    """Consecutive (start, stop) spans of rows of ``counts`` levels and ``texts`` bytes
    each, each at most ``MAX_FILE_ROWS`` rows, ``MAX_FILE_LEVELS`` levels and half
    ``MAX_FILE_BYTES`` (a row past that alone)."""
    start = levels = size = 0
    for i, (n, b) in enumerate(zip(counts, texts, strict=True)):
        full = levels + n > MAX_FILE_LEVELS or size + b > MAX_FILE_BYTES // 2
        if i > start and (i - start >= MAX_FILE_ROWS or full):
            yield start, i
            start, levels, size = i, 0, 0
        levels += n
        size += b
    if counts:
        yield start, len(counts)
