"""Read a recording back (``clobkit.record``'s reading half): its files, its markets
and events, its rows."""

from __future__ import annotations

import functools
import json
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from ._record_frames import arrow, schema
from ._record_markets import RecordedEvent, RecordedMarket
from .errors import ValidationError

__all__ = [
    "MARKETS_FILE",
    "BookRow",
    "iter_rows",
    "read_events",
    "read_markets",
    "recording_files",
]

MARKETS_FILE = "markets.json"
_R = TypeVar("_R")


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


def recording_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The complete files of a recording, in order (``.part`` files are incomplete)."""
    return sorted(Path(directory).glob("book-*.parquet"))


def read_markets(directory: str | os.PathLike[str]) -> list[RecordedMarket]:
    """The markets a recording holds (its ``markets.json``)."""
    return _records(directory, "markets", RecordedMarket, required=True)


def read_events(directory: str | os.PathLike[str]) -> list[RecordedEvent]:
    """The events of a recording's markets (none in a recording of format 1)."""
    return _records(directory, "events", RecordedEvent, required=False)


def _records(
    directory: str | os.PathLike[str], key: str, record: Callable[..., _R], *, required: bool
) -> list[_R]:
    path = Path(directory) / MARKETS_FILE
    try:
        info = json.loads(path.read_text())
        records = [record(**item) for item in (info[key] if required else info.get(key, []))]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        problem = f"no readable {MARKETS_FILE}: {exc}"
        raise ValidationError("recording", str(directory), problem) from None
    for item in records:  # each field of the type it is read as (a hand-edited file...)
        for name, kind in _field_types(record).items():
            value = getattr(item, name)
            # a bool is an int to isinstance: only a bool field takes one
            if value is not None and not (
                isinstance(value, kind) and (type(value) is bool) == (kind is bool)
            ):
                problem = f"must be a {kind.__name__} or null ({key} of {MARKETS_FILE})"
                raise ValidationError(name, value, problem)
    return records


@functools.cache
def _field_types(record: Any) -> dict[str, type]:
    """The type each field of a NamedTuple of markets.json holds (``X | None`` as X)."""
    out = {}
    for name, hint in typing.get_type_hints(record).items():
        kinds = [k for k in typing.get_args(hint) if k is not type(None)] or [hint]
        out[name] = typing.get_origin(kinds[0]) or kinds[0]
    return out


def iter_rows(directory: str | os.PathLike[str]) -> Iterator[BookRow]:
    """Every row of a recording, in the order written (``seq``); ``recv_ns`` orders them
    as they arrived (module doc)."""
    from ._local_files import LOCAL, local

    pa = arrow()
    want = schema()
    for path in recording_files(directory):
        try:  # the recorder's columns with its types, or the file is not a recording
            table = pa.parquet.read_table(local(path), filesystem=LOCAL, columns=want.names)
            table = table.cast(want)
        except (OSError, KeyError, ValueError, pa.ArrowException) as exc:
            said = " ".join(str(exc).split())[:200]  # one line: pyarrow's may hold a schema
            problem = f"is no recording file of clobkit record ({type(exc).__name__}: {said})"
            raise ValidationError("recording", str(path), problem) from None
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
