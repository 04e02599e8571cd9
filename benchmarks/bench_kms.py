"""A KMS signer's costs (issue #43), measured in one run against a loopback KMS that
answers each ``Sign`` 20 ms late (benchmarks/kms_standin.py, a process of its own).

* transport: the same batch of signatures, at the default rate (250 a second),
  beside aiohttp's own POSTs of the same requests without any SDK (the floor),
  through ``AwsKmsSigner``'s async path (aiobotocore on the signer's own loop in
  a thread, the default; on the caller's loop, ``thread=False``; in a process of
  its own, ``process=True``, or two, ``process=2``) and its sync
  twin run off the loop (``asyncio.to_thread(signer.sign_many, ...)``: botocore's
  client, a call per thread): wall time, the process's CPU per signature, and the
  event loop's lag (p50 / p99 of a 1 ms ticker's lateness) meanwhile;
* a 10-level V2 requote by a lone ``Quoter`` with the KMS signer, from an empty
  ladder, against one raw-order round trip to the same sandbox (target: at most
  1.3 x (20 ms + one raw round trip)); the same requote with the ladder pre-signed
  (``Quoter.presign``); on loopback and through a proxy that delays every packet
  ``bench_mm.LATENCY`` ms each way (a network); a ladder moved whole (every level's
  size changed: ten cancels and ten signed places), and how long after the requote
  began its old orders were cancelled (the service's clock); with the client on the signer's own
  loop (the default), in a process of its own (``process=True``) and in two; and the
  floor, a signer of the protocol with no KMS client (``Asleep``: 20 ms asleep, then
  signed here), which no KMS signer can beat on the machine;
* the event loop's lag (p99 of a 1 ms ticker's lateness; target under 5 ms) during
  a 2,000-order ``Desk`` requote signed by the KMS signer (200 markets x 2 outcomes
  x 5 levels), and the requote's wall time (bounded by the signer's default rate,
  250 signatures a second, and the desk's request budget); unsigned, and signed
  with the client on its own loop and in its own process.

Run: python benchmarks/bench_kms.py [--desk]   (or python -m pytest benchmarks/bench_kms.py -s)
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from clobkit import AsyncClient
from clobkit.mm import Desk, Quoter
from clobkit.signing import AwsKmsSigner

if __package__:
    from . import bench_mm, kms_standin
else:  # run as a script
    import bench_mm  # type: ignore[no-redef]
    import kms_standin  # type: ignore[no-redef]

DESK_MARKETS, LATENCY, USER = bench_mm.DESK_MARKETS, bench_mm.LATENCY, bench_mm.USER
_quoted_markets, desk_ladder, ladder = (
    bench_mm._quoted_markets,
    bench_mm.desk_ladder,
    bench_mm.ladder,
)
pick_market, sandbox_process = bench_mm.pick_market, bench_mm.sandbox_process
start_proxy = bench_mm.start_proxy

T = TypeVar("T")
DELAY_MS = 20.0
ROUNDS = 15
TRANSPORT_SIGNS = 400
TARGET_REQUOTE = 1.3
TARGET_LAG_MS = 5.0
HERE = os.path.dirname(os.path.abspath(__file__))


@contextmanager
def kms(delay_ms: float = DELAY_MS) -> Iterator[str]:
    """The loopback KMS stand-in's URL (AWS credentials for the usual chain set)."""
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    script = os.path.join(HERE, "kms_standin.py")
    proc = subprocess.Popen(
        [sys.executable, script, "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        if not line.startswith("listening on "):
            raise RuntimeError("the KMS stand-in did not start")
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)


async def lag_during(work: Awaitable[T]) -> tuple[T, list[float]]:
    """``work``'s result and the lateness (s) of a 1 ms ticker on the loop meanwhile."""
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    done = False

    async def tick() -> None:
        while not done:
            t = loop.time()
            await asyncio.sleep(0.001)
            lags.append(loop.time() - t - 0.001)

    ticker = asyncio.ensure_future(tick())
    try:
        result = await work
    finally:
        done = True
        await ticker
    return result, lags


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def transport(url: str) -> dict[str, dict[str, float]]:
    """The same signatures through aiobotocore on the signer's own loop (the default),
    on the caller's loop, and through botocore's client in threads (the sync twin)."""
    digests = [os.urandom(32) for _ in range(TRANSPORT_SIGNS)]
    out: dict[str, dict[str, float]] = {}
    options: dict[str, Any] = {"endpoint_url": url, "rate": 250, "max_in_flight": 64}
    homes: list[tuple[str, dict[str, Any]]] = [
        ("aiobotocore, own loop", {"thread": True}),
        ("aiobotocore, caller's loop", {"thread": False}),
        ("aiobotocore, own process", {"process": True}),
        ("aiobotocore, two processes", {"process": 2}),
    ]
    for name, home in homes:
        async with AwsKmsSigner("k", **home, **options) as signer:
            await signer.sign_digests(digests[:32])  # warm: connections, models
            await asyncio.sleep(1.0)  # the budget's burst back
            t, cpu = time.perf_counter(), time.process_time()
            _, lags = await lag_during(signer.sign_digests(digests))
            out[name] = _row(t, cpu, lags)
    with AwsKmsSigner("k", **options) as sync:
        await asyncio.to_thread(sync.sign_many, digests[:32])
        await asyncio.sleep(1.0)
        t, cpu = time.perf_counter(), time.process_time()
        _, lags = await lag_during(asyncio.to_thread(sync.sign_many, digests))
        out["botocore in threads"] = _row(t, cpu, lags)
    out["aiohttp POST, no SDK (floor)"] = await bare_posts(url, digests)
    return out


async def bare_posts(url: str, digests: list[bytes]) -> dict[str, float]:
    """The same ``Sign`` requests as aiohttp's own POSTs, without SigV4 or any SDK (the
    stand-in reads no credentials), at the same rate: the transport's own cost, the
    floor a KMS client's CPU a call is set against."""
    import base64
    import json

    import aiohttp

    headers = {"X-Amz-Target": "TrentService.Sign", "Content-Type": "application/x-amz-json-1.1"}

    async def sign(http: aiohttp.ClientSession, digest: bytes) -> None:
        call = {"KeyId": "k", "Message": base64.b64encode(digest).decode()}
        call |= {"MessageType": "DIGEST", "SigningAlgorithm": "ECDSA_SHA_256"}
        async with http.post(url, data=json.dumps(call), headers=headers) as answer:
            json.loads(await answer.read())

    async def paced(http: aiohttp.ClientSession) -> None:
        calls = []
        for digest in digests:  # started at 250 a second, as the signer's budget does
            calls.append(asyncio.ensure_future(sign(http, digest)))
            await asyncio.sleep(1 / 250)
        await asyncio.gather(*calls)

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(sign(http, d) for d in digests[:32]))  # warm: connections
        t, cpu = time.perf_counter(), time.process_time()
        _, lags = await lag_during(paced(http))
        return _row(t, cpu, lags)


