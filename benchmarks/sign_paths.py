"""The ways ``clobkit.signing`` can reach libsecp256k1 (issue #41), per signature, in one run.

* native: the compiled core's workers call libsecp256k1 by address, through
  coincurve's compiled module (private: taken after ``_secp``'s self-check at load);
* cffi: Python threads through the same module's cffi functions (the pure twin's
  path; cffi releases the GIL in each call);
* public: Python threads through coincurve's public API
  (``PrivateKey.sign_recoverable``), what signs when the self-check fails.

Each row signs ``--n`` order ids with ``sign_many(threads=T)`` (and one ``sign`` at a
time), rounds interleaved; medians of wall and CPU time per signature, and each row's
ratio to the native row of the same threads. The self-check's own cost is timed too.

Run: PYTHONPATH=src python benchmarks/sign_paths.py [--n 4000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from clobkit import OrderSigner
from clobkit.signing import batch
from clobkit.signing import secp as _secp

KEY = "0x" + "42" * 32


def timed(step: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - wall, time.process_time() - cpu


def rows(n: int) -> dict[str, Callable[[], Any]]:
    """Each path's steps (``signing``'s backend switched around each)."""
    ids = ["0x" + os.urandom(32).hex() for _ in range(n)]
    native_backend, public_backend = _secp.NativeBackend(), _secp.PublicBackend()

    def on(backend: Any, native: bool, step: Callable[[OrderSigner], Any]) -> Callable[[], Any]:
        def run() -> Any:
            batch.BACKEND = backend
            saved = batch.native
            if not native:
                batch.native = lambda: None  # type: ignore[assignment]
            try:
                return step(OrderSigner(KEY))
            finally:
                batch.native = saved  # type: ignore[assignment]

        return run

    table: dict[str, Callable[[], Any]] = {}
    for threads in (1, 2):
        for name, backend, native in (
            ("native", native_backend, True),
            ("cffi", native_backend, False),
            ("public", public_backend, False),
        ):
            table[f"sign_many threads={threads} {name}"] = on(
                backend, native, lambda s, t=threads: s.sign_many(ids, threads=t)
            )
    for name, backend in (("cffi", native_backend), ("public", public_backend)):
        table[f"sign one by one {name}"] = on(
            backend, False, lambda s: [s.sign(i) for i in ids[: n // 4]]
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from clobkit.core import _core_c

    table = rows(args.n)
    counts = {name: (args.n // 4 if "one by one" in name else args.n) for name in table}
    wall: dict[str, list[float]] = {name: [] for name in table}
    cpu: dict[str, list[float]] = {name: [] for name in table}
    checks = []
    for _ in range(args.rounds):
        for name, step in table.items():
            w, c = timed(step)
            wall[name].append(w / counts[name] * 1e6)
            cpu[name].append(c / counts[name] * 1e6)
        checks.append(timed(lambda: _secp.load(compiled=_core_c))[0] * 1e3)
    print(f"per signature, medians of {args.rounds} rounds ({args.n} ids a batch):")
    print(f"  {'row':34s} {'wall us':>8s} {'CPU us':>8s} {'wall / native':>14s}")
    for name in table:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        base = name.rsplit(" ", 1)[0] + " native"
        ratio = f"{w / statistics.median(wall[base]):.2f}" if base in wall else ""
        print(f"  {name:34s} {w:8.1f} {c:8.1f} {ratio:>14s}")
    print(f"self-check at load (_secp.load, 6 digests): {statistics.median(checks):.2f} ms")


if __name__ == "__main__":
    main()
