"""How clobkit's batch work scales with cores: one table for this machine (#20; docs/scale.md).

Run: PYTHONPATH=src python benchmarks/scaling.py [--quick] [--rows 16000000]
     [--dask-rows 16000000] [--parts 64] [--max-threads N] [--skip command,dask]
     [--json PATH] [--markdown PATH]

For each thread (or worker) count 1, 2, 4, ... up to ``os.cpu_count()``
(``--max-threads``), the time per order and the speed-up over one of:

- ``order_ids`` on Python lists, V1 and V2 orders (``--list-rows``);
- ``order_ids`` on Arrow columns with ``out="arrow"``, V1 and V2 (``--arrow-rows``);
- ``OrderHasher.sign_many`` on V2 orders, hashed and signed (``--sign-rows``), for a
  signer's own wallet and for a deposit wallet (POLY_1271: each order wrapped, ERC-7739);
- the whole ``clobkit order-ids`` command in a child process, CSV -> CSV and
  Parquet -> Parquet, ``--threads N`` (``--rows`` orders, generated here);
- Dask: ``with_order_ids`` -> ``clobkit.dask.to_parquet`` (one fused task a
  partition) from ``--parts`` Parquet files (``--dask-rows`` orders), a
  ``LocalCluster`` of N single-threaded worker processes; with ``--dask-plain``
  also Dask's own ``to_parquet(**parquet_options(df))``, unfused.

What the machine itself gives N cores' worth of one core's work, measured in
the same run with no clobkit code: N processes at once, each hashing with
OpenSSL's Keccak (``hashlib.sha3_256``) or signing with coincurve
(libsecp256k1), their throughput over one process's. Where these fall short
of N (hyperthreads sharing a core, a VM's noisy neighbours, a clock that
drops as more cores run), clobkit's rows cannot do better; the machine line
also gives the processor's cores and threads per core where Linux tells.

The floors are measured in the same run: F, five Keccak-f[1600] permutations
through OpenSSL (the Keccak work of one order id, as benchmarks/bench_core.py
and order_ids_command.py define it), and E, one bare libsecp256k1 signature
through coincurve (``PrivateKey.sign_recoverable(digest, hasher=None)``).
Hashing rows are also given in F, signing rows in E.

Per order, the time the call holds the GIL (lists, Arrow and ``sign_many``,
at one thread and at the most threads below the core count): a second Python thread ticks
(``os.sched_yield()``, which gives the GIL up at once) while the call runs;
every gap between two ticks longer than 20 µs is time it could not get the
GIL, less the gaps of an idle moment of the same length. The ticking thread
needs a core of its own: on a machine busy with other work its gaps also
count time it waited for a core (a ``zlib.compress``, which runs without
the GIL, then reads as partly held). So the table also gives the time the
ticking thread waited on a run queue for a core meanwhile (Linux's
``/proc/self/task/TID/schedstat``; 0 where it is not given): near 0, the
GIL figure is sound; large, it is an upper bound. Beside it, the compiled
core's own meter (``_gil_held_ns``: the calling thread's CPU time holding the
GIL, which other jobs do not inflate; ``_gil_alone_ns``: the part of it outside
the batch's rounds, which no worker overlaps) and what the two allow at 16
threads, #20's machine: one thread's time over the lone part plus the larger
of the rest of the GIL part and the rest of the work shared by 16. That
bound has no machine limit in it (the ceiling rows give those), so two cores
can show what the GIL would allow sixteen. A core row whose last batch left
rows to the Python path (``_missed_rows``) stops the run: the ids stay right
there, only slower.

The command's and Dask's inputs (V1 orders over 5,000 markets, int64 amounts
and salts, BUY/SELL; a fully quoted CSV as pyarrow writes it) are generated
by pyarrow's kernels (``clobkit.bench.scaling.orders``, which
``clobkit bench --scaling`` uses too) a million rows at a time into a
temporary directory (``--tmp``).
The children (Dask's workers included) import clobkit as this process does:
through PYTHONPATH, made absolute here. The output is a markdown table (also
written to ``--markdown``) and, with ``--json``, every figure.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from clobkit import IMPLEMENTATION, OrderHasher, OrderSigner
from clobkit.bench._timing import gil_bound
from clobkit.bench.machine import machine, machine_line
from clobkit.bench.order_ids import WALLET as V1_WALLET
from clobkit.bench.scaling import KEY, V2_WALLET, arguments, at_once, best_of, orders

# the compiled core's meters, where its twin is the one running (the pure twin has none)
_core_c = importlib.import_module("clobkit.core._core_c") if IMPLEMENTATION == "c" else None

DEPOSIT = "0x" + "d3" * 20  # a deposit wallet: the maker and signer of POLY_1271 orders
PIECE = 1_000_000  # rows generated (and held) at a time
BIG = b"\x00" * (16 << 20)
GAP = 20e-6  # s: a pause between two ticks longer than this is a GIL wait
BOUND_AT = 16  # threads: #20's machine, for the GIL's bound


# ---------------------------------------------------------------------------
# floors


def floor_f() -> float:
    """F in seconds: 5 Keccak-f[1600] permutations (136-byte blocks) through OpenSSL, best of 7."""
    best = min(_timed(lambda: hashlib.sha3_256(BIG).digest()) for _ in range(7))
    return best / (len(BIG) / 136) * 5


def floor_e() -> float:
    """E in seconds: one bare libsecp256k1 signature through coincurve, best of 5 x 2,000."""
    from coincurve import PrivateKey

    key = PrivateKey(bytes.fromhex(KEY[2:]))
    sign = key.sign_recoverable
    digests = [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(2_000)]
    best = min(_timed(lambda: [sign(d, hasher=None) for d in digests]) for _ in range(5))
    return best / len(digests)


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------
# what the machine gives: N processes, no clobkit code

CEILING_UNITS = {"keccak": 12_000, "secp": 2_000}  # per process: F (5 permutations) or E


def _ceiling_worker(kind: str, barrier: Any, queue: Any) -> None:
    """One process of a ceiling run: set up, wait for the others, work, report (t0, t1)."""
    if kind == "keccak":
        data = bytes(136 * 5 * CEILING_UNITS[kind])  # 5 permutations a unit

        def work() -> None:
            hashlib.sha3_256(data).digest()

    else:
        from coincurve import PrivateKey

        sign = PrivateKey(bytes.fromhex(KEY[2:])).sign_recoverable
        digests = [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(500)]

        def work() -> None:
            for _ in range(CEILING_UNITS[kind] // len(digests)):
                for d in digests:
                    sign(d, hasher=None)

    work()  # warm
    barrier.wait()
    t0 = time.perf_counter()
    work()
    queue.put((t0, time.perf_counter()))


def ceiling(kind: str, n: int) -> float:
    """Seconds per unit of work with ``n`` processes at once: wall clock from the first
    start to the last end, over n x the units of one."""
    spans = at_once(_ceiling_worker, (kind,), n)
    wall = max(t1 for _, t1 in spans) - min(t0 for t0, _ in spans)
    return wall / (n * CEILING_UNITS[kind])


def ceiling_rows(opts: argparse.Namespace, counts: list[int]) -> list[Row]:
    rows = []
    for kind, work, unit in (
        ("keccak", "machine: OpenSSL Keccak (`hashlib.sha3_256`), processes", "F"),
        ("secp", "machine: libsecp256k1 signatures (coincurve), processes", "E"),
    ):
        row = Row(work, 1, unit)
        for n in counts:
            row.add(n, min(ceiling(kind, n) for _ in range(opts.rounds)))
        rows.append(row)
    return rows


def topology() -> str:
    """``8 cores x 2 threads`` from Linux's CPU topology (empty where it does not tell)."""
    try:
        ids = [
            ((cpu / "physical_package_id").read_text(), (cpu / "core_id").read_text())
            for cpu in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology")
        ]
    except OSError:
        return ""
    cores, threads = set(ids), len(ids)
    if not cores:
        return ""
    per = threads / len(cores)
    return f"{len(cores)} cores x {per:g} thread{'s' * (per != 1)} per core"


