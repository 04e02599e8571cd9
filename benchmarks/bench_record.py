"""The recorder's throughput and memory (issue #26: at least 20,000 book updates a second,
memory bounded).

Two figures, each over N book messages of 5 levels a side (the sandbox's shape):

* ingest: each frame decoded as the recorder's stream does (``decode_book_frame``),
  held by the ``RecordingWriter`` and written to Parquet at each rotation (every second, in a
  thread, as ``Recorder`` does), all of it timed;
* end to end: the same frames sent as fast as a websockets server in another
  process can over loopback, read by clobkit's ``Stream`` (``AsyncClient.stream``)
  and held by the writer, as ``Recorder``'s loop does.

Each figure is also given per CPU-second of this process (the recorder's side:
its threads, not the server's), which a loaded machine changes far less than
the wall-clock rate.

Memory: the process's peak RSS growth over the run (``ru_maxrss``), which the
rotation bounds (``rotate_bytes`` of rows held, plus one file being written).
Every run checks that the files hold exactly the N rows.

Idle (issue #42): ``--idle S`` records a market nothing moves for S seconds
(default 20) with ``clobkit record`` against a sandbox in another process, once
with ``--no-progress`` and once with ``--progress``, and prints the recording's
CPU seconds per recorded hour (its own process time, imports done before: the
difference between a recording of S and one of S/4 seconds, over their wall times);
``--before SRC`` measures the clobkit of ``SRC`` (an older tree's ``src``) too,
in the same run.

Run: python benchmarks/bench_record.py [N]
     python benchmarks/bench_record.py --idle [S] [--before SRC]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clobkit import AsyncClient
from clobkit.record import (
    BOOK,
    RecordedMarket,
    RecordingWriter,
    decode_book_frame,
    iter_rows,
    recording_files,
)

TOKEN = "1" * 70
MARKET = RecordedMarket("00000000-0000-4000-8000-00000000000a", None, None, TOKEN, "2" * 70)


K = (1, 2, 3, 4, 5)  # levels a side


def frames(n: int) -> list[str]:
    rng = random.Random(1)
    out = []
    for i in range(n):
        mid = 40 + i % 20
        data = {
            "asset_id": TOKEN,
            "bids": [{"price": f"0.{mid - k}", "size": f"{rng.randint(1, 9999)}.5"} for k in K],
            "asks": [{"price": f"0.{mid + k}", "size": f"{rng.randint(1, 9999)}.5"} for k in K],
            "updated_at_ms": 1_764_547_200_000 + i,
        }  # fmt: skip
        out.append(json.dumps({"type": "data", "topic": f"market:{TOKEN}:book", "data": data}))
    return out


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def check(directory: Path, n: int) -> int:
    rows = sum(1 for r in iter_rows(directory) if r.kind == BOOK)
    assert rows == n, (rows, n)
    return len(recording_files(directory))


async def ingest(received: list[bytes], directory: Path) -> tuple[float, float]:
    writer = RecordingWriter(directory, [MARKET], outcomes="a", rotate_seconds=1.0)
    started, cpu = time.perf_counter(), time.process_time()
    for frame in received:
        msg = decode_book_frame(frame)  # as the recorder's stream decodes a book frame
        assert msg is not None
        writer.add(BOOK, TOKEN, msg.data, time.time_ns())
        if writer.due():
            await writer.rotate()
    await writer.flush()
    return time.perf_counter() - started, time.process_time() - cpu


def serve(batch: list[str], port_out: multiprocessing.connection.Connection) -> None:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.server import serve as ws_serve

    def handler(ws: object) -> None:
        ws.recv()  # type: ignore[attr-defined]  # the subscription
        ws.send(json.dumps({"type": "subscribed"}))  # type: ignore[attr-defined]
        for frame in batch:
            ws.send(frame)  # type: ignore[attr-defined]
        with contextlib.suppress(ConnectionClosed):
            ws.recv()  # type: ignore[attr-defined]  # hold until the client closes

    with ws_serve(handler, "127.0.0.1", 0) as server:
        port_out.send(server.socket.getsockname()[1])
        server.serve_forever()


async def end_to_end(n: int, port: int, directory: Path) -> tuple[float, float]:
    writer = RecordingWriter(directory, [MARKET], outcomes="a", rotate_seconds=1.0)
    url = f"http://127.0.0.1:{port}"
    async with AsyncClient(url, "k", "s", ws_url=f"ws://127.0.0.1:{port}/ws") as client:
        stream = client.stream([f"market:{TOKEN}:book"], max_queue=100_000)
        stream.decode = decode_book_frame  # as Recorder.run sets it
        await stream.start()
        started, cpu = time.perf_counter(), time.process_time()
        got = 0
        async for item in stream:
            if getattr(item, "type", "") != "data":
                continue
            writer.add(BOOK, TOKEN, item.data, time.time_ns())  # type: ignore[union-attr]
            got += 1
            if writer.due():
                await writer.rotate()
            if got == n:
                break
        await writer.flush()
        took = time.perf_counter() - started, time.process_time() - cpu
        await stream.close()
    return took


_MEASURE = """
import json, sys, time
import clobkit.cli, clobkit.client, clobkit.record, pyarrow.parquet
wall, cpu = time.monotonic(), time.process_time()
code = clobkit.cli.main(sys.argv[1:])
print(json.dumps({"code": code, "wall": time.monotonic() - wall,
                  "cpu": time.process_time() - cpu}))
