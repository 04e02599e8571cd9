"""Record the market to Parquet, and read recordings back (the data extra).

``recorder`` writes (``record``, ``Recorder``); ``frames`` holds the row layout and
the typed book-frame decoder; ``read`` reads recordings back; ``markets`` the
recording's markets file. See ``recorder`` for the file format and guarantees.
"""

from __future__ import annotations

from .recorder import (
    BOOK,
    GAP,
    MARKETS_FILE,
    SNAPSHOT,
    BookRow,
    RecordedEvent,
    RecordedMarket,
    Recorder,
    RecordingWriter,
    RecordStats,
    decode_book_frame,
    iter_rows,
    read_events,
    read_markets,
    record,
    recording_files,
    resolve_events,
    resolve_markets,
)

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
