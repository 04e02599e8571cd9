"""The whole ``clobkit order-ids`` command on files, per order in F (#14's targets).

Run: PYTHONPATH=src python benchmarks/order_ids_command.py [--rows 1000000] [--runs 3]
     [--formats csv,parquet,jsonl] [--in-process] [--idle 0]
     [--against OTHER/src [--threads 1,2]] [--reentries]

Writes ``--rows`` V1 orders (as a market maker's table holds them: 77-digit
token ids, int64 amounts and salts, BUY/SELL) to a temporary directory as a
fully quoted CSV (as pyarrow and pandas write it), Parquet and JSONL, then
times the wall clock of ``python -m clobkit order-ids --threads 2`` on each,
in a child process, ``--runs`` times. F (5 Keccak-f[1600] permutations
through OpenSSL, as benchmarks/bench_core.py measures it) is measured right
before and after each run, and each run is printed as seconds per order
over the mean of the two. The targets: CSV -> CSV at most 0.8 F, Parquet ->
Parquet at most 0.4 F. ``--in-process`` also times the same run through
``clobkit.cli.orderids.run.run`` in this process (the pipeline without Python's
and pyarrow's start-up). The children run with bytecode, as an installed
package does (one untimed run on a one-row file writes it), and each run's
output file is removed before it is timed. ``--idle S`` waits S seconds
before each command run: a run right after another reuses the pages the
last one freed, while a run after an idle moment (as a user's usually is)
gets pages the VM's host may have taken back. With Parquet among the formats
it ends with the floor no run can beat: the command's start-up plus
``order_ids`` alone on the same orders, in F.

``--vs-arrow csv:dataset,parquet:dataset`` times, in each of ``--runs``
rounds, ``order_ids`` on the Parquet file's Arrow columns into
``out="arrow"`` at ``--threads`` (before and after), and the command from
each INPUT format into each OUTPUT (``dataset``: a Parquet dataset
directory) at the same ``--threads``: each command's rate over the
in-memory rate of its round, and its process's CPU time per order (#45's
target on 2 cores: at least 0.7x at 2 threads).

``--reentries`` runs one small CSV -> Parquet job (``--rows`` orders, one
thread) in this process under ``threading.setprofile`` and counts, in each
thread, the calls that enter a file of ``clobkit/cli/orderids/`` already left
before (a file entered again after another was: the pipeline going back and
forth), and the same counting each return into such a file too (#44).

``--twins`` times the pure twin (``CLOBKIT_NO_EXTENSIONS=1``) and the compiled core
in turn on each format, ``--runs`` times each: the ratio README quotes.

``--against OTHER/src`` compares this tree's command with another tree's
(a checkout of an earlier commit, its compiled core built): for each format
(or ``IN:OUT`` pair of ``--formats``, e.g. ``csv:parquet``)
and each ``--threads`` count, the two run in turn, ``--runs`` times each,
and each side's wall clock (best and median) and CPU time (user + system
of the command's process: the figure that still compares on a machine busy
with other work) are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from clobkit.bench.order_ids import WALLET

TOKEN = 71321045679252212594626385532706912750332728571942532289631379312455583992563
BIG = b"\x00" * (16 << 20)


def machine() -> str:
    """The CPU and its cores, for a figure's context."""
    from clobkit.bench.machine import machine as info
    from clobkit.bench.machine import machine_line

    return machine_line(info())


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def floor_f() -> float:
    """F in seconds: 5 Keccak-f[1600] permutations (136-byte blocks), best of 7."""
    best = min(_timed(lambda: hashlib.sha3_256(BIG).digest()) for _ in range(7))
    return best / (len(BIG) / 136) * 5


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _usdc(i: int) -> int:
    return 9_295_000 + i % 1000


def orders(n: int, piece: int = 1_000_000) -> pa.Table:
    """``n`` orders over 5,000 markets, built a million rows at a time (memory stays flat)."""
    parts = []
    for lo in range(0, n, piece):
        rows = range(lo, min(n, lo + piece))
        parts.append(
            pa.table(
                {
                    "token_id": pa.array([str(TOKEN - i % 5000) for i in rows]),
                    # a BUY pays less USDC than the shares it gets; a SELL the other way round
                    "maker_amount": pa.array([_usdc(i) if i & 1 else 16_900_000 for i in rows]),
                    "taker_amount": pa.array([16_900_000 if i & 1 else _usdc(i) for i in rows]),
                    "side": pa.array(["BUY" if i & 1 else "SELL" for i in rows]),
                    "salt": pa.array([(i * 7919) % 10**12 for i in rows], pa.int64()),
                }
            )
        )
    return pa.concat_tables(parts)


