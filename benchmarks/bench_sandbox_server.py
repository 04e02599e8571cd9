"""The sandbox server's own CPU time per request: a raw-order POST and a cancel DELETE.

The sandbox runs in its own process (as in ``bench_mm.py``); the client places
``N`` raw orders that rest, then cancels them. The server's CPU time over each
phase, read from ``/proc/<pid>/task/*/schedstat`` (nanoseconds on the CPU, all
threads; waiting in epoll is not counted), divided by ``N`` is its busy time
per request. Linux only. No stream subscribers: the fan-out is not measured
here (``bench_mm.py`` measures it with the Quoter's streams).

Run: python benchmarks/bench_sandbox_server.py [N]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path

from bench_mm import USER, pick_market, start_sandbox  # run as a script from benchmarks/
from clobkit import AsyncClient

WARMUP = 50


def cpu_ns(pid: int) -> int:
    """Nanoseconds the process ``pid`` has spent on a CPU (every thread)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread that ended
            total += int((task / "schedstat").read_text().split()[0])
    return total


async def measure(url: str, pid: int, n: int) -> tuple[float, float, float, float]:
    """Server CPU microseconds per raw-order POST and per cancel DELETE, then wall
    microseconds per POST and per DELETE as the client sees them."""
    async with AsyncClient(url, USER["api_key"], USER["api_secret"]) as client:
        market = await pick_market(client)
        for _ in range(WARMUP):
            placed = await client.place_raw_order(market, "b", "BUY", "0.02", 50)
            await client.cancel_order(placed.order_id)
        prices = [f"0.0{2 + i % 8}" for i in range(n)]
        start, wall = cpu_ns(pid), time.perf_counter()
        ids = [(await client.place_raw_order(market, "b", "BUY", p, 50)).order_id for p in prices]
        placed_ns, placed_wall = cpu_ns(pid), time.perf_counter()
        for order_id in ids:
            await client.cancel_order(order_id)
        end, end_wall = cpu_ns(pid), time.perf_counter()
    return (
        (placed_ns - start) / n / 1000,
        (end - placed_ns) / n / 1000,
        (placed_wall - wall) / n * 1e6,
        (end_wall - placed_wall) / n * 1e6,
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    proc, url, path = start_sandbox()
    try:
        post_us, delete_us, post_wall, delete_wall = asyncio.run(measure(url, proc.pid, n))
    finally:
        proc.terminate()
        proc.wait()
        os.unlink(path)
    print(
        f"server CPU per raw-order POST: {post_us:7.1f} us   per cancel: {delete_us:7.1f} us"
        f"   (round trip {post_wall:7.1f} / {delete_wall:7.1f} us)"
    )


if __name__ == "__main__":
    main()
