"""``clobkit.core.arrow_compute`` gives what ``pyarrow.compute`` and pyarrow's Array methods give.

The oracle is pyarrow's public API; the inputs cover nulls, empty arrays,
chunked arrays and dictionaries, as the file paths meet them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")

from clobkit.core import arrow_compute as ac  # noqa: E402 - needs pyarrow

INTS = [pa.array([3, None, 0, 2**40], pa.int64()), pa.array([], pa.int64())]
STRS = [
    pa.array([" 12 ", "x", None, "", "007"]),
    pa.chunked_array([["1", "a"], [], [None, " b\t"]]),
    pa.array([], pa.string()),
]
BOOLS = [
    pa.array([True, None, False]),
    pa.array([None, None], pa.bool_()),
    pa.array([], pa.bool_()),
]
BOOLS += [pa.array([True, True]), pa.chunked_array([[False], [True, None]])]


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    assert got.equals(want) if hasattr(want, "equals") else got == want


@pytest.mark.parametrize("values", INTS + STRS, ids=lambda v: f"{type(v).__name__}{v.to_pylist()}")
def test_array_methods(values: Any) -> None:
    typ = pa.string() if pa.types.is_integer(values.type) else values.type
    _same(ac.cast(values, typ), values.cast(typ))
    idx = pa.array([0, len(values) - 1] if len(values) else [], pa.int64())
    _same(ac.take(values, idx), values.take(idx))
    _same(ac.encode(values), values.dictionary_encode())
    _same(ac.unique(values), pc.unique(values))
    fill = pa.scalar("z") if pa.types.is_string(values.type) else pa.scalar(-1, pa.int64())
    _same(ac.fill_null(values, fill), values.fill_null(fill))
    mask = pa.array([i % 2 == 0 if i != 1 else None for i in range(len(values))], pa.bool_())
    if isinstance(values, pa.Array):
        _same(ac.filter_(values, mask), values.filter(mask))
        encoded = values.dictionary_encode()
        _same(ac.decode(encoded), encoded.dictionary_decode())


@pytest.mark.parametrize("values", STRS, ids=lambda v: f"{type(v).__name__}{v.to_pylist()}")
def test_string_kernels(values: Any) -> None:
    _same(ac.trim(values, " \t"), pc.utf8_trim(values, " \t"))
    _same(ac.is_decimal(values), pc.ascii_is_decimal(values))
    _same(ac.matches(values, "^[0-9]+$"), pc.match_substring_regex(values, "^[0-9]+$"))
    distinct = pc.unique(values)
    _same(ac.index_in(values, distinct), pc.index_in(values, value_set=distinct))


@pytest.mark.parametrize("values", BOOLS, ids=lambda v: f"{type(v).__name__}{v.to_pylist()}")
def test_aggregates_read_a_null_result_as_false(values: Any) -> None:
    assert ac.any_(values) is bool(pc.any(values).as_py())
    assert ac.all_(values) is bool(pc.all(values).as_py())
    _same(ac.nonzero(values), pc.indices_nonzero(values))


def test_all_on_no_values_is_false_as_the_csv_path_reads_it() -> None:
    assert pc.all(pa.array([], pa.bool_())).as_py() is None  # the oracle's own reading
    assert ac.all_(pa.array([], pa.bool_())) is False


BINARY: list[tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = [
    (ac.equal, pc.equal),
    (ac.greater, pc.greater),
    (ac.greater_equal, pc.greater_equal),
]


@pytest.mark.parametrize(("ours", "theirs"), BINARY, ids=lambda f: f.__name__)
def test_comparisons(ours: Any, theirs: Any) -> None:
    a = pa.array([1, None, 5, 2**64 - 1], pa.uint64())
    for b in (pa.array([1, 2, None, 0], pa.uint64()), pa.scalar(2, pa.uint64())):
        _same(ours(a, b), theirs(a, b))


def test_or_and_if_else() -> None:
    a, b = pa.array([True, False, None, True]), pa.array([False, False, True, None])
    _same(ac.or_(a, b), pc.or_(a, b))
    x, y = pa.array([1, 2, 3, 4]), pa.array([9, 8, 7, 6])
    _same(ac.if_else(a, x, y), pc.if_else(a, x, y))


def test_filter_on_a_record_batch() -> None:
    batch = pa.record_batch({"a": [1, 2, 3], "b": ["x", None, "z"]})
    keep = pa.array([True, False, True])
    _same(ac.filter_(batch, keep), batch.filter(keep))


def test_a_safe_cast_refuses_what_does_not_fit() -> None:
    with pytest.raises(pa.ArrowInvalid):
        ac.cast(pa.array(["18446744073709551616"]), pa.uint64())  # 2**64
    with pytest.raises(pa.ArrowInvalid):
        ac.cast(pa.array([-1], pa.int64()), pa.uint64())