def _row(t: float, cpu: float, lags: list[float]) -> dict[str, float]:
    return {
        "wall_s": time.perf_counter() - t,
        "cpu_us_per_sign": (time.process_time() - cpu) / TRANSPORT_SIGNS * 1e6,
        "lag_p50_ms": p(lags, 0.5) * 1e3,
        "lag_p99_ms": p(lags, 0.99) * 1e3,
    }


#: Where a measured signer's client runs: the default and a process of its own.
HOMES: dict[str, dict[str, Any]] = {
    "own loop": {},
    "own process": {"process": True},
    "two processes": {"process": 2},
}
#: The requote rows' floor: no KMS client at all (``Asleep``).
FLOOR = "no KMS client (20 ms asleep, then signed here)"


class Asleep:
    """The stand-in's key as a signer of the protocol without any KMS client: each batch
    sleeps ``DELAY_MS`` and is signed here, at once. A requote signed by it costs the
    KMS's latency and the requote's own work: the floor no KMS signer can beat on the
    machine (the sandbox's CPU for the places included)."""

    def __init__(self) -> None:
        from clobkit import OrderSigner

        self._local = OrderSigner("0x" + kms_standin.SECRET.hex())

    @property
    def address(self) -> str:
        return self._local.address

    async def sign_digests(self, digests: Any, /) -> list[str]:
        await asyncio.sleep(DELAY_MS / 1e3)
        return self._local.sign_many(digests)

    async def __aenter__(self) -> Asleep:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def signer_for(kms_url: str, home: dict[str, Any]) -> Any:
    """The signer a requote row measures: a KMS signer where ``home`` says, or the floor."""
    return Asleep() if home.get("floor") else AwsKmsSigner("k", endpoint_url=kms_url, **home)


