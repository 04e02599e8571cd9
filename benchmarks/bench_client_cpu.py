"""Client CPU per request (process time), the async and sync clients beside the same
requests written by hand, against one sandbox in its own process (issue #21).

Each row sends ``N`` requests one after the other and divides the client process's
CPU time (``time.process_time``) by ``N``; the server's CPU is not counted. Rows:

* ``AsyncClient``: ``get_wallet(refresh=True)``; the POST of a prepared raw order
  (``post_raw_order``: signing, POST, envelope parsing, model); ``cancel_order``;
* aiohttp + ``RequestSigner`` by hand: the same requests and bodies, signed headers,
  ``await response.read()`` and ``msgspec.json.decode`` of the body;
* httpx.AsyncClient + ``RequestSigner`` by hand, the same;
* a bare asyncio stream: the signed request written as bytes, the answer read
  with ``readuntil``/``readexactly`` (no HTTP library: the floor);
* ``Client`` (sync) and httpx.Client by hand, the same three requests.

Raw orders are prepared (untimed) before each timed POST and cancelled right
after (the cancel is the timed cancel row), so the book stays the same size.
Rows are interleaved round by round, so every row meets the same machine.

``--burst N`` (and ``--burst-rounds R``) measures a burst instead: ``N`` signed
``GET /wallet`` calls of one ``AsyncClient`` started at once (the pool's connections
are the bound), each call's latency from the burst's start to its answer; it prints
p50, p99, the burst's wall time and the client process's CPU per call, medians over
the rounds.

``--ws N`` measures the stream's transport instead: a WebSocket server in another
process sends ``N`` book frames (JSON, about 400 bytes each) to each connection, and
this process's CPU per frame received is timed for websockets' client (what
``Stream`` uses) and aiohttp's (``ClientSession.ws_connect``), rounds interleaved.

Run: PYTHONPATH=src python benchmarks/bench_client_cpu.py [--rounds 5] [--n 200]
     PYTHONPATH=src python benchmarks/bench_client_cpu.py --burst 2000 [--burst-rounds 5]
     PYTHONPATH=src python benchmarks/bench_client_cpu.py --ws 20000 [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import aiohttp
import httpx
import msgspec

from clobkit import AsyncClient, Client
from clobkit.client._validate import RawOrderSpec
from clobkit.core.select import RequestSigner
from clobkit.core.spec import API_PREFIX
from clobkit.errors import OrderBookNotFound

USER = {
    "user_id": "30000000-0000-4000-8000-000000000021",
    "api_key": "bench-cpu-key",
    "api_secret": "bench-cpu-secret",
    "scopes": ["markets:read", "orders:read", "orders:write", "portfolio:read"],
    "balance": "100000000",
    "ip_whitelist": None,
}
PRICE = Decimal("0.02")
SIZE = 50
WALLET = API_PREFIX + "/wallet"
RAW = API_PREFIX + "/orders/raw"


def start_sandbox() -> tuple[subprocess.Popen[str], str, str]:
    """``python -m clobkit.sandbox`` on a free port: (process, base URL, config path)."""
    from bench_mm import sandbox_process  # this script's own folder is on sys.path

    config = {"users": [USER], "rate_limit_per_minute": None, "risk": None}
    proc, url, path = sandbox_process(config, 30)
    return proc, url.rstrip("/"), path


async def pick_market(client: AsyncClient) -> str:
    async for event in client.iter_events(league="nba", limit=50):
        if event.ended or event.is_future:
            continue
        for market in await client.get_event_markets(event.id):
            try:
                book = await client.get_orderbook(market.token_id_a or "")
            except OrderBookNotFound:
                continue
            if book.best_ask is not None and book.best_ask > PRICE * 2:
                await client.prepare([market.id])
                return market.id
    raise RuntimeError("no market with a book")


class Bench:
    """Per row, the CPU seconds and count of its timed steps."""

    def __init__(self) -> None:
        self.cpu: dict[str, list[float]] = {}

    def add(self, row: str, seconds: float) -> None:
        self.cpu.setdefault(row, []).append(seconds)

    async def time_async(self, row: str, step: Callable[[], Awaitable[Any]]) -> Any:
        t = time.process_time()
        out = await step()
        self.add(row, time.process_time() - t)
        return out

    def time_sync(self, row: str, step: Callable[[], Any]) -> Any:
        t = time.process_time()
        out = step()
        self.add(row, time.process_time() - t)
        return out


def _spec(market_id: str) -> RawOrderSpec:
    """The benchmark's raw order: a BUY of SIZE shares at PRICE on outcome a."""
    return RawOrderSpec(market_id=market_id, outcome="a", side="BUY", price=PRICE, size=SIZE)


