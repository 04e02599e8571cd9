"""Writer: JSONL for ``clobkit order-ids``, one JSON object per order kept.

From a JSONL input each object is its input line with ``order_id`` (and
``signature``) added as its last keys: the line's own text where it has
neither key already, else the object encoded again with the new values. From
any other input, a batch's table of the output's columns
(``convert.Tables``) is written one object a row (binary values as ``0x``
hex, decimals as numbers; ``write_text.TextWriter``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from .convert import Tables, encode_json, printable
from .rows import Hashed, Orders
from .write_text import TextWriter

__all__ = ["JsonlWriter", "jsonl_rows"]

_CUT_LAST = itemgetter(slice(None, -1))
_LAST = itemgetter(slice(-1, None))


class JsonlWriter(TextWriter):
    """A JSONL output. ``same``: the input is JSONL (its lines are kept as they are),
    else the rows are ``tables``' tables."""

    def __init__(
        self, path: str, writers: int, added: Sequence[str], same: bool, tables: Tables
    ) -> None:
        super().__init__(path, writers, same, tables)
        self.added = tuple(added)
        self.append = "{}" + "".join(f', "{name}": "{{}}"' for name in self.added) + "}}\n"

    def lines(self, orders: Orders, hashed: Hashed) -> Any:
        """The kept lines of a JSONL input with their ids (and signatures) added."""
        ids, sigs, _ = hashed
        return self._objects(orders, ids, sigs).encode("utf-8")

    def table_rows(self, pa: Any, ac: Any, table: Any) -> Any:
        return jsonl_rows(pa, ac, table)

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


def jsonl_rows(pa: Any, ac: Any, table: Any) -> bytes:
    """A table's rows as JSON objects, one a line."""
    rows = printable(pa, ac, table).to_pylist()
    return b"".join(encode_json(row) + b"\n" for row in rows)