def write_inputs(root: Path, n: int, formats: list[str], name: str = "in") -> None:
    table = orders(n)
    (root / "wallet.json").write_text(json.dumps(WALLET))
    if "csv" in formats:
        quoted = pacsv.WriteOptions(quoting_style="all_valid")
        pacsv.write_csv(table, root / f"{name}.csv", quoted)
    if "parquet" in formats:
        pq.write_table(table, root / f"{name}.parquet")
    if "jsonl" in formats:
        with open(root / f"{name}.jsonl", "w") as f:
            for row in table.to_pylist():
                f.write(json.dumps(row) + "\n")


# The children run as an installed package does: with bytecode (this machine's
# PYTHONDONTWRITEBYTECODE would have each start compile clobkit's modules anew).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def command(
    root: Path, fmt: str, name: str = "in", threads: int = 2, src: str | None = None
) -> float:
    """Wall clock of one ``clobkit order-ids`` run in a child process, in seconds.

    The previous run's output is removed first: replacing a file of a million
    rows frees its blocks, which is not the command's work. ``src``: the
    clobkit to run (a tree's ``src``), else this process's PYTHONPATH's.
    """
    return _command(root, fmt, name, threads, src)[0]


def _command(
    root: Path, fmt: str, name: str, threads: int, src: str | None, pure: bool = False
) -> tuple[float, float, int]:
    """(wall clock, CPU time of the child) of one run, in seconds, and the child's minor
    page faults (fresh memory touched: on a VM they cost more than the copies that
    cause them) (``pure``: the pure twin, ``CLOBKIT_NO_EXTENSIONS=1``; ``fmt``: a
    format, or ``IN:OUT``)."""
    fmt, _, into = fmt.partition(":")  # IN:OUT, or one format both ways
    out = root / f"out.{into or fmt}"
    out.unlink(missing_ok=True)
    args = [sys.executable, "-m", "clobkit", "order-ids", "--wallet", str(root / "wallet.json")]
    args += [str(root / f"{name}.{fmt}"), str(out), "--threads", str(threads)]
    env = CHILD_ENV if src is None else {**CHILD_ENV, "PYTHONPATH": src}
    if pure:
        env = {**env, "CLOBKIT_NO_EXTENSIONS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{fmt}: exit {done.returncode}: {done.stderr[-500:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, after.ru_minflt - before.ru_minflt


def against(root: Path, other: str, formats: list[str], threads: list[int], runs: int) -> None:
    """This tree's command and ``other``'s in turn: wall (best, median) and CPU time per side."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    sides = {"this tree": here, other: str(Path(other).resolve())}
    for fmt in formats:
        for src in sides.values():
            _command(root, fmt, "one", 1, src)  # each side's bytecode
        for t in threads:
            walls: dict[str, list[float]] = {side: [] for side in sides}
            cpus: dict[str, list[float]] = {side: [] for side in sides}
            faults: dict[str, list[int]] = {side: [] for side in sides}
            for r in range(runs):
                order = list(sides) if r % 2 == 0 else list(sides)[::-1]
                for side in order:
                    wall, cpu, fault = _command(root, fmt, "in", t, sides[side])
                    walls[side].append(wall)
                    cpus[side].append(cpu)
                    faults[side].append(fault)
            for side in sides:
                w, c = walls[side], cpus[side]
                print(
                    f"{fmt:>7} --threads {t} {side}: wall best {min(w):.2f} s, median "
                    f"{statistics.median(w):.2f} s; CPU best {min(c):.2f} s, median "
                    f"{statistics.median(c):.2f} s; minor page faults median "
                    f"{statistics.median(faults[side]):,.0f}"
                )


def twins(root: Path, formats: list[str], runs: int) -> None:
    """The pure twin's time over the compiled core's, the two taking turns ``runs``
    times per format: best wall clock and best CPU time (user + system) of each."""
    for fmt in formats:
        _command(root, fmt, "one", 2, None)  # the bytecode an installed package has
        best: dict[bool, tuple[float, float]] = {}
        for _ in range(runs):
            for pure in (False, True):
                wall, cpu, _ = _command(root, fmt, "in", 2, None, pure)
                old = best.get(pure, (wall, cpu))
                best[pure] = (min(old[0], wall), min(old[1], cpu))
        (cw, cc), (pw, pc) = best[False], best[True]
        print(
            f"{fmt:>7}: compiled {cw:6.2f} s wall, {cc:6.2f} s CPU; pure {pw:6.2f} s wall, "
            f"{pc:6.2f} s CPU: the pure twin takes {pw / cw:.0f}x the wall, {pc / cc:.0f}x the CPU"
        )


def in_process(root: Path, fmt: str) -> float:
    """The same work through ``clobkit.cli.orderids.run.run`` in this process (no start-up),
    in s."""
    from clobkit.cli.orderids.run import run

    wallet, src, dst = (str(root / name) for name in ("wallet.json", f"in.{fmt}", f"out.{fmt}"))
    Path(dst).unlink(missing_ok=True)
    t0 = time.perf_counter()
    run(wallet, src, dst, threads=2, progress=False)
    return time.perf_counter() - t0


def floor(root: Path, rows: int) -> None:
    """Print what no ``clobkit order-ids`` run on ``rows`` orders can beat here, in F:
    the command's start-up (a one-row Parquet file, best of 3) plus ``order_ids``
    alone on the same orders' Arrow columns (2 threads, best of 3, no I/O)."""
    from clobkit import OrderHasher

    start = min(command(root, "parquet", "one") for _ in range(3))
    table = pq.read_table(root / "in.parquet", read_dictionary=["token_id"])
    hasher = OrderHasher(WALLET)
    args = {
        "token_ids": table["token_id"],
        "maker_amounts": table["maker_amount"],
        "taker_amounts": table["taker_amount"],
        "sides": pc.equal(table["side"], "SELL").cast(pa.int8()),  # SELL is 1
        "salts": table["salt"],
    }
    before = floor_f()
    hashing = min(
        _timed(lambda: hasher.order_ids(**args, threads=2, out="arrow")) for _ in range(3)
    )
    f = (before + floor_f()) / 2
    total = (start + hashing) / rows
    print(
        f"floor: start-up {start:.2f} s + order_ids alone (Arrow columns, 2 threads) "
        f"{hashing / rows * 1e6:.3f} µs/order = {total / f:.2f} F per order at {rows:,} orders "
        f"(F {f * 1e6:.2f} µs; Parquet target 0.4 F, CSV 0.8 F)"
    )


def versus_arrow(root: Path, rows: int, pairs: list[str], threads: int, runs: int) -> None:
    """Each ``IN:OUT`` command's rate over the in-memory Arrow rate of its round."""
    import shutil

    from clobkit import OrderHasher

    table = pq.read_table(root / "in.parquet")
    args = {
        "token_ids": table["token_id"],
        "maker_amounts": table["maker_amount"],
        "taker_amounts": table["taker_amount"],
        "sides": pc.equal(table["side"], "SELL").cast(pa.int8()),  # SELL is 1
        "salts": table["salt"],
    }
    hasher = OrderHasher(WALLET)
    arrow = lambda: _timed(lambda: hasher.order_ids(**args, threads=threads, out="arrow"))  # noqa: E731
    arrow()  # warm: the pool's threads started
    for fmt in {pair.split(":")[0] for pair in pairs}:
        command(root, fmt, "one")  # the bytecode an installed package has
    for r in range(1, runs + 1):
        before = arrow()
        cells = []
        for pair in pairs:
            fmt, out = pair.split(":")
            dst = root / ("out-dataset" if out == "dataset" else f"out.{out}")
            shutil.rmtree(dst, ignore_errors=True) if dst.is_dir() else dst.unlink(missing_ok=True)
            cmd = [
                sys.executable,
                "-m",
                "clobkit",
                "order-ids",
                "--wallet",
                str(root / "wallet.json"),
            ]
            cmd += [
                str(root / f"in.{fmt}"),
                str(dst) + "/" * (out == "dataset"),
                "--threads",
                str(threads),
            ]
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=CHILD_ENV)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
            cells.append(f"{fmt}->{out} {before / wall:.2f}x ({cpu / rows * 1e9:,.0f} ns CPU)")
        again = arrow()
        print(
            f"round {r}: Arrow {rows / before / 1e6:.2f}, {rows / again / 1e6:.2f} M/s; "
            + "; ".join(cells),
            flush=True,
        )


