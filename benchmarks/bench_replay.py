"""A replay's memory and rate (issue #42: a recording is read in bounded memory).

Writes a recording of N book updates of one market, 5 levels a side (the
recorder's own writer, its default rotation), then replays it in a fresh
process: ``Replay(engine, dir)`` (the recording read and checked) and every
update applied (``advance_to`` its end). Prints the load and replay times, the
rate, and the replaying process's peak resident memory (``VmHWM``, the
interpreter, pyarrow and the sandbox's default markets included).

Then the hostile recording of the issue: a file of a few dozen KB whose
run-length-encoded ``bids`` expand to 20 million levels, refused by the
replay (the time to refuse it and the peak resident memory).

Run: python benchmarks/bench_replay.py [N] [--before SRC]   (N default 1,000,000)

``--before SRC`` replays the same recording with the clobkit of ``SRC`` (a
``src`` directory of an older tree, say ``git archive`` of the commit before)
in the same run, for the figures side by side (the bomb only with this tree's:
the code before reads it whole, gigabytes).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOKEN_A, TOKEN_B = "1" * 70, "2" * 70
MARKET_ID = "00000000-0000-4000-8000-00000000000a"
T0 = 1_764_547_200_000_000_000  # ns
LEVELS = 5


def write_recording(directory: Path, n: int) -> None:
    """``n`` 5-level books of token a, 10 ms apart, through ``RecordingWriter``."""
    from clobkit.record import BOOK, RecordedMarket, RecordingWriter
    from clobkit.record.frames import Book, Level

    market = RecordedMarket(MARKET_ID, None, "Q", TOKEN_A, TOKEN_B)

    async def fill() -> None:
        writer = RecordingWriter(directory, [market], outcomes="a", rotate_seconds=1e9)
        writer.write_markets()
        rng = random.Random(1)
        for i in range(n):
            mid = 40 + i % 20
            book = Book(
                [Level(f"0.{mid - k}", f"{rng.randint(1, 9999)}.5") for k in range(1, 6)],
                [Level(f"0.{mid + k}", f"{rng.randint(1, 9999)}.5") for k in range(1, 6)],
                1_764_547_200_000 + i,
            )
            writer.add(BOOK, TOKEN_A, book, T0 + i * 10_000_000)
            if writer.due():
                await writer.rotate()
        await writer.flush()

    asyncio.run(fill())


def write_bomb(directory: Path, levels: int = 20_000_000) -> int:
    """A recording of one market whose one file's ``bids`` hold ``levels`` equal levels,
    written a million at a time (its size in bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clobkit.record import RecordedMarket, RecordingWriter
    from clobkit.record.frames import schema

    RecordingWriter(
        directory, [RecordedMarket(MARKET_ID, None, "Q", TOKEN_A, TOKEN_B)]
    ).write_markets()
    want = schema()
    level_type = want.field("bids").type
    chunk = 1_000_000
    price, size = pa.array(["0.47"] * chunk), pa.array(["10"] * chunk)
    values = pa.StructArray.from_arrays([price, size], fields=list(level_type.value_type))
    bids = pa.ListArray.from_arrays(pa.array([0, chunk], pa.int32()), values, type=level_type)
    row = {
        "seq": [0], "recv_ns": [T0], "service_ms": [None], "kind": ["book"],
        "market_id": [MARKET_ID], "token_id": [TOKEN_A],
    }  # fmt: skip
    path = directory / "book-000000000000-20251201T000000.parquet"
    with pq.ParquetWriter(path, want, compression="zstd") as out:
        for _ in range(levels // chunk):
            columns = {k: pa.array(v, want.field(k).type) for k, v in row.items()}
            table = pa.table({**columns, "bids": bids, "asks": pa.array([[]], level_type)})
            out.write_table(table.cast(want))
    return path.stat().st_size


CHILD = """
import json, resource, sys, time
import clobkit.sandbox, pyarrow.parquet
from clobkit.errors import ClobkitError
from clobkit.sandbox.replay import Replay
unlimited = {"per_minute": None, "daily": None, "monthly": None}
engine = clobkit.sandbox.Engine({"rate_limit_per_minute": None, "risk": unlimited})
started = time.perf_counter()
try:
    replay = Replay(engine, sys.argv[1])
except ClobkitError as exc:
    out = {"refused": str(exc), "load_s": time.perf_counter() - started}
else:
    loaded = time.perf_counter()
    applied = replay.advance_to(replay.end_ms)
    out = {"load_s": loaded - started, "replay_s": time.perf_counter() - loaded, "applied": applied}
try:  # this process's own peak (ru_maxrss keeps the parent's across fork and exec)
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out["peak_mb"] = peak / 1024
print(json.dumps(out))
"""


def run_json(code: str, args: list[str], src: str | None = None) -> dict[str, object]:
    """Run ``code`` with ``args`` in a fresh interpreter (with the clobkit of ``src`` when
    given); the JSON object its last line prints."""
    env = os.environ.copy()
    if src is not None:
        env["PYTHONPATH"] = src
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr}")
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def replay_in_child(directory: Path, src: str | None = None) -> dict[str, object]:
    """Replay ``directory`` in a fresh interpreter (with the clobkit of ``src`` when
    given): its figures (module doc)."""
    return run_json(CHILD, [str(directory)], src)


def line(name: str, n: int, got: dict[str, object]) -> str:
    if "refused" in got:
        return f"{name}: the recording was refused: {got['refused']}"
    load, run = float(got["load_s"]), float(got["replay_s"])  # type: ignore[arg-type]
    return (
        f"{name}: {n:,} updates: read and checked in {load:.2f} s, applied in {run:.2f} s "
        f"= {n / (load + run):,.0f} updates/s; peak RSS {got['peak_mb']:.0f} MB"
    )


def main() -> None:
    args = sys.argv[1:]
    before = None
    if "--before" in args:
        at = args.index("--before")
        before = args[at + 1]
        del args[at : at + 2]
    n = int(args[0]) if args else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        write_recording(Path(tmp), n)
        files = len(list(Path(tmp).glob("book-*.parquet")))
        print(f"wrote {n:,} updates ({files} files) in {time.perf_counter() - started:.1f} s")
        print(line("replay", n, replay_in_child(Path(tmp))), flush=True)
        if before is not None:
            print(line("before", n, replay_in_child(Path(tmp), before)), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        size = write_bomb(Path(tmp))
        got = replay_in_child(Path(tmp))
    print(
        f"bomb:    {size / 1024:.0f} KB file of 20,000,000 levels: "
        + (f"refused in {got['load_s']:.2f} s" if "refused" in got else "SERVED")
        + f"; peak RSS {got['peak_mb']:.0f} MB"
        + (f"\n         {got['refused']}" if "refused" in got else "")
    )


if __name__ == "__main__":
    main()