# ---------------------------------------------------------------------------
# orders


def gil_counts(counts: list[int]) -> list[int]:
    """1, and the most threads that leave the ticking thread a core of its own."""
    cores = os.cpu_count() or 1
    return sorted({1, max([c for c in counts if c < cores], default=1)})


def thread_counts(most: int) -> list[int]:
    """1, 2, 4, ... below ``most``, and ``most``."""
    counts = [1]
    while counts[-1] * 2 < most:
        counts.append(counts[-1] * 2)
    return sorted({*counts, most})


# ---------------------------------------------------------------------------
# the GIL


class GilMeter:
    """Time a call holds the GIL: the gaps of a ticking thread (see the module's docstring)."""

    def __init__(self) -> None:
        self.held = self.queued = 0.0
        self._stop = False
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        perf, yield_ = time.perf_counter, os.sched_yield
        queued = _queued()
        last = perf()
        held = 0.0
        while not self._stop:
            yield_()  # gives the GIL up: the call takes it back at once when it wants it
            now = perf()
            if now - last > GAP:
                held += now - last
            last = now
        self.held = held
        self.queued = _queued() - queued  # waiting for a core, not the GIL (where Linux tells)

    def __enter__(self) -> GilMeter:
        self._thread.start()
        time.sleep(0.01)  # ticking before the call starts
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.start
        self._stop = True
        self._thread.join()


