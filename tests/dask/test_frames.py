"""clobkit.dask on the pandas frames people have (#14c): every dtype of every column,
bad rows, nulls, odd partitions, against eth-account's ids of the same Python values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from clobkit.errors import OrderFieldError

from ..conftest import import_extra
from ..core.oracle import eth_account_order_id_v2
from ..core.test_columns import WALLETS

pa = import_extra("pyarrow", "dask")
pd = import_extra("pandas", "dask")
dask = import_extra("dask", "dask")
dd = import_extra("dask.dataframe", "dask")
distributed = import_extra("distributed", "dask")

from clobkit.dask import with_order_ids  # noqa: E402 - after the extras are known present

# one LocalCluster a module, on one xdist worker (pyproject.toml's --dist loadgroup)
pytestmark = pytest.mark.xdist_group("dask_frames_cluster")

ROOT = Path(__file__).resolve().parents[2]
N, PARTS = 30, 10  # from_pandas(sort=False) cuts 3 rows a partition: rows 21-23 are partition 7
WALLET = WALLETS[2]
# the values every frame below holds, each stored another way
TOKENS = [(i * 0x9E3779B97F4A7C15) ** 3 % 2**256 for i in range(N)]  # most past 64 bits
MAKERS = [1_000_000 + 7 * i for i in range(N)]
TAKERS = [2**63 + 3 * i for i in range(N)]  # past int64: uint64, or Python ints
SIDES = ["SELL" if i % 3 else "BUY" for i in range(N)]
SALTS = [(i * 7919) % 10**12 for i in range(N)]
STAMPS = [1_777_000_000_000 + i for i in range(N)]
NEG = [i % 5 == 0 for i in range(N)]
LABELS = [f"o{i % 12}" for i in range(N)]  # strings, repeated: kept as they are
WORDS = [None if i < 3 or i % 4 == 0 else bytes([i]) * 32 for i in range(N)]  # partition 0: None


def _oracle(words: str | None = None) -> list[str]:
    """eth-account's id of each row (``words``: the column holding WORDS, None as zero)."""
    ids = []
    for i in range(N):
        order: dict[str, object] = {
            "token_id": TOKENS[i],
            "maker_amount": MAKERS[i],
            "taker_amount": TAKERS[i],
            "side": 0 if SIDES[i] == "BUY" else 1,
            "salt": SALTS[i],
            "timestamp": STAMPS[i],
        }
        if words is not None:
            order[words] = WORDS[i]
        ids.append(eth_account_order_id_v2(WALLET, order, NEG[i]))
    return ids


def _frame() -> Any:
    """The orders as pandas makes them from Python values, plus a column kept untouched."""
    return pd.DataFrame(
        {
            "note": [f"row {i}" for i in range(N)],
            "salt": SALTS,  # not in the usual order: columns are found by name
            "token_id": [str(t) for t in TOKENS],
            "maker_amount": MAKERS,
            "taker_amount": _series(TAKERS, "uint64"),
            "side": SIDES,
            "timestamp": STAMPS,
            "neg_risk": NEG,
        },
        index=LABELS,
    )


def _dask(frame: Any, convert_string: bool = False) -> Any:
    """``frame`` in PARTS partitions. Dask's default turns object columns into strings:
    without it they stay Python objects, as in frames a worker builds itself."""
    with dask.config.set({"dataframe.convert-string": convert_string}):
        df = dd.from_pandas(frame, npartitions=PARTS, sort=False)
    assert df.npartitions == PARTS
    return df


def _hashed(df: Any, **options: Any) -> Any:
    """``with_order_ids(df, WALLET)`` (a Dask DataFrame, whose methods carry no types)."""
    return with_order_ids(df, WALLET, **options)


def _arrow(values: list[Any], typ: Any) -> Any:
    return pd.Series(pa.array(values, typ), dtype=pd.ArrowDtype(typ), index=LABELS)


def _series(values: list[Any], dtype: Any) -> Any:
    return pd.Series(values, dtype=dtype, index=LABELS)