async def requotes(base_url: str, kms_url: str, home: dict[str, Any]) -> dict[str, float]:
    """Medians of: a raw round trip, a 10-level requote signed by KMS, the same pre-signed."""
    clock = time.perf_counter
    trips: list[float] = []
    signed: list[float] = []
    presigned: list[float] = []
    moved: list[float] = []  # a ladder moved whole: 10 cancels and 10 places
    stale: list[float] = []  # how long its old orders rested after the requote began
    async with (
        signer_for(kms_url, home) as signer,
        AsyncClient(base_url, USER["api_key"], USER["api_secret"], timeout=30.0) as client,
    ):
        market_id = await pick_market(client)
        await client.prepare([market_id])
        async with Quoter(client, market_id, "a", user_id=USER["user_id"], signer=signer) as q:
            for i in range(ROUNDS + 2):
                prepared = await client.prepare_raw_order(market_id, "b", "BUY", "0.02", 50)
                t = clock()
                placed = await client.post_raw_order(prepared)
                trip = clock() - t
                await client.cancel_order(placed.order_id)
                t = clock()
                await q.requote(ladder(5))
                one = clock() - t
                await q.requote([])
                await q.presign(ladder(5))
                t = clock()
                await q.requote(ladder(5))
                ahead = clock() - t
                await q.requote(ladder(5))
                old = [o.id for o in q.open_orders]
                began, t = time.time(), clock()
                await q.requote(ladder(5, size=21))  # every level's size changed
                move = clock() - t
                cancelled = [await client.get_order(order_id) for order_id in old]
                last = max(o.updated_at.timestamp() for o in cancelled if o.updated_at)
                await q.requote([])
                if i >= 2:  # warm-up rounds left out
                    trips.append(trip)
                    signed.append(one)
                    presigned.append(ahead)
                    moved.append(move)
                    stale.append(last - began)
    trip = statistics.median(trips)
    return {
        "raw_ms": trip * 1e3,
        "signed_ms": statistics.median(signed) * 1e3,
        "presigned_ms": statistics.median(presigned) * 1e3,
        "moved_ms": statistics.median(moved) * 1e3,
        "stale_ms": statistics.median(stale) * 1e3,
        "ratio": statistics.median(signed) / (DELAY_MS / 1e3 + trip),
    }


async def desk_lag(
    base_url: str, kms_url: str, signed: bool = True, home: dict[str, Any] | None = None
) -> dict[str, float]:
    """The loop's lag during a 2,000-order desk requote signed by KMS (``signed``), or
    the same requote unsigned: what the desk's own work costs the loop."""
    async with (
        AwsKmsSigner("k", endpoint_url=kms_url, **(home or {})) as signer,
        AsyncClient(base_url, USER["api_key"], USER["api_secret"]) as client,
    ):
        markets = await _quoted_markets(client, DESK_MARKETS)
        desk = Desk(
            client,
            user_id=USER["user_id"],
            heartbeat_timeout=None,
            signer=signer if signed else None,
            cancel_on_exit=False,  # the sandbox process ends with the run
        )
        async with desk:
            ladders = {}
            for market_id, mid in markets:
                ladders[desk.quoter(market_id, "a")] = desk_ladder(mid)
                ladders[desk.quoter(market_id, "b")] = desk_ladder(100 - mid)
            await desk.open()
            await asyncio.sleep(0.5)
            t = time.perf_counter()
            reports, lags = await lag_during(desk.requote(ladders))
            wall = time.perf_counter() - t
            placed = sum(len(r.placed) for r in reports.values())
            sign = desk.metrics()["sign_latency"]
    return {
        "orders": placed,
        "requote_s": wall,
        "lag_p50_ms": p(lags, 0.5) * 1e3,
        "lag_p99_ms": p(lags, 0.99) * 1e3,
        "lag_max_ms": max(lags) * 1e3,
        "sign_mean_ms": sign["sum"] / max(1, sign["count"]) * 1e3,
        "signatures": sign["count"],
        "throttled": signer.counts()["throttled"],
    }


