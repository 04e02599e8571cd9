"""How ``clobkit.dask.with_order_ids`` scales with rows and workers (#14; docs/scale.md).

Run: PYTHONPATH=src python benchmarks/dask_scaling.py [--rows 1000000] [--files 8]
     [--dtype-backend pyarrow] [--command-writer] [--in-process] [--v1]

Writes V2 orders as Parquet to a temporary directory, then times Parquet ->
order ids -> Parquet on a LocalCluster of 1 and 2 worker processes (one
thread each), for a quarter of the rows and all of them, and the same
orders hashed in this process by ``order_ids`` on the Arrow columns (no I/O)
for scale. Prints one row per run: seconds, orders per second, and the
speedup of 2 workers over 1. Figures depend on the machine and its load.
``--dtype-backend pyarrow`` reads Arrow-backed pandas columns (as
docs/scale.md advises); ``--command-writer`` writes with
``clobkit.dask.parquet_options`` (the ids plain and uncompressed, as
``clobkit order-ids`` writes them). ``--in-process`` runs the same jobs on
Dask's sync scheduler in this process and adds their CPU time (the figure
that still compares on a machine busy with other work), with the clobkit of
this process's PYTHONPATH: another tree's ``src`` compares two commits.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import dask
import dask.dataframe as dd
import pyarrow as pa
import pyarrow.parquet as pq
from distributed import Client, LocalCluster

from clobkit.bench.order_ids import WALLET as V1_WALLET
from clobkit.core.parse import BATCH_KEYWORDS as KEYWORDS
from clobkit.dask import with_order_ids
from clobkit.order_id import OrderHasher

WALLET = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": "0xE111180000d2663C0091e4f400237545B87B996B",
    "neg_risk_exchange": "0xe2222d279d744050d28e00520010520000310F59",
}
TOKEN = 71321045679252212594626385532706912750332728571942532289631379312455583992563


def orders(n: int) -> pa.Table:
    return pa.table(
        {
            "token_id": pa.array([str(TOKEN - i % 5000) for i in range(n)]),
            "maker_amount": pa.array(range(1_000_000, 1_000_000 + n), pa.int64()),
            "taker_amount": pa.array(range(2_000_000, 2_000_000 + n), pa.int64()),
            "side": pa.array(["BUY" if i & 1 else "SELL" for i in range(n)]),
            "salt": pa.array([(i * 7919) % 10**12 for i in range(n)], pa.int64()),
            "timestamp": pa.array(range(1_777_000_000_000, 1_777_000_000_000 + n), pa.int64()),
        }
    )


def orders_v1(n: int) -> pa.Table:
    """The same orders as V1 ones (no timestamp), for ``V1_WALLET``."""
    return orders(n).drop_columns(["timestamp"])


def write(table: pa.Table, path: Path, files: int) -> None:
    path.mkdir()
    step = -(-table.num_rows // files)
    for k in range(files):
        pq.write_table(table.slice(k * step, step), path / f"part-{k:03d}.parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3, help="best of this many runs")
    parser.add_argument("--dtype-backend", default=None, help="read_parquet's dtype_backend")
    parser.add_argument(
        "--command-writer", action="store_true", help="to_parquet(**parquet_options(df))"
    )
    parser.add_argument("--v1", action="store_true", help="V1 orders (no timestamp column)")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="the same jobs on Dask's sync scheduler in this process: wall and CPU time",
    )
    args = parser.parse_args()

    wallet = V1_WALLET if args.v1 else WALLET

    def job(path: Path, out: Path) -> None:
        df = with_order_ids(dd.read_parquet(path, dtype_backend=args.dtype_backend), wallet)
        if args.command_writer:
            from clobkit.dask import parquet_options  # not in clobkit before #20

            df.to_parquet(out, **parquet_options(df))
        else:
            df.to_parquet(out)

    src = str(Path(__file__).resolve().parents[1] / "src")
    os.environ["PYTHONPATH"] = src + os.pathsep + os.environ.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sizes = sorted({max(args.rows // 4, 1), args.rows})
        tables = {n: (orders_v1 if args.v1 else orders)(n) for n in sizes}
        for n, table in tables.items():
            write(table, root / f"in-{n}", args.files)
        print(f"{'run':<44}{'rows':>10}{'seconds':>10}{'orders/s':>12}")
        hasher = OrderHasher(wallet)
        for n, table in tables.items():
            cols = {KEYWORDS[name]: table[name] for name in table.column_names}
            best = min(_timed(partial(hasher.order_ids, **cols)) for _ in range(args.rounds))
            label = "order_ids on Arrow columns, this process"
            print(f"{label:<44}{n:>10}{best:>10.3f}{n / best:>12,.0f}")
        if args.in_process:  # the clobkit of this process's PYTHONPATH, whatever the tree
            for n in sizes:
                walls, cpus = [], []
                for r in range(args.rounds):
                    w0, c0 = time.perf_counter(), time.process_time()
                    with dask.config.set(scheduler="sync"):
                        job(root / f"in-{n}", root / f"out-sync-{n}-{r}")
                    walls.append(time.perf_counter() - w0)
                    cpus.append(time.process_time() - c0)
                out = root / f"out-sync-{n}-{args.rounds - 1}"
                size = sum(f.stat().st_size for f in out.glob("*.parquet")) / n  # the files
                label = "Parquet -> ids -> Parquet, sync, in process"
                print(f"{label:<44}{n:>10}{min(walls):>10.3f}{n / min(walls):>12,.0f}"
                      f"  CPU {min(cpus):.3f} s, {size:.1f} bytes an order written")  # fmt: skip
            return
        results: dict[tuple[int, int], float] = {}
        for workers in (1, 2):
            with (
                LocalCluster(
                    n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None
                ) as cluster,
                Client(cluster),
            ):
                for n in sizes:
                    runs = []
                    for r in range(args.rounds):
                        out = root / f"out-{workers}-{n}-{r}"
                        runs.append(_timed(partial(job, root / f"in-{n}", out)))
                    best = results[(workers, n)] = min(runs)
                    label = f"Parquet -> ids -> Parquet, {workers} worker(s)"
                    print(f"{label:<44}{n:>10}{best:>10.3f}{n / best:>12,.0f}")
        for n in sizes:
            print(
                f"speedup of 2 workers over 1 at {n} rows: {results[(1, n)] / results[(2, n)]:.2f}"
            )


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
