"""One reading of a table (h15b): ``clobkit order-ids`` on a file and ``clobkit.dask`` on the
same file read by Dask give the same ids, or the same refusal in the same words.

Each form of a column's value (docs/scale.md, "Accepted forms") is written in
row 2 of a real Parquet file and a real CSV file between two plain orders.
The command hashes each file; ``with_order_ids`` hashes the same file read by
``dd.read_parquet`` (Arrow-backed and nullable pandas) and by ``dd.read_csv``
(every cell as its text, and pandas' typed reading where it keeps the value);
ids are eth-account's. A dtype the core refuses is refused when
``with_order_ids`` is called, before any partition is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from clobkit.cli import main
from clobkit.errors import OrderFieldError

from ..conftest import import_extra
from ..core.oracle import eth_account_order_id, eth_account_order_id_v2
from ..core.test_columns import WALLETS

pa = import_extra("pyarrow", "dask")
pq = import_extra("pyarrow.parquet", "dask")
pd = import_extra("pandas", "dask")
dask = import_extra("dask", "dask")
dd = import_extra("dask.dataframe", "dask")

from clobkit.dask import with_order_ids  # noqa: E402 - after the extras are known present

TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
COMMON = {"token_id": TOKEN, "maker_amount": 9_295_000, "taker_amount": 16_900_000}
COMMON |= {"side": "BUY", "salt": 7}
BASE = {
    1: COMMON | {"fee_rate_bps": 3, "nonce": 1, "expiration": 0, "neg_risk": True},
    2: COMMON
    | {"timestamp": 1_777_000_000_000, "metadata": "0x" + "11" * 32, "builder": None}
    | {"neg_risk": False},
}
STRING, INT8, INT64, BOOL = pa.string(), pa.int8(), pa.int64(), pa.bool_()
#: How Dask reads the CSV: every cell its text, an empty cell a null (what the command
#: reads), and pandas' typed reading (token ids past 64 bits kept as text).
CSV_TEXT: dict[str, Any] = {"dtype": "string", "keep_default_na": False, "na_values": [""]}
CSV_TYPED: dict[str, Any] = {"dtype_backend": "pyarrow", "dtype": {"token_id": "string"}}


class Refused(NamedTuple):
    reason: str  # "<column>: <why> (got <value>)", as the command and Dask both say it


class Form(NamedTuple):
    """One way to give ``column``'s value: a Parquet cell of ``arrow[1]`` holding
    ``arrow[0]`` and a CSV cell ``text`` (either None: not a form of that file), and
    what it reads as: the value ``order_id`` takes, or the refusal."""

    column: str
    arrow: tuple[Any, Any] | None
    text: str | None
    reads: object
    version: int = 1
    typed: bool = True  # pandas' typed CSV reading keeps the text's value


SIDE_WORDS = 'side: must be "BUY", "SELL", 0 or 1'
FORMS = {
    "side lower case": Form("side", ("buy", STRING), "buy", 0),
    "side in any case": Form("side", ("bUy", STRING), "bUy", 0),
    "side 0 as text": Form("side", ("0", STRING), "0", 0),
    "side 0/1 ints": Form("side", (0, INT8), None, 0),
    "side spaced": Form("side", (" BUY", STRING), " BUY", Refused(f"{SIDE_WORDS} (got ' BUY')")),
    "side null": Form("side", (None, STRING), "", Refused(f"{SIDE_WORDS} (got None)")),
    "side unknown": Form("side", ("HOLD", STRING), "HOLD", Refused(f"{SIDE_WORDS} (got 'HOLD')")),
    "neg_risk bool": Form("neg_risk", (False, BOOL), "false", False),
    "neg_risk TRUE as text": Form("neg_risk", ("TRUE", STRING), "TRUE", True),
    "neg_risk False as text": Form("neg_risk", ("False", STRING), "False", False),
    "neg_risk 1 as text": Form("neg_risk", ("1", STRING), "1", True),
    "neg_risk 0/1 ints": Form("neg_risk", (0, INT64), None, False),
    "neg_risk null": Form("neg_risk", (None, BOOL), "", False),
    "neg_risk null text": Form("neg_risk", (None, STRING), None, False),
    "neg_risk yes": Form(
        "neg_risk", ("yes", STRING), "yes", Refused("neg_risk: must be a bool (got 'yes')")
    ),
    "neg_risk 2": Form("neg_risk", (2, INT64), None, Refused("neg_risk: must be a bool (got 2)")),
    "neg_risk 2 as text": Form(
        "neg_risk", None, "2", Refused("neg_risk: must be a bool (got '2')")
    ),
    "nonce null": Form("nonce", (None, INT64), "", 0),
    "nonce null text": Form("nonce", (None, STRING), None, 0),
    "nonce leading zeros": Form("nonce", ("0005", STRING), "0005", 5),
    "nonce spaced": Form(
        "nonce",
        (" 5", STRING),
        " 5",
        Refused("nonce: must be a non-negative decimal integer string (got ' 5')"),
        typed=False,  # pandas reads " 5" as 5
    ),
    "fee_rate_bps null": Form("fee_rate_bps", (None, INT64), "", 0),
    "expiration null": Form("expiration", (None, INT64), "", 0),
    "salt null": Form(
        "salt",
        (None, INT64),
        "",
        Refused("salt: must be an int or a decimal integer string (got None)"),
    ),
    "token_id null": Form(
        "token_id",
        (None, STRING),
        "",
        Refused("token_id: must be an int or a decimal integer string (got None)"),
    ),
    "maker_amount signed": Form(
        "maker_amount",
        ("-5", STRING),
        "-5",
        Refused("maker_amount: must be a non-negative decimal integer string (got '-5')"),
        typed=False,  # pandas reads -5 as an int
    ),
    "timestamp null": Form(
        "timestamp",
        (None, INT64),
        "",
        Refused("timestamp: must be an int or a decimal integer string (got None)"),
        version=2,
    ),
    "metadata null": Form("metadata", (None, STRING), "", None, version=2),
    "builder hex": Form(
        "builder", ("0x" + "ab" * 32, STRING), "0x" + "ab" * 32, "0x" + "ab" * 32, 2
    ),
}


def _like(value: Any, typ: Any) -> Any:
    """A plain row's ``value`` as a column of ``typ`` holds it."""
    if value is None:
        return None
    if pa.types.is_string(typ):
        return str(value).lower() if isinstance(value, bool) else str(value)
    if pa.types.is_integer(typ) and isinstance(value, str):
        return 0 if value == "BUY" else 1
    return int(value) if pa.types.is_integer(typ) else value


