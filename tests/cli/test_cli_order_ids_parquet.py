"""``clobkit order-ids`` on Parquet files: streamed by row group, ``row N`` for bad rows (#14).

Ids are held to eth-account on sampled rows (an oracle independent of
clobkit) and to the CSV path of the same orders on every row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.amounts import check_raw_amounts, raw_amounts_flagged
from clobkit.cli.orderids.run import DEFAULT_BATCH, PARQUET_BATCH
from clobkit.errors import AmountError

from ..core.oracle import eth_account_order_id
from .conftest import WALLET, Result, read_rows
from .test_cli_order_ids import orders, write_csv
from .test_cli_order_ids_v2 import KEY, V2_WALLET, oracle_id, v2_orders, wallet_file

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _parquet(path: Path, rows: list[dict[str, Any]], *, ints: bool, group: int) -> None:
    """The rows as Parquet: amounts as int64 (``ints``) or as strings, like the CSV."""
    cols: dict[str, Any] = {}
    for name in rows[0]:
        values = [row[name] for row in rows]
        if ints and name in ("maker_amount", "taker_amount", "salt", "timestamp", "nonce"):
            cols[name] = pa.array(values, pa.int64())
        elif name == "neg_risk":
            cols[name] = pa.array(values, pa.bool_())
        else:
            cols[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    cols["note"] = pa.array([f"kept {i}" for i in range(len(rows))])
    pq.write_table(pa.table(cols), path, row_group_size=group)


def _v1_oracle(row: dict[str, Any]) -> str:
    order = {
        "token_id": int(row["token_id"]),
        "maker_amount": int(row["maker_amount"]),
        "taker_amount": int(row["taker_amount"]),
        "side": 0 if row["side"] == "BUY" else 1,
        "salt": int(row["salt"]),
        "fee_rate_bps": int(row.get("fee_rate_bps") or 0),
        "nonce": int(row.get("nonce") or 0),
        "expiration": int(row.get("expiration") or 0),
    }
    return eth_account_order_id(WALLET, order, bool(row.get("neg_risk")))


@pytest.mark.parametrize("ints", [True, False], ids=["int64", "strings"])
@pytest.mark.parametrize("full", [False, True], ids=["required", "all-fields"])
def test_v1_parquet_ids_equal_csv_and_eth_account(
    cli: Callable[..., Result], tmp_path: Path, ints: bool, full: bool
) -> None:
    rows = orders(2_001, full=full)
    wallet = str(wallet_file(tmp_path, WALLET))
    _parquet(tmp_path / "in.parquet", rows, ints=ints, group=333)
    write_csv(tmp_path / "in.csv", rows)
    src, out_path = str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    got = cli(
        "order-ids", "--wallet", wallet, src, out_path, "--batch-size", "500", "--threads", "2"
    )
    assert got.code == 0, got.err
    assert "2,001 order ids" in got.out
    assert (
        cli(
            "order-ids", "--wallet", wallet, str(tmp_path / "in.csv"), str(tmp_path / "out.csv")
        ).code
        == 0
    )
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names == [*rows[0], "note", "order_id"]  # every input column kept
    assert out["note"].to_pylist() == [f"kept {i}" for i in range(len(rows))]
    ids = out["order_id"].to_pylist()
    assert ids == [r["order_id"] for r in read_rows(tmp_path / "out.csv")]
    for i in range(0, len(rows), 397):
        assert ids[i] == _v1_oracle(rows[i])


def test_v2_parquet_signed(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eth_account import Account

    rows = v2_orders(300, full=True)
    _parquet(tmp_path / "in.parquet", rows, ints=True, group=64)
    monkeypatch.setenv("CLOBKIT_PRIVATE_KEY", KEY)
    wallet = str(wallet_file(tmp_path, V2_WALLET))
    got = cli(
        "order-ids",
        "--wallet",
        wallet,
        "--sign",
        str(tmp_path / "in.parquet"),
        str(tmp_path / "out.parquet"),
    )
    assert got.code == 0, got.err
    out = pq.read_table(tmp_path / "out.parquet").to_pylist()
    for row, done in zip(rows, out, strict=True):
        want = oracle_id(V2_WALLET, 2, row)
        assert done["order_id"] == want
        signed = Account.unsafe_sign_hash(bytes.fromhex(want[2:]), KEY)
        assert done["signature"] == "0x" + bytes(signed.signature).hex()


def test_bad_parquet_rows_are_reported_by_row_and_exit_1(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    rows = orders(1_000)
    rows[4]["salt"] = -1
    rows[600]["side"] = "HOLD"
    rows[601]["maker_amount"] = None  # a null
    rows[999]["salt"] = 10**12 + 1  # hashable, but the service refuses it
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    table = pa.table(
        {
            "token_id": pa.array(cols["token_id"]),
            "maker_amount": pa.array(cols["maker_amount"], pa.int64()),
            "taker_amount": pa.array(cols["taker_amount"], pa.int64()),
            "side": pa.array(cols["side"]),
            "salt": pa.array(cols["salt"], pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=256)
    wallet = str(wallet_file(tmp_path, WALLET))
    got = cli(
        "order-ids", "--wallet", wallet, str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    )
    assert got.code == 1
    lines = [line for line in got.err.splitlines() if line.startswith("row ")]
    assert lines[0] == "row 5: salt: must lie in [0, 2**256 - 1] (got -1)"
    assert lines[1].startswith('row 601: side: must be "BUY", "SELL", 0 or 1')
    assert lines[2].startswith("row 602: maker_amount:")
    assert lines[3].startswith("row 1000: salt: must lie in [0, 10**12]")
    assert len(lines) == 4
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.num_rows == 996
    good = [r for i, r in enumerate(rows) if i not in (4, 600, 601, 999)]
    for k in (0, 500, 995):
        assert out["order_id"][k].as_py() == _v1_oracle(good[k])


@pytest.mark.parametrize("ints", [True, False], ids=["int64", "strings"])
def test_null_optional_columns_take_their_default(
    cli: Callable[..., Result], tmp_path: Path, ints: bool
) -> None:
    """Strings: the columns are dictionary-encoded in the file and read as dictionaries."""
    rows = orders(20, full=True)
    for row in rows[::2]:
        row["nonce"] = None
        row["fee_rate_bps"] = None
    _parquet(tmp_path / "in.parquet", rows, ints=ints, group=7)
    wallet = str(wallet_file(tmp_path, WALLET))
    got = cli(
        "order-ids", "--wallet", wallet, str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    )
    assert got.code == 0, got.err
    ids = pq.read_table(tmp_path / "out.parquet")["order_id"].to_pylist()
    assert ids == [_v1_oracle(r) for r in rows]


def test_parquet_input_problems_are_one_line(cli: Callable[..., Result], tmp_path: Path) -> None:
    wallet = str(wallet_file(tmp_path, WALLET))
    (tmp_path / "junk.parquet").write_text("not parquet")
    got = cli(
        "order-ids", "--wallet", wallet, str(tmp_path / "junk.parquet"), str(tmp_path / "o.parquet")
    )
    assert got.code == 2
    assert "is not a readable Parquet file" in got.err
    pq.write_table(pa.table({"token_id": ["1"]}), tmp_path / "few.parquet")
    got = cli(
        "order-ids", "--wallet", wallet, str(tmp_path / "few.parquet"), str(tmp_path / "o.parquet")
    )
    assert got.code == 2
    assert "no column(s) maker_amount, taker_amount, side, salt" in got.err
    assert not (tmp_path / "o.parquet").exists()
    got = cli(
        "order-ids", "--wallet", wallet, str(tmp_path / "few.parquet"), str(tmp_path / "o.csv")
    )
    assert got.code == 2  # OUTPUT of another format


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 1),
            st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 10**13)),
            st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 10**13)),
        ),
        max_size=30,
    )
)
def test_column_wise_ratio_rule_flags_exactly_the_rows_check_raw_amounts_refuses(
    rows: list[tuple[int, int, int]],
) -> None:
    sides = pa.array([r[0] for r in rows], pa.int8())
    makers = pa.array([r[1] for r in rows], pa.uint64())
    takers = pa.array([r[2] for r in rows], pa.uint64())
    flagged = raw_amounts_flagged(sides, makers, takers).to_pylist()
    for (side, maker, taker), flag in zip(rows, flagged, strict=True):
        try:
            check_raw_amounts(side, maker, taker)
        except AmountError:
            assert flag
        else:
            assert not flag


def test_parquet_rows_breaking_the_ratio_rule_are_refused(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    rows = orders(50)
    rows[3]["maker_amount"], rows[3]["taker_amount"] = 20_000_000, 10_000_000  # price above 1
    rows[3]["side"] = "BUY"
    rows[8]["taker_amount"] = 0
    _parquet(tmp_path / "in.parquet", rows, ints=True, group=16)
    wallet = str(wallet_file(tmp_path, WALLET))
    got = cli(
        "order-ids", "--wallet", wallet, str(tmp_path / "in.parquet"), str(tmp_path / "o.parquet")
    )
    assert got.code == 1
    bad = [line.split(":")[0] for line in got.err.splitlines() if line.startswith("row ")]
    assert bad == ["row 4", "row 9"]
    assert "POST /orders/raw refuses it" in got.err
    assert pq.read_table(tmp_path / "o.parquet").num_rows == 48


def _ids_added(cli: Callable[..., Result], tmp_path: Path) -> Any:
    """``clobkit order-ids`` on ``in.parquet`` (V1 wallet), which must succeed: its output."""
    wallet = str(wallet_file(tmp_path, WALLET))
    got = cli(
        "order-ids", "--wallet", wallet, str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    )
    assert got.code == 0, got.err
    return pq.read_table(tmp_path / "out.parquet")


@pytest.mark.parametrize("categorical", [False, True], ids=["strings", "dictionary-typed"])
def test_output_keeps_every_input_column_with_its_type(
    cli: Callable[..., Result], tmp_path: Path, categorical: bool
) -> None:
    """String columns read as dictionaries (few distinct values) are written back as the
    strings they were; a column stored as a dictionary type (pandas categorical) stays one."""
    rows = [row | {"token_id": str(10**70 + i % 3)} for i, row in enumerate(orders(300))]
    _parquet(tmp_path / "in.parquet", rows, ints=True, group=128)
    table = pq.read_table(tmp_path / "in.parquet")
    if categorical:
        i = table.schema.get_field_index("side")
        table = table.set_column(i, "side", table["side"].dictionary_encode())
        pq.write_table(table, tmp_path / "in.parquet", row_group_size=128)
    out = _ids_added(cli, tmp_path)
    assert out.schema.remove(out.schema.get_field_index("order_id")) == table.schema
    assert out.drop_columns(["order_id"]).equals(table)
    assert out["order_id"].to_pylist() == [_v1_oracle(r) for r in rows]
    # min/max kept for every input column; none for the ids (random: they would prune nothing)
    group = pq.ParquetFile(tmp_path / "out.parquet").metadata.row_group(0)
    stats = {
        group.column(i).path_in_schema: group.column(i).statistics for i in range(group.num_columns)
    }
    assert all(stats[name].has_min_max for name in table.column_names)
    assert stats["order_id"] is None or not stats["order_id"].has_min_max


def test_an_existing_order_id_column_is_replaced(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    """A stale ``order_id`` column (repeated values: stored with a dictionary page) is
    replaced by the ids, not kept beside them."""
    rows = orders(50)
    _parquet(tmp_path / "in.parquet", rows, ints=True, group=16)
    table = pq.read_table(tmp_path / "in.parquet")
    table = table.append_column("order_id", pa.array(["0xstale"] * len(rows)))
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=16)
    out = _ids_added(cli, tmp_path)
    assert out.schema.names == table.schema.names
    assert out["order_id"].to_pylist() == [_v1_oracle(r) for r in rows]


@pytest.mark.parametrize(
    ("given", "groups"),
    [
        ((), [PARQUET_BATCH, 3]),  # Parquet's own default, not the row formats' 50,000
        (("--batch-size", "40000"), [40_000, 40_000, PARQUET_BATCH - 80_000 + 3]),
    ],
    ids=["default", "given"],
)
def test_parquet_batches_are_the_output_row_groups(
    cli: Callable[..., Result], tmp_path: Path, given: tuple[str, ...], groups: list[int]
) -> None:
    n = PARQUET_BATCH + 3
    assert DEFAULT_BATCH < PARQUET_BATCH  # else this would not tell the defaults apart
    token = 10**76 + 7
    table = pa.table(
        {
            "token_id": pa.array([str(token + i % 50) for i in range(n)]),
            "maker_amount": pa.array([9_295_000 + i % 1000 for i in range(n)], pa.int64()),
            "taker_amount": pa.array([16_900_000] * n, pa.int64()),
            "side": pa.array(["BUY"] * n),
            "salt": pa.array(range(1, n + 1), pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=n)
    wallet = str(wallet_file(tmp_path, WALLET))
    src, dst = str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    got = cli("order-ids", "--wallet", wallet, src, dst, "--threads", "2", *given)
    assert got.code == 0, got.err
    meta = pq.ParquetFile(dst).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == groups
    ids = pq.read_table(dst, columns=["order_id"])["order_id"]
    for i in (0, PARQUET_BATCH - 1, PARQUET_BATCH, n - 1):
        row = {k: table[k][i].as_py() for k in table.column_names}
        assert ids[i].as_py() == _v1_oracle(row)


def test_batch_size_help_gives_both_defaults(cli: Callable[..., Result]) -> None:
    text = " ".join(cli("order-ids", "--help").out.split())
    assert f"default {DEFAULT_BATCH:,}; {PARQUET_BATCH:,} for Parquet" in text


@pytest.mark.parametrize("tokens", ["distinct", "markets"])
def test_dictionaries_are_kept_only_where_the_input_repeats_its_values(
    cli: Callable[..., Result], tmp_path: Path, tokens: str
) -> None:
    from clobkit.cli.orderids.parquet import _dictionary_columns

    n = 40_000  # distinct 77-digit ids outgrow pyarrow's 1 MiB dictionary: plain pages follow
    first = 10**76 + 12_345
    ids = [first + (i if tokens == "distinct" else i % 300) for i in range(n)]
    table = pa.table(
        {
            "token_id": pa.array([str(t) for t in ids]),
            "maker_amount": pa.array([9_295_000 + i % 1000 for i in range(n)], pa.int64()),
            "taker_amount": pa.array([16_900_000] * n, pa.int64()),
            "side": pa.array(["BUY"] * n),
            "salt": pa.array(range(1, n + 1), pa.int64()),
            "venue": pa.array(["east" if i % 3 else "west" for i in range(n)]),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet")
    read, write = _dictionary_columns(pq.ParquetFile(tmp_path / "in.parquet").metadata)
    repeated = ["side", "venue"] if tokens == "distinct" else ["token_id", "side", "venue"]
    assert read == repeated  # strings read as Arrow dictionaries
    assert set(write) == {*repeated, "maker_amount", "taker_amount"}  # salts: mostly distinct
    wallet = str(wallet_file(tmp_path, WALLET))
    dst = tmp_path / "out.parquet"
    got = cli("order-ids", "--wallet", wallet, str(tmp_path / "in.parquet"), str(dst))
    assert got.code == 0, got.err
    out = pq.read_table(dst)
    assert out.schema.field("token_id").type == pa.string()  # the file's own type
    assert out.drop_columns(["order_id"]).equals(table)
    group = pq.ParquetFile(dst).metadata.row_group(0)
    pages = {group.column(i).path_in_schema: group.column(i).has_dictionary_page for i in range(6)}
    assert {name for name, has in pages.items() if has} == set(write)
    for i in (0, n // 2, n - 1):
        row = {k: table[k][i].as_py() for k in table.column_names}
        assert out["order_id"][i].as_py() == _v1_oracle(row)


def test_relative_paths_with_a_colon_are_paths(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pyarrow took 'in:put.parquet' for a URI ("Unrecognized filesystem type") and wrote
    # an output named 'file:/elsewhere/...' elsewhere: they are local paths
    monkeypatch.chdir(tmp_path)
    rows = orders(10)
    _parquet(tmp_path / "in:put.parquet", rows, ints=True, group=5)
    wallet = str(wallet_file(tmp_path, WALLET))
    got = cli("order-ids", "--wallet", wallet, "in:put.parquet", "out:put.parquet")
    assert got.code == 0, got.err
    assert len(pq.read_table(tmp_path / "out:put.parquet")) == 10
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    got = cli("order-ids", "--wallet", wallet, "in:put.parquet", f"file:{elsewhere}/o.parquet")
    assert got.code == 2  # ./file:/... has no such directory: said in a line
    assert got.err.startswith("clobkit order-ids: error: cannot write file:")
    assert list(elsewhere.iterdir()) == []
