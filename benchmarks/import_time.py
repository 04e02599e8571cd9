"""How long ``import clobkit`` takes in a fresh interpreter, next to Python's own start.

Run: python benchmarks/import_time.py [-n 25] [--module clobkit] [--src DIR ...]

``--src DIR`` (repeatable) times the import from each source tree (``PYTHONPATH=DIR``)
in the same interleaved rounds: old and new trees compared in one run (a compiled
core built in each).

Each round starts, interleaved, ``python -c pass`` and ``python -c "import
clobkit"`` (timed from outside: the whole process) and reads the import's own
time from inside (``time.perf_counter`` around the import statement), and
prints the minimum and median of each. Two settings: "bytecode cached" (what
an installed package sees: ``pip`` compiles the ``.pyc`` files; here they go
to a temporary ``PYTHONPYCACHEPREFIX`` that a first run fills), and "this
environment" (as the caller's environment is; with ``PYTHONDONTWRITEBYTECODE``
and no ``__pycache__`` every clobkit module is compiled from source on each
start). Quote the import's time next to the ``pass`` baseline of the same
run: these machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROBE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def _wall(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def measure(module: str, n: int, env: dict[str, str], srcs: list[str]) -> dict[str, list[float]]:
    """Seconds of ``n`` interleaved rounds: bare start, start + import, the import alone,
    once per source tree of ``srcs`` (none: the environment's own clobkit)."""
    bare = [sys.executable, "-c", "pass"]
    probe = [sys.executable, "-c", PROBE.format(module=module)]
    trees = {src: env | {"PYTHONPATH": src} for src in srcs} or {"": env}
    _wall(bare, env)
    for tree_env in trees.values():
        _wall(probe, tree_env)  # fills a bytecode cache, warms the page cache
    out: dict[str, list[float]] = {"python -c pass": []}
    for _ in range(n):
        out["python -c pass"].append(_wall(bare, env)[0])
        for src, tree_env in trees.items():
            seconds, printed = _wall(probe, tree_env)
            name = f" ({src})" if src else ""
            out.setdefault(f"import {module}{name}", []).append(seconds)
            out.setdefault(f"(in-process){name}", []).append(float(printed))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=25, help="fresh processes per row (25)")
    parser.add_argument("--module", default="clobkit")
    parser.add_argument("--src", action="append", default=[], help="a source tree to time")
    args = parser.parse_args(argv)
    here = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        cached = {k: v for k, v in here.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        settings = [("bytecode cached", cached), ("this environment", here)]
        no_write = here.get("PYTHONDONTWRITEBYTECODE", "") != ""
        print(f"{sys.executable} {sys.version.split()[0]}, {args.n} fresh processes a row, ms")
        print(
            f"load average {os.getloadavg()[0]:.2f}; PYTHONDONTWRITEBYTECODE is "
            f"{'set' if no_write else 'unset'} here"
        )
        for title, env in settings:
            print(f"\n{title}:")
            for name, seconds in measure(args.module, args.n, env, args.src).items():
                ms = [s * 1e3 for s in seconds]
                print(f"  {name:40s} min {min(ms):6.1f}  median {statistics.median(ms):6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