def _queued() -> float:
    """Seconds this thread has waited on a run queue for a core (0 where Linux does not say)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def gil_held(fn: Callable[[], object]) -> tuple[float, float]:
    """(seconds ``fn`` held the GIL, seconds the ticking thread waited for a core meanwhile):
    medians of 3, each less an idle moment's gaps."""
    runs, queued = [], []
    for _ in range(3):
        with GilMeter() as idle:
            time.sleep(0.05)
        noise = idle.held / idle.wall
        with GilMeter() as meter:
            fn()
        runs.append(max(0.0, meter.held - noise * meter.wall))
        queued.append(meter.queued)
    return statistics.median(runs), statistics.median(queued)


# ---------------------------------------------------------------------------
# the rows


class Row:
    """One line of the table: seconds per order at each count."""

    def __init__(self, work: str, rows: int, unit: str) -> None:
        self.work, self.rows, self.unit = work, rows, unit
        self.per: dict[int, float] = {}

    def add(self, count: int, seconds: float) -> None:
        self.per[count] = seconds / self.rows
        one = self.per.get(1)
        speed = f" ({one / self.per[count]:.2f}x)" if one else ""
        print(f"  {self.work} at {count}: {_time(self.per[count])}/order{speed}", flush=True)


def core_rows(opts: argparse.Namespace, counts: list[int], gil: list[dict[str, Any]]) -> list[Row]:
    rows: list[Row] = []
    for version, wallet in ((1, V1_WALLET), (2, V2_WALLET)):
        hasher = OrderHasher(wallet)
        for lists, n in ((True, opts.list_rows), (False, opts.arrow_rows)):
            table = orders(0, n, version)
            args = arguments(table, lists)
            del table
            kind = "Python lists" if lists else 'Arrow in, `out="arrow"`'
            row = Row(f"V{version} `order_ids`, {kind}", n, "F")
            out = "list" if lists else "arrow"
            for t in counts:
                call = partial(hasher.order_ids, **args, threads=t, out=out)
                row.add(t, best_of(call, opts.rounds))
            rows.append(row)
            _check_missed(row)
            for t in gil_counts(counts):
                call = partial(hasher.order_ids, **args, threads=t, out=out)
                gil.append(_gil_entry(row, t, *gil_held(call), gil_cpu(call), n))
    hasher = OrderHasher(V2_WALLET)
    signer = OrderSigner(KEY)
    args = arguments(orders(0, opts.sign_rows, 2), lists=True)
    row = Row("V2 `sign_many` (hash and sign)", opts.sign_rows, "E")
    for t in counts:
        row.add(t, best_of(lambda t=t: hasher.sign_many(signer, **args, threads=t), opts.rounds))
    _check_missed(row)
    rows.append(row)
    for t in gil_counts(counts):
        call = partial(hasher.sign_many, signer, **args, threads=t)
        gil.append(_gil_entry(row, t, *gil_held(call), gil_cpu(call), opts.sign_rows))
    # a deposit wallet (POLY_1271): each order's struct hash wrapped (ERC-7739), then signed
    deposit = OrderHasher({**V2_WALLET, "signature_type": 3, "maker": DEPOSIT, "signer": DEPOSIT})
    row = Row("V2 `sign_many`, POLY_1271 deposit wallet (hash, wrap, sign)", opts.sign_rows, "E")
    for t in counts:
        row.add(t, best_of(lambda t=t: deposit.sign_many(signer, **args, threads=t), opts.rounds))
    _check_missed(row)
    rows.append(row)
    return rows


