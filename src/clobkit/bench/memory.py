"""``clobkit bench`` memory check: peak RSS of one large ``order_ids`` batch per thread count."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import clobkit

from .. import OrderHasher
from .order_ids import WALLET, make_orders


def _proc_status(field: str) -> int | None:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in bytes, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _max_rss() -> int:
    """Peak resident set size of this process so far, bytes (ru_maxrss)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def _deep_size(lists: Sequence[Sequence[object]]) -> int:
    """sys.getsizeof of the lists and of each distinct element (shared ones once), bytes."""
    distinct = {id(x): x for items in lists for x in items}
    return sum(map(sys.getsizeof, lists)) + sum(map(sys.getsizeof, distinct.values()))


def memory_child(orders: int, threads: int) -> None:
    """In a fresh process: peak RSS of one ``order_ids`` call of ``orders`` orders, as JSON.

    The peak counter is reset (``/proc/self/clear_refs``) after the inputs are
    built and sized, so the baseline holds the inputs and the peak is the
    call's own; without that reset ``ru_maxrss`` gives an upper bound.
    """
    hasher = OrderHasher(WALLET)
    hasher.order_ids(**make_orders(8, seed=1), threads=threads)  # warm: pools, caches
    start = _proc_status("VmRSS") or _max_rss()
    batch = make_orders(orders, seed=5)
    inputs = _deep_size(list(batch.values()))
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        method = "VmHWM, reset after the inputs were built"
    except OSError:
        method = "ru_maxrss (upper bound: the peak may predate the call)"
    baseline = _proc_status("VmRSS") or _max_rss()
    t0 = time.perf_counter()
    out = hasher.order_ids(**batch, threads=threads)
    seconds = time.perf_counter() - t0
    peak = _proc_status("VmHWM") or _max_rss()
    outputs = sys.getsizeof(out) + sum(map(sys.getsizeof, out))
    if len(out) != orders or any(len(x) != 66 for x in out):
        raise AssertionError("order_ids returned a wrong result")
    print(
        json.dumps(
            {
                "orders": orders,
                "threads": threads,
                "inputs_bytes": inputs,
                "outputs_bytes": outputs,
                "baseline_rss_bytes": baseline,
                "peak_rss_bytes": peak,
                "peak_increase_bytes": peak - baseline,
                "ratio": (peak - baseline) / (inputs + outputs),
                "process_ratio": (peak - start) / (inputs + outputs),
                "seconds": seconds,
                "method": method,
            }
        )
    )


def measure_memory(orders: int, threads: Sequence[int] = (1, 2)) -> list[dict[str, Any]]:
    """Run :func:`memory_child` in one subprocess per thread count (concurrently).

    Each result's ``ratio`` is the peak RSS increase during ``order_ids``
    (baseline: inputs already built) divided by inputs + outputs (bytes, as
    sys.getsizeof counts them); ``process_ratio`` measures from before the
    inputs existed, so it includes them.
    """
    code = (
        "import sys; from clobkit.bench.memory import memory_child as m; m(*map(int, sys.argv[1:]))"
    )
    env = dict(os.environ)
    src = str(Path(clobkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(orders), str(t)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for t in threads
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"memory measurement failed:\n{err}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results