STR_TOKENS = [str(t) for t in TOKENS]
SIDE_BITS = [0 if s == "BUY" else 1 for s in SIDES]
LOWER_SIDES = [s.lower() for s in SIDES]
#: (column, how it is stored): the column's values, stored that way
STORAGES: dict[tuple[str, str], Callable[[], Any]] = {
    ("token_id", "object of Python ints"): lambda: _series(TOKENS, object),
    ("token_id", "category of Python ints"): lambda: _series(TOKENS, "category"),
    ("token_id", "category of strings"): lambda: _series(STR_TOKENS, "category"),
    ("token_id", "str"): lambda: _series(STR_TOKENS, "str"),
    ("token_id", "string[python]"): lambda: _series(STR_TOKENS, "string[python]"),
    ("token_id", "string[pyarrow]"): lambda: _series(STR_TOKENS, "string[pyarrow]"),
    ("token_id", "large_string"): lambda: _arrow(STR_TOKENS, pa.large_string()),
    ("maker_amount", "Int64"): lambda: _series(MAKERS, "Int64"),
    ("maker_amount", "UInt64"): lambda: _series(MAKERS, "UInt64"),
    ("maker_amount", "int64[pyarrow]"): lambda: _series(MAKERS, "int64[pyarrow]"),
    ("maker_amount", "object of Python ints"): lambda: _series(MAKERS, object),
    ("maker_amount", "category"): lambda: _series(MAKERS, "category"),
    ("maker_amount", "decimal128"): lambda: _arrow(
        [Decimal(v) for v in MAKERS], pa.decimal128(38, 0)
    ),
    ("taker_amount", "UInt64"): lambda: _series(TAKERS, "UInt64"),
    ("taker_amount", "uint64[pyarrow]"): lambda: _series(TAKERS, "uint64[pyarrow]"),
    ("taker_amount", "object of Python ints"): lambda: _series(TAKERS, object),
    ("taker_amount", "string[pyarrow]"): lambda: _series([str(v) for v in TAKERS], "string"),
    ("side", "category"): lambda: _series(SIDES, "category"),
    ("side", "object"): lambda: _series(SIDES, object),
    ("side", "string[pyarrow]"): lambda: _series(SIDES, "string[pyarrow]"),
    ("side", "int8 0/1"): lambda: _series(SIDE_BITS, "int8"),
    ("side", "category of 0/1"): lambda: _series(SIDE_BITS, "category"),
    ("salt", "UInt64"): lambda: _series(SALTS, "UInt64"),
    ("salt", "str"): lambda: _series([str(v) for v in SALTS], "str"),
    ("timestamp", "Int64"): lambda: _series(STAMPS, "Int64"),
    ("timestamp", "int64[pyarrow]"): lambda: _series(STAMPS, "int64[pyarrow]"),
    ("neg_risk", "boolean"): lambda: _series(NEG, "boolean"),
    ("neg_risk", "bool[pyarrow]"): lambda: _series(NEG, "bool[pyarrow]"),
    ("neg_risk", "object of bools"): lambda: _series(NEG, object),
    ("neg_risk", "int64 0/1"): lambda: _series([int(v) for v in NEG], "int64"),
    # read as clobkit order-ids reads a file's column (docs/scale.md, "Accepted forms")
    ("side", "lower case string[pyarrow]"): lambda: _series(LOWER_SIDES, "string[pyarrow]"),
    ("side", "lower case category"): lambda: _series(LOWER_SIDES, "category"),
    ("side", "object of 0/1 text"): lambda: _series([str(b) for b in SIDE_BITS], object),
    ("neg_risk", "string true/false"): lambda: _series([str(v) for v in NEG], "string[pyarrow]"),
    ("neg_risk", "category of 1/0 text"): lambda: _series([str(int(v)) for v in NEG], "category"),
    ("neg_risk", "boolean, NA for False"): lambda: _series([v or None for v in NEG], "boolean"),
}


@pytest.fixture(scope="module")
def oracle() -> list[str]:
    return _oracle()


