"""``clobkit bench --scaling``: threads in one process against processes, on this machine.

For each kind of batch work and each count N (2, 4, 8, 16, up to the
machine's cores):

- *threads*: the work with N threads (or N Dask workers) in one go;
- *processes*: N processes at once, each doing the same work alone (one
  thread) on its own copy of the orders, or on its share of them for the
  command and Dask (started together; the round's time is from the first
  start to the last end).

Each is given as its speed-up over one thread (one process), and their
ratio, threads over processes: where the processes fall short of N too, the
machine limits (cores sharing a physical core, a clock that drops as more
cores run, a VM's neighbours); where only the threads do, something inside
the process does (the GIL, the pool's hand-offs, memory the threads share).
This judges scaling against the machine's own ceiling, measured in the same
run (#45).

Kinds: ``sign`` (``OrderHasher.sign_many``, V2 orders from lists),
``ids`` (``OrderSigner.sign_many`` on order ids: signing alone), ``lists``
(V1 ``order_ids`` from lists into a list), ``lists-arrow`` (the same into
``out="arrow"``), ``arrow`` (V1 from Arrow columns into Arrow), ``command``
(``clobkit order-ids --threads N``, CSV into a Parquet dataset, against N
commands at ``--threads 1`` on their share of the rows) and ``dask``
(``clobkit.dask.to_parquet`` on a ``LocalCluster`` of N single-threaded
workers, against N commands on their share, Parquet into Parquet). With
``arrow`` and ``command`` both run, the command's rate is also given over
the in-memory Arrow rate at the same N, in the same run.

Needs pyarrow (the ``data`` extra); ``dask`` needs Dask (the ``dask`` extra) and
is left out without it (``clobkit extras`` prints the line that adds each).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from .. import OrderHasher, OrderSigner
from ..core.spec import SALT_MAX
from .machine import machine, machine_line
from .order_ids import WALLET as V1_WALLET

KINDS = ("sign", "ids", "lists", "lists-arrow", "arrow", "command", "dask")
SIZES = {
    "sign": 20_000,
    "ids": 20_000,
    "lists": 400_000,
    "lists-arrow": 400_000,
    "arrow": 2_000_000,
    "command": 2_000_000,
    "dask": 2_000_000,
}
QUICK = 1000  # --quick divides every size by this
KEY = "0x" + "42" * 32
SIGNER = OrderSigner(KEY).address
V2_WALLET: dict[str, Any] = {
    "maker": SIGNER,
    "signer": SIGNER,
    "chain_id": 137,
    "signature_type": 0,
    "ctf_exchange": "0xE111180000d2663C0091e4f400237545B87B996B",
    "neg_risk_exchange": "0xe2222d279d744050d28e00520010520000310F59",
}
TOKEN = 71321045679252212594626385532706912750332728571942532289631379312455583992563
MARKETS = 5_000
TITLES = {
    "sign": "sign_many (V2, lists)",
    "ids": "signing ids alone",
    "lists": "order_ids lists->list",
    "lists-arrow": "order_ids lists->arrow",
    "arrow": "order_ids arrow->arrow",
    "command": "order-ids CSV->dataset",
    "dask": "dask.to_parquet",
}


# ---------------------------------------------------------------------------
# orders


def orders(start: int, n: int, version: int = 1) -> Any:
    """Orders ``start`` .. ``start + n - 1`` as a pyarrow table: tokens over 5,000
    markets, BUY on odd rows (a BUY pays less USDC than the shares it gets), int64
    amounts and salts; a timestamp for V2. Made by pyarrow's kernels (no numpy)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def mod(x: Any, m: int) -> Any:  # (pc.modulo is newer than pyarrow 15)
        return pc.subtract(x, pc.multiply(pc.divide(x, m), m))

    i = pa.array(range(start, start + n), pa.int64())
    buy = pc.equal(pc.bit_wise_and(i, 1), 1)
    usdc = pc.add(mod(i, 1000), 9_295_000)
    shares = pa.scalar(16_900_000, pa.int64())
    tokens = pa.array([str(TOKEN - k) for k in range(MARKETS)])
    cols: dict[str, Any] = {
        "token_id": pc.take(tokens, mod(i, MARKETS)),
        "maker_amount": pc.if_else(buy, usdc, shares),
        "taker_amount": pc.if_else(buy, shares, usdc),
        "side": pc.if_else(buy, "BUY", "SELL"),
        "salt": mod(pc.multiply(i, 7919), SALT_MAX),
    }
    if version != 1:
        cols["timestamp"] = pc.add(i, 1_777_000_000_000)
    return pa.table(cols)