def _decode(body: bytes, status: int, expect: int) -> Any:
    assert status == expect, (status, body[:200])
    return msgspec.json.decode(body)


async def async_round(
    bench: Bench, base: str, market_id: str, n: int, client: AsyncClient, signer: RequestSigner
) -> None:
    core = client._core
    host = base.split("//", 1)[1]
    origin_host, port = host.split(":")[0], int(host.split(":")[1].split("/")[0])

    async def prepared() -> bytes:
        order = await client._run(core.prepare_raw_order(_spec(market_id)))
        return bytes(order.body)

    # -- AsyncClient
    for _ in range(n):
        await bench.time_async("async GET  AsyncClient", lambda: client.get_wallet(refresh=True))
    for _ in range(n):
        order = await client._run(core.prepare_raw_order(_spec(market_id)))
        placed = await bench.time_async(
            "async raw  AsyncClient", lambda o=order: client._run(core.post_raw_order(o))
        )
        await bench.time_async(
            "async DEL  AsyncClient", lambda p=placed: client.cancel_order(p.order_id)
        )

    # -- aiohttp by hand
    async with aiohttp.ClientSession() as session:

        async def a_get() -> Any:
            async with session.get(base + WALLET, headers=signer.headers("GET", WALLET)) as r:
                return _decode(await r.read(), r.status, 200)

        async def a_post(body: bytes) -> Any:
            headers = signer.headers("POST", RAW, body)
            headers["Content-Type"] = "application/json"
            async with session.post(base + RAW, data=body, headers=headers) as r:
                return _decode(await r.read(), r.status, 201)

        async def a_del(order_id: str) -> Any:
            path = f"{API_PREFIX}/orders/{order_id}"
            async with session.delete(base + path, headers=signer.headers("DELETE", path)) as r:
                return _decode(await r.read(), r.status, 200)

        for _ in range(n):
            await bench.time_async("async GET  aiohttp by hand", a_get)
        for _ in range(n):
            body = await prepared()
            placed = await bench.time_async("async raw  aiohttp by hand", lambda b=body: a_post(b))
            order_id = placed["data"]["order_id"]
            await bench.time_async("async DEL  aiohttp by hand", lambda o=order_id: a_del(o))

    # -- httpx by hand
    async with httpx.AsyncClient() as http:

        async def h_get() -> Any:
            r = await http.get(base + WALLET, headers=signer.headers("GET", WALLET))
            return _decode(r.content, r.status_code, 200)

        async def h_post(body: bytes) -> Any:
            headers = signer.headers("POST", RAW, body)
            headers["Content-Type"] = "application/json"
            r = await http.post(base + RAW, content=body, headers=headers)
            return _decode(r.content, r.status_code, 201)

        async def h_del(order_id: str) -> Any:
            path = f"{API_PREFIX}/orders/{order_id}"
            r = await http.delete(base + path, headers=signer.headers("DELETE", path))
            return _decode(r.content, r.status_code, 200)

        for _ in range(n):
            await bench.time_async("async GET  httpx by hand", h_get)
        for _ in range(n):
            body = await prepared()
            placed = await bench.time_async("async raw  httpx by hand", lambda b=body: h_post(b))
            order_id = placed["data"]["order_id"]
            await bench.time_async("async DEL  httpx by hand", lambda o=order_id: h_del(o))

    # -- a bare asyncio stream: the floor
    reader, writer = await asyncio.open_connection(origin_host, port)

    async def exchange(method: str, path: str, body: bytes, expect: int) -> Any:
        head = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Accept: application/json"]
        head += [f"{k}: {v}" for k, v in signer.headers(method, path, body).items()]
        if body:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        answer = await reader.readuntil(b"\r\n\r\n")
        status = int(answer[9:12])
        length = 0
        for line in answer.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return _decode(await reader.readexactly(length), status, expect)

    for _ in range(n):
        await bench.time_async("async GET  bare asyncio", lambda: exchange("GET", WALLET, b"", 200))
    for _ in range(n):
        body = await prepared()
        placed = await bench.time_async(
            "async raw  bare asyncio", lambda b=body: exchange("POST", RAW, b, 201)
        )
        path = f"{API_PREFIX}/orders/{placed['data']['order_id']}"
        await bench.time_async(
            "async DEL  bare asyncio", lambda p=path: exchange("DELETE", p, b"", 200)
        )
    writer.close()


