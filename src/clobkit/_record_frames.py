"""The recorder's hot path: a book frame decoded by one typed decoder into structs the
garbage collector does not track, the rows held as column lists until a rotation, and the
Arrow schema they are written with (``clobkit.record`` re-exports ``decode_book_frame``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec

from ._jsondepth import json_too_deep
from ._spec import book_topic
from .errors import MissingExtra
from .models import StreamMessage

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Book",
    "BookFrame",
    "Columns",
    "Level",
    "arrow",
    "decode_book_frame",
    "rest_levels",
    "schema",
    "text",
    "text_levels",
]


def arrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ModuleNotFoundError as exc:
        raise MissingExtra(
            f"recording needs the data extra (missing {exc.name}): pip install 'clobkit[data]'"
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
