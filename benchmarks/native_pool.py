"""The native pool's figures (#20): order ids and signatures per thread count, GIL share.

    PYTHONPATH=src python benchmarks/native_pool.py [--orders N] [--signatures N] [--rounds R]
    CLOBKIT_KECCAK=avx2 PYTHONPATH=src python benchmarks/native_pool.py   # the AVX2 path

Prints, measured in one run (each figure the best of R interleaved rounds):
F (five Keccak-f[1600] permutations through OpenSSL's hashlib.sha3_256), E
(one bare libsecp256k1 signature through coincurve), then per thread count
(1, 2, 4, ... up to the cores) ``order_ids`` from Arrow columns into an Arrow
array, from Python lists into a list, ``OrderSigner.sign_many`` (order ids)
and ``OrderHasher.sign_many`` (Arrow columns hashed and signed): time per
order, in F or E, and the speed-up over one thread. Last, the time per order
spent holding the GIL on one thread, two ways: a second Python thread counts
while the call runs (whatever it could not count is GIL-held time; on a
machine whose cores are taken by other jobs this over-counts, as the counter
then waits for a core, not the GIL), and the calling thread's own CPU time
outside its GIL-free part (``clobkit.core._core_c._gil_held_ns``), which other
jobs do not inflate; the part of that no worker overlaps at any thread count
(``_gil_alone_ns``: the call's setup, the first round's objects taken, the last
round's results made); and what those two leave possible at 16 threads, the
GIL's bound: one thread's time over the lone part plus the larger of the rest
of the GIL part and the rest of the work shared by 16 (no machine limit in
it: the bound two cores can show for #20's machine). Then what the GIL part
of lists is made of (``lists_parts``): each column alone a list, the objects
shuffled in memory, and the result strs of ``out="list"`` with the calling
thread's system time.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
WALLET = {
    "maker": "0x" + "11" * 20,
    "signer": "0x" + "22" * 20,
    "chain_id": 137,
    "signature_type": 0,
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}
KEY = bytes.fromhex("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
BIG = bytes(16 << 20)
BOUND_AT = 16  # threads: #20's machine


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def gil_held(fn: Callable[[], object]) -> float:
    """Seconds of ``fn``'s run during which another Python thread could not run."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # the counter hands the GIL back within 0.1 ms
    count = [0]
    stop = threading.Event()

    def counter() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            count[0] = n

    thread = threading.Thread(target=counter)
    thread.start()
    time.sleep(0.2)
    c0, t0 = count[0], time.perf_counter()
    time.sleep(0.3)  # the counting rate alone
    rate = (count[0] - c0) / (time.perf_counter() - t0)
    c0, t0 = count[0], time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    counted = (count[0] - c0) / rate
    stop.set()
    thread.join()
    sys.setswitchinterval(interval)
    return max(wall - counted, 0.0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--orders", type=int, default=400_000)
    ap.add_argument("--signatures", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    import coincurve
    import pyarrow as pa

    from clobkit import OrderHasher, OrderSigner
    from clobkit.core import select as _core

    assert _core.IMPLEMENTATION == "c", "the compiled twin is needed"
    from clobkit.core import _core_c

    n, ns = args.orders, args.signatures
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, *(2**k for k in range(2, 8) if 2**k <= cores), cores})
    hasher = OrderHasher(WALLET)
    lists: dict[str, Any] = {
        "token_ids": [TOKEN] * n,
        "maker_amounts": [str(1_000_000 + i) for i in range(n)],
        "taker_amounts": [2_000_000 + i for i in range(n)],
        "sides": ["BUY", "SELL"] * (n // 2) + ["BUY"] * (n % 2),
        "salts": _core_c.new_salts(n),
    }
    arrow = {k: pa.array(v) for k, v in lists.items()}
    signer = OrderSigner(KEY)
    ids = ["0x" + os.urandom(32).hex() for _ in range(ns)]
    bare = coincurve.PrivateKey(KEY)
    own = OrderHasher(WALLET | {"maker": signer.address, "signer": signer.address})
    orders = {k: v[:ns] for k, v in arrow.items()}  # hashed and signed in the workers
    digests = [bytes.fromhex(i[2:]) for i in ids[:5000]]

    def one_signature() -> None:
        sign = bare.sign_recoverable
        for d in digests:
            sign(d, hasher=None)

    runs: dict[str, tuple[Callable[[], object], int]] = {
        "F": (lambda: hashlib.sha3_256(BIG).digest(), len(BIG) // 136),
        "E": (one_signature, len(digests)),
    }
    for t in counts:
        runs[f"arrow {t}"] = (
            lambda t=t: hasher.order_ids(**arrow, threads=t, out="arrow"),
            n,
        )
        runs[f"lists {t}"] = (lambda t=t: hasher.order_ids(**lists, threads=t), n)
        runs[f"sign {t}"] = (lambda t=t: signer.sign_many(ids, threads=t), ns)
        runs[f"hsign {t}"] = (lambda t=t: own.sign_many(signer, **orders, threads=t), ns)
    best: dict[str, float] = {}
    for _ in range(args.rounds):  # interleaved, so a busy moment hurts every figure alike
        for name, (fn, per) in runs.items():
            best[name] = min(best.get(name, float("inf")), seconds(fn) / per)
    f, e = 5 * best["F"], best["E"]
    print(f"keccak path {_core_c.implementation()['keccak']}, {cores} cores, {n:,} orders")
    print(f"F = {f * 1e9:.0f} ns (5 x Keccak-f through OpenSSL), E = {e * 1e6:.2f} us")
    print(
        "threads | arrow ns/order  F     x | lists ns/order  F     x "
        "| signer.sign_many us  E     x | hasher.sign_many us  E     x"
    )
    for t in counts:
        a, li = best[f"arrow {t}"], best[f"lists {t}"]
        s, hs = best[f"sign {t}"], best[f"hsign {t}"]
        print(
            f"{t:7} | {a * 1e9:10.0f} {a / f:6.3f} {best['arrow 1'] / a:5.2f} "
            f"| {li * 1e9:10.0f} {li / f:6.3f} {best['lists 1'] / li:5.2f} "
            f"| {s * 1e6:15.2f} {s / e:6.3f} {best['sign 1'] / s:5.2f} "
            f"| {hs * 1e6:15.2f} {hs / e:6.3f} {best['hsign 1'] / hs:5.2f}"
        )
    # (a build before #20 has no such hook: its CPU column then reads nan; one before
    # 2026-11-26 12:30 UTC has it always on, with no _gil_meter)
    held_ns = getattr(_core_c, "_gil_held_ns", lambda: float("nan"))
    # (a build before 2026-11-26 14:30 UTC has no _gil_alone_ns: that column reads nan)
    alone_ns = getattr(_core_c, "_gil_alone_ns", lambda: float("nan"))
    getattr(_core_c, "_gil_meter", bool)(True)
    inputs = {"arrow": arrow, "lists": lists, "ids": ids, "orders": orders}
    gil_table(hasher, signer, own, inputs, best, args.rounds, (held_ns, alone_ns))
    lists_parts(hasher, n, args.rounds, held_ns)


def gil_table(
    hasher: Any,
    signer: Any,
    own: Any,
    inputs: dict[str, Any],
    best: dict[str, float],
    rounds: int,
    hooks: tuple[Callable[[], float], Callable[[], float]],
) -> None:
    """The time per order one thread's call holds the GIL, counted and as CPU; the part
    of it no worker overlaps at any thread count; what those two allow at BOUND_AT
    threads."""
    from clobkit.bench._timing import gil_bound

    arrow, lists, ids, orders = (inputs[k] for k in ("arrow", "lists", "ids", "orders"))
    held_ns, alone_ns = hooks
    print(
        "GIL held on one thread: counted (a second thread counting) | CPU (the core's own "
        f"clock) | of it with no worker beside it | the GIL's bound at {BOUND_AT} threads"
    )
    n, ns = len(lists["salts"]), len(ids)
    calls: list[tuple[str, Callable[[], object], int, float]] = [
        (name, partial(hasher.order_ids, **cols, threads=1, out=out), n, best[f"{key} 1"])
        for name, cols, out, key in (
            ("arrow -> arrow", arrow, "arrow", "arrow"),
            ("arrow -> list", arrow, "list", "arrow"),
            ("lists -> list", lists, "list", "lists"),
            ("lists -> arrow", lists, "arrow", "lists"),
        )
    ]
    calls.append(("sign_many(ids)", partial(signer.sign_many, ids, threads=1), ns, best["sign 1"]))
    hsign = partial(own.sign_many, signer, **orders, threads=1)
    calls.append(("hasher.sign_many", hsign, ns, best["hsign 1"]))
    for name, call, rows, one in calls:
        counted = min(gil_held(call) for _ in range(rounds)) / rows
        cpu = min((call(), held_ns(), alone_ns())[1:] for _ in range(rounds))
        held, alone = cpu[0] / rows / 1e9, cpu[1] / rows / 1e9
        bound = gil_bound(one, held, alone, BOUND_AT)
        print(
            f"  {name:16} {counted * 1e9:8.1f} ns/order = {counted / one * 100:5.1f}% | "
            f"{held * 1e9:8.1f} ns/order = {held / one * 100:5.1f}% | "
            f"{alone * 1e9:8.1f} ns = {alone / one * 100:5.1f}% | {bound:5.2f}x"
        )


def lists_parts(hasher: Any, n: int, rounds: int, held_ns: Callable[[], float]) -> None:
    """What the GIL part of a batch from Python lists is made of: each column alone a
    list (the rest Arrow), every object of each list its own (a distinct token id str
    per row, as ``to_pylist`` makes them), the same objects shuffled in memory, and the
    result strs of ``out="list"`` with the calling thread's system time (Linux)."""
    import random

    import pyarrow as pa

    tokens = [str(int(TOKEN) - i % 5000) for i in range(n)]  # a new str object per row
    lists: dict[str, Any] = {
        "token_ids": tokens,
        "maker_amounts": [9_295_000 + i % 1000 for i in range(n)],
        "taker_amounts": [16_900_000 + i % 7 for i in range(n)],
        "sides": [i & 1 for i in range(n)],
        "salts": [(i * 7919) % 10**12 for i in range(n)],
    }
    arrow = {k: pa.array(v) for k, v in lists.items()}
    order = list(range(n))
    random.Random(1).shuffle(order)
    # new objects made in shuffled order, then put back in row order: the objects of
    # neighbouring rows lie far apart, as in a list built up over time
    made = {k: {i: _copy(v[i]) for i in order} for k, v in lists.items()}
    scattered = {k: [made[k][i] for i in range(n)] for k in lists}
    del made
    threads = min(2, os.cpu_count() or 1)
    # the millions of objects made here are the benchmark's, not the call's: out of
    # the collector's way, so a full collection never lands inside a measured call
    gc.collect()
    gc.freeze()

    def held(cols: dict[str, Any], out: str) -> float:
        call = partial(hasher.order_ids, **cols, threads=threads, out=out)
        return min((call(), held_ns())[1] for _ in range(rounds)) / n

    print(f"GIL held per order, CPU, {threads} threads, {n:,} V1 orders, lists of own objects:")
    for name in lists:
        alone = held({**arrow, name: lists[name]}, "arrow")
        print(f"  {name + ' alone a list -> arrow':36} {alone:6.1f} ns")
    print(f"  {'all lists -> arrow':36} {held(lists, 'arrow'):6.1f} ns")
    print(f"  {'all lists, objects shuffled -> arrow':36} {held(scattered, 'arrow'):6.1f} ns")
    system = _system_ns(hasher, arrow, threads, n)
    print(f"  {'arrow -> list':36} {held(arrow, 'list'):6.1f} ns", end="")
    print(f", of it the calling thread's system time {system:.1f} ns")
    print(f"  {'all lists -> list':36} {held(lists, 'list'):6.1f} ns")
    gc.unfreeze()


def _copy(value: Any) -> Any:
    """An equal object of its own (ints past the small-int cache and strs: new ones)."""
    if isinstance(value, str):
        return (value + " ")[:-1]  # str(value) would hand back the same object
    return int(str(value)) if isinstance(value, int) else value


def _system_ns(hasher: Any, cols: dict[str, Any], threads: int, n: int) -> float:
    """The calling thread's system time per order over 10 calls, each result dropped
    before the next (the kernel's first touch of the memory the result strs take)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return float("nan")
    who = getattr(resource, "RUSAGE_THREAD", None)
    if who is None:
        return float("nan")
    before = resource.getrusage(who).ru_stime
    for _ in range(10):
        hasher.order_ids(**cols, threads=threads, out="list")
    return (resource.getrusage(who).ru_stime - before) / 10 / n * 1e9


if __name__ == "__main__":
    main()