def sync_round(
    bench: Bench, base: str, market_id: str, n: int, client: Client, signer: RequestSigner
) -> None:
    core = client._core
    for _ in range(n):
        bench.time_sync("sync GET   Client", lambda: client.get_wallet(refresh=True))
    for _ in range(n):
        order = client._run(core.prepare_raw_order(_spec(market_id)))
        placed = bench.time_sync(
            "sync raw   Client", lambda o=order: client._run(core.post_raw_order(o))
        )
        bench.time_sync("sync DEL   Client", lambda p=placed: client.cancel_order(p.order_id))
    with httpx.Client() as http:
        for _ in range(n):
            bench.time_sync(
                "sync GET   httpx by hand",
                lambda: _decode(
                    (r := http.get(base + WALLET, headers=signer.headers("GET", WALLET))).content,
                    r.status_code,
                    200,
                ),
            )
        for _ in range(n):
            body = client._run(core.prepare_raw_order(_spec(market_id))).body
            headers = signer.headers("POST", RAW, body)
            headers["Content-Type"] = "application/json"

            def post(b: bytes = body, h: dict[str, str] = headers) -> Any:
                h = signer.headers("POST", RAW, b) | {"Content-Type": "application/json"}
                r = http.post(base + RAW, content=b, headers=h)
                return _decode(r.content, r.status_code, 201)

            placed = bench.time_sync("sync raw   httpx by hand", post)
            path = f"{API_PREFIX}/orders/{placed['data']['order_id']}"

            def cancel(p: str = path) -> Any:
                r = http.delete(base + p, headers=signer.headers("DELETE", p))
                return _decode(r.content, r.status_code, 200)

            bench.time_sync("sync DEL   httpx by hand", cancel)


PAIRS = [
    ("AsyncClient", "aiohttp by hand"),
    ("AsyncClient", "httpx by hand"),
    ("AsyncClient", "bare asyncio"),
    ("Client", "httpx by hand"),
]


def report(bench: Bench) -> str:
    """Medians per row, and the ratios of medians of each client to the by-hand rows."""
    us = {row: statistics.median(v) * 1e6 for row, v in bench.cpu.items()}
    lines = ["client CPU per request, us (medians of every timed request):"]
    lines += [f"  {row:32s} {us[row]:8.0f}" for row in sorted(us)]
    lines.append(
        "ratios (targets of #41: AsyncClient / aiohttp by hand <= 1.25, Client / httpx <= 1.0):"
    )
    for kind in ("GET", "raw", "DEL"):
        for ours, theirs in PAIRS:
            prefix = "async" if ours == "AsyncClient" else "sync"
            a = f"{prefix} {kind}".ljust(11) + ours
            b = f"{prefix} {kind}".ljust(11) + theirs
            if a in us and b in us:
                lines.append(f"  {kind} {ours} / {theirs}: {us[a] / us[b]:.2f}")
    return "\n".join(lines)


async def main_async(base: str, rounds: int, n: int, bench: Bench) -> None:
    signer = RequestSigner(USER["api_key"], USER["api_secret"])
    async with AsyncClient(base, USER["api_key"], USER["api_secret"]) as client:
        market_id = await pick_market(client)
        await async_round(bench, base, market_id, 20, client, signer)  # warm-up
        bench.cpu.clear()
        with Client(base, USER["api_key"], USER["api_secret"]) as sync:
            sync.prepare([market_id])
            sync_round(Bench(), base, market_id, 20, sync, signer)  # warm-up
            for _ in range(rounds):
                await async_round(bench, base, market_id, n, client, signer)
                sync_round(bench, base, market_id, n, sync, signer)


