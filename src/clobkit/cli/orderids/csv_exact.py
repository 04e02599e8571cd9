"""CSV for ``clobkit order-ids``, read exactly: a header row, then one order per line.

Lines are split by Python's csv rules (a field may be quoted but may not span
lines); each output row is its input line unchanged plus ``order_id`` (and
``signature``), or the row rewritten when it already has those columns.
"""

from __future__ import annotations

import csv
import io
from itertools import repeat
from typing import Any

from .rows import (
    DEFAULTS,
    V1,
    InputError,
    Layout,
    Parsed,
    _kept,
    _lines,
    check_columns,
    read_values,
)


class CsvOrders:
    """CSV with a header row; ``order_id`` (and ``signature``) added, or replaced when present."""

    def __init__(self, header: str, layout: Layout = V1, signed: bool = False) -> None:
        text = header.rstrip("\r\n")
        if not text.strip():
            raise InputError("line 1: no header row")
        try:
            names = [name.strip() for name in next(csv.reader([text], strict=True))]
        except csv.Error as exc:
            raise InputError(f"line 1: the header is not valid CSV ({exc})") from None
        check_columns(
            names, layout, "line 1", "the header lacks the column(s)", "line 1: the header"
        )
        self.layout = layout
        self.width = len(names)
        self.index = {name: i for i, name in enumerate(names)}
        added = ("order_id", "signature") if signed else ("order_id",)
        # where each added value goes: an existing column (replaced) or a new one
        self.targets = [self.index.get(name) for name in added]
        self.appended = all(i is None for i in self.targets)
        new = [name for name in added if name not in self.index]
        self.header = ",".join([text, *new])

    def parse(self, first: int, lines: list[str]) -> Parsed:
        texts = _lines(lines, _strip_eol)
        numbers = list(range(first, first + len(texts)))
        rejects: list[tuple[int, str]] = []
        width = self.width
        blob = ",".join(texts)
        if '"' not in blob and set(map(str.count, texts, repeat(","))) == {width - 1}:
            flat = blob.split(",")  # every line has exactly width fields
            transposed = [flat[i::width] for i in range(width)]
        else:
            keep = []
            rows = []
            for k, text in enumerate(texts):
                row = _split(text)
                if isinstance(row, str):
                    rejects.append((numbers[k], row))
                elif len(row) == width:
                    keep.append(k)
                    rows.append(row)
                elif len(row) > 1 or row[0].strip():  # a blank line is not a row
                    rejects.append((numbers[k], f"expected {width} fields, got {len(row)}"))
            texts = [texts[k] for k in keep]
            numbers = [numbers[k] for k in keep]
            transposed = [list(column) for column in zip(*rows, strict=True)] or [
                [] for _ in range(width)
            ]
        # values are read as written: a space around one is refused by the core, as
        # the service refuses " 5" (docs/scale.md)
        columns: dict[str, object] = {}
        for name in self.layout.fields:
            i = self.index.get(name)
            if i is None:
                columns[name] = DEFAULTS[name]
                continue
            values: list[Any] = transposed[i]
            if "" in values:  # an empty cell is a null (an optional column's default)
                values = [None if v == "" else v for v in values]
            columns[name] = read_values(name, values)
        return Parsed(numbers, texts, columns, None, rejects)

    def render(self, parsed: Parsed, ids: list[str | None], sigs: list[str] | None) -> str:
        texts, added = _kept(parsed.texts, ids, sigs)
        if not texts:
            return ""
        if self.appended:
            return "\n".join(map(",".join, zip(texts, *added, strict=True))) + "\n"
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for text, *values in zip(texts, *added, strict=True):
            row = _split(text)
            assert isinstance(row, list)
            for target, value in zip(self.targets, values, strict=True):
                if target is None:
                    row.append(value)
                else:
                    row[target] = value
            writer.writerow(row)
        return buffer.getvalue()


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _split(text: str) -> list[str] | str:
    """The fields of one CSV line, or why it is malformed."""
    if '"' not in text:
        return text.split(",")
    try:
        return next(csv.reader([text], strict=True), [""])
    except csv.Error as exc:
        return f"malformed CSV ({exc}; a field may not span lines)"