def _text(value: Any) -> str:
    return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _rows(form: Form) -> list[dict[str, Any]]:
    """Three orders: row 2 holds the form's value, as ``order_id`` takes it."""
    rows = [dict(BASE[form.version]) for _ in range(3)]
    rows[1][form.column] = form.reads
    return rows


def _oracle(form: Form) -> list[str]:
    """eth-account's id of each of the three orders."""
    ids = []
    for row in _rows(form):
        side = row["side"] if isinstance(row["side"], int) else 0 if row["side"] == "BUY" else 1
        order = {k: v for k, v in row.items() if k != "neg_risk"} | {"side": side}
        order["token_id"] = int(order["token_id"])
        if form.version == 1:
            ids.append(eth_account_order_id(WALLETS[1], order, row["neg_risk"]))
        else:
            ids.append(eth_account_order_id_v2(WALLETS[2], order, row["neg_risk"]))
    return ids


def _parquet(form: Form, path: Path) -> None:
    assert form.arrow is not None
    value, typ = form.arrow
    base = BASE[form.version]
    cols = {name: pa.array([v] * 3) for name, v in base.items() if v is not None}
    cols["builder"] = pa.array([None] * 3, STRING)  # a column of nulls: the zero word
    if form.version == 1:
        del cols["builder"]
    plain = _like(base[form.column], typ)
    cols[form.column] = pa.array([plain, value, plain], typ)
    pq.write_table(pa.table(cols), path)


def _csv(form: Form, path: Path) -> None:
    assert form.text is not None
    base = BASE[form.version]
    lines = [",".join(base)]
    for k in range(3):
        cells = [_text(v) for v in base.values()]
        if k == 1:
            cells[list(base).index(form.column)] = form.text
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


Run = Callable[..., tuple[str, Any]]


@pytest.fixture
def command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    """``clobkit order-ids`` on a file: ("ids", ids) or ("refused", its one message)."""

    def run(src: Path, version: int) -> tuple[str, Any]:
        wallet = tmp_path / "wallet.json"
        wallet.write_text(json.dumps(WALLETS[version]))
        out = src.with_name("out" + src.suffix)
        argv = ["order-ids", "--wallet", str(wallet), str(src), str(out)]
        code = main([*argv, "--exchange-version", str(version)])
        err = capsys.readouterr().err.splitlines()
        if code:
            assert code == 1, err
            return "refused", err[0]
        if src.suffix == ".parquet":
            return "ids", pq.read_table(out)["order_id"].to_pylist()
        return "ids", [line.rsplit(",", 1)[1] for line in out.read_text().splitlines()[1:]]

    return run


