"""``order_ids(..., out="arrow")``: one pyarrow string array, equal to the list, in both twins."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.core import arrow_ids
from clobkit.errors import MissingExtra, OrderFieldError

from .test_order_id import WALLET

pa = pytest.importorskip("pyarrow")

TOKEN = 71321045679252212594626385532706912750332728571942532289631379312455583992563


def _batch(n: int, seed: int) -> dict[str, Any]:
    return {
        "token_ids": pa.array([str(TOKEN - i * seed) for i in range(n)], pa.string()),
        "maker_amounts": [1_000 + i for i in range(n)],
        "taker_amounts": pa.array([2_000 + seed + i for i in range(n)], pa.int64()),
        "sides": ["BUY" if (i + seed) % 3 else "SELL" for i in range(n)],
        "salts": seed,
        "neg_risk": pa.array([bool((i * seed) & 1) for i in range(n)], pa.bool_()),
    }


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 20_000), seed=st.integers(0, 2**31), threads=st.sampled_from([1, 2, 3]))
def test_arrow_ids_equal_the_list_in_both_twins(
    both: tuple[ModuleType, ...], n: int, seed: int, threads: int
) -> None:
    arrays = []
    for twin in both:
        hasher = twin.OrderHasher(WALLET)
        batch = _batch(n if twin.__name__.endswith("_c") else min(n, 300), seed)
        ids = hasher.order_ids(**batch, threads=threads)
        got = hasher.order_ids(**batch, threads=threads, out="arrow")
        assert got.type == pa.string()
        assert got.null_count == 0
        assert got.equals(pa.array(ids, pa.string()))
        assert hasher.order_ids(**batch, out="list") == ids
        arrays.append(got)
    n_min = min(len(a) for a in arrays)
    assert all(a.slice(0, n_min).equals(arrays[0].slice(0, n_min)) for a in arrays)


def test_past_int32_offsets_the_array_is_large_string(
    core: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over 2**31 - 1 bytes of ids int32 offsets overflow: both twins switch to large_string."""
    monkeypatch.setattr(arrow_ids, "INT32_IDS", 2)
    hasher = core.OrderHasher(WALLET)
    batch = _batch(3, 7)
    got = hasher.order_ids(**batch, out="arrow")
    assert got.type == pa.large_string()
    assert got.to_pylist() == hasher.order_ids(**batch)
    assert hasher.order_ids(**_batch(2, 7), out="arrow").type == pa.string()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 20_000), seed=st.integers(0, 2**31), threads=st.sampled_from([1, 2, 3]))
def test_bytes_ids_are_the_list_back_to_back_in_both_twins(
    both: tuple[ModuleType, ...], n: int, seed: int, threads: int
) -> None:
    """``out="bytes"``: the ids of the list, 66 ASCII characters each, from lists and Arrow
    columns alike (the lists in rounds, the columns in one), no pyarrow needed for it."""
    for twin in both:
        hasher = twin.OrderHasher(WALLET)
        batch = _batch(n if twin.__name__.endswith("_c") else min(n, 300), seed)
        ids = hasher.order_ids(**batch, threads=threads)
        got = hasher.order_ids(**batch, threads=threads, out="bytes")
        assert type(got) is bytes
        assert got == "".join(ids).encode("ascii")
        lists = {k: v.to_pylist() if isinstance(v, pa.Array) else v for k, v in batch.items()}
        assert hasher.order_ids(**lists, threads=threads, out="bytes") == got


def test_bytes_ids_need_no_pyarrow(core: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    batch = {
        "token_ids": [TOKEN, TOKEN],
        "maker_amounts": [1, 2],
        "taker_amounts": 3,
        "sides": 0,
        "salts": [5, 6],
    }
    hasher = core.OrderHasher(WALLET)
    assert hasher.order_ids(**batch, out="bytes") == "".join(hasher.order_ids(**batch)).encode()
    with pytest.raises(MissingExtra):
        hasher.order_ids(**batch, out="arrow")


@pytest.mark.parametrize("out", ["Arrow", "", None, b"arrow", 1, "pyarrow", "Bytes", b"bytes"])
def test_a_bad_out_is_named(core: ModuleType, out: Any) -> None:
    with pytest.raises(OrderFieldError, match=r'^out: must be "list", "arrow" or "bytes"') as info:
        core.OrderHasher(WALLET).order_ids(**_batch(2, 1), out=out)
    assert info.value.field == "out"


def test_bad_values_raise_as_with_a_list(core: ModuleType) -> None:
    batch = _batch(4, 1) | {"salts": [1, 2, -3, 4]}
    hasher = core.OrderHasher(WALLET)
    with pytest.raises(OrderFieldError) as listed:
        hasher.order_ids(**batch)
    with pytest.raises(OrderFieldError) as arrowed:
        hasher.order_ids(**batch, out="arrow")
    assert (
        str(arrowed.value) == str(listed.value) == "salts[2]: must lie in [0, 2**256 - 1] (got -3)"
    )


def test_without_pyarrow_out_arrow_names_the_extra(
    core: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = {k: v.to_pylist() if isinstance(v, pa.Array) else v for k, v in _batch(2, 1).items()}
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    hasher = core.OrderHasher(WALLET)
    assert len(hasher.order_ids(**batch)) == 2  # the list needs no pyarrow
    from clobkit.core.extras import install_hint

    with pytest.raises(MissingExtra) as info:
        hasher.order_ids(**batch, out="arrow")
    assert str(info.value).endswith(f"needs pyarrow: {install_hint('data')}")
    assert "pyarrow" in install_hint("data")


def test_sign_many_refuses_out(core: ModuleType) -> None:
    from clobkit.signing import OrderSigner

    hasher = core.OrderHasher(WALLET)
    with pytest.raises(OrderFieldError, match=r"^out: "):
        hasher.sign_many(OrderSigner("0x" + "42" * 32), **_batch(2, 1), out="arrow")
