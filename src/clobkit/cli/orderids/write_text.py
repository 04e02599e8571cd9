"""What the text writers of ``clobkit order-ids`` share (``write_csv``, ``write_jsonl``).

A text output gets each item's piece as bytes: into the input's own format,
each hashed batch's lines with their ids (the format's own ``lines``), joined;
across formats the item's table of the output's columns (``convert.Tables``)
as the format's rows (its ``table_rows``). The file is a ``TextOut``
(``outputs``), written in the input's order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from .outputs import TextOut
from .rows import Hashed, Orders, Piece

if TYPE_CHECKING:
    from .convert import Tables

__all__ = ["TextWriter"]


class TextWriter(ABC):
    """A CSV or JSONL output: each item's piece (``piece``, a work thread) through ``put``,
    in the input's order. ``same``: the input is of the output's format (its lines are
    kept), else the rows are ``tables``' tables."""

    def __init__(self, path: str, writers: int, same: bool, tables: Tables) -> None:
        self.same, self.tables = same, tables
        self.sink = TextOut(path, writers)

    @abstractmethod
    def lines(self, orders: Orders, hashed: Hashed) -> Any:
        """A same-format batch's kept lines with their ids, as bytes (a buffer)."""

    @abstractmethod
    def table_rows(self, pa: Any, ac: Any, table: Any) -> Any:
        """A table's rows in the output's format, as bytes (a buffer)."""

    def piece(self, index: int, done: list[tuple[Orders, Hashed]]) -> Piece:
        """An item's rows, from its hashed batches (a work thread)."""
        if not self.same:
            table, rows, refused = self.tables.joined(done)
            pa, ac, _ = self.tables.arrow()
            return Piece(self.table_rows(pa, ac, table), rows, refused)
        parts = []
        written = 0
        rejects: list[tuple[int, str]] = []
        for orders, hashed in done:
            ids, _, late = hashed
            parts.append(self.lines(orders, hashed))
            written += len(ids) - len(late)
            rejects += orders.rejects + late
        return Piece(parts[0] if len(parts) == 1 else b"".join(parts), written, rejects)

    def put(self, payload: Any) -> None:
        """An item's piece, next in the file."""
        self.sink.put(payload)

    def close(self, ok: bool) -> None:
        """The file complete and renamed to OUTPUT (``ok``), or removed."""
        self.sink.close(ok)