# Dask's default string conversion turns object bools into the strings "True"/"False":
# read as flags spelled as text, as clobkit order-ids reads a CSV's
CASES = [(column, storage, convert) for column, storage in STORAGES for convert in (False, True)]


@pytest.mark.parametrize(("column", "storage", "convert_string"), CASES)
def test_every_storage_of_a_column_gives_the_oracles_ids(
    oracle: list[str], column: str, storage: str, convert_string: bool
) -> None:
    frame = _frame()
    frame[column] = STORAGES[column, storage]()
    out = _hashed(_dask(frame, convert_string), column="clob_order_id")
    got = out.compute(scheduler="sync")
    assert got["clob_order_id"].tolist() == oracle
    assert dict(got.dtypes) == dict(out.dtypes)  # the declared meta is what partitions give
    assert out.dtypes["clob_order_id"] == "string[pyarrow]"
    assert got.index.tolist() == LABELS
    assert list(got.columns) == [*frame.columns, "clob_order_id"]
    assert got["note"].tolist() == frame["note"].tolist()


BAD = 22  # a row of partition 7 of 10
#: (column, dtype, the bad value, what the error says of it): named as the list path names it
BAD_ROWS = [
    # a null of a required column: order_id's words for a None, as clobkit order-ids says it
    ("salt", "Int64", None, "must be an int or a decimal integer string (got None)"),
    ("salt", "int64", -3, "must lie in [0, 2**256 - 1] (got -3)"),
    ("salt", "str", "12a", "must be a non-negative decimal integer string (got '12a')"),
    (
        "token_id",
        "string[pyarrow]",
        "-5",
        "must be a non-negative decimal integer string (got '-5')",
    ),
    ("token_id", object, 2**256, f"must lie in [0, 2**256 - 1] (got {2**256})"),
    # the list path's word for a None (Arrow holds no ints past 64 bits)
    ("token_id", object, None, "must be an int or a decimal integer string (got None)"),
    ("taker_amount", object, -1, "must lie in [0, 2**256 - 1] (got -1)"),
    ("maker_amount", object, 2.5, "must be an int or a decimal integer string (got 2.5)"),
    ("maker_amount", object, 7.0, "must be an int or a decimal integer string (got 7.0)"),
    ("side", "category", " buy", 'must be "BUY", "SELL", 0 or 1 (got \' buy\')'),
    ("side", "string[pyarrow]", None, 'must be "BUY", "SELL", 0 or 1 (got None)'),
    ("neg_risk", "string[pyarrow]", "yes", "must be a bool (got 'yes')"),
    ("neg_risk", "int64", 2, "must be a bool (got 2)"),
]


def _bad_message(column: str, dtype: Any, bad: Any) -> str:
    """The error of the frame with ``bad`` in row BAD of ``column`` (stored as ``dtype``)."""
    frame = _frame()
    values = frame[column].tolist()
    if column in ("token_id", "taker_amount") and dtype is object:
        values = TOKENS if column == "token_id" else TAKERS  # Python ints past 64 bits
    values = list(values)
    values[BAD] = bad
    frame[column] = _series(values, dtype)
    try:
        _hashed(_dask(frame)).compute(scheduler="sync")
    except OrderFieldError as exc:
        return str(exc)
    return "no error"


@pytest.mark.parametrize(("column", "dtype", "bad", "reason"), BAD_ROWS)
def test_a_bad_row_in_partition_7_of_10_is_named(
    column: str, dtype: Any, bad: Any, reason: str
) -> None:
    assert _bad_message(column, dtype, bad) == f"partition 7, row 'o10': {column}: {reason}"


