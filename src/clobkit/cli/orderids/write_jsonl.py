"""Writer: JSONL for ``clobkit order-ids``, one JSON object per order kept.

From a JSONL input each object is its input line with ``order_id`` (and
``signature``) added as its last keys: the line's own text where it has
neither key already, else the object encoded again with the new values. From
any other input, a batch's table of the output's columns
(``convert.Tables``) is written one object a row (binary values as ``0x``
hex, decimals as numbers). The file itself is a ``TextOut`` (``outputs``),
written in the input's order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from .convert import Tables, encode_json, printable
from .outputs import TextOut
from .rows import Hashed, Orders, Piece

__all__ = ["JsonlWriter", "jsonl_rows"]

_CUT_LAST = itemgetter(slice(None, -1))
_LAST = itemgetter(slice(-1, None))


class JsonlWriter:
    """A JSONL output: each item's piece (``piece``, a work thread) through ``put``, in the
    input's order. ``same``: the input is JSONL (its lines are kept as they are), else
    the rows are ``tables``' tables."""

    def __init__(
        self, path: str, writers: int, added: Sequence[str], same: bool, tables: Tables
    ) -> None:
        self.added, self.same, self.tables = tuple(added), same, tables
        self.append = "{}" + "".join(f', "{name}": "{{}}"' for name in self.added) + "}}\n"
        self.sink = TextOut(path, writers)

    def piece(self, index: int, done: list[tuple[Orders, Hashed]]) -> Piece:
        """An item's rows, from its hashed batches (a work thread)."""
        if not self.same:
            table, rows, refused = self.tables.joined(done)
            pa, ac, _ = self.tables.arrow()
            return Piece(jsonl_rows(pa, ac, table), rows, refused)
        parts = []
        written = 0
        rejects: list[tuple[int, str]] = []
        for orders, (ids, sigs, late) in done:
            parts.append(self._objects(orders, ids, sigs).encode("utf-8"))
            written += len(ids) - len(late)
            rejects += orders.rejects + late
        return Piece(parts[0] if len(parts) == 1 else b"".join(parts), written, rejects)

    def _objects(self, orders: Orders, ids: list[str | None], sigs: list[str] | None) -> str:
        """The kept lines of a JSONL input with their ids (and signatures) added."""
        assert orders.texts is not None
        assert orders.objects is not None
        texts, objs = orders.texts, orders.objects
        added: list[list[Any]] = [ids] if sigs is None else [ids, sigs]
        if None in ids:
            keep = [k for k, oid in enumerate(ids) if oid is not None]
            texts, objs = [texts[k] for k in keep], [objs[k] for k in keep]
            added = [[values[k] for k in keep] for values in added]
        if not texts:
            return ""
        blob = "".join(texts)
        if not any(f'"{name}"' in blob for name in self.added):
            if set(map(_LAST, texts)) != {"}"}:  # trailing spaces
                texts = list(map(str.rstrip, texts))
            return "".join(map(self.append.format, map(_CUT_LAST, texts), *added))
        parts = []
        for obj, *values in zip(objs, *added, strict=True):
            obj.update(zip(self.added, values, strict=True))
            parts.append(json.dumps(obj, ensure_ascii=False) + "\n")
        return "".join(parts)

    def put(self, payload: Any) -> None:
        """An item's piece, next in the file."""
        self.sink.put(payload)

    def close(self, ok: bool) -> None:
        """The file complete and renamed to OUTPUT (``ok``), or removed."""
        self.sink.close(ok)


def jsonl_rows(pa: Any, ac: Any, table: Any) -> bytes:
    """A table's rows as JSON objects, one a line."""
    rows = printable(pa, ac, table).to_pylist()
    return b"".join(encode_json(row) + b"\n" for row in rows)