def sandbox(kms_url: str, desk: bool = False) -> tuple[subprocess.Popen[str], str, str]:
    """A V2 sandbox whose user's wallet signer is the stand-in's key."""

    async def address() -> str:
        async with AwsKmsSigner("k", endpoint_url=kms_url) as signer:
            return signer.address

    config: dict[str, Any] = {
        "users": [{**USER, "signer": asyncio.run(address())}],
        "risk": None,
        "exchange_version": 2,
    }
    if desk:
        config |= {"extra_games": 40, "limits": {"ws_max_queue_bytes": 256 * 1024 * 1024}}
    else:
        config["rate_limit_per_minute"] = None
    return sandbox_process(config, 60)


def run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    return asyncio.run(fn(*args))


class Lines(list[str]):
    """The report's lines, each printed as it comes (a long run shows its progress)."""

    def append(self, line: str) -> None:
        print(line, flush=True)
        super().append(line)


def measure(desk: bool, only_desk: bool = False) -> str:
    lines = Lines()
    lines.append(f"KMS signer, {DELAY_MS:g} ms injected per Sign call (benchmarks/kms_standin.py)")
    with kms() as kms_url:
        if not only_desk:
            loop_figures(kms_url, lines)
        if desk or only_desk:
            desk_figures(kms_url, lines)
    return "\n".join(lines)


def loop_figures(kms_url: str, lines: Lines) -> None:
    """The transports, and a lone quoter's requotes on loopback and through the proxy."""
    for name, row in run(transport, kms_url).items():
        lines.append(
            f"  {TRANSPORT_SIGNS} signatures via {name:<26} {row['wall_s']:5.2f} s wall, "
            f"{row['cpu_us_per_sign']:5.0f} us CPU each, loop lag p50 "
            f"{row['lag_p50_ms']:.2f} ms p99 {row['lag_p99_ms']:.2f} ms"
        )
    proc, base_url, path = sandbox(kms_url)
    try:
        proxy, delayed = start_proxy(base_url, LATENCY)
        try:
            places = (("loopback", base_url), (f"{LATENCY:g} ms proxy", delayed))
            homes = {**HOMES, FLOOR: {"floor": True}}
            for (where, url), (name, home) in itertools.product(places, homes.items()):
                f = run(requotes, url, kms_url, home)
                lines.append(
                    f"  10-level V2 requote, {where}, {name}: raw round trip {f['raw_ms']:.1f} ms, "
                    f"signed {f['signed_ms']:.1f} ms = {f['ratio']:.2f} x (20 ms + raw) "
                    f"(target <= {TARGET_REQUOTE}), pre-signed {f['presigned_ms']:.1f} ms; "
                    f"moved whole {f['moved_ms']:.1f} ms, its old orders cancelled "
                    f"{f['stale_ms']:.1f} ms after it began (service's ms clock)"
                )
        finally:
            proxy.terminate()
            proxy.wait(10)
    finally:
        proc.terminate()
        proc.wait(10)
        os.unlink(path)


def desk_figures(kms_url: str, lines: Lines) -> None:
    """A 2,000-order desk requote, unsigned and signed by KMS."""
    runs = [("unsigned", False, {}), *((f"signed, {n}", True, h) for n, h in HOMES.items())]
    for how, signed, home in runs:
        proc, base_url, path = sandbox(kms_url, desk=True)
        try:
            d = run(desk_lag, base_url, kms_url, signed, home)
        finally:
            proc.terminate()
            proc.wait(10)
            os.unlink(path)
        lines.append(
            f"  desk requote of {d['orders']:.0f} orders, {how}: "
            f"{d['requote_s']:.1f} s, loop lag p50 {d['lag_p50_ms']:.2f} ms p99 "
            f"{d['lag_p99_ms']:.2f} ms (target < {TARGET_LAG_MS:g}) max "
            f"{d['lag_max_ms']:.1f} ms; {d['signatures']:.0f} signatures, "
            f"{d['sign_mean_ms']:.1f} ms each from the order's build, "
            f"{d['throttled']:.0f} throttled"
        )


def test_kms_costs() -> None:
    print()
    measure(desk=True)


if __name__ == "__main__":
    measure(desk="--desk" in sys.argv[1:], only_desk="--only-desk" in sys.argv[1:])
