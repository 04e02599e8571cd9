"""``append_column``: CSV rows with one more column, as ``clobkit order-ids`` writes them.

Both twins against a line-by-line reference written here, on any bytes.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.errors import ClobkitError, OrderFieldError

from ..conftest import examples


def _reference(lines: bytes, values: bytes, width: int) -> bytes:
    """Line by line: split at LF, drop the empty tail after a final LF, drop one CR per line."""
    rows = lines.split(b"\n")
    if rows[-1] == b"":
        rows.pop()
    out = b""
    for k, row in enumerate(rows):
        if row.endswith(b"\r"):
            row = row[:-1]
        out += row + b"," + values[k * width : (k + 1) * width] + b"\n"
    return out


def _strided(data: bytes) -> memoryview:
    """``data`` as a non-contiguous view (every other byte of a doubled copy): the twins
    copy it first, and the compiled one must keep that copy alive while it reads it."""
    return memoryview(bytes(b for b in data for _ in (0, 1)))[::2]


def _count(lines: bytes) -> int:
    rows = lines.split(b"\n")
    return len(rows) - (rows[-1] == b"")


@settings(max_examples=examples(300))
@given(
    st.lists(st.sampled_from([b"a", b'"x,y"', b",", b"\r", b"\n", b"\r\n", b"\x00", b"\xff"])),
    st.integers(1, 70),
    st.sampled_from([bytes, bytearray, memoryview, _strided]),
)
def test_twins_equal_the_reference(
    core: ModuleType, parts: list[bytes], width: int, kind: Any
) -> None:
    lines = b"".join(parts)
    values = bytes(range(256))[:width] * _count(lines)
    want = _reference(lines, values, width)
    assert core.append_column(kind(lines), kind(values), width) == want


@pytest.mark.parametrize(
    ("lines", "values", "width", "message"),
    [
        ("a\n", b"xx", 2, "lines: must be bytes-like (got '<str>')"),
        (b"a\n", 7, 2, "values: must be bytes-like (got '<int>')"),
        (b"a\nb", b"xx", 2, "values: must hold 2 bytes for each of the 2 lines (got '<2 bytes>')"),
        (b"a", b"xx", 0, "width: must be a positive int (got 0)"),
        (b"a", b"xx", 2.0, "width: must be a positive int (got 2.0)"),
        (b"a", b"xx", False, "width: must be a positive int (got False)"),
    ],
)
def test_bad_arguments_are_named_alike(
    both: tuple[ModuleType, ...], lines: Any, values: Any, width: Any, message: str
) -> None:
    for twin in both:
        with pytest.raises(OrderFieldError) as info:
            twin.append_column(lines, values, width)
        assert isinstance(info.value, ClobkitError)
        assert str(info.value) == message
