"""``csv_columns``: plain CSV blocks read into columns (``clobkit order-ids``' fast path).

Both twins against Python's csv module (strict), the reader whose fields the
fast path must equal: a block made of plain lines is read, field for field;
a block with any other line shape is refused (``None``), never read otherwise.
"""

from __future__ import annotations

import csv
import struct
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.errors import OrderFieldError

from ..conftest import examples

PRINTABLE = "".join(map(chr, range(0x20, 0x7F))) + "\t"
plain = st.text(st.sampled_from(PRINTABLE.replace('"', "").replace(",", "")), max_size=12)
quoted = st.text(st.sampled_from(PRINTABLE), max_size=12).map(
    lambda t: '"' + t.replace('"', '""') + '"'
)
fields = st.one_of(plain, quoted)


def _texts(col: tuple[bytes | None, bytes, bytes], rows: int) -> list[str | None]:
    """A text column's buffers back as values (a null as None)."""
    valid, offsets, data = col
    ends = struct.unpack(f"={rows + 1}i", offsets)
    out: list[str | None] = []
    for r in range(rows):
        if valid is not None and not valid[r >> 3] >> (r & 7) & 1:
            out.append(None)
        else:
            out.append(data[ends[r] : ends[r + 1]].decode("ascii"))
    return out


@st.composite
def plain_blocks(draw: st.DrawFn) -> tuple[bytes, int, list[list[str]]]:
    """A block of plain lines (LF or CRLF, the last line maybe without one) and its
    rows as Python's csv reads them."""
    width = draw(st.integers(2, 5))
    lines = draw(st.lists(st.lists(fields, min_size=width, max_size=width), max_size=8))
    ends = draw(st.lists(st.sampled_from(["\n", "\r\n"]), min_size=len(lines), max_size=len(lines)))
    text = "".join(",".join(line) + end for line, end in zip(lines, ends, strict=True))
    if lines and draw(st.booleans()):  # type: ignore[arg-type]
        text = text.rstrip("\r\n")  # the block's last line, without a line end
    rows = list(csv.reader(text.splitlines(), strict=True))
    return text.encode("ascii"), width, rows


@settings(max_examples=examples(300))
@given(plain_blocks())
def test_plain_blocks_read_as_pythons_csv(
    core: ModuleType, block: tuple[bytes, int, list[list[str]]]
) -> None:
    data, width, rows = block
    got = core.csv_columns(data, width, [(i, "text", None) for i in range(width)])
    assert got is not None
    n, cols = got
    assert n == len(rows)
    for i, col in enumerate(cols):
        want = [row[i] or None for row in rows]  # an empty field is a null
        assert _texts(col, n) == want


@settings(max_examples=examples(300))
@given(plain_blocks(), st.sampled_from(['"', "\r", "\x00", "\xe9", ",", "\n\n", 'a"b']))
def test_a_line_of_another_shape_refuses_the_block(
    core: ModuleType, block: tuple[bytes, int, list[list[str]]], odd: str
) -> None:
    data, width, _ = block
    last = ",".join(["x"] * (width - 1) + ["y" + odd + "z"]).encode("latin-1")
    bad = data + b"\n" + last + b"\n"
    assert core.csv_columns(bad, width, [(0, "text", None)]) is None


