"""When the bot dies (issue #40): how soon nothing of the account rests.

The sandbox, ``clobkit sentinel`` and a desk each run in a process of their own
(``benchmarks/deadman.py``); the desk quotes ``--markets`` markets x 2 outcomes x
``--levels`` BUY levels (20 x 2 x 3: 120 orders), far below the books (nothing fills).

1. **SIGKILL with a sentinel** (heartbeat timeout 1 s): seconds from the kill until a
   listing shows nothing resting, over ``--trials`` desks (p50, p99, max; target: p99
   within 3 s).
2. **SIGKILL without a sentinel**, ``order_ttl`` 10 s: seconds until the quotes have
   expired on the sandbox's clock (target: within the TTL plus 2 s).
3. **A hung event loop** (the desk's loop blocked by ``time.sleep``) and **a network
   partition** (the desk's connections to the service and the sentinel cut by a
   relay that drops everything), with the sentinel: as for a kill.
4. **Renewal cost** at ``order_ttl`` 30 s, each policy: the desk's own figures
   (``metrics()["renewal"]``: renewals a minute, requests per order per TTL, target
   at most 2) and, read from the order topic by an observer, the longest time a
   wanted level had no live order while the desk was healthy, beside one round trip.
5. **cancel-all** of 2,000 live orders on loopback (``AsyncClient`` and ``Client``):
   seconds, orders a second, and nothing resting at the end.

Figures are seconds on this machine (two cores shared with others); what matters is
how they compare with their targets. ``--quick`` is a smoke run at tiny sizes (one
renewal policy).

Run: python benchmarks/bench_deadman.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import statistics
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks import deadman
from clobkit import AsyncClient
from clobkit.client import orders_topic
from clobkit.models import StreamMessage

LIVE = "live"
PARTS = ("sentinel", "ttl", "renewal", "cancel-all")


class Run:
    """One run's sizes and the sandbox, markets and token it shares."""

    def __init__(self, args: argparse.Namespace, base_url: str) -> None:
        self.args = args
        self.base_url = base_url
        self.token = deadman.new_token()
        self.markets = deadman.two_sided(base_url, args.markets)
        self.ids = ",".join(self.markets)

    def desk(self, *extra: str, base_url: str | None = None) -> subprocess.Popen[str]:
        """A desk process quoting the run's markets (through ``base_url`` when given)."""
        args = self.args
        url = self.base_url if base_url is None else base_url
        return deadman.desk(
            url, self.token, args.markets, args.levels, "--market-ids", self.ids, *extra
        )


def killed(run: Run, sentinel_url: str | None, how: str, ttl: float | None = None) -> float:
    """Seconds from the desk's end (``how``: kill, hang, cut) until nothing rests."""
    extra: list[str] = []
    relays: list[deadman.Relay] = []
    base_url = run.base_url
    if ttl is not None:
        extra += ["--ttl", str(ttl)]
    if how == "cut":
        relays = [deadman.Relay(deadman.port_of(run.base_url))]
        base_url = relays[0].url
    if sentinel_url is not None:
        if how == "cut":
            relays.append(deadman.Relay(deadman.port_of(sentinel_url)))
            sentinel_url = relays[-1].url
        extra += ["--sentinel", sentinel_url]
    if how == "hang":
        extra.append("--hang-on-usr1")
    desk = run.desk(*extra, base_url=base_url)
    try:
        with deadman.maker(run.base_url) as client:
            resting = deadman.resting(client)
            if resting != orders(run.args):  # what is measured is the desk's whole book
                raise RuntimeError(
                    f"{resting} orders rest before the {how}, not {orders(run.args)}"
                )
            started = time.monotonic()
            if how == "kill":
                desk.kill()
            elif how == "hang":
                desk.send_signal(signal.SIGUSR1)
            else:
                for relay in relays:
                    relay.cut()
            return deadman.until_flat(client, started)
    finally:
        desk.kill()
        desk.wait(10)
        for relay in relays:
            relay.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def with_sentinel(run: Run) -> None:
    args = run.args
    proc, url, log = deadman.sentinel(run.base_url, run.token, 1.0, linger=2.0)
    try:
        kills = [killed(run, url, "kill") for _ in range(args.trials)]
        print(
            f"SIGKILL, sentinel (timeout 1 s), {args.trials} desks of {orders(args)} orders: "
            f"nothing rests after p50 {statistics.median(kills):.2f} s, "
            f"p99 {percentile(kills, 0.99):.2f} s, max {max(kills):.2f} s (target: p99 <= 3 s)"
        )
        for how, what in (("hang", "a hung event loop"), ("cut", "a network partition")):
            times = [killed(run, url, how) for _ in range(args.other_trials)]
            print(
                f"{what}, sentinel: nothing rests after median "
                f"{statistics.median(times):.2f} s, max {max(times):.2f} s over "
                f"{len(times)} desks (target: as a kill, <= 3 s)"
            )
        fired = log.text().count("cancelling every order of the account")
        print(f"  the sentinel fired {fired} times; its log says why each time")
    finally:
        deadman.stop(proc)


