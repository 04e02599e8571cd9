"""Threads in one process against processes: where batch work stops scaling (#20).

Run: PYTHONPATH=src python benchmarks/threads_vs_processes.py [--kinds sign,ids,lists,arrow]
     [--max 16] [--rounds 3] [--quick] [--json PATH]

For each kind of batch work and each count N (1, 2, 4, ... up to ``--max``):

- *threads*: one call with ``threads=N`` in this process;
- *processes*: N processes at once, each making the same call with
  ``threads=1`` on its own copy of the orders (started together at a barrier,
  every round; the round's time is the slowest process's).

Both are given as throughput over one thread's. Where the processes fall
short of N too, the machine limits (cores sharing a physical core, a clock
that drops as more cores run, a VM's neighbours); where only the threads do,
something inside the process does (the GIL, the pool's hand-offs, memory the
threads share). For the threaded call at the most threads it also gives what
the kernel did meanwhile, per 1,000 orders: TLB shootdowns, rescheduling and
function-call interrupts (``/proc/interrupts``), and the machine's steal time
(``/proc/stat``: time the hypervisor gave this VM's CPUs to others).

Kinds: ``sign`` (``OrderHasher.sign_many``, V2 orders from lists: hash and
sign in rounds), ``ids`` (``OrderSigner.sign_many`` on order ids: signing
alone, one native round), ``lists`` (V1 ``order_ids`` from lists into a
list), ``lists-arrow`` (the same into ``out="arrow"``: no str made per
order), ``arrow`` (V1 from Arrow columns into Arrow).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scaling
from clobkit import OrderHasher, OrderSigner
from clobkit._bench.machine import machine, machine_line

SIZES = {
    "sign": 20_000,
    "ids": 20_000,
    "lists": 400_000,
    "lists-arrow": 400_000,
    "arrow": 2_000_000,
}


def work(kind: str) -> tuple[Callable[[int], object], int]:
    """The call of ``kind`` at a thread count, and its orders (``CLOBKIT_TVP_QUICK``: tiny)."""
    n = SIZES[kind] // (1000 if os.environ.get("CLOBKIT_TVP_QUICK") else 1)
    if kind in ("sign", "ids"):
        hasher, signer = OrderHasher(scaling.V2_WALLET), OrderSigner(scaling.KEY)
        args = scaling.arguments(scaling.orders(0, n, 2), lists=True)
        if kind == "sign":
            return (lambda t: hasher.sign_many(signer, **args, threads=t)), n
        ids = hasher.order_ids(**args)
        return (lambda t: signer.sign_many(ids, threads=t)), n
    hasher = OrderHasher(scaling.V1_WALLET)
    args = scaling.arguments(scaling.orders(0, n, 1), lists=kind != "arrow")
    out = "list" if kind == "lists" else "arrow"
    return (lambda t: hasher.order_ids(**args, threads=t, out=out)), n


def _process(kind: str, rounds: int, barrier: Any, queue: Any) -> None:
    call, _ = work(kind)
    call(1)  # warm
    times = []
    for _ in range(rounds):
        barrier.wait()
        t0 = time.perf_counter()
        call(1)
        times.append(time.perf_counter() - t0)
    queue.put(times)


def processes(kind: str, count: int, rounds: int) -> float:
    """Seconds of the slowest of ``count`` processes, best round."""
    # spawned: a fork would copy this process's native pool state
    spans = scaling.at_once(_process, (kind, rounds), count, "spawn")
    return min(max(s[r] for s in spans) for r in range(rounds))


def _interrupts() -> dict[str, int]:
    """Totals over every CPU of the TLB, RES and CAL lines of /proc/interrupts."""
    totals: dict[str, int] = {}
    try:
        lines = Path("/proc/interrupts").read_text().splitlines()
    except OSError:
        return totals
    for line in lines:
        name, _, rest = line.strip().partition(":")
        if name in ("TLB", "RES", "CAL"):
            totals[name] = sum(int(x) for x in rest.split() if x.isdigit())
    return totals


def _steal() -> int:
    """The machine's steal time so far, in clock ticks (0 where Linux does not tell)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return 0
    return int(fields[8]) if len(fields) > 8 else 0


def kernel_meanwhile(call: Callable[[], object], n: int) -> dict[str, float]:
    """Interrupts per 1,000 orders and steal time (% of the CPUs' time) while ``call`` runs."""
    before, steal0, t0 = _interrupts(), _steal(), time.perf_counter()
    call()
    wall = time.perf_counter() - t0
    after, steal1 = _interrupts(), _steal()
    got = {k: (after[k] - before[k]) * 1000 / n for k in after if k in before}
    ticks = os.sysconf("SC_CLK_TCK") * wall * (os.cpu_count() or 1)
    got["steal %"] = 100 * (steal1 - steal0) / ticks if ticks else 0.0
    return got


def measure(kind: str, counts: list[int], rounds: int) -> dict[str, Any]:
    """Threads and processes at each count for ``kind``, printed as they come."""
    call, n = work(kind)
    call(counts[-1])  # warm: the pool's threads started
    one = scaling.best_of(lambda: call(1), rounds)
    row: dict[str, Any] = {"orders": n, "one thread ns": one / n * 1e9}
    for c in counts[1:]:
        threads = one / scaling.best_of(lambda c=c: call(c), rounds)
        procs = one * c / processes(kind, c, rounds)
        row[str(c)] = {"threads": threads, "processes": procs}
        print(f"{kind} at {c}: threads {threads:.2f}x, processes {procs:.2f}x", flush=True)
    kernel = kernel_meanwhile(lambda: call(counts[-1]), n)
    row["kernel at most threads"] = kernel
    print(
        f"{kind}: one thread {one / n * 1e9:.1f} ns/order; at {counts[-1]} threads, "
        f"the kernel meanwhile per 1,000 orders: {kernel}",
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="sign,ids,lists,lists-arrow,arrow")
    parser.add_argument("--max", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None, metavar="PATH")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    opts = parser.parse_args(argv)
    if opts.quick:  # an environment variable, so the spawned processes see it too
        os.environ["CLOBKIT_TVP_QUICK"] = "1"
    counts = scaling.thread_counts(opts.max)
    print(
        machine_line(machine()) + f"; CLOBKIT_KECCAK={os.environ.get('CLOBKIT_KECCAK', '')}",
        flush=True,
    )
    result = {kind: measure(kind, counts, opts.rounds) for kind in opts.kinds.split(",")}
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