def _with_ids(df: Any, version: int) -> Any:
    """``with_order_ids(df, ...)`` (a Dask DataFrame, whose methods carry no types)."""
    return with_order_ids(df, WALLETS[version])


def _dask(df: Any, version: int) -> tuple[str, Any]:
    """``with_order_ids`` on a Dask frame: ("ids", ids) or ("refused", its message)."""
    try:
        got = _with_ids(df, version).compute(scheduler="sync")
    except OrderFieldError as exc:
        return "refused", str(exc)
    return "ids", got["order_id"].tolist()


def _expected(form: Form, where: str) -> tuple[str, Any]:
    if isinstance(form.reads, Refused):
        return "refused", f"{where}: {form.reads.reason}"
    return "ids", _oracle(form)


PARQUET = [name for name, form in FORMS.items() if form.arrow is not None]
CSV = [name for name, form in FORMS.items() if form.text is not None]


@pytest.mark.parametrize("name", PARQUET)
def test_a_parquet_file_reads_alike_through_the_command_and_dask(
    command: Run, tmp_path: Path, name: str
) -> None:
    form = FORMS[name]
    src = tmp_path / "in.parquet"
    _parquet(form, src)
    assert command(src, form.version) == _expected(form, "row 2")
    for backend in ("pyarrow", "numpy_nullable"):
        df = dd.read_parquet(src, dtype_backend=backend)
        assert _dask(df, form.version) == _expected(form, "partition 0, row 1"), backend


@pytest.mark.parametrize("name", CSV)
def test_a_csv_file_reads_alike_through_the_command_and_dask(
    command: Run, tmp_path: Path, name: str
) -> None:
    form = FORMS[name]
    src = tmp_path / "in.csv"
    _csv(form, src)
    assert command(src, form.version) == _expected(form, "line 3")
    want = _expected(form, "partition 0, row 1")
    assert _dask(dd.read_csv(src, **CSV_TEXT), form.version) == want
    if form.typed:
        assert _dask(dd.read_csv(src, **CSV_TYPED), form.version) == want


#: dtypes the core refuses for a column, known from a frame's meta: (column, values, dtype)
REFUSED_DTYPES = [
    ("maker_amount", [9_295_000.0] * 6, "float64"),
    ("maker_amount", [9_295_000.0] * 6, "double[pyarrow]"),
    ("nonce", [1.0, None] * 3, "Float64"),
    ("side", [True, False] * 3, "bool"),
    ("salt", pd.to_datetime([7] * 6), None),
]


@pytest.mark.parametrize(("column", "values", "dtype"), REFUSED_DTYPES)
def test_a_dtype_the_core_refuses_is_refused_before_any_partition_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, column: str, values: Any, dtype: str | None
) -> None:
    """Refused when ``with_order_ids`` is called (graph building), in the words the
    compute would have used: ``to_parquet`` never starts, no file is left."""
    frame = pd.DataFrame([BASE[1]] * 6)
    frame[column] = pd.Series(values, dtype=dtype)
    df = dd.from_pandas(frame, npartitions=3)
    out = tmp_path / "out"
    with pytest.raises(OrderFieldError, match=rf"^column {column}: must be a column of ") as info:
        _with_ids(df, 1).to_parquet(out)
    assert not out.exists()
    # the command refuses the same column of a Parquet file in the same words
    src = tmp_path / "in.parquet"
    frame.to_parquet(src)
    wallet = tmp_path / "wallet.json"
    wallet.write_text(json.dumps(WALLETS[1]))
    code = main(["order-ids", "--wallet", str(wallet), str(src), str(tmp_path / "o.parquet")])
    assert code == 2
    said = str(info.value).removeprefix("column ").partition(" (got ")[0]  # numpy's or Arrow's
    assert f"{src}: {said} (got '<" in capsys.readouterr().err


def test_an_object_column_is_still_checked_when_computed() -> None:
    """Object values are known only then: a float among them is named by its row."""
    frame = pd.DataFrame([BASE[1]] * 6)
    frame["maker_amount"] = pd.Series([9_295_000] * 5 + [2.5], dtype=object)
    with dask.config.set({"dataframe.convert-string": False}):  # Python objects kept
        df = dd.from_pandas(frame, npartitions=3)
    done = _with_ids(df, 1)  # nothing known to refuse yet
    with pytest.raises(OrderFieldError, match=r"^partition 2, row 5: maker_amount: must be an int"):
        done.compute(scheduler="sync")