def _check_missed(row: Row) -> None:
    """Refuse a row whose last batch left rows to the Python path: the ids stay right
    there, only slower, so nothing else would show it (once every neg_risk list did)."""
    missed = getattr(_core_c, "_missed_rows", lambda: 0)() if _core_c is not None else 0
    if missed:
        raise SystemExit(f"{row.work}: {missed:,} rows of the last batch took the Python path")


def gil_cpu(fn: Callable[[], object]) -> tuple[float, float]:
    """(seconds of its calling thread's CPU ``fn`` spent holding the GIL, and of them
    the seconds outside its rounds, which no worker overlaps): the compiled core's own
    meter (``_gil_held_ns``, ``_gil_alone_ns``), best of 3; nan where a build lacks it."""
    held = getattr(_core_c, "_gil_held_ns", None)
    alone = getattr(_core_c, "_gil_alone_ns", None)
    if _core_c is None or held is None or alone is None:
        return float("nan"), float("nan")
    before = _core_c._gil_meter(True)
    try:
        runs = [(fn(), held(), alone())[1:] for _ in range(3)]
    finally:
        _core_c._gil_meter(before)
    h, a = min(runs)
    return h / 1e9, a / 1e9


def _gil_entry(
    row: Row, threads: int, held: float, queued: float, cpu: tuple[float, float], n: int
) -> dict[str, Any]:
    one = row.per[1]
    share = held / n / one
    cpu_held, alone = cpu[0] / n, cpu[1] / n
    bound = gil_bound(one, cpu_held, alone, BOUND_AT)
    print(
        f"  GIL held at {threads}: {_time(held / n)}/order ({share:.1%} of one thread's); "
        f"CPU {_time(cpu_held)}, {_time(alone)} of it alone; bound at {BOUND_AT}: {bound:.2f}x"
    )
    return {
        "work": row.work,
        "threads": threads,
        "held_per_order": held / n,
        "share": share,
        "ticker_waited_for_a_core_per_order": queued / n,
        "cpu_held_per_order": cpu_held,
        "cpu_alone_per_order": alone,
        "gil_bound_at_16": bound,
    }


# The children run as an installed package does: with bytecode
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _absolute_pythonpath() -> None:
    """PYTHONPATH with absolute entries: the children may start elsewhere."""
    given = os.environ.get("PYTHONPATH")
    if given:
        absolute = os.pathsep.join(str(Path(p).resolve()) for p in given.split(os.pathsep) if p)
        os.environ["PYTHONPATH"] = CHILD_ENV["PYTHONPATH"] = absolute


def write_inputs(root: Path, n: int, formats: list[str]) -> None:
    """``n`` V1 orders as ``in.csv`` (fully quoted) and ``in.parquet``, a million at a time."""
    (root / "wallet.json").write_text(json.dumps(V1_WALLET))
    first = orders(0, min(n, PIECE))
    writers: dict[str, Any] = {}
    if "csv" in formats:
        quoted = pacsv.WriteOptions(quoting_style="all_valid")
        writers["csv"] = pacsv.CSVWriter(root / "in.csv", first.schema, write_options=quoted)
    if "parquet" in formats:
        writers["parquet"] = pq.ParquetWriter(root / "in.parquet", first.schema)
    for lo in range(0, n, PIECE):
        piece = first if lo == 0 else orders(lo, min(PIECE, n - lo))
        for writer in writers.values():
            writer.write_table(piece)
    for writer in writers.values():
        writer.close()
    one = orders(0, 1)
    pacsv.write_csv(one, root / "one.csv")
    pq.write_table(one, root / "one.parquet")


def command(root: Path, fmt: str, threads: int, name: str = "in") -> float:
    """Wall clock of one ``python -m clobkit order-ids`` run, in seconds (output removed first)."""
    out = root / f"out.{fmt}"
    out.unlink(missing_ok=True)
    args = [sys.executable, "-m", "clobkit", "order-ids", "--wallet", str(root / "wallet.json")]
    args += [str(root / f"{name}.{fmt}"), str(out), "--threads", str(threads)]
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=CHILD_ENV)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"order-ids {fmt}: exit {done.returncode}: {done.stderr[-500:]}")
    return seconds