def arguments(table: Any, lists: bool) -> dict[str, Any]:
    """``order_ids`` keywords of a table: Arrow columns, or Python lists (sides as 0/1)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = {
        "token_id": "token_ids",
        "maker_amount": "maker_amounts",
        "taker_amount": "taker_amounts",
        "salt": "salts",
        "timestamp": "timestamps",
    }
    args: dict[str, Any] = {}
    for name, keyword in names.items():
        if name in table.column_names:
            col = table[name].combine_chunks()
            args[keyword] = col.to_pylist() if lists else col
    sides = pc.equal(table["side"], "SELL").cast(pa.int8()).combine_chunks()  # SELL is 1
    args["sides"] = sides.to_pylist() if lists else sides
    return args


# ---------------------------------------------------------------------------
# timing


def best_of(fn: Callable[[], object], rounds: int) -> float:
    """The fastest of ``rounds`` calls of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def counts(most: int) -> list[int]:
    """2, 4, 8, 16, below ``most`` (the cores), and ``most`` itself."""
    out = [c for c in (2, 4, 8, 16) if c < most]
    return sorted({*out, most}) if most > 1 else []


def at_once(
    target: Callable[..., None], args: tuple[Any, ...], n: int, method: str = ""
) -> list[Any]:
    """What each of ``n`` processes running ``target(*args, barrier, queue)`` put on
    ``queue``, one item each; the barrier lets them start their work together.
    ``method``: multiprocessing's start method (fork where there is one)."""
    import multiprocessing as mp

    ctx: Any = mp.get_context(
        method or ("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    )
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, barrier, queue)) for _ in range(n)]
    for p in procs:
        p.start()
    got = [queue.get(timeout=900) for _ in procs]
    for p in procs:
        p.join()
    return got


# ---------------------------------------------------------------------------
# in memory: one call at N threads, N processes at one


def work(kind: str, n: int) -> Callable[[int], object]:
    """The call of ``kind`` on ``n`` orders, at a thread count."""
    if kind in ("sign", "ids"):
        hasher, signer = OrderHasher(V2_WALLET), OrderSigner(KEY)
        args = arguments(orders(0, n, 2), lists=True)
        if kind == "sign":
            return lambda t: hasher.sign_many(signer, **args, threads=t)
        ids = hasher.order_ids(**args)
        return lambda t: signer.sign_many(ids, threads=t)
    hasher = OrderHasher(V1_WALLET)
    args = arguments(orders(0, n, 1), lists=kind != "arrow")
    out = "list" if kind == "lists" else "arrow"
    return lambda t: hasher.order_ids(**args, threads=t, out=out)


def _process(kind: str, n: int, rounds: int, barrier: Any, queue: Any) -> None:
    call = work(kind, n)
    call(1)  # warm
    spans = []
    for _ in range(rounds):
        barrier.wait()
        t0 = time.perf_counter()
        call(1)
        spans.append((t0, time.perf_counter()))
    queue.put(spans)


def in_memory(kind: str, n: int, most: list[int], rounds: int) -> dict[str, Any]:
    """One thread, then threads and processes at each count, for an in-memory kind."""
    call = work(kind, n)
    call(most[-1] if most else 1)  # warm: the pool's threads started
    one = best_of(lambda: call(1), rounds)
    row: dict[str, Any] = {"orders": n, "one": one}
    for c in most:
        spans = at_once(_process, (kind, n, rounds), c, "spawn")  # spawned: no pool state
        procs = min(
            max(s[r][1] for s in spans) - min(s[r][0] for s in spans) for r in range(rounds)
        )
        threads = best_of(partial(call, c), rounds)
        row[str(c)] = {"threads": one / threads, "processes": one * c / procs}
    return row


# ---------------------------------------------------------------------------
# files: the command, and Dask, against commands on their share


def child_env() -> dict[str, str]:
    """The children's environment: this process's, PYTHONPATH made absolute (they may start
    elsewhere), bytecode written (as an installed package has it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if env.get("PYTHONPATH"):
        paths = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths if p)
    return env


def _command(root: Path, src: str, dst: str, threads: int) -> subprocess.Popen[bytes]:
    """``clobkit order-ids`` of ``root/src`` into ``root/dst`` (a trailing ``/``: a dataset)."""
    args = [sys.executable, "-m", "clobkit", "order-ids", "--wallet", str(root / "wallet.json")]
    args += [str(root / src), os.path.join(root, dst), "--threads", str(threads)]
    env = child_env()
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def _wait(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"clobkit order-ids failed: {err.decode(errors='replace')[-500:]}")


def _run_commands(root: Path, jobs: list[tuple[str, str, int]]) -> float:
    """Seconds from starting every ``(input, output, threads)`` command to the last's end."""
    for _, dst, _ in jobs:
        shutil.rmtree(root / dst, ignore_errors=True)
    t0 = time.perf_counter()
    _wait([_command(root, src, dst, threads) for src, dst, threads in jobs])
    return time.perf_counter() - t0