def without_sentinel(run: Run) -> None:
    args = run.args
    times = [killed(run, None, "kill", ttl=args.ttl) for _ in range(args.other_trials)]
    print(
        f"SIGKILL, no sentinel, order_ttl {args.ttl:g} s: nothing rests after median "
        f"{statistics.median(times):.2f} s, max {max(times):.2f} s over {len(times)} desks "
        f"(target: <= TTL + 2 = {args.ttl + 2:g} s)"
    )


class Presence:
    """Reads the maker's order topic: per wanted level (market, outcome, side, price),
    when it last had no live order, and the longest such gap (s)."""

    def __init__(self) -> None:
        self.live: dict[str, tuple[Any, ...]] = {}  # order id -> its level
        self.count: dict[tuple[Any, ...], int] = {}
        self.empty_since: dict[tuple[Any, ...], float] = {}
        self.longest = 0.0
        self.gaps = 0
        self.seen = 0  # orders seen live

    def take(self, message: StreamMessage) -> None:
        order = message.order
        if order is None or order.id is None:
            return
        now = time.monotonic()
        level = (order.market_id, order.outcome, order.side, order.limit_price)
        if order.status == LIVE and order.id not in self.live:
            self.live[order.id] = level
            self.seen += 1
            self.count[level] = self.count.get(level, 0) + 1
            since = self.empty_since.pop(level, None)
            if since is not None:
                self.gaps += 1
                self.longest = max(self.longest, now - since)
        elif order.status != LIVE and order.id in self.live:
            gone = self.live.pop(order.id)
            self.count[gone] -= 1
            if not self.count[gone]:
                self.empty_since[gone] = now


async def observe(base_url: str, presence: Presence, stop: asyncio.Event) -> float:
    """Feed ``presence`` from the maker's order topic until ``stop``; one round trip (s,
    the median of 20 reads of the wallet)."""
    key, secret = deadman.MAKER
    async with AsyncClient(base_url, key, secret) as client:
        trips = []
        for _ in range(20):
            started = time.perf_counter()
            await client.get_wallet(refresh=True)
            trips.append(time.perf_counter() - started)
        user = (await client.list_orders(page_size=1)).orders
        user_id = user[0].user_id if user else "00000000-0000-4000-8000-000000000002"
        async with client.stream([orders_topic(user_id or "")]) as stream:
            reader = asyncio.ensure_future(_read(stream, presence))
            await stop.wait()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        return statistics.median(trips)


async def _read(stream: Any, presence: Presence) -> None:
    async for item in stream:
        if isinstance(item, StreamMessage):
            presence.take(item)