def command_rows(opts: argparse.Namespace, counts: list[int], root: Path) -> list[Row]:
    formats = ["csv", "parquet"]
    t0 = time.perf_counter()
    write_inputs(root, opts.rows, formats)
    print(f"  wrote {opts.rows:,} orders as CSV and Parquet in {time.perf_counter() - t0:.1f} s")
    rows = []
    for fmt in formats:
        command(root, fmt, 1, "one")  # the bytecode an installed package has
        row = Row(
            f"`clobkit order-ids` {fmt.upper()} -> {fmt.upper()}, whole command", opts.rows, ""
        )
        sizes = set()
        for t in counts:
            row.add(t, min(command(root, fmt, t) for _ in range(opts.command_runs)))
            sizes.add((root / f"out.{fmt}").stat().st_size)
        if len(sizes) != 1:  # the bytes themselves: tests/cli/test_cli_order_ids_stages.py
            raise SystemExit(f"order-ids {fmt}: outputs of other sizes across --threads: {sizes}")
        rows.append(row)
        if fmt == "parquet":
            rows.append(writer_alone(root, opts.rounds))
        (root / f"out.{fmt}").unlink()
        (root / f"in.{fmt}").unlink()
    return rows


def writer_alone(root: Path, rounds: int, most: int = 2_000_000) -> Row:
    """The command's Parquet writer alone on one thread, as the command runs it: its
    output's first ``most`` rows written again in record batches, with its encodings.

    One thread writes every batch, in order, so this is the command's ceiling
    at any ``--threads``."""
    from clobkit.cli.orderids.convert import parquet_options
    from clobkit.cli.orderids.parquet import _dictionary_columns

    out = pq.ParquetFile(root / "out.parquet")
    groups, n = [], 0
    while n < most and len(groups) < out.metadata.num_row_groups:
        groups.append(len(groups))
        n += out.metadata.row_group(len(groups) - 1).num_rows
    batches = out.read_row_groups(groups).to_batches(100_000)  # the command's batch size
    dictionaries = _dictionary_columns(pq.ParquetFile(root / "in.parquet").metadata)[1]

    def write() -> None:
        options = parquet_options(out.schema_arrow.names, ["order_id"], dictionaries)
        with pq.ParquetWriter(root / "again.parquet", out.schema_arrow, **options) as w:
            for batch in batches:
                w.write_batch(batch)

    row = Row("`clobkit order-ids` Parquet: its writer alone, one thread", n, "")
    row.add(1, best_of(write, rounds))
    (root / "again.parquet").unlink()
    return row


# task-name prefixes of the Dask job (dask's own names, and with_order_ids' function)
DASK_STAGES = {
    "read_parquet": "read",
    "_ids": "order ids",
    "toparquetdata": "write",
    "read_parquet-fused-toparquetdata": "read, ids, write (one task)",
}
DASK_COLUMNS = (
    "read",
    "order ids",
    "write",
    "read, ids, write (one task)",
    "other tasks",
    "outside tasks",
)


