"""The processes of the dead-man figures and tests (issue #40): a sandbox, a sentinel and
a desk, each a process of its own, and a relay that can cut the desk off the network.

``python -m benchmarks.deadman desk ...`` is the desk: it quotes ``--markets`` markets x
2 outcomes x ``--levels`` BUY levels far below the book (nothing fills), prints
``quoting N`` once they rest, then requotes the same ladders every second until it is
killed. With ``--hang-on-usr1`` a SIGUSR1 blocks its event loop (``time.sleep``): the
hung loop of the issue. Its ``--base-url``, ``--ws-url`` and ``--sentinel`` may point at
``Relay``s, which ``cut()`` leaves every connection hanging: the network partition.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from clobkit import AsyncClient, Client
from clobkit.errors import OrderBookNotFound
from clobkit.mm import Desk, Expiry, Quote

ROOT = Path(__file__).resolve().parent.parent
MAKER = ("sandbox-maker-key", "sandbox-maker-secret")
#: The sandbox's users: the maker with enough USDC for 2,000 orders of 5 USDC.
USERS = [
    {
        "user_id": "00000000-0000-4000-8000-000000000002",
        "api_key": MAKER[0],
        "api_secret": MAKER[1],
        "balance": "1000000",
    }
]
OPEN = ("pending", "signing", "submitted", "live")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: this checkout's ``src`` first on the path."""
    env = dict(os.environ)
    path = [str(ROOT / "src"), str(ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(extra)
    return env


def first_line(proc: subprocess.Popen[str], starts: str, timeout: float) -> str:
    """The first line of ``proc``'s stdout that starts with ``starts`` (else the process
    is killed and ``RuntimeError`` raised)."""
    assert proc.stdout is not None
    found: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(starts):
                found.append(line.strip())
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        proc.kill()
        raise RuntimeError(f"{proc.args!r}: no {starts!r} line within {timeout} s")
    return found[0]


@contextlib.contextmanager
def sandbox(**config: Any) -> Iterator[str]:
    """``clobkit sandbox`` in a process of its own (the maker alone, no rate or risk
    limits, ``config`` on top): its base URL."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"users": USERS, "rate_limit_per_minute": None, "risk": None, **config}, fh)
    command = [sys.executable, "-m", "clobkit", "sandbox", "--port", "0", "--config", fh.name]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        yield first_line(proc, "listening on ", 60).split()[-1]
    finally:
        stop(proc)
        os.unlink(fh.name)


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class Log:
    """A process's stderr read as it comes (a pipe nobody reads would block it)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


def sentinel(
    base_url: str, token: str, timeout: float, linger: float = 30.0
) -> tuple[subprocess.Popen[str], str, Log]:
    """``clobkit sentinel`` on a free port, watching the maker's account: (process, its
    URL, its log)."""
    key, secret = MAKER
    env = child_env(
        CLOBKIT_BASE_URL=base_url,
        CLOBKIT_API_KEY=key,
        CLOBKIT_API_SECRET=secret,
        CLOBKIT_SENTINEL_TOKEN=token,
    )
    args = ["--listen", "127.0.0.1:0", "--heartbeat-timeout", str(timeout), "--linger", str(linger)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "clobkit", "sentinel", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    log = Log(proc)
    line = first_line(proc, "sentinel listening on ", 60)
    return proc, line.split()[3], log


def desk(
    base_url: str, token: str, markets: int, levels: int, *extra: str
) -> subprocess.Popen[str]:
    """The desk process (see the module's doc), quoting once this returns."""
    key, secret = MAKER
    env = child_env(CLOBKIT_SENTINEL_TOKEN=token)
    args = ["--base-url", base_url, "--key", key, "--secret", secret]
    args += ["--markets", str(markets), "--levels", str(levels), *extra]
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.deadman", "desk", *args],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    first_line(proc, "quoting ", 120)
    return proc


def new_token() -> str:
    return secrets.token_hex(16)


def resting(client: Client) -> int:
    """The maker's open orders, as the service lists them."""
    return sum(1 for o in client.open_orders() if o.status in OPEN)


def until_flat(client: Client, since: float, guard: float = 120.0) -> float:
    """Seconds from ``since`` (``time.monotonic()``) until a listing shows nothing of
    the maker resting (``inf`` past ``guard``)."""
    while resting(client):
        if time.monotonic() - since > guard:
            return float("inf")
        time.sleep(0.02)
    return time.monotonic() - since


def maker(base_url: str) -> Client:
    key, secret = MAKER
    return Client(base_url, key, secret, timeout=5.0)


# -- the relay: a network between the desk and the rest that can be cut ------------------


class Relay:
    """Loopback TCP relayed to ``port``; ``cut()`` leaves every connection, old and new,
    hanging (nothing relayed, nothing closed: packets lost, as in a partition)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.cut_off = threading.Event()
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        self.cut_off.set()

    def close(self) -> None:
        self.cut_off.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        for sock in self._held:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self._held.append(client)
            if self.cut_off.is_set():
                continue  # accepted, never answered
            try:
                upstream = socket.create_connection(("127.0.0.1", self.port))
            except OSError:
                client.close()
                continue
            self._held.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if self.cut_off.is_set():
                    continue  # lost on the way
                dst.sendall(data)
        except OSError:
            pass
        if not self.cut_off.is_set():
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


# -- the desk process --------------------------------------------------------------------


def two_sided(base_url: str, n: int) -> list[str]:
    """``n`` markets whose both outcomes have a two-sided book (read once, for every
    desk of a run: ``desk(..., "--market-ids", ...)``)."""

    async def read() -> list[str]:
        key, secret = MAKER
        async with AsyncClient(base_url, key, secret) as client:
            return await _two_sided(client, n)

    return asyncio.run(read())


async def _two_sided(client: AsyncClient, n: int) -> list[str]:
    """``n`` markets whose both outcomes have a two-sided book."""
    found: list[str] = []
    async for event in client.iter_events(limit=50):
        if event.ended:
            continue
        for market in await client.get_event_markets(event.id):
            tokens = [t for t in (market.token_id_a, market.token_id_b) if t]
            try:
                books = [await client.get_orderbook(t) for t in tokens]
            except OrderBookNotFound:
                continue
            if len(books) == 2 and all(b.bids and b.asks for b in books):
                found.append(market.id)
                if len(found) == n:
                    return found
    raise RuntimeError(f"only {len(found)} markets with two-sided books")


def ladder(levels: int) -> list[Quote]:
    """``levels`` BUYs of 300 shares from 0.02 up: far below any book, over any minimum."""
    return [Quote("BUY", Decimal(2 + k) / 100, 300) for k in range(levels)]


async def _desk(args: argparse.Namespace) -> None:
    options: dict[str, Any] = {"timeout": 2.0, "max_retries": 1}
    if args.ws_url:
        options["ws_url"] = args.ws_url
    async with AsyncClient(args.base_url, args.key, args.secret, **options) as client:
        markets = args.market_ids or await _two_sided(client, args.markets)
        ttl = None if args.ttl is None else Expiry(args.ttl, renewal=args.renewal)
        async with Desk(
            client,
            order_ttl=ttl,
            sentinel=args.sentinel,
            heartbeat_timeout=None,
            rate_limit_per_minute=1_000_000,
        ) as d:
            quoters = [d.quoter(m, o) for m in markets for o in ("a", "b")]
            ladders = {q: ladder(args.levels) for q in quoters}
            await d.requote(ladders)
            print(f"quoting {len(quoters) * args.levels}", flush=True)
            while True:
                await asyncio.sleep(args.every)
                if args.metrics:
                    print(f"metrics {json.dumps(d.metrics()['renewal'])}", flush=True)
                if d.halted is None:
                    await d.requote(ladders)


def _hang(signum: int, frame: Any) -> None:
    time.sleep(3600)  # the event loop's thread, blocked


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.deadman")
    parser.add_argument("role", choices=["desk"])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--ws-url")
    parser.add_argument("--key", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--markets", type=int, default=20)
    parser.add_argument("--market-ids", type=lambda text: text.split(","), default=None)
    parser.add_argument("--levels", type=int, default=3)
    parser.add_argument("--ttl", type=float)
    parser.add_argument("--renewal", default="expire")
    parser.add_argument("--sentinel")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between requotes")
    parser.add_argument("--metrics", action="store_true", help="print the renewal metrics")
    parser.add_argument("--hang-on-usr1", action="store_true")
    args = parser.parse_args(argv)
    if args.hang_on_usr1:
        signal.signal(signal.SIGUSR1, _hang)
    asyncio.run(_desk(args))


if __name__ == "__main__":
    main()
