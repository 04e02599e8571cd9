"""Load on the sandbox: signed requests per second, latency percentiles and the server's RSS.

The sandbox runs in its own process (``python -m clobkit.sandbox --port 0``,
loopback, no rate limit) so its RSS is its own; ``--threads`` client threads
each keep one HTTP/1.1 connection and send signed ``GET /wallet`` requests
(every request freshly signed: new nonce and timestamp), mixed with a signed
``GET /orderbooks/{token}`` every fourth request. It stops after
``--requests`` requests or ``--max-seconds``, whichever comes first, and
prints throughput, p50 / p99 latency and the server's RSS after each tenth
of the run (flat RSS: nothing grows per request, nonces expire).

Run: python -m benchmarks.load_sandbox [--requests 100000] [--threads 4] [--max-seconds 600]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from clobkit import RequestSigner
from clobkit.sandbox import DEFAULT_USERS

PREFIX = "/api/ext/v1"


def rss_kib(pid: int) -> int:
    """Resident set size of a process (KiB), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def start_server(config_path: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "clobkit.sandbox", "--port", "0", "--config", config_path],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on http://127.0.0.1:"):
        proc.kill()
        raise RuntimeError(f"the sandbox did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load_sandbox")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    args = parser.parse_args(argv)
    if not 1 <= args.threads <= 64 or args.requests < 10 or args.max_seconds <= 0:
        parser.error("--threads 1-64, --requests >= 10, --max-seconds > 0")
    user = DEFAULT_USERS[0]
    config = {"users": [user.to_dict()], "rate_limit_per_minute": None}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.json")
        Path(path).write_text(json.dumps(config))
        proc, port = start_server(path)
    try:
        return run(proc, port, user.api_key, user.api_secret, args)
    finally:
        proc.terminate()
        proc.wait(10)


def run(
    proc: subprocess.Popen[str], port: int, key: str, secret: str, args: argparse.Namespace
) -> int:
    # a token with a book, for the second kind of request
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    signer = RequestSigner(key, secret)
    path = PREFIX + "/events?limit=1"
    conn.request("GET", path, headers=signer.headers("GET", path, b""))
    event = json.loads(conn.getresponse().read())["data"]["events"][0]
    token = event["markets"][0]["outcomes"][0]["token_id"] if event.get("markets") else None
    conn.close()
    paths = [PREFIX + "/wallet"] * 3 + ([PREFIX + f"/orderbooks/{token}"] if token else [])

    total = args.requests
    step = max(1, total // 10)
    lock = threading.Lock()
    sent = 0
    errors: list[str] = []
    latencies: list[list[float]] = [[] for _ in range(args.threads)]
    rss: list[tuple[int, int]] = [(0, rss_kib(proc.pid))]
    deadline = time.monotonic() + args.max_seconds

    def worker(index: int) -> None:
        nonlocal sent
        own = latencies[index]
        signer = RequestSigner(key, secret)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        n = 0
        while True:
            with lock:
                if sent >= total or time.monotonic() > deadline:
                    break
                sent += 1
                mine = sent
                if mine % step == 0:
                    rss.append((mine, rss_kib(proc.pid)))
            target = paths[n % len(paths)]
            n += 1
            t0 = time.perf_counter()
            c.request("GET", target, headers=signer.headers("GET", target, b""))
            r = c.getresponse()
            r.read()
            own.append(time.perf_counter() - t0)
            if r.status not in (200,):
                errors.append(f"{target}: {r.status}")
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    done = [x for xs in latencies for x in xs]
    done.sort()
    p50 = statistics.median(done) * 1000
    p99 = done[min(len(done) - 1, int(len(done) * 0.99))] * 1000
    print(f"requests      {len(done)} signed GETs, {args.threads} threads, one connection each")
    print(f"elapsed       {elapsed:.1f} s")
    print(f"throughput    {len(done) / elapsed:.0f} requests/s")
    print(f"latency       p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {done[-1] * 1000:.1f} ms")
    print("server RSS    " + ", ".join(f"{n}: {kib / 1024:.1f} MiB" for n, kib in rss))
    print(f"non-200       {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
