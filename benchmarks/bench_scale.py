"""Order ids at scale (#14): ``order_ids`` on pyarrow / numpy columns vs the list path.

Run: python -m pytest benchmarks/bench_scale.py  (prints the ratio table at the end)

Both inputs hold the same orders, as a table reader hands them over: the
list path gets Python lists (token ids as decimal strings, amounts as ints),
the columnar path gets the pyarrow columns (token ids as strings, amounts
int64, sides as strings, timestamps int64) or numpy int64 arrays.
"""

from __future__ import annotations

from typing import Any

import pytest

from .bench_core import TOKEN, WALLET, WALLET_V2, test_floor_keccak, twin

__all__ = ["test_floor_keccak"]  # the floor F, measured in the same run

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")

ROWS = 500_000
TIMESTAMP = 1_777_777_777_123


def _lists(version: int) -> dict[str, Any]:
    salts = twin("c").new_salts(ROWS)
    cols: dict[str, Any] = {
        "token_ids": [str(int(TOKEN) - i) for i in range(ROWS)],
        "maker_amounts": list(range(1_000_000, 1_000_000 + ROWS)),
        "taker_amounts": list(range(2_000_000, 2_000_000 + ROWS)),
        "sides": ["BUY" if i & 1 else "SELL" for i in range(ROWS)],
        "salts": salts,
    }
    if version == 1:
        cols["fee_rate_bps"] = [0] * ROWS
        cols["nonces"] = [0] * ROWS
        cols["expirations"] = [0] * ROWS
    else:
        cols["timestamps"] = [TIMESTAMP + i for i in range(ROWS)]
    return cols


def _arrow(cols: dict[str, Any]) -> dict[str, Any]:
    return {
        k: pa.array(v, pa.string() if k in ("token_ids", "sides") else pa.int64())
        for k, v in cols.items()
    }


def _numpy(cols: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v if k in ("token_ids", "sides") else np.array(v, dtype=np.int64)
        for k, v in cols.items()
    }


@pytest.fixture(scope="module", params=[1, 2], ids=["v1", "v2"])
def columns(request: pytest.FixtureRequest) -> tuple[int, dict[str, dict[str, Any]]]:
    lists = _lists(request.param)
    return request.param, {"list": lists, "arrow": _arrow(lists), "numpy": _numpy(lists)}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("form", ["list", "arrow", "numpy"])
def test_order_ids_columns(
    benchmark: Any, columns: tuple[int, dict[str, dict[str, Any]]], form: str, threads: int
) -> None:
    version, forms = columns
    benchmark.group = f"order_ids V{version} ({ROWS} orders, per call, threads={threads})"
    benchmark.extra_info["per"] = ROWS
    hasher = twin("c").OrderHasher(WALLET if version == 1 else WALLET_V2)
    want = hasher.order_ids(**forms["list"])[:3]
    assert hasher.order_ids(**forms[form])[:3] == want
    benchmark.pedantic(
        lambda: hasher.order_ids(**forms[form], threads=threads), rounds=5, iterations=1
    )


# ---------------------------------------------------------------- clobkit order-ids on files

FILE_ROWS = 200_000


@pytest.fixture(scope="module", params=["markets", "distinct"])
def order_files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The same V1 orders as Parquet and as a quoted CSV (as pyarrow and pandas write it).

    ``markets``: token ids repeat over 5,000 markets, as a day of ladders or a
    history of orders has them; ``distinct``: every row its own token id, the
    worst case (no value is parsed once for many rows, and pyarrow's Parquet
    writer falls back from its dictionary to plain pages).
    """
    import json

    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp(f"files-{request.param}")
    lists = _lists(1)
    n = FILE_ROWS
    tokens = lists["token_ids"][:n]
    if request.param == "markets":
        tokens = [tokens[i % 5_000] for i in range(n)]
    table = pa.table(
        {
            "token_id": pa.array(tokens),
            "maker_amount": pa.array([9_295_000 + i % 1000 for i in range(n)], pa.int64()),
            "taker_amount": pa.array([16_900_000] * n, pa.int64()),
            "side": pa.array(["BUY"] * n),
            "salt": pa.array([s % 10**12 for s in lists["salts"][:n]], pa.int64()),
        }
    )
    pq.write_table(table, root / "in.parquet")
    pacsv.write_csv(table, root / "in.csv", pacsv.WriteOptions(quoting_style="all_valid"))
    (root / "wallet.json").write_text(json.dumps(WALLET))
    return root


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_order_ids_file(benchmark: Any, order_files: Any, fmt: str) -> None:
    """``clobkit order-ids``'s ``run()`` in process, --threads 2: read, hash, write (#14)."""
    from clobkit.cli.orderids.run import run

    benchmark.group = f"clobkit order-ids ({FILE_ROWS} orders, threads=2)"
    benchmark.extra_info["per"] = FILE_ROWS
    wallet, src = str(order_files / "wallet.json"), str(order_files / f"in.{fmt}")
    out = str(order_files / f"out.{fmt}")
    summary = run(wallet, src, out, threads=2, progress=False)
    assert summary.written == FILE_ROWS
    benchmark.pedantic(lambda: run(wallet, src, out, threads=2, progress=False), rounds=3)
