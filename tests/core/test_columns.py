"""``order_ids`` on pyarrow and numpy columns equals the list path, in both twins (#14)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from itertools import pairwise
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.errors import OrderFieldError

from ..conftest import examples
from .oracle import eth_account_order_id, eth_account_order_id_v2
from .test_order_id_v2 import WALLET, WALLET_V3

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")

MAX = 2**256 - 1
WALLET_V1 = WALLET | {
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}
WALLETS = {1: WALLET_V1, 2: WALLET, 3: WALLET_V3}
KECCAK_PATHS = ("portable", "avx2", "avx512")
UINT_COLUMNS = {1: ("fee_rate_bps", "nonces", "expirations"), 2: ("timestamps",)}


def _version_columns(version: int) -> tuple[str, ...]:
    return UINT_COLUMNS[1 if version == 1 else 2]


@st.composite
def orders(draw: Any, version: int) -> dict[str, list[Any]]:
    """A batch as lists of ints (sides 0/1, neg_risk bools, words bytes or None)."""
    n = draw(st.integers(0, 40))
    small = st.integers(0, 2**63 - 1)
    wide = st.one_of(small, st.integers(0, 2**64 - 1))
    cols: dict[str, list[Any]] = {
        "token_ids": draw(st.lists(st.integers(0, MAX), min_size=n, max_size=n)),
        "maker_amounts": draw(st.lists(wide, min_size=n, max_size=n)),
        "taker_amounts": draw(st.lists(wide, min_size=n, max_size=n)),
        "sides": draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
        "salts": draw(st.lists(small, min_size=n, max_size=n)),
        "neg_risk": draw(st.lists(st.booleans(), min_size=n, max_size=n)),
    }
    for name in _version_columns(version):
        cols[name] = draw(st.lists(small, min_size=n, max_size=n))
    if version != 1:
        word = st.one_of(st.none(), st.binary(min_size=32, max_size=32))
        cols["metadatas"] = draw(st.lists(word, min_size=n, max_size=n))
        cols["builders"] = draw(st.lists(word, min_size=n, max_size=n))
    return cols


def _chunked(draw: Any, arr: Any) -> Any:
    """``arr`` as a ChunkedArray cut at drawn boundaries, or a slice with an offset."""
    n = len(arr)
    how = draw(st.sampled_from(["array", "chunked", "slice"]))
    if how == "chunked":
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
        bounds = [0, *cuts, n]
        return pa.chunked_array([arr[a:b] for a, b in pairwise(bounds)], arr.type)
    if how == "slice":
        pad = draw(st.integers(1, 9))
        # a slice of a longer array: the data starts at an offset into its buffers
        if not n:
            return arr
        padded = pa.concat_arrays([arr.slice(0, 1)] * pad + [arr])  # dictionaries: the same one
        return padded.slice(pad)
    return arr


_INDEX_TYPES = [pa.int8(), pa.uint8(), pa.int16(), pa.uint16(), pa.int32(), pa.uint32()]
_INDEX_TYPES += [pa.int64(), pa.uint64()]


def _dictionary(draw: Any, arr: Any) -> Any:
    """``arr`` as a dictionary array (as Parquet and pandas give): drawn index type, and
    values in the dictionary no row refers to (``"x"``-like junk the core must not refuse)."""
    unique = list(dict.fromkeys(arr.to_pylist()))
    text = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
    if text and draw(st.booleans()):  # a value no row refers to: never parsed as a row's
        unique.insert(draw(st.integers(0, len(unique))), "x")
    position = {v: i for i, v in enumerate(unique)}
    small = [t for t in _INDEX_TYPES if len(unique) < 2 ** (t.bit_width - 1)]
    index_type = draw(st.sampled_from(small))
    indices = pa.array([position[v] for v in arr.to_pylist()], index_type)
    return pa.DictionaryArray.from_arrays(indices, pa.array(unique, arr.type))


def _uint_form(draw: Any, values: list[int], token: bool) -> Any:
    big = any(v >= 2**64 for v in values)
    forms = ["string", "large_string", "decimal256"]
    if not big:
        forms += ["uint64", "numpy_u64"]
        if all(v < 2**63 for v in values):
            forms += ["int64", "numpy_i64"]
        if all(v < 10**38 for v in values):
            forms.append("decimal128")
    if token:
        forms.append("fsb32")
    if any(v >= 10**76 for v in values):
        forms.remove("decimal256")
    form = draw(st.sampled_from(forms))
    if form == "numpy_u64":
        return np.array(values, dtype=np.uint64)
    if form == "numpy_i64":
        return np.array(values, dtype=np.int64)
    typ = {
        "string": pa.string(),
        "large_string": pa.large_string(),
        "decimal256": pa.decimal256(76, 0),
        "decimal128": pa.decimal128(38, 0),
        "uint64": pa.uint64(),
        "int64": pa.int64(),
        "fsb32": pa.binary(32),
    }[form]
    if form in ("string", "large_string"):
        data: list[Any] = [str(v) for v in values]
    elif form == "fsb32":
        data = [v.to_bytes(32, "big") for v in values]
    elif form.startswith("decimal"):
        from decimal import Decimal

        data = [Decimal(v) for v in values]
    else:
        data = values
    arr = pa.array(data, typ)
    if draw(st.integers(0, 3)) == 0:
        arr = _dictionary(draw, arr)
    return _chunked(draw, arr)


def _side_form(draw: Any, values: list[int]) -> Any:
    form = draw(st.sampled_from(["int8", "string", "dictionary", "numpy_i8"]))
    if form == "numpy_i8":
        return np.array(values, dtype=np.int8)
    if form == "int8":
        arr = pa.array(values, pa.int8())
    else:
        arr = pa.array(["SELL" if v else "BUY" for v in values], pa.string())
        if form == "dictionary":
            arr = _dictionary(draw, arr)
    return _chunked(draw, arr)


def _word_form(draw: Any, values: list[bytes | None]) -> Any:
    filled = [v or bytes(32) for v in values]  # a null is refused: zero words stand in
    if draw(st.booleans()):
        arr = pa.array(filled, pa.binary(32))
    else:
        arr = pa.array(["0x" + v.hex() for v in filled], pa.string())
    if draw(st.integers(0, 3)) == 0:
        arr = _dictionary(draw, arr)
    return _chunked(draw, arr), filled


@st.composite
def batches(draw: Any) -> tuple[int, dict[str, list[Any]], dict[str, Any]]:
    """(version, the list form, a columnar form of the same orders, each column drawn)."""
    version = draw(st.sampled_from([1, 2, 3]))
    lists = draw(orders(version))
    cols: dict[str, Any] = {}
    for name, values in lists.items():
        keep_list = draw(st.integers(0, 5)) == 0  # mixed list and columnar arguments too
        if name in ("metadatas", "builders"):
            cols[name], lists[name] = _word_form(draw, values)
            continue
        if keep_list:
            cols[name] = values
        elif name == "sides":
            cols[name] = _side_form(draw, values)
        elif name == "neg_risk":
            form = draw(st.sampled_from(["bool", "int8", "numpy"]))
            if form == "numpy":
                cols[name] = np.array(values, dtype=np.bool_)
            else:
                typ = pa.bool_() if form == "bool" else pa.int8()
                data = values if form == "bool" else [int(v) for v in values]
                cols[name] = _chunked(draw, pa.array(data, typ))
        else:
            cols[name] = _uint_form(draw, values, name == "token_ids")
    return version, lists, cols


@settings(max_examples=examples(150))  # each a few Arrow arrays built: 45 s a twin in CI
@given(batches())
def test_columns_equal_lists(core: ModuleType, batch: Any) -> None:
    version, lists, cols = batch
    hasher = core.OrderHasher(WALLETS[version])
    assert hasher.order_ids(**cols) == hasher.order_ids(**lists)


@settings(max_examples=examples(60))
@given(batches(), st.integers(1, 3))
def test_columns_every_keccak_path_and_thread_count(batch: Any, threads: int) -> None:
    core_c = pytest.importorskip("clobkit.core._core_c")
    version, lists, cols = batch
    hasher = core_c.OrderHasher(WALLETS[version])
    want = importlib.import_module("clobkit.core.pure").OrderHasher(WALLETS[version])
    want_ids = want.order_ids(**lists)
    try:
        for path in KECCAK_PATHS:
            if core_c.set_implementation(keccak=path):
                assert hasher.order_ids(**cols, threads=threads) == want_ids
    finally:
        core_c.set_implementation(keccak="auto")


def _big_batch(version: int, n: int) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {
        "token_ids": [(i * 0x9E3779B97F4A7C15) % MAX for i in range(n)],
        "maker_amounts": [1_000_000 + i for i in range(n)],
        "taker_amounts": [2_000_000 + 3 * i for i in range(n)],
        "sides": [i & 1 for i in range(n)],
        "salts": [(i * 7919) % 10**12 for i in range(n)],
        "neg_risk": [i % 3 == 0 for i in range(n)],
    }
    for name in _version_columns(version):
        cols[name] = [1_700_000_000_000 + i for i in range(n)]
    return cols


def _arrow(cols: dict[str, list[Any]], chunk: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, values in cols.items():
        if name == "token_ids":
            arr = pa.array([str(v) for v in values])
        elif name == "neg_risk":
            arr = pa.array(values, pa.bool_())
        elif name == "sides":
            arr = pa.array(["SELL" if v else "BUY" for v in values])
        else:
            arr = pa.array(values, pa.uint64())
        out[name] = pa.chunked_array([arr[i : i + chunk] for i in range(0, len(arr), chunk)])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("version", [1, 2, 3])
def test_many_chunks_against_eth_account(core: ModuleType, version: int) -> None:
    """More rows than one parse round (8192), odd chunk boundaries; sampled rows vs eth-account."""
    n = 20_011
    lists = _big_batch(version, n)
    hasher = core.OrderHasher(WALLETS[version])
    ids = hasher.order_ids(**_arrow(lists, 977), threads=2)
    assert ids == hasher.order_ids(**lists)
    for i in range(0, n, 2_503):
        neg = lists["neg_risk"][i]
        if version == 1:
            order = {
                "token_id": lists["token_ids"][i],
                "maker_amount": lists["maker_amounts"][i],
                "taker_amount": lists["taker_amounts"][i],
                "side": lists["sides"][i],
                "salt": lists["salts"][i],
                "fee_rate_bps": lists["fee_rate_bps"][i],
                "nonce": lists["nonces"][i],
                "expiration": lists["expirations"][i],
            }
            assert ids[i] == eth_account_order_id(WALLETS[1], order, neg)
        else:
            order = {
                "token_id": lists["token_ids"][i],
                "maker_amount": lists["maker_amounts"][i],
                "taker_amount": lists["taker_amounts"][i],
                "side": lists["sides"][i],
                "salt": lists["salts"][i],
                "timestamp": lists["timestamps"][i],
            }
            assert ids[i] == eth_account_order_id_v2(WALLETS[version], order, neg, version)


def _error(hasher: Any, **cols: Any) -> str:
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(**cols)
    return str(info.value)


BASE = {"token_ids": 7, "maker_amounts": 1, "taker_amounts": 2, "sides": 0, "salts": 3}


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("salts", pa.array([1, None, 3]), "salts[1]: must not be null (got None)"),
        (
            "maker_amounts",
            pa.chunked_array([[1, 2], [3, -4]]),
            "maker_amounts[3]: must lie in [0, 2**256 - 1] (got -4)",
        ),
        (
            "taker_amounts",
            np.array([5, -1, 2]),
            "taker_amounts[1]: must lie in [0, 2**256 - 1] (got -1)",
        ),
        (
            "token_ids",
            pa.array(["1", "x2", "3"]),
            "token_ids[1]: must be a non-negative decimal integer string (got 'x2')",
        ),
        ("sides", pa.array(["BUY", "buy", "SELL"]), 'sides[1]: must be "BUY", "SELL", 0 or 1'),
        ("sides", pa.array([0, 2, 1], pa.int8()), 'sides[1]: must be "BUY", "SELL", 0 or 1'),
        ("neg_risk", pa.array([0, 1, 5], pa.int64()), "neg_risk[2]: must be a bool (got 5)"),
        (  # a side is never a bool, as parse_side refuses True: one rule for every form
            "sides",
            pa.array([True, False, True]),
            "sides: must be a column of integers (0/1) or strings",
        ),
        ("sides", np.array([True, False]), "sides: must be a column of integers (0/1) or strings"),
        (
            "salts",
            pa.array([1, 2, 3], pa.float64()),
            "salts: must be a column of integers (int/uint or decimal with scale 0) "
            "or decimal digit strings (got '<double column>')",
        ),
        (
            "salts",
            pa.array([1, 2, 3], pa.decimal128(10, 2)),
            "salts: must be a decimal column with scale 0 (got '<decimal128(10, 2) column>')",
        ),
        (
            "token_ids",
            pa.array([b"\x01" * 31] * 3, pa.binary(31)),
            "token_ids: must be a column of integers, decimal digit strings or 32-byte",
        ),
        ("salts", np.zeros((3, 1), dtype=np.int64), "salts: must be one-dimensional"),
        ("salts", np.array([1.0, 2.0, 3.0]), "salts: must be a column of integers"),
        (
            "salts",
            pa.array([1, 2, 3]).slice(1),
            "salts: has a different length than",
        ),
    ],
)
def test_column_errors_name_the_row(
    both: tuple[ModuleType, ...], column: str, values: Any, message: str
) -> None:
    cols = BASE | {column: values, "maker_amounts": pa.array([1, 2, 3])}
    if column == "maker_amounts":
        cols = BASE | {column: values, "salts": [1, 2, 3, 4]}
    errors = {_error(twin.OrderHasher(WALLET_V1), **cols) for twin in both}
    assert len(errors) == 1, errors  # the same words from both twins
    assert errors.pop().startswith(message)


def test_first_bad_row_across_list_and_columnar_arguments(both: tuple[ModuleType, ...]) -> None:
    """The error named is the first bad row (then the first column), as on the list path."""
    n = 10_000  # beyond one parse round
    salts = pa.array([1] * n, pa.int64())
    makers = [1] * n
    makers[9_000] = -1
    sides = pa.array(["BUY"] * 8_999 + [None] + ["BUY"] * (n - 9_000))
    for twin in both:
        hasher = twin.OrderHasher(WALLET_V1)
        message = _error(
            hasher, **(BASE | {"salts": salts, "maker_amounts": makers, "sides": sides})
        )
        assert message.startswith("sides[8999]: must not be null")


def test_unusual_but_valid_values_take_the_slow_path(both: tuple[ModuleType, ...]) -> None:
    """Long zero-padded digit strings and upper-case hex words still hash as the list path."""
    tok = "0" * 150 + "42"
    cols = BASE | {"token_ids": pa.array([tok, "42"]), "salts": pa.array([0, 1], pa.uint8())}
    v2 = BASE | {
        "timestamps": pa.array([5, 6], pa.int32()),
        "metadatas": pa.array(["0X" + "AB" * 32, "0x" + "cd" * 32]),
        "builders": pa.array([b"\xff" * 32, bytes(32)], pa.binary(32)),
        "salts": [0, 1],
    }
    for twin in both:
        h1, h2 = twin.OrderHasher(WALLET_V1), twin.OrderHasher(WALLET)
        assert h1.order_ids(**cols) == h1.order_ids(
            **(BASE | {"token_ids": [42, 42], "salts": [0, 1]})
        )
        want = h2.order_ids(
            **(
                v2
                | {
                    "timestamps": [5, 6],
                    "metadatas": ["0x" + "ab" * 32, "0x" + "cd" * 32],
                    "builders": [b"\xff" * 32, None],
                }
            )
        )
        assert h2.order_ids(**v2) == want


def test_empty_columns(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET_V1)
    empty = pa.chunked_array([], pa.int64())
    assert hasher.order_ids(**(BASE | {"salts": empty})) == []
    assert hasher.order_ids(**(BASE | {"salts": np.array([], dtype=np.int64)})) == []


def test_numpy_object_and_string_arrays_take_the_list_path(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET_V1)
    want = hasher.order_ids(**(BASE | {"token_ids": ["12", "13"], "sides": ["BUY", "SELL"]}))
    got = hasher.order_ids(
        **(BASE | {"token_ids": np.array(["12", "13"]), "sides": np.array(["BUY", "SELL"], object)})
    )
    assert got == want


def test_without_pyarrow_and_numpy_nothing_changes() -> None:
    """The core never imports them: a process without them hashes lists as before."""
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['numpy'] = None\n"
        "from clobkit.order_id import OrderHasher\n"
        f"h = OrderHasher({WALLET_V1!r})\n"
        "print(h.order_ids(token_ids=[1, 2], maker_amounts=1, taker_amounts=2, sides=0, salts=3))\n"
        "print(sorted(m for m in ('pyarrow', 'numpy') if sys.modules.get(m)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    want = importlib.import_module("clobkit.core.pure").OrderHasher(WALLET_V1)
    assert out[0] == repr(
        want.order_ids(token_ids=[1, 2], maker_amounts=1, taker_amounts=2, sides=0, salts=3)
    )
    assert out[1] == "[]"


# Dictionary columns (Parquet's dictionary pages, pandas categoricals): the compiled
# twin parses each dictionary value once and copies it to the rows that index it.
TOKENS = [str(2**255 + 7), "12345", str(2**256 - 1)]


def _dict_column(values: list[Any], index_type: Any, dictionary: list[Any]) -> Any:
    position = {v: i for i, v in enumerate(dictionary)}
    indices = pa.array([None if v is None else position[v] for v in values], index_type)
    return pa.DictionaryArray.from_arrays(indices, pa.array(dictionary, pa.string()))


@pytest.mark.parametrize("index_type", _INDEX_TYPES, ids=str)
def test_dictionary_columns_equal_lists(core: ModuleType, index_type: Any) -> None:
    """Few distinct values over many rows (the dictionary is read, not decoded), in chunks
    with dictionaries of their own, equal the list path; unreferenced junk is never read."""
    n = 10_000
    tokens = [TOKENS[i * 7 % 3] for i in range(n)]
    sides = ["SELL" if i % 5 else "BUY" for i in range(n)]
    halves = [(0, 6_001), (6_001, n)]
    token_col = pa.chunked_array(
        [_dict_column(tokens[a:b], index_type, ["x", *TOKENS[::-1]]) for a, b in halves]
    )
    side_col = _dict_column(sides, index_type, ["SELL", "bogus", "BUY"])
    args = {"maker_amounts": list(range(n)), "taker_amounts": [5] * n, "salts": list(range(n))}
    hasher = core.OrderHasher(WALLET_V1)
    want = hasher.order_ids(token_ids=tokens, sides=sides, **args)
    assert hasher.order_ids(token_ids=token_col, sides=side_col, **args) == want
    # a slice starts at an offset into the indices
    got = hasher.order_ids(
        token_ids=token_col.combine_chunks().slice(3, 5_000),
        sides=side_col.slice(3, 5_000),
        **{k: v[3:5_003] for k, v in args.items()},
    )
    assert got == want[3:5_003]


@pytest.mark.parametrize(
    ("dictionary", "bad", "message"),
    [
        (["1", "x2"], "x2", "token_ids[7000]: must be a non-negative decimal integer string"),
        (["1", None], None, "token_ids[7000]: must not be null (got None)"),
    ],
)
def test_dictionary_errors_name_the_row(
    both: tuple[ModuleType, ...], dictionary: list[Any], bad: Any, message: str
) -> None:
    """A bad dictionary value is refused at the first row indexing it, as the list path does."""
    n = 10_000
    tokens = ["1"] * n
    tokens[7_000] = bad
    position = {v: i for i, v in enumerate(dictionary)}
    col = pa.DictionaryArray.from_arrays(
        pa.array([position[v] for v in tokens], pa.int16()), pa.array(dictionary, pa.string())
    )
    cols = BASE | {"token_ids": col, "maker_amounts": [1] * n}
    errors = {_error(twin.OrderHasher(WALLET_V1), **cols) for twin in both}
    assert len(errors) == 1, errors
    assert errors.pop().startswith(message)


def test_dictionary_null_index_is_refused(both: tuple[ModuleType, ...]) -> None:
    n = 10_000
    sides: list[str | None] = ["BUY"] * n
    sides[4_321] = None
    col = _dict_column(sides, pa.int32(), ["BUY", "SELL"])
    cols = BASE | {"sides": col, "maker_amounts": [1] * n}
    errors = {_error(twin.OrderHasher(WALLET_V1), **cols) for twin in both}
    assert errors == {"sides[4321]: must not be null (got None)"}


WALLET_V2 = WALLET | {
    "ctf_exchange": "0xE111180000d2663C0091e4f400237545B87B996B",
    "neg_risk_exchange": "0xe2222d279d744050d28e00520010520000310F59",
}


def test_an_s32_word_column_keeps_its_trailing_nul_bytes(core: ModuleType) -> None:
    word = b"\xab" * 16 + b"\x00" * 16  # a builder code, padded right
    hasher = core.OrderHasher(WALLET_V2)
    common: dict[str, Any] = {
        "token_ids": [1, 2],
        "maker_amounts": 1,
        "taker_amounts": 1,
        "sides": 0,
        "salts": 1,
        "timestamps": 1,
    }
    want = hasher.order_ids(**common, builders=[word, word])
    assert hasher.order_ids(**common, builders=np.array([word, word], dtype="S32")) == want