async def burst(base: str, n: int, rounds: int) -> str:
    """``n`` calls started at once, ``rounds`` times: p50, p99 (ms) and wall time (s)."""
    figures: dict[str, list[float]] = {"p50": [], "p99": [], "max": [], "wall": [], "cpu": []}
    async with AsyncClient(
        base, USER["api_key"], USER["api_secret"], max_retries=0, timeout=60.0
    ) as client:
        await client.get_wallet()  # one connection made; the burst opens the rest
        loop = asyncio.get_running_loop()
        for _ in range(rounds):
            start, cpu = loop.time(), time.process_time()

            async def one(start: float) -> float:
                await client.get_wallet(refresh=True)
                return loop.time() - start

            latencies = sorted(await asyncio.gather(*(one(start) for _ in range(n))))
            figures["wall"].append(loop.time() - start)
            figures["cpu"].append((time.process_time() - cpu) / n * 1e6)
            figures["p50"].append(latencies[n // 2] * 1e3)
            figures["p99"].append(latencies[min(n - 1, n * 99 // 100)] * 1e3)
            figures["max"].append(latencies[-1] * 1e3)
    med = {k: statistics.median(v) for k, v in figures.items()}
    return (
        f"burst of {n} GET /wallet at once, medians of {rounds} rounds: "
        f"p50 {med['p50']:.0f} ms, p99 {med['p99']:.0f} ms, max {med['max']:.0f} ms, "
        f"wall {med['wall']:.2f} s; client CPU {med['cpu']:.0f} us a call"
    )


FRAME = msgspec.json.encode(
    {
        "type": "data",
        "topic": "market:7132104567925221259462638553270691275033272857194253228963:book",
        "data": {
            "asset_id": "71321045679252212594626385532706912750332728571942532289631379312455",
            "bids": [{"price": f"0.{40 - i}", "size": f"{100 + i}.5"} for i in range(4)],
            "asks": [{"price": f"0.{45 + i}", "size": f"{90 + i}.25"} for i in range(4)],
            "timestamp": 1_777_000_000_000,
        },
    }
)


async def _ws_serve(frames: int) -> None:
    """The frames server (``--ws-server``): ``frames`` frames to each connection."""
    from websockets.asyncio.server import serve

    async def handler(ws: Any) -> None:
        for _ in range(frames):
            await ws.send(FRAME.decode())
        await ws.close()

    async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
        print(f"ws on {server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.Future()


async def _ws_round(url: str, frames: int, bench: Bench) -> None:
    from websockets.asyncio.client import connect

    async def with_websockets() -> None:
        async with connect(url, compression=None, max_size=None) as ws:
            async for raw in ws:
                msgspec.json.decode(raw)

    async def with_aiohttp() -> None:
        async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
            async for message in ws:
                msgspec.json.decode(message.data)

    for name, step in (("websockets", with_websockets), ("aiohttp", with_aiohttp)):
        t = time.process_time()
        await step()
        bench.add(f"ws {name}", (time.process_time() - t) / frames)


def ws_figures(frames: int, rounds: int) -> str:
    """CPU per frame received, websockets' client and aiohttp's, ``rounds`` rounds."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--ws-server", str(frames)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[-1])
        bench = Bench()

        async def run() -> None:
            for _ in range(rounds):
                await _ws_round(f"ws://127.0.0.1:{port}/", frames, bench)

        asyncio.run(run())
    finally:
        proc.terminate()
        proc.wait(10)
    us = {row: statistics.median(v) * 1e6 for row, v in bench.cpu.items()}
    return (
        f"stream CPU per frame received ({frames} frames, medians of {rounds} rounds): "
        f"websockets {us['ws websockets']:.1f} us, aiohttp {us['ws aiohttp']:.1f} us "
        f"(aiohttp / websockets {us['ws aiohttp'] / us['ws websockets']:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=200, help="requests of each kind per round")
    parser.add_argument("--burst", type=int, default=0, help="calls of one burst (0: none)")
    parser.add_argument("--burst-rounds", type=int, default=5)
    parser.add_argument("--ws", type=int, default=0, help="stream frames a round (0: none)")
    args = parser.parse_args()
    if args.ws:
        print(ws_figures(args.ws, args.rounds))
        return
    proc, base, path = start_sandbox()
    try:
        if args.burst:
            print(asyncio.run(burst(base, args.burst, args.burst_rounds)))
            return
        bench = Bench()
        asyncio.run(main_async(base, args.rounds, args.n, bench))
        print(report(bench))
    finally:
        proc.terminate()
        proc.wait(10)
        os.unlink(path)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ws-server"]:
        asyncio.run(_ws_serve(int(sys.argv[2])))
    else:
        main()