def renewal(run: Run, policy: str) -> None:
    """One desk at ``--renew-ttl`` for ``--renew-seconds``, renewing by ``policy``."""
    args = run.args
    presence = Presence()
    stop = asyncio.Event()
    trip: list[float] = []
    loop = asyncio.new_event_loop()
    watcher = threading.Thread(
        target=lambda: trip.append(loop.run_until_complete(observe(run.base_url, presence, stop)))
    )
    watcher.start()
    lines: list[str] = []
    try:  # the observer stopped whatever happens (a desk that fails to start too)
        time.sleep(1.5)  # the observer subscribed before the desk quotes
        desk = run.desk("--ttl", str(args.renew_ttl), "--renewal", policy, "--metrics")
        threading.Thread(target=lambda: lines.extend(_metrics(desk)), daemon=True).start()
        time.sleep(args.renew_seconds)
        desk.kill()
        desk.wait(10)
    finally:
        loop.call_soon_threadsafe(stop.set)
        watcher.join(30)
    last = json.loads(lines[-1].split(" ", 1)[1]) if lines else {}
    cost = last.get("requests_per_order_per_ttl")
    print(
        f"renewal '{policy}', order_ttl {args.renew_ttl:g} s, {orders(args)} orders, "
        f"{args.renew_seconds:g} s: {last.get('renewals')} renewals "
        f"({last.get('per_minute')} in the last minute), "
        f"{'n/a' if cost is None else f'{cost:.2f}'} requests per order per TTL "
        f"(target <= 2), {last.get('fallbacks')} cancelled first, {last.get('failures')} failed, "
        f"{last.get('lapses')} lapsed; "
        f"longest a level had no live order: {presence.longest * 1000:.0f} ms "
        f"({presence.gaps} gaps among {presence.seen} orders seen live; one round trip "
        f"{trip[0] * 1000 if trip else 0:.1f} ms)"
    )
    with deadman.maker(run.base_url) as client:
        client.cancel_all_orders()  # the next run starts clean


def _metrics(desk: subprocess.Popen[str]) -> list[str]:
    assert desk.stdout is not None
    return [line for line in desk.stdout if line.startswith("metrics ")]


def cancel_all(run: Run) -> None:
    """``cancel_all_orders`` of ``--cancel-orders`` live orders, both clients."""
    args = run.args
    for flavour in ("AsyncClient", "Client"):
        asyncio.run(_place(run.base_url, run.markets, args.cancel_orders))
        with deadman.maker(run.base_url) as client:
            assert deadman.resting(client) == args.cancel_orders
            if flavour == "Client":
                started = time.perf_counter()
                result = client.cancel_all_orders()
                took = time.perf_counter() - started
            else:
                result, took = asyncio.run(_cancel_async(run.base_url))
            left = deadman.resting(client)
        print(
            f"cancel-all of {args.cancel_orders} live orders ({flavour}): {took:.2f} s, "
            f"{len(result.cancelled) / took:.0f} orders/s, {result.deletes} DELETEs, "
            f"{result.rounds} listings; resting at the end: {left}"
        )


async def _cancel_async(base_url: str) -> tuple[Any, float]:
    """The result of ``AsyncClient.cancel_all_orders`` and its seconds."""
    key, secret = deadman.MAKER
    async with AsyncClient(base_url, key, secret) as client:
        started = time.perf_counter()
        result = await client.cancel_all_orders()
        return result, time.perf_counter() - started


async def _place(base_url: str, markets: list[str], n: int) -> None:
    key, secret = deadman.MAKER
    async with AsyncClient(base_url, key, secret) as client:
        await client.prepare(markets)
        room = asyncio.Semaphore(16)

        async def one(i: int) -> None:
            async with room:
                market = markets[i % len(markets)]
                price = Decimal(2 + i % 3) / 100
                await client.place_raw_order(market, "a", "BUY", price, 250)

        await asyncio.gather(*(one(i) for i in range(n)))


def orders(args: argparse.Namespace) -> int:
    return int(args.markets * 2 * args.levels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument(
        "--only", choices=PARTS, action="append", help="run only these parts (default: all)"
    )
    args = parser.parse_args()
    quick = args.quick
    args.markets, args.levels = (2, 2) if quick else (20, 3)
    args.trials, args.other_trials = (3, 1) if quick else (20, 5)
    args.ttl = 4.0 if quick else 10.0
    args.renew_ttl, args.renew_seconds = (4.0, 4.0) if quick else (30.0, 62.0)
    policies = ("expire",) if quick else ("expire", "cancel")
    args.cancel_orders = 100 if quick else 2_000
    chosen = args.only or PARTS
    with deadman.sandbox() as base_url:
        run = Run(args, base_url)
        if "sentinel" in chosen:
            with_sentinel(run)
        if "ttl" in chosen:
            without_sentinel(run)
        if "renewal" in chosen:
            for policy in policies:
                renewal(run, policy)
        if "cancel-all" in chosen:
            cancel_all(run)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
