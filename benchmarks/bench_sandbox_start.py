"""What building a sandbox costs: the CPU time of ``Sandbox(config)`` (its engine: 72
markets with their books, the users, the house's quotes) and of a start and stop on
loopback, the median of ``N`` of each, in a fresh process per side; with ``--against
OTHER/src`` the same in another tree, the two sides taking turns, and this tree's
figures over the other's (the ratio is the figure to read: one run, one machine).

Run: python benchmarks/bench_sandbox_start.py [--n N] [--against OTHER/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys, time
from clobkit.sandbox import Sandbox
n = int(sys.argv[1])
Sandbox({"walk": None}).start().stop()  # imports and first-call costs out of the figures
built, cycled = [], []
for _ in range(n):
    c = time.process_time()
    Sandbox({"walk": None})
    built.append(time.process_time() - c)
    c = time.process_time()
    Sandbox({"walk": None}).start().stop()
    cycled.append(time.process_time() - c)
print(json.dumps({"built": built, "cycled": cycled}))
"""


def side(src: str, n: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(n)], env=env, capture_output=True, text=True, check=True
    )
    figures: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="sandboxes a side and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", metavar="OTHER/src")
    opts = parser.parse_args()
    sides = {"this tree": str(Path(__file__).resolve().parents[1] / "src")}
    if opts.against:
        sides[opts.against] = str(Path(opts.against).resolve())
    got: dict[str, dict[str, list[float]]] = {s: {"built": [], "cycled": []} for s in sides}
    for r in range(opts.rounds):
        for name in list(sides) if r % 2 == 0 else list(sides)[::-1]:
            for key, values in side(sides[name], opts.n).items():
                got[name][key] += values
    medians = {s: {k: statistics.median(v) * 1e3 for k, v in f.items()} for s, f in got.items()}
    for name, m in medians.items():
        print(
            f"{name}: Sandbox(config) {m['built']:.1f} ms CPU, "
            f"start and stop {m['cycled']:.1f} ms CPU (medians of {opts.n * opts.rounds})"
        )
    if opts.against:
        here, there = medians["this tree"], medians[opts.against]
        print(
            f"this tree / other: Sandbox(config) {here['built'] / there['built']:.2f}, "
            f"start and stop {here['cycled'] / there['cycled']:.2f}"
        )


if __name__ == "__main__":
    main()