def test_the_pure_twin_names_the_same_rows() -> None:
    """CLOBKIT_NO_EXTENSIONS=1 in a fresh process: every message as the compiled core's."""
    code = (
        "import json\n"
        "from clobkit.core.select import IMPLEMENTATION\n"
        "from tests.dask.test_frames import BAD_ROWS, _bad_message\n"
        "print(IMPLEMENTATION)\n"
        "print(json.dumps([_bad_message(*case[:3]) for case in BAD_ROWS]))\n"
    )
    env = os.environ | {"CLOBKIT_NO_EXTENSIONS": "1", "PYTHONPATH": str(ROOT / "src")}
    lines = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert lines[0] == "python"
    assert json.loads(lines[1]) == [
        f"partition 7, row 'o10': {column}: {reason}" for column, _, _, reason in BAD_ROWS
    ]


@pytest.mark.parametrize("dtype", ["float64", "Float64", "double[pyarrow]", "category"])
def test_a_float_column_is_refused_never_rounded(dtype: str) -> None:
    frame = _frame()
    frame["maker_amount"] = _series([float(v) for v in MAKERS], dtype)  # integral floats
    with pytest.raises(OrderFieldError, match=r"column maker_amount: must be a column of integ"):
        _hashed(_dask(frame)).compute(scheduler="sync")


def _hex(word: bytes | None) -> str | None:
    return None if word is None else "0x" + word.hex()


#: a words column (None in all of partition 0 and in some other rows) stored each way
WORD_STORAGES: dict[str, Callable[[], Any]] = {
    "object of bytes": lambda: _series(WORDS, object),
    "object of hex": lambda: _series([_hex(w) for w in WORDS], object),
    "string[pyarrow] of hex": lambda: _series([_hex(w) for w in WORDS], "string[pyarrow]"),
    "category of hex": lambda: _series([_hex(w) for w in WORDS], "category"),
    "fixed_size_binary(32)": lambda: _arrow(WORDS, pa.binary(32)),
    "binary": lambda: _arrow(WORDS, pa.binary()),
}


@pytest.mark.parametrize("column", ["metadata", "builder"])
@pytest.mark.parametrize("storage", list(WORD_STORAGES))
def test_a_null_word_is_zero_as_none_is_in_order_ids_lists(column: str, storage: str) -> None:
    frame = _frame()
    frame[column] = WORD_STORAGES[storage]()
    got = _hashed(_dask(frame)).compute(scheduler="sync")
    assert got["order_id"].tolist() == _oracle(column)  # eth-account's: None is zero


def test_a_repeated_column_is_refused_at_once() -> None:
    frame = _frame()
    frame.insert(0, "dup", frame["salt"] + 1)
    frame.columns = ["salt" if name == "dup" else name for name in frame.columns]
    with pytest.raises(OrderFieldError, match=r"^df: has the column\(s\) salt more than once"):
        _hashed(_dask(frame))


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """One in-process worker of two threads: a small real cluster."""
    with (
        distributed.LocalCluster(
            n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_odd_partitions_on_a_cluster_and_back_from_parquet(
    client: Any, oracle: list[str], tmp_path: Path
) -> None:
    """Empty partitions, one-row partitions, unknown divisions; to_parquet and back."""
    frame = _frame()
    frame["token_id"] = _series(TOKENS, object)
    df = _dask(frame, convert_string=False)
    assert not df.known_divisions
    kept = df[df["maker_amount"] >= MAKERS[BAD]]  # partitions 0-6 empty, 7 of two rows
    assert _hashed(kept).compute()["order_id"].tolist() == oracle[BAD:]
    empty = _hashed(kept).partitions[3].compute()
    assert len(empty) == 0
    assert empty["order_id"].dtype == "string[pyarrow]"
    ones = _hashed(df.repartition(npartitions=N))
    assert [len(p) for p in ones.partitions] == [1] * N
    got = ones.compute()
    assert got["order_id"].tolist() == oracle
    assert got.index.tolist() == LABELS
    # Parquet holds no ints past 64 bits: token ids as the strings they are
    frame["token_id"] = _series([str(t) for t in TOKENS], "string[pyarrow]")
    _hashed(_dask(frame)).to_parquet(tmp_path / "out")
    back = dd.read_parquet(tmp_path / "out").compute()
    assert back["order_id"].tolist() == oracle
    assert back.index.tolist() == LABELS