def dask_breakdown(run: Callable[[], object], workers: int, n: int) -> dict[str, Any]:
    """One more run of the Dask job under distributed's task stream: per order, the
    compute time of each stage's tasks summed over the workers, and the workers' time
    outside any task (the client's graph, the scheduler, each task's hand-offs, the
    job's ends)."""
    from distributed import get_task_stream

    with get_task_stream() as stream:
        wall = _timed(run)
    spent = dict.fromkeys(DASK_COLUMNS, 0.0)
    for task in stream.data:
        key = task["key"]
        name = str(key[0] if isinstance(key, tuple) else key).rsplit("-", 1)[0]
        busy = sum(s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
        spent[DASK_STAGES.get(name, "other tasks")] += busy
    spent["outside tasks"] = max(0.0, wall * workers - sum(spent.values()))
    return {"workers": workers, "wall": wall / n, **{k: v / n for k, v in spent.items()}}


def dask_rows(
    opts: argparse.Namespace, counts: list[int], root: Path, parts: list[dict[str, Any]]
) -> list[Row]:
    import dask.dataframe as dd

    from clobkit.dask import parquet_options, to_parquet, with_order_ids

    src = root / "dask-in"
    src.mkdir()
    step = -(-opts.dask_rows // opts.parts)
    t0 = time.perf_counter()
    for k in range(opts.parts):
        lo = k * step
        if lo < opts.dask_rows:
            part = orders(lo, min(step, opts.dask_rows - lo))
            pq.write_table(part, src / f"part-{k:04d}.parquet")
    print(f"  wrote {opts.dask_rows:,} orders in {opts.parts} Parquet files "
          f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip

    def fused(out: Path, files: Any = src) -> None:
        df = with_order_ids(dd.read_parquet(files, dtype_backend="pyarrow"), V1_WALLET)
        to_parquet(df, out)

    def plain(out: Path, files: Any = src) -> None:
        df = with_order_ids(dd.read_parquet(files, dtype_backend="pyarrow"), V1_WALLET)
        df.to_parquet(out, **parquet_options(df))

    jobs = [("`clobkit.dask.to_parquet`", "fused", fused)]
    if opts.dask_plain:
        jobs.append(("`df.to_parquet(**parquet_options(df))`", "plain", plain))
    rows = []
    for title, label, job in jobs:
        row = Row(f"Dask `with_order_ids` -> {title}, Parquet files, workers", opts.dask_rows, "")
        for workers in counts:
            row.add(workers, _dask_run(opts, job, workers, counts, root, src, parts, label))
        rows.append(row)
    return rows


def _dask_run(
    opts: argparse.Namespace,
    job: Callable[..., None],
    workers: int,
    counts: list[int],
    root: Path,
    src: Path,
    parts: list[dict[str, Any]],
    label: str,
) -> float:
    """Best of ``--command-runs`` runs of ``job`` on a LocalCluster of ``workers``."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster),
    ):
        job(root / "dask-warm", sorted(src.glob("*.parquet"))[:workers])  # imports, caches
        best = float("inf")
        for r in range(opts.command_runs):
            out = root / f"dask-out-{workers}-{r}"
            best = min(best, _timed(lambda out=out: job(out)))
            _remove(out)
        if workers in (counts[0], counts[-1]):  # where one worker's and all's time goes
            out = root / f"dask-out-{workers}-stages"
            parts.append(
                {"job": label, **dask_breakdown(lambda out=out: job(out), workers, opts.dask_rows)}
            )
            _remove(out)
        _remove(root / "dask-warm")
    return best


def _remove(path: Path) -> None:
    if path.is_dir():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


# ---------------------------------------------------------------------------
# output


def _time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f} µs"
    return f"{seconds * 1e9:.1f} ns"


def markdown(
    rows: list[Row],
    counts: list[int],
    f: float,
    e: float,
    gil: list[dict[str, Any]],
    info: str,
    dask_parts: list[dict[str, Any]],
) -> str:
    lines = [
        f"{info}",
        "",
        f"F (5 Keccak-f[1600] permutations, OpenSSL) = {_time(f)}; "
        f"E (one libsecp256k1 signature, coincurve) = {_time(e)}.",
        "",
        "| work | rows | " + " | ".join(f"{c} thread{'s' * (c > 1)}" for c in counts) + " | best |",
        "|---|---:|" + "---:|" * len(counts) + "---|",
    ]
    for row in rows:
        one = row.per.get(1)
        cells = []
        for c in counts:
            per = row.per.get(c)
            if per is None:
                cells.append("")
                continue
            text = _time(per)
            if row.unit == "F":
                text += f" ({per / f:.3f} F)"
            elif row.unit == "E":
                text += f" ({per / e:.2f} E)"
            else:
                text += f" ({1 / per / 1e6:.2f} M/s)"
            if one and c != 1:
                text += f", {one / per:.2f}x"
            cells.append(text)
        best = min(row.per, key=lambda c: row.per[c])
        summary = f"{one / row.per[best]:.2f}x ({best})" if one else ""
        lines.append(f"| {row.work} | {row.rows:,} | " + " | ".join(cells) + f" | {summary} |")
    if gil:
        lines += [
            "",
            "GIL held per order (a ticking thread's gaps; share of one thread's time);",
            "the calling thread's CPU holding it (the core's meter), the part of that no",
            f"worker overlaps, and what those two allow at {BOUND_AT} threads (the GIL's",
            "bound, no machine limit in it):",
            "",
        ]
        lines += [
            "| work | threads | GIL held per order | share | the ticker's wait for a core "
            f"| CPU holding it | of it alone | GIL's bound at {BOUND_AT} |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for g in gil:
            held, share = _time(g["held_per_order"]), f"{g['share']:.1%}"
            queued = _time(g["ticker_waited_for_a_core_per_order"])
            cpu, alone = _time(g["cpu_held_per_order"]), _time(g["cpu_alone_per_order"])
            bound = f"{g['gil_bound_at_16']:.2f}x"
            lines.append(
                f"| {g['work']} | {g['threads']} | {held} | {share} | {queued} "
                f"| {cpu} | {alone} | {bound} |"
            )
    if dask_parts:
        lines += ["", *_dask_table(dask_parts)]
    return "\n".join(lines) + "\n"


def _dask_table(parts: list[dict[str, Any]]) -> list[str]:
    lines = [
        "Where the Dask workers' time goes (per order, summed over the workers: the compute",
        "time of each stage's tasks, and the workers' time outside any task):",
        "",
        "| job | workers | wall | " + " | ".join(DASK_COLUMNS) + " | all |",
        "|---|---:|---:|" + "---:|" * (len(DASK_COLUMNS) + 1),
    ]
    for part in parts:
        cells = [_time(part["wall"])] + [_time(part[k]) for k in DASK_COLUMNS]
        cells.append(_time(sum(part[k] for k in DASK_COLUMNS)))
        lines.append(f"| {part['job']} | {part['workers']} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--list-rows", type=int, default=400_000)
    parser.add_argument("--arrow-rows", type=int, default=2_000_000)
    parser.add_argument("--sign-rows", type=int, default=40_000)
    parser.add_argument("--rows", type=int, default=16_000_000, help="the command's orders")
    parser.add_argument("--dask-rows", type=int, default=16_000_000)
    parser.add_argument("--parts", type=int, default=64, help="Dask's input files")
    parser.add_argument("--max-threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3, help="best of this many calls")
    parser.add_argument("--command-runs", type=int, default=1, help="best of this many runs")
    parser.add_argument(
        "--dask-plain",
        action="store_true",
        help="also Dask's own to_parquet(**parquet_options(df)), unfused, for comparison",
    )
    parser.add_argument("--skip", default="", help="comma list of: machine, core, command, dask")
    parser.add_argument("--tmp", default=None, help="where the input files go")
    parser.add_argument("--json", default=None, metavar="PATH")
    parser.add_argument("--markdown", default=None, metavar="PATH")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.list_rows = min(opts.list_rows, 20_000)
        opts.arrow_rows = min(opts.arrow_rows, 50_000)
        opts.sign_rows = min(opts.sign_rows, 1_000)
        opts.rows = min(opts.rows, 20_000)
        opts.dask_rows = min(opts.dask_rows, 20_000)
        opts.parts = min(opts.parts, 4)
        opts.rounds = 1
    skip = set(filter(None, opts.skip.split(",")))
    _absolute_pythonpath()
    counts = thread_counts(max(1, opts.max_threads))
    m = machine()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    shape = topology()
    info = f"{machine_line(m)}{f' ({shape})' if shape else ''}; pyarrow {pa.__version__}; {when}"
    if os.environ.get("PYTHONMALLOC"):  # the allocator the list rows' result strs came from
        info += f"; PYTHONMALLOC={os.environ['PYTHONMALLOC']}"
    print(info, flush=True)
    started = time.perf_counter()
    f, e = floor_f(), floor_e()
    rows: list[Row] = []
    gil: list[dict[str, Any]] = []
    dask_parts: list[dict[str, Any]] = []
    if "machine" not in skip:
        rows += ceiling_rows(opts, counts)
    if "core" not in skip:
        rows += core_rows(opts, counts, gil)
    with tempfile.TemporaryDirectory(dir=opts.tmp) as tmp:
        if "command" not in skip:
            rows += command_rows(opts, counts, Path(tmp))
        if "dask" not in skip:
            rows += dask_rows(opts, counts, Path(tmp), dask_parts)
    f, e = (f + floor_f()) / 2, (e + floor_e()) / 2  # before and after, on a machine that drifts
    text = markdown(rows, counts, f, e, gil, info, dask_parts)
    total = time.perf_counter() - started
    print(text + f"\n({total:.0f} s in all)")
    if opts.markdown:
        Path(opts.markdown).write_text(text)
    if opts.json:
        data = {
            "machine": m,
            "topology": shape,
            "python": platform.python_version(),
            "pyarrow": pa.__version__,
            "counts": counts,
            "F_seconds": f,
            "E_seconds": e,
            "rows": [
                {
                    "work": r.work,
                    "rows": r.rows,
                    "unit": r.unit,
                    "seconds_per_order": {str(c): s for c, s in r.per.items()},
                }
                for r in rows
            ],
            "gil": gil,
            "dask_stages_seconds_per_order": dask_parts,
            "sizes": {
                k: getattr(opts, k)
                for k in ("list_rows", "arrow_rows", "sign_rows", "rows", "dask_rows", "parts")
            },
            "seconds": total,
        }
        Path(opts.json).write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
