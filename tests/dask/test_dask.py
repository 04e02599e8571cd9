"""clobkit.dask on a real two-process LocalCluster, reading Parquet from disk (#14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clobkit.errors import OrderFieldError
from clobkit.order_id import OrderHasher

from ..conftest import import_extra
from ..core.oracle import eth_account_order_id, eth_account_order_id_v2
from ..core.test_columns import WALLETS

pa = import_extra("pyarrow", "dask")
pq = import_extra("pyarrow.parquet", "dask")
pc = import_extra("pyarrow.compute", "dask")
dd = import_extra("dask.dataframe", "dask")
distributed = import_extra("distributed", "dask")

from clobkit.dask import with_order_ids  # noqa: E402 - after the extras are known present

ROWS = 30_011
SRC = str(Path(__file__).resolve().parents[2] / "src")


# one LocalCluster a module, on one xdist worker (pyproject.toml's --dist loadgroup)
pytestmark = pytest.mark.xdist_group("dask_cluster")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes, one thread each: what a small cluster does, on this machine."""
    env = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = SRC + (os.pathsep + env if env else "")  # the workers' clobkit
    try:
        with (
            distributed.LocalCluster(
                n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as c,
        ):
            yield c
    finally:
        os.environ["PYTHONPATH"] = env


def _table(version: int, n: int = ROWS) -> Any:
    cols: dict[str, Any] = {
        "token_id": pa.array([str((i * 0x9E3779B97F4A7C15) ** 3 % 2**256) for i in range(n)]),
        "maker_amount": pa.array([1_000_000 + 7 * i for i in range(n)], pa.int64()),
        "taker_amount": pa.array([2_000_000 + 3 * i for i in range(n)], pa.uint64()),
        "side": pa.array(["SELL" if i % 3 else "BUY" for i in range(n)]),
        "salt": pa.array([(i * 7919) % 10**12 for i in range(n)], pa.int64()),
        "neg_risk": pa.array([i % 5 == 0 for i in range(n)]),
        "note": pa.array([f"row {i}" for i in range(n)]),  # kept as it is
    }
    if version == 1:
        cols["fee_rate_bps"] = pa.array([i % 3 for i in range(n)], pa.int32())
        cols["nonce"] = pa.array([i % 2 for i in range(n)], pa.int64())
        cols["expiration"] = pa.array([0] * n, pa.int64())
    else:
        cols["timestamp"] = pa.array([1_777_000_000_000 + i for i in range(n)], pa.int64())
        cols["metadata"] = pa.array([bytes([i % 251]) * 32 for i in range(n)], pa.binary(32))
    return pa.table(cols)


def _write(table: Any, path: Path) -> str:
    """Three files of several row groups each (odd sizes)."""
    path.mkdir()
    n = table.num_rows
    for k, (lo, hi) in enumerate([(0, n // 3), (n // 3, n // 2), (n // 2, n)]):
        pq.write_table(table.slice(lo, hi - lo), path / f"part-{k}.parquet", row_group_size=3_001)
    return str(path)


def _single_process(table: Any, version: int) -> list[str]:
    hasher = OrderHasher(WALLETS[version])
    args = {
        "token_ids": table["token_id"].to_pylist(),
        "maker_amounts": table["maker_amount"].to_pylist(),
        "taker_amounts": table["taker_amount"].to_pylist(),
        "sides": table["side"].to_pylist(),
        "salts": table["salt"].to_pylist(),
        "neg_risk": table["neg_risk"].to_pylist(),
    }
    if version == 1:
        for name, kw in (
            ("fee_rate_bps", "fee_rate_bps"),
            ("nonce", "nonces"),
            ("expiration", "expirations"),
        ):
            args[kw] = table[name].to_pylist()
    else:
        args["timestamps"] = table["timestamp"].to_pylist()
        args["metadatas"] = table["metadata"].to_pylist()
    ids: list[str] = hasher.order_ids(**args)
    return ids


def _oracle(table: Any, version: int, i: int) -> str:
    row = {name: table[name][i].as_py() for name in table.column_names}
    order = {
        "token_id": int(row["token_id"]),
        "maker_amount": row["maker_amount"],
        "taker_amount": row["taker_amount"],
        "side": 0 if row["side"] == "BUY" else 1,
        "salt": row["salt"],
    }
    if version == 1:
        order |= {"fee_rate_bps": row["fee_rate_bps"], "nonce": row["nonce"], "expiration": 0}
        return eth_account_order_id(WALLETS[1], order, row["neg_risk"])
    order |= {"timestamp": row["timestamp"], "metadata": row["metadata"]}
    return eth_account_order_id_v2(WALLETS[version], order, row["neg_risk"], version)


@pytest.mark.slow
@pytest.mark.parametrize("version", [1, 2, 3])
def test_ids_on_the_cluster_equal_single_process(client: Any, tmp_path: Path, version: int) -> None:
    table = _table(version)
    path = _write(table, tmp_path / "orders")
    df = dd.read_parquet(path)
    assert df.npartitions >= 3
    out = with_order_ids(df, WALLETS[version]).compute()
    assert list(out.columns) == [*table.column_names, "order_id"]  # every input column kept
    assert out["note"].tolist() == table["note"].to_pylist()
    ids = out["order_id"].tolist()
    assert ids == _single_process(table, version)
    for i in range(0, ROWS, 3_331):
        assert ids[i] == _oracle(table, version, i)


@pytest.mark.slow
def test_written_back_to_parquet(client: Any, tmp_path: Path) -> None:
    table = _table(2, 5_000)
    # Arrow-backed pandas columns (a bytes column cannot be written back from object dtype)
    df = dd.read_parquet(_write(table, tmp_path / "in"), dtype_backend="pyarrow")
    with_order_ids(df, WALLETS[2], column="clob_order_id").to_parquet(tmp_path / "out")
    back = pq.read_table(tmp_path / "out")
    assert back["clob_order_id"].to_pylist() == _single_process(table, 2)


@pytest.mark.slow
def test_pure_twin_gives_the_same_ids(tmp_path: Path) -> None:
    """CLOBKIT_NO_EXTENSIONS=1 in a fresh process (the default Dask scheduler)."""
    table = _table(3, 4_000)
    path = _write(table, tmp_path / "orders")
    code = (
        "import json, sys, dask.dataframe as dd\n"
        "from clobkit.core.select import IMPLEMENTATION\n"
        "from clobkit.dask import with_order_ids\n"
        f"out = with_order_ids(dd.read_parquet({path!r}), json.loads(sys.argv[1])).compute()\n"
        "print(IMPLEMENTATION)\n"
        "print(json.dumps(out['order_id'].tolist()))\n"
    )
    env = os.environ | {"CLOBKIT_NO_EXTENSIONS": "1", "PYTHONPATH": SRC}
    lines = subprocess.run(
        [sys.executable, "-c", code, json.dumps(WALLETS[3])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert lines[0] == "python"
    assert json.loads(lines[1]) == _single_process(table, 3)


@pytest.mark.slow
def test_bad_row_is_named(client: Any, tmp_path: Path) -> None:
    table = _table(1, 9_000)
    salts = table["salt"].to_pylist()
    salts[7_777] = -3
    table = table.set_column(table.column_names.index("salt"), "salt", pa.array(salts))
    df = dd.read_parquet(_write(table, tmp_path / "orders"))
    with pytest.raises(OrderFieldError) as info:
        with_order_ids(df, WALLETS[1]).compute()
    # the third file (rows 4500 on) is partition 2; read_parquet labels its rows from 0
    assert str(info.value) == "partition 2, row 3277: salt: must lie in [0, 2**256 - 1] (got -3)"


def test_null_and_wrong_type_are_named(tmp_path: Path) -> None:
    table = _table(2, 50)
    stamps = table["timestamp"].to_pylist()
    stamps[41] = None
    bad = table.set_column(table.column_names.index("timestamp"), "timestamp", pa.array(stamps))
    path = _write(bad, tmp_path / "nulls")
    df = dd.read_parquet(path, dtype_backend="pyarrow")  # int64 with nulls stays int64
    with pytest.raises(  # order_id's words for a None, as clobkit order-ids says them
        OrderFieldError,
        match=r"partition 2, row 16: timestamp: must be an int or a decimal integer string "
        r"\(got None\)",
    ):
        with_order_ids(df, WALLETS[2]).compute(scheduler="sync")
    # numpy-backed pandas turns it into float64 (NaN): refused, never rounded
    df = dd.read_parquet(path)
    with pytest.raises(OrderFieldError, match=r"column timestamp: must be a column of integers"):
        with_order_ids(df, WALLETS[2]).compute(scheduler="sync")


def test_missing_columns_fail_at_once(tmp_path: Path) -> None:
    table = _table(2, 10).drop_columns(["timestamp", "salt"])
    df = dd.read_parquet(_write(table, tmp_path / "orders"))
    with pytest.raises(OrderFieldError, match="lacks the column") as info:
        with_order_ids(df, WALLETS[2])
    assert "V2/V3 orders need timestamp: the version comes from the wallet's exchange " in str(
        info.value
    )
    assert "unless version= sets it" in str(info.value)
    with pytest.raises(OrderFieldError, match=r"wallet\.maker"):
        with_order_ids(df, WALLETS[2] | {"maker": "0x12"})


def test_the_saved_wallet_envelope_is_taken(tmp_path: Path) -> None:
    """The ``{"success": true, "data": ...}`` file clobkit order-ids --wallet reads."""
    df = dd.read_parquet(_write(_table(2, 10), tmp_path / "orders"))
    envelope = json.loads(json.dumps({"success": True, "data": WALLETS[2]}))
    got = with_order_ids(df, envelope).compute(scheduler="sync")
    want = with_order_ids(df, WALLETS[2]).compute(scheduler="sync")
    assert list(got["order_id"]) == list(want["order_id"])
    with pytest.raises(OrderFieldError, match="is a failed response: unauthorized"):
        with_order_ids(df, {"success": False, "error": "unauthorized"})


def test_without_dask_one_line_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['dask'] = None; sys.modules['dask.dataframe'] = None\n"
        "try:\n"
        "    import clobkit.dask\n"
        "except ImportError as exc:\n"
        "    from clobkit.errors import ClobkitError\n"
        "    print(isinstance(exc, ClobkitError), exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=os.environ | {"PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    from clobkit.core.extras import install_hint

    assert out == f"True clobkit.dask needs Dask: {install_hint('dask')}\n"


# ---------------------------------------------------------------------------
# #20: Arrow in, Arrow out, and the command's writer settings


def _keccak(data: bytes) -> bytes:
    from Crypto.Hash import keccak

    return keccak.new(digest_bits=256, data=data).digest()


def _independent_v1_ids(table: Any, wallet: dict[str, Any]) -> list[str]:
    """Every row's V1 EIP-712 digest, laid out by hand and hashed by pycryptodome's Keccak."""

    def word(value: int | str) -> bytes:
        return (int(value, 16) if isinstance(value, str) else value).to_bytes(32, "big")

    fields = "uint256 salt,address maker,address signer,address taker,uint256 tokenId,"
    fields += "uint256 makerAmount,uint256 takerAmount,uint256 expiration,uint256 nonce,"
    fields += "uint256 feeRateBps,uint8 side,uint8 signatureType"
    typehash = _keccak(f"Order({fields})".encode())
    domain_type = _keccak(
        b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    )
    domains = {
        flag: _keccak(
            domain_type
            + _keccak(b"Polymarket CTF Exchange")
            + _keccak(b"1")
            + word(wallet["chain_id"])
            + word(wallet["neg_risk_exchange" if flag else "ctf_exchange"])
        )
        for flag in (False, True)
    }
    fixed = word(wallet["maker"]) + word(wallet["signer"]) + bytes(32)
    ids = []
    for row in table.to_pylist():
        struct = _keccak(
            typehash
            + word(row["salt"])
            + fixed
            + word(int(row["token_id"]))
            + word(row["maker_amount"])
            + word(row["taker_amount"])
            + word(row["expiration"])
            + word(row["nonce"])
            + word(row["fee_rate_bps"])
            + word(0 if row["side"] == "BUY" else 1)
            + word(wallet["signature_type"])
        )
        ids.append("0x" + _keccak(b"\x19\x01" + domains[row["neg_risk"]] + struct).hex())
    return ids


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["pyarrow", "numpy_nullable"])
def test_arrow_ids_written_with_the_commands_settings_equal_an_independent_hasher(
    client: Any, tmp_path: Path, backend: str
) -> None:
    from clobkit.dask import parquet_options

    table = _table(1, 12_007)
    df = dd.read_parquet(_write(table, tmp_path / "in"), dtype_backend=backend)
    out = with_order_ids(df, WALLETS[1])
    assert out["order_id"].dtype == "string[pyarrow]"  # an Arrow string array inside
    options = parquet_options(out)
    out.to_parquet(tmp_path / "out", **options)
    back = pq.read_table(tmp_path / "out")
    assert back["order_id"].to_pylist() == _independent_v1_ids(table, WALLETS[1])
    assert back["note"].to_pylist() == table["note"].to_pylist()
    # the ids plain, uncompressed, without statistics; the salts and the unnamed index
    # without a dictionary; every other column as to_parquet writes it by default
    out.to_parquet(tmp_path / "default")
    for path in sorted((tmp_path / "out").glob("*.parquet")):
        group = pq.ParquetFile(path).metadata.row_group(0)
        default = pq.ParquetFile(tmp_path / "default" / path.name).metadata.row_group(0)
        assert group.num_columns == default.num_columns == len(table.column_names) + 2
        for i in range(group.num_columns):
            chunk, usual = group.column(i), default.column(i)
            got = (chunk.compression, chunk.is_stats_set, chunk.has_dictionary_page)
            if chunk.path_in_schema == "order_id":
                assert got == ("UNCOMPRESSED", False, False)
            elif chunk.path_in_schema in ("salt", "__null_dask_index__"):
                assert got == (usual.compression, usual.is_stats_set, False)
                assert usual.has_dictionary_page  # what the option saves the writer
                delta = chunk.path_in_schema == "__null_dask_index__"  # row numbers
                assert ("DELTA_BINARY_PACKED" in chunk.encodings) is delta
            else:
                assert got == (usual.compression, usual.is_stats_set, usual.has_dictionary_page)
                assert chunk.compression == "SNAPPY", chunk.path_in_schema


def test_partition_ids_are_one_arrow_array(tmp_path: Path) -> None:
    """The id column holds the core's Arrow array: no Python string per row on the way out."""
    table = _table(2, 40)
    df = dd.read_parquet(_write(table, tmp_path / "in"), dtype_backend="pyarrow")
    part = with_order_ids(df, WALLETS[2]).partitions[2].compute(scheduler="sync")
    ids = pa.array(part["order_id"])
    assert pa.types.is_large_string(ids.type) or pa.types.is_string(ids.type)
    assert ids.to_pylist() == _single_process(table, 2)[20:]
    empty = with_order_ids(df[df["salt"] < 0], WALLETS[2]).compute(scheduler="sync")
    assert len(empty) == 0
    assert empty["order_id"].dtype == "string[pyarrow]"


def test_parquet_options_need_the_id_column(tmp_path: Path) -> None:
    from clobkit.dask import parquet_options

    df = dd.read_parquet(_write(_table(2, 10), tmp_path / "in"))
    with pytest.raises(OrderFieldError, match="call with_order_ids first"):
        parquet_options(df)
    named = with_order_ids(df, WALLETS[2], column="clob_id").set_index("salt")
    options = parquet_options(named, column="clob_id", compression="zstd")
    assert options["compression"]["salt"] == "zstd"  # a named index: its own name
    assert options["compression"]["clob_id"] == "none"
    assert "clob_id" not in options["use_dictionary"] + options["write_statistics"]
    assert "salt" not in options["use_dictionary"]  # the index here: its values never repeat
    assert "maker_amount" in options["use_dictionary"]
    assert "column_encoding" not in options  # a named index: the user's values, as they are
    rows = parquet_options(with_order_ids(df, WALLETS[2]))  # Dask's unnamed row numbers
    assert rows["column_encoding"] == {"__null_dask_index__": "DELTA_BINARY_PACKED"}
    texts = df.compute()
    texts.index = [f"r{i}" for i in range(len(texts))]  # unnamed, but not numbers
    labelled = with_order_ids(dd.from_pandas(texts, npartitions=2), WALLETS[2])
    assert "column_encoding" not in parquet_options(labelled)


class _Unhashable(str):
    __hash__ = None  # type: ignore[assignment]


def test_a_partition_reuses_its_workers_hasher() -> None:
    """One hasher per wallet and version in a worker process; a wallet whose values
    cannot be a key (a str subclass without a hash) still gets its own."""
    from clobkit.dask import _hasher

    wallet = dict(WALLETS[2])
    assert _hasher(wallet, 2) is _hasher(dict(wallet), 2)
    assert _hasher(wallet, 2) is not _hasher(wallet, 3)
    odd = wallet | {"maker": _Unhashable(wallet["maker"])}
    assert _hasher(odd, 2) is not _hasher(odd, 2)
    assert _hasher(odd, 2).order_id(
        token_id=1, maker_amount=2, taker_amount=1, side=0, salt=5, timestamp=9
    ) == _hasher(wallet, 2).order_id(
        token_id=1, maker_amount=2, taker_amount=1, side=0, salt=5, timestamp=9
    )


def test_to_parquet_writes_each_partition_in_one_task(client: Any, tmp_path: Path) -> None:
    """The same files as ``df.to_parquet(**parquet_options(df))``, written one fused task a
    partition (Dask's plain compute runs five a partition, each a scheduler round trip)."""
    from clobkit.dask import parquet_options, to_parquet

    table = _table(2, 9_001)
    df = with_order_ids(
        dd.read_parquet(_write(table, tmp_path / "in"), dtype_backend="pyarrow"), WALLETS[2]
    )
    with distributed.get_task_stream(client) as fused:
        to_parquet(df, tmp_path / "fused")
    with distributed.get_task_stream(client) as plain:
        df.to_parquet(tmp_path / "plain", **parquet_options(df))
    writes = [t for t in fused.data if "toparquetbarrier" not in str(t["key"])]
    assert len(writes) == df.npartitions == 3
    assert len(plain.data) > len(fused.data)  # what the fusion saves
    names = sorted(p.name for p in (tmp_path / "plain").glob("*.parquet"))
    assert names == sorted(p.name for p in (tmp_path / "fused").glob("*.parquet"))
    for name in names:
        assert (tmp_path / "fused" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()
    assert pq.read_table(tmp_path / "fused")["order_id"].to_pylist() == _single_process(table, 2)
    # the caller's keywords win over parquet_options' settings
    to_parquet(df, tmp_path / "zstd", column="order_id", compression="zstd", write_index=False)
    meta = pq.ParquetFile(tmp_path / "zstd" / names[0]).metadata
    columns = [meta.row_group(0).column(i) for i in range(meta.num_columns)]
    assert "__null_dask_index__" not in [c.path_in_schema for c in columns]
    assert {c.path_in_schema: c.compression for c in columns}["salt"] == "ZSTD"
    with pytest.raises(OrderFieldError, match="call with_order_ids first"):
        to_parquet(df, tmp_path / "other", column="clob_id")


@pytest.mark.slow
def test_to_parquet_and_the_commands_datasets_hold_the_same_ids(
    client: Any, tmp_path: Path
) -> None:
    """The two ways to precompute ids of Parquet files (#45): ``clobkit.dask.to_parquet`` on
    the cluster, and ``clobkit order-ids`` into a dataset on each file (read in its
    manifest's order), equal an independent hasher's, row for row."""
    import json

    from clobkit.cli.orderids.outputs import MANIFEST
    from clobkit.cli.orderids.run import run
    from clobkit.dask import to_parquet

    table = _table(1, 9_001)
    sell = pa.array([side == "SELL" for side in table["side"].to_pylist()])
    makers, takers = table["maker_amount"], table["taker_amount"].cast(pa.int64())
    # a SELL pays shares for less USDC: the rule the command also checks (POST /orders/raw)
    table = table.set_column(1, "maker_amount", pc.if_else(sell, takers, makers))
    table = table.set_column(2, "taker_amount", pc.if_else(sell, makers, takers))
    src = Path(_write(table, tmp_path / "in"))
    frame = dd.read_parquet(str(src), dtype_backend="pyarrow")
    to_parquet(with_order_ids(frame, WALLETS[1]), tmp_path / "dask")
    files = sorted((tmp_path / "dask").glob("*.parquet"), key=lambda p: int(p.stem.split(".")[-1]))
    dask_ids = [i for p in files for i in pq.read_table(p)["order_id"].to_pylist()]
    wallet = tmp_path / "wallet.json"
    wallet.write_text(json.dumps(WALLETS[1]))
    command_ids: list[str] = []
    for k in range(3):
        out = tmp_path / f"cmd-{k}"
        run(
            str(wallet),
            str(src / f"part-{k}.parquet"),
            f"{out}/",
            threads=2,
            batch_size=1_000,
            progress=False,
        )
        for entry in json.loads((out / MANIFEST).read_text())["files"]:
            command_ids += pq.read_table(out / entry["path"])["order_id"].to_pylist()
    assert dask_ids == command_ids == _independent_v1_ids(table, WALLETS[1])