def write_input(root: Path, n: int, fmt: str) -> Path:
    """``n`` orders as ``root/in.FMT`` (CSV as pyarrow writes it, every value quoted), made
    and written a million rows at a time."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    (root / "wallet.json").write_text(json.dumps(V1_WALLET))
    path = root / f"in.{fmt}"
    first = orders(0, min(n, 1_000_000))
    quoted = pacsv.WriteOptions(quoting_style="all_valid")
    with (
        pacsv.CSVWriter(path, first.schema, write_options=quoted)
        if fmt == "csv"
        else pq.ParquetWriter(path, first.schema)
    ) as writer:
        for lo in range(0, n, 1_000_000):
            writer.write_table(first if lo == 0 else orders(lo, min(1_000_000, n - lo)))
    return path


def shares(path: Path, count: int) -> list[str]:
    """``path`` cut into ``count`` files of about as many rows each, in order (CSV: byte
    ranges cut after a line end, each under the header; Parquet: slices of its rows);
    their names, beside it."""
    names = [f"share-{count}-{k}{path.suffix}" for k in range(count)]
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        step = -(-table.num_rows // count)
        for k, name in enumerate(names):
            pq.write_table(table.slice(k * step, step), path.parent / name)
        return names
    size = path.stat().st_size
    with path.open("rb") as src:
        header = src.readline()
        cuts = [src.tell()]
        for k in range(1, count):
            src.seek(max(cuts[-1], size * k // count))
            src.readline()  # to the next line's start
            cuts.append(src.tell())
        cuts.append(size)
        for k, name in enumerate(names):
            src.seek(cuts[k])
            with (path.parent / name).open("wb") as dst:
                dst.write(header)
                shutil.copyfileobj(_limited(src, cuts[k + 1] - cuts[k]), dst)
    return names


class _limited:
    """The next ``left`` bytes of ``src`` as a file to copy from."""

    def __init__(self, src: Any, left: int) -> None:
        self.src, self.left = src, left

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data: bytes = self.src.read(size)
        self.left -= len(data)
        return data


def _on_shares(root: Path, path: Path, count: int, rounds: int) -> float:
    """The best of ``rounds``: ``count`` commands at once, each on its share (one thread)."""
    names = shares(path, count)
    try:
        jobs = [(name, f"out-{k}/", 1) for k, name in enumerate(names)]
        return min(_run_commands(root, jobs) for _ in range(rounds))
    finally:
        for k, name in enumerate(names):
            (root / name).unlink()
            shutil.rmtree(root / f"out-{k}", ignore_errors=True)


def command(n: int, most: list[int], rounds: int, root: Path) -> dict[str, Any]:
    """``clobkit order-ids`` CSV into a dataset: N threads against N commands on shares."""
    path = write_input(root, n, "csv")
    _run_commands(root, [("in.csv", "warm/", 1)])  # the bytecode an installed package has
    one = min(_run_commands(root, [("in.csv", "out/", 1)]) for _ in range(rounds))
    row: dict[str, Any] = {"orders": n, "one": one}
    for c in most:
        threads = min(_run_commands(root, [("in.csv", "out/", c)]) for _ in range(rounds))
        row[str(c)] = {
            "threads": one / threads,
            "processes": one / _on_shares(root, path, c, rounds),
        }
    return row


def dask_kind(n: int, most: list[int], rounds: int, root: Path) -> dict[str, Any] | None:
    """``clobkit.dask.to_parquet`` on N workers against N commands on their share, Parquet
    into Parquet (each of N workers reads one of N files); None without Dask's
    distributed scheduler."""
    try:
        import dask.dataframe as dd
        from distributed import Client, LocalCluster
    except ImportError:
        return None
    from ..dask import to_parquet, with_order_ids

    path = write_input(root, n, "parquet")

    def job(workers: int) -> float:
        files = [str(root / name) for name in shares(path, workers)]
        with (
            LocalCluster(  # type: ignore[no-untyped-call]  # distributed carries no annotations
                n_workers=workers, threads_per_worker=1, dashboard_address=None
            ) as lc,
            Client(lc),  # type: ignore[no-untyped-call]
        ):
            warm = dd.read_parquet(files[:1], dtype_backend="pyarrow")
            to_parquet(with_order_ids(warm, V1_WALLET), root / "dask-warm")

            def once() -> None:
                shutil.rmtree(root / "dask-out", ignore_errors=True)
                frame = dd.read_parquet(files, dtype_backend="pyarrow")
                to_parquet(with_order_ids(frame, V1_WALLET), root / "dask-out")

            return best_of(once, rounds)

    one = job(1)
    row: dict[str, Any] = {"orders": n, "one": one}
    for c in most:
        dask = job(c)
        row[str(c)] = {"threads": one / dask, "processes": one / _on_shares(root, path, c, rounds)}
    return row


# ---------------------------------------------------------------------------
# the run and its table


def measure(
    kinds: list[str],
    most: int,
    rounds: int,
    quick: bool,
    say: Callable[[str], None],
    rows_of: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Every kind's row (each kind's orders and one thread's time, then threads and
    processes at each count), the counts and the machine; ``rows_of``: sizes instead of
    ``SIZES``'."""
    import pyarrow as pa

    at = counts(most)
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            n = (rows_of or {}).get(kind) or max(SIZES[kind] // (QUICK if quick else 1), 64)
            say(f"{kind}: {n:,} orders at 1, {', '.join(map(str, at))}")
            row: dict[str, Any] | None
            if kind == "command":
                row = command(n, at, rounds, Path(tmp) / kind)
            elif kind == "dask":
                row = dask_kind(n, at, rounds, Path(tmp) / kind)
            else:
                row = in_memory(kind, n, at, rounds)
            if row is not None:
                rows[kind] = row
    return {"machine": machine(), "pyarrow": pa.__version__, "counts": at, "kinds": rows}


def table(result: dict[str, Any]) -> str:
    """The figures as text of at most 100 columns: per kind, one thread's time per order
    and at each count threads ÷ processes (their speed-ups over one)."""
    at = result["counts"]
    lines = [
        *textwrap.wrap(machine_line(result["machine"]) + f"; pyarrow {result['pyarrow']}", 100),
        "threads / processes at N: the ratio (threads' and processes' speed-ups over one)",
        f"{'kind':<24}{'one, per order':>15}" + "".join(f"{c:>15}" for c in at),
    ]
    for kind, row in result["kinds"].items():
        cells = ""
        for c in at:
            got = row[str(c)]
            t, p = got["threads"], got["processes"]
            cells += f"{f'{t / p:.2f} ({t:.1f}/{p:.1f})':>15}"
        lines.append(f"{TITLES[kind]:<24}{_per_order(row['one'] / row['orders']):>15}{cells}")
    arrow, cmd = result["kinds"].get("arrow"), result["kinds"].get("command")
    if arrow and cmd:
        rates = []
        for c in at:
            mem = arrow["orders"] * arrow[str(c)]["threads"] / arrow["one"]
            run = cmd["orders"] * cmd[str(c)]["threads"] / cmd["one"]
            rates.append(f"{c}: {run / mem:.2f}x ({run / 1e6:.2f} M/s)")
        lines.append("the command's rate over the in-memory Arrow rate: " + ", ".join(rates))
    return "\n".join(lines)


def _per_order(seconds: float) -> str:
    return f"{seconds * 1e9:.0f} ns" if seconds < 1e-5 else f"{seconds * 1e6:.1f} us"


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``clobkit bench --scaling`` and benchmarks/threads_vs_processes.py."""
    import argparse

    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    p.add_argument("--kinds", default=",".join(KINDS), help="comma list of: " + ", ".join(KINDS))
    p.add_argument("--max", type=int, default=os.cpu_count() or 1, help="the most workers")
    p.add_argument("--rounds", type=int, default=3, help="best of this many")
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    p.add_argument("--rows", type=int, help="orders of the command and Dask (default 2,000,000)")
    p.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    opts = p.parse_args(argv)
    kinds = [k for k in opts.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or opts.max < 1 or opts.rounds < 1:
        p.error(f"unknown kind(s) {', '.join(unknown)}" if unknown else "--max and --rounds >= 1")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        from ..core.extras import install_hint

        p.error(f"the scaling figures need pyarrow: {install_hint('data')}")
    say = lambda text: print(f"[scaling] {text}", file=sys.stderr, flush=True)  # noqa: E731
    sizes = {} if opts.rows is None else {"command": opts.rows, "dask": opts.rows}
    result = measure(kinds, opts.max, opts.rounds, opts.quick, say, sizes)
    print(table(result))
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0