def reentries(root: Path) -> None:
    """Print the calls (and the calls and returns) that enter a file of the order-ids
    pipeline already left, over one CSV -> Parquet run in this process, by thread."""
    import threading

    import clobkit.cli.orderids as pipeline
    from clobkit.cli.orderids.run import run

    home = str(Path(pipeline.__file__).parent) + os.sep
    seen: dict[str, list[tuple[str, str]]] = {}  # thread -> (event, file) in order
    lock = threading.Lock()

    def profile(frame: FrameType, event: str, _: object) -> None:
        if event not in ("call", "return"):
            return
        name = frame.f_code.co_filename
        if name.startswith(home):
            with lock:
                seen.setdefault(threading.current_thread().name, []).append((event, name))
        if event == "return" and frame.f_back is not None:
            back = frame.f_back.f_code.co_filename
            if back.startswith(home):
                with lock:
                    seen.setdefault(threading.current_thread().name, []).append(("back", back))

    wallet, src, dst = (str(root / n) for n in ("wallet.json", "in.csv", "out.parquet"))
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run(wallet, src, dst, threads=1, progress=False)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    totals = [0, 0]
    for thread, events in seen.items():
        counts = []
        for kinds in (("call",), ("call", "back")):
            files = [f for e, f in events if e in kinds]
            runs = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
            counts.append(sum(1 for i, f in enumerate(runs) if f in runs[:i]))
        totals = [totals[0] + counts[0], totals[1] + counts[1]]
        order = [Path(f).stem for e, f in events if e == "call"]
        trail = [f for i, f in enumerate(order) if i == 0 or order[i - 1] != f]
        print(
            f"{thread.split('_')[0]}: {counts[0]} calls, {counts[1]} calls or returns into a "
            f"file already left: {' > '.join(trail)}"
        )
    print(f"total: {totals[0]} calls, {totals[1]} calls or returns into a file already left")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--formats", default="csv,parquet,jsonl")
    parser.add_argument(
        "--in-process", action="store_true", help="also time run() in this process (no start-up)"
    )
    parser.add_argument("--idle", type=float, default=0.0, help="seconds idle before each command")
    parser.add_argument("--against", metavar="OTHER/src", help="compare with another tree's src")
    parser.add_argument("--threads", default="2", help="with --against: comma list of counts")
    parser.add_argument(
        "--vs-arrow", metavar="IN:OUT,...", help="each command's rate over the in-memory rate"
    )
    parser.add_argument("--twins", action="store_true", help="the pure twin against the compiled")
    parser.add_argument(
        "--reentries", action="store_true", help="count the pipeline's returns to a file (#44)"
    )
    opts = parser.parse_args()
    formats = opts.formats.split(",")
    inputs = sorted({fmt.partition(":")[0] for fmt in formats})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_inputs(root, opts.rows, inputs)
        write_inputs(root, 1, inputs, "one")
        if opts.reentries:
            reentries(root)
            return
        if opts.vs_arrow:
            print(
                f"{opts.rows:,} V1 orders, --threads {opts.threads}, load {os.getloadavg()[0]:.2f}"
            )
            pairs = opts.vs_arrow.split(",")
            versus_arrow(root, opts.rows, pairs, int(opts.threads), opts.runs)
            print(f"load {os.getloadavg()[0]:.2f}")
            return
        if opts.twins:
            print(f"{opts.rows:,} V1 orders, --threads 2, {machine()}, load {load()}")
            twins(root, formats, opts.runs)
            print(f"load {load()}")
            return
        if opts.against:
            print(
                f"{opts.rows:,} V1 orders, {opts.runs} runs a side, load {os.getloadavg()[0]:.2f}"
            )
            counts = [int(t) for t in opts.threads.split(",")]
            against(root, opts.against, formats, counts, opts.runs)
            print(f"load {os.getloadavg()[0]:.2f}")
            return
        print(
            f"{opts.rows:,} V1 orders, --threads 2, {opts.idle:g} s idle before each command, "
            f"load {os.getloadavg()[0]:.2f}"
        )
        for fmt in formats:
            command(root, fmt, "one")  # writes the bytecode an installed package has
            ways = [("command", command)] + [("in process", in_process)] * opts.in_process
            for way, timer in ways:
                for run in range(1, opts.runs + 1):
                    if way == "command":
                        time.sleep(opts.idle)  # before F: a cold start, not a cold F
                    before = floor_f()
                    seconds = timer(root, fmt)
                    after = floor_f()
                    f = (before + after) / 2
                    per = seconds / opts.rows
                    print(
                        f"{fmt:>7} -> {fmt:<7} {way:>10} run {run}: {seconds:6.2f} s, "
                        f"{per * 1e6:5.2f} µs/order, F {before * 1e6:.2f}/{after * 1e6:.2f} µs: "
                        f"{per / f:5.2f} F"
                    )
        if "parquet" in formats:
            floor(root, opts.rows)
        print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