"""


def idle(seconds: float, before: str | None) -> None:
    """CPU seconds per recorded hour of a quiet market, with and without progress."""
    from clobkit.sandbox import DEFAULT_USERS, Engine

    market = sorted(m.id for m in Engine({}).markets.values() if m.active)[0]
    user = DEFAULT_USERS[2]
    sandbox = subprocess.Popen(
        [sys.executable, "-m", "clobkit.sandbox", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert sandbox.stdout is not None
        base_url = sandbox.stdout.readline().split()[-1]  # "listening on http://..."
        trees = [("this tree", None)] + ([("before", before)] if before else [])
        for name, src in trees:
            for progress in ("--no-progress", "--progress"):
                argv = ["record", "--market", market, progress, "--base-url", base_url]
                argv += ["--api-key", user.api_key, "--api-secret", user.api_secret]
                # two lengths: the difference leaves out what a start costs once
                cpu0, wall0 = _measured([*argv, "--duration", str(seconds / 4)], src)
                cpu1, wall1 = _measured([*argv, "--duration", str(seconds)], src)
                per_hour = (cpu1 - cpu0) / (wall1 - wall0) * 3600
                print(
                    f"idle ({name}, {progress}): {cpu1:.2f} s CPU in {wall1:.1f} s, "
                    f"{cpu0:.2f} s in {wall0:.1f} s: {per_hour:,.1f} CPU-seconds per "
                    "recorded hour",
                    flush=True,
                )
    finally:
        sandbox.terminate()
        sandbox.wait()


def _measured(argv: list[str], src: str | None) -> tuple[float, float]:
    """The CPU and wall seconds of ``clobkit *argv`` (into a new directory), in a child
    with the clobkit of ``src`` (this one's by default)."""
    from bench_replay import run_json  # this script's own folder is on sys.path

    with tempfile.TemporaryDirectory() as tmp:
        got = run_json(_MEASURE, [*argv, "--out", str(Path(tmp) / "rec")], src)
    return float(str(got["cpu"])), float(str(got["wall"]))


def main() -> None:
    if "--idle" in sys.argv:
        args = sys.argv[sys.argv.index("--idle") + 1 :]
        before = None
        if "--before" in args:
            at = args.index("--before")
            before = args[at + 1]
            del args[at : at + 2]
        idle(float(args[0]) if args else 20.0, before)
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    batch = frames(n)
    received = [frame.encode() for frame in batch]  # the stream reads frames as bytes
    import pyarrow.parquet  # noqa: F401 - loaded before the baseline: not memory held

    base = rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        took, cpu = asyncio.run(ingest(received, Path(tmp)))
        files = check(Path(tmp), n)
    print(
        f"ingest:      {n:,} updates in {took:.2f} s = {n / took:,.0f} updates/s "
        f"({files} files); {n / cpu:,.0f} per CPU-second; peak RSS +{rss_mb() - base:.0f} MB"
    )
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(batch, child), daemon=True)
    server.start()
    port = parent.recv()
    base = rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        took, cpu = asyncio.run(end_to_end(n, port, Path(tmp)))
        files = check(Path(tmp), n)
    server.terminate()
    print(
        f"end to end:  {n:,} updates in {took:.2f} s = {n / took:,.0f} updates/s "
        f"({files} files); {n / cpu:,.0f} per CPU-second; peak RSS +{rss_mb() - base:.0f} MB"
    )


if __name__ == "__main__":
    main()
