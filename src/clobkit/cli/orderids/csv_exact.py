"""Reader: CSV for ``clobkit order-ids``, read exactly: a header row, then one order per line.

Lines are split by Python's csv rules (a field may be quoted but may not span
lines). Each batch of lines becomes an ``Orders``: the hash columns as Python
values, each kept line's text and every field's text by column (what the CSV
writer keeps or rewrites, and the cells of another format's table); a
malformed line or one of another width is refused here, by line number. The
fast reader (``csv_fast``) hands a block in doubt to ``read_block``.
"""

from __future__ import annotations

import csv
import io
from itertools import islice, repeat
from typing import Any

from .rows import DEFAULTS, V1, InputError, Layout, Orders, _lines, check_columns, read_values

__all__ = ["CsvOrders"]


class CsvOrders:
    """The exact reader of one CSV file, from its header row: ``names`` its columns,
    ``index`` each one's field, ``text`` the header line as written."""

    def __init__(self, header: str, layout: Layout = V1) -> None:
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
        self.text = text
        self.names = names
        self.width = len(names)
        self.index = {name: i for i, name in enumerate(names)}

    def read_block(self, data: bytes, batch_size: int) -> tuple[list[Orders], int]:
        """A block of lines (UTF-8) in batches of ``batch_size`` lines, numbered from 0,
        and its count of lines (the fast reader's block in doubt)."""
        lines = io.StringIO(data.decode("utf-8"), newline="")
        done: list[Orders] = []
        count = 0
        while batch := list(islice(lines, batch_size)):
            done.append(self.parse(count, batch))
            count += len(batch)
        return done, count

    def parse(self, first: int, lines: list[str]) -> Orders:
        """A batch of lines, the first numbered ``first``."""
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
        return Orders(numbers, columns, rejects, texts=texts, cells=transposed)


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
