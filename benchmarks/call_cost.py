"""What one ``order_ids`` call costs beside its orders: small batches, neg_risk lists, Dask.

Run: PYTHONPATH=src python benchmarks/call_cost.py [--rounds 7]

Every figure is the best of ``--rounds`` loops of calls, in µs a call, and
its ratio to a reference measured in the same run:

- ``order_ids`` on 1, 10 and 100 V1 orders in Python lists, and on 1 and 100
  from Arrow columns (``out="arrow"``), against one ``order_id`` call: a
  batch's fixed cost is what it costs beyond its orders;
- 20,000 orders in lists with ``neg_risk`` a list of bools, and of 0/1,
  against the same batch with ``neg_risk`` one scalar (a list the workers do
  not read goes through the Python path row by row);
- with Dask installed, one 100-row partition through ``with_order_ids``'
  per-partition step (``clobkit.dask._ids``: the hasher, the columns, the ids
  set on a copy) against ``order_ids`` alone on the same columns.

To compare two trees, run it over each (``PYTHONPATH=OTHER/src``) in turn
and compare the ratios, not the µs: the machine moves between runs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from clobkit import OrderHasher
from clobkit.bench.order_ids import WALLET

TOKEN = 71321045679252212594626385532706912750332728571942532289631379312455583992563


def best_us(fn: Callable[[], object], rounds: int) -> float:
    """µs a call: the best of ``rounds`` loops, each about 50 ms."""
    fn()
    t0 = time.perf_counter()
    fn()
    loops = max(1, int(0.05 / max(time.perf_counter() - t0, 1e-7)))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best * 1e6


def lists(n: int) -> dict[str, Any]:
    """``n`` V1 orders over 5,000 token ids as Python lists (sides 0/1)."""
    return {
        "token_ids": [str(TOKEN - i % 5000) for i in range(n)],
        "maker_amounts": [16_900_000] * n,
        "taker_amounts": [9_295_000 + i % 1000 for i in range(n)],
        "sides": [i & 1 for i in range(n)],
        "salts": list(range(n)),
    }


def row(label: str, us: float, ref: float, ref_name: str) -> None:
    print(f"  {label:44} {us:10.2f} µs  {us / ref:6.2f}x {ref_name}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    rounds = ap.parse_args(argv).rounds
    hasher = OrderHasher(WALLET)
    single = {"token_id": TOKEN, "maker_amount": 16_900_000, "taker_amount": 9_295_000}
    single |= {"side": 0, "salt": 0}
    ref = best_us(partial(hasher.order_id, **single), rounds)
    print(f"one order_id: {ref:.2f} µs")
    print("a batch's call against one order_id:")
    for n in (1, 10, 100):
        row(f"order_ids, {n} in lists", best_us(partial(hasher.order_ids, **lists(n)), rounds),
            ref, "order_id")  # fmt: skip
    import pyarrow as pa

    for n in (1, 100):
        cols = {k: pa.array(v) for k, v in lists(n).items()}
        call = partial(hasher.order_ids, **cols, out="arrow")
        row(f"order_ids, {n} from Arrow", best_us(call, rounds), ref, "order_id")
    n = 20_000
    batch = lists(n)
    scalar = best_us(partial(hasher.order_ids, **batch), rounds)
    print(f"{n:,} orders in lists, neg_risk a scalar: {scalar / n * 1e3:.0f} ns an order")
    flag_lists = {"bools": [i % 5 == 0 for i in range(n)], "0/1": [i % 2 for i in range(n)]}
    for name, flags in flag_lists.items():
        us = best_us(partial(hasher.order_ids, **batch, neg_risk=flags), rounds)
        row(f"neg_risk a list of {name}", us, scalar, "the scalar's")
    dask_row(rounds)


def dask_row(rounds: int) -> None:
    try:
        import pandas as pd
        import pyarrow as pa

        from clobkit import dask as ck_dask
    except ImportError:
        print("(no Dask: its row skipped)")
        return
    table = pa.table({k: pa.array(v) for k, v in lists(100).items()})
    part = table.rename_columns([k[:-1] for k in table.column_names]).to_pandas(
        types_mapper=pd.ArrowDtype
    )
    wallet = ck_dask._wallet_data(WALLET)
    hasher = OrderHasher(wallet)
    cols = {f"{k}s": pa.array(part[k].array) for k in part.columns}
    alone = best_us(partial(hasher.order_ids, **cols, out="arrow"), rounds)
    step = best_us(partial(ck_dask._ids, part, wallet, 1, "order_id"), rounds)
    print("a Dask partition of 100 rows:")
    row("with_order_ids' per-partition step", step, alone, "order_ids alone")


if __name__ == "__main__":
    main()