def test_kinds_and_empty_cells(core: ModuleType) -> None:
    block = b'"0042",BUY,,x\r\n7,"sell",1,\n18446744073709551615,1,true,"a""b"'
    table = {"buy": 0, "sell": 1, "0": 0, "1": 1}
    flags = {"true": 1, "false": 0, "1": 1, "0": 0}
    got = core.csv_columns(
        block,
        4,
        [
            (0, "uint64", None),
            (1, "map", None, table),
            (2, "map", 0, flags),
            (3, "text", "dflt"),
            (3, "text", None),
        ],
    )
    assert got is not None
    rows, (numbers, sides, flagged, texts, nulls) = got
    assert rows == 3
    assert struct.unpack("=3Q", numbers) == (42, 7, 2**64 - 1)
    assert struct.unpack("=3b", sides) == (0, 1, 1)
    assert struct.unpack("=3b", flagged) == (0, 1, 1)
    assert _texts(texts, 3) == ["x", "dflt", 'a"b']
    assert _texts(nulls, 3) == ["x", None, 'a"b']
    got = core.csv_columns(b"1,\n,2\n", 2, [(0, "uint64", 9), (1, "uint64", 8)])
    assert got is not None
    assert [struct.unpack("=2Q", col) for col in got[1]] == [(1, 9), (8, 2)]


@pytest.mark.parametrize(
    ("block", "spec"),
    [
        (b"18446744073709551616,x\n", (0, "uint64", 0)),  # past 2**64 - 1
        (b"-1,x\n", (0, "uint64", 0)),
        (b" 1,x\n", (0, "uint64", 0)),  # spaces are the value's: the exact reader's call
        (b",x\n", (0, "uint64", None)),  # an empty cell refused
        (b"HOLD,x\n", (0, "map", None, {"buy": 0})),
        (b",x\n", (0, "map", None, {"buy": 0})),
        (b'"a""b",x\n', (0, "map", None, {"a": 0})),
    ],
)
def test_a_value_not_of_its_kind_refuses_the_block(
    core: ModuleType, block: bytes, spec: tuple[Any, ...]
) -> None:
    assert core.csv_columns(block, 2, [spec]) is None


def test_leading_zeros_past_pythons_digit_limit(core: ModuleType) -> None:
    block = b"0" * 5000 + b"17,x\n"
    got = core.csv_columns(block, 2, [(0, "uint64", None)])
    assert got is not None
    assert struct.unpack("=Q", got[1][0]) == (17,)


def test_an_empty_block_has_no_rows(core: ModuleType) -> None:
    assert core.csv_columns(b"", 3, [(1, "text", None), (2, "uint64", None)]) == (
        0,
        [(None, b"\x00\x00\x00\x00", b""), b""],
    )


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("x", "columns: must be a list of (field, kind, empty) tuples"),
        ([(0, "text")], "columns[0]: must be a (field, kind, empty[, table]) tuple"),
        ([(2, "text", None)], "columns[0] field: must be an int in [0, 1]"),
        ([(True, "text", None)], "columns[0] field: must be an int in [0, 1]"),
        ([(0, "float", None)], "columns[0] kind: must be one of text, uint64, map"),
        ([(0, "map", None)], "columns[0]: takes a table if and only if its kind is map"),
        ([(0, "text", 5)], "columns[0] empty: must be None or an ASCII str"),
        (
            [(0, "uint64", -1)],
            "columns[0] empty: must be None or an int in [0, 18446744073709551615]",
        ),
        ([(0, "map", 200, {"a": 1})], "columns[0] empty: must be None or an int in [-128, 127]"),
        ([(0, "map", None, {"A": 1})], "columns[0] table: keys must be lowercase ASCII str"),
        ([(0, "map", None, {'"': 1})], "columns[0] table: keys must be lowercase ASCII str"),
        ([(0, "map", None, {"a": 300})], "columns[0] table: values must be ints in [-128, 127]"),
    ],
)
def test_bad_columns_are_refused_by_name(core: ModuleType, columns: Any, message: str) -> None:
    with pytest.raises(OrderFieldError) as info:
        core.csv_columns(b"a,b\n", 2, columns)
    assert str(info.value).startswith(message)


def test_bad_block_and_width(core: ModuleType) -> None:
    with pytest.raises(OrderFieldError, match="block: must be bytes-like"):
        core.csv_columns("a,b\n", 2, [])
    with pytest.raises(OrderFieldError, match="width: must be a positive int"):
        core.csv_columns(b"a,b\n", 0, [])
