"""The kill switch and unknown outcomes under the faults a live service has (issue #39).

1. **A listing that hangs or fails.** A desk of 4 quoters x 3 levels; its streams
   dropped once (every quoter re-reads its orders); ``GET /orders`` held by the
   service longer than the client's timeout, or answering 500s, while ``DELETE``
   works. Reported: seconds from ``halt()`` until nothing of the desk rests on the
   service (target: within 2 s on loopback), for ``halt()`` and for leaving the
   ``Desk`` block.
2. **A big book, a healthy service.** 2,000 resting orders: seconds from ``halt()``
   to the last ``DELETE`` of its first wave handed to the client, in event-loop turns
   too, and to an empty book (the client's pool, 100 connections, and the service's
   own pace bound that).
3. **Unknown outcomes.** Raw orders on a sandbox whose copies are held before they
   take effect longer than the client waits (``latency_at: "before"``), with 30% of
   the answers failing (half after commit): how often the caller was told "refused"
   or "never placed" for an order that rested later (target: never), and keys holding
   more than one order (target: none), per exchange version.

The sandbox runs in this process (``serve_in_thread``) so that its book can be read
directly; the figures are seconds on this machine, and what matters is how they
compare with the client's timeout (the listing's hang) and with one round trip.

Run: python benchmarks/bench_killswitch.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from decimal import Decimal
from typing import Any

from clobkit import AsyncClient, Client
from clobkit.client import UNKNOWN_OUTCOME
from clobkit.errors import ApiError, ClobkitError
from clobkit.mm import Desk, Quote
from clobkit.sandbox import serve_in_thread

HELD = {"latency_ms": 60_000, "latency_at": "before"}
LISTING = {"held": HELD, "failing": {"error_rate": 1.0, "seed": 3}}


def options(sb: Any, **extra: Any) -> dict[str, Any]:
    user = sb.users[1]
    return {
        "base_url": sb.base_url,
        "api_key": user.api_key,
        "api_secret": user.api_secret,
        "clob_url": sb.clob_url,
        "ws_url": sb.ws_url,
        **extra,
    }


def two_sided(sb: Any, n: int) -> list[str]:
    found = []
    for market_id, state in sb.engine.markets.items():
        book = sb.engine.orderbook(state.fx.token_id_a)
        if state.active and book is not None and book.bids and book.asks:
            found.append(str(market_id))
    return found[:n]


def live(sb: Any) -> int:
    """The user's open orders, counted without building their records."""
    user = sb.users[1].user_id
    return sum(
        sb.engine.list_orders(user, status=status, page_size=1).total_count
        for status in ("pending", "signing", "submitted", "live")
    )


async def until_empty(sb: Any, started: float, guard: float = 60.0) -> float:
    """Seconds from ``started`` (perf_counter) until nothing of the user rests."""
    while live(sb):
        if time.perf_counter() - started > guard:
            return float("inf")
        await asyncio.sleep(0.005)
    return time.perf_counter() - started


def ladder(first: int, n: int, size: int = 20) -> list[Quote]:
    return [Quote("BUY", Decimal(first + k) / 100, size) for k in range(n)]


async def hanging_listing(listing: str, leave: bool) -> float:
    """Seconds from the kill switch to an empty book, the listing ``listing``."""
    config = {"rate_limit_per_minute": None, "risk": None}
    with serve_in_thread(config) as sb:
        user = sb.users[1]
        async with AsyncClient(**options(sb, timeout=1.0, max_retries=1)) as client:
            desk = Desk(client, user_id=user.user_id, stream_timeout=None, max_error_rate=1.0)
            desk.exit_timeout = 0.5
            try:
                async with desk:
                    quoters = [desk.quoter(m, o) for m in two_sided(sb, 2) for o in ("a", "b")]
                    await desk.requote({q: ladder(5, 3) for q in quoters})
                    sb.faults.configure({"routes": {"GET /orders": LISTING[listing]}})
                    sb.drop_streams()
                    while desk.reconnects < 1:
                        await asyncio.sleep(0.001)
                    started = time.perf_counter()
                    emptied = asyncio.ensure_future(until_empty(sb, started))
                    if not leave:
                        await desk.halt()
                        await emptied
            except ClobkitError as exc:  # no listing answers: leaving cannot confirm it
                if "showed nothing of the desk resting" not in str(exc):
                    raise
            finally:
                sb.faults.configure(None)
                sb.faults.release()
            return await emptied


async def big_book(orders: int) -> tuple[float, int, float, int]:
    """``orders`` resting, a healthy service: seconds to the last DELETE handed to the
    client, event-loop turns to it, seconds to an empty book."""
    per = 20
    markets = -(-orders // (2 * per))
    config = {"rate_limit_per_minute": None, "risk": None, "extra_games": markets}
    with serve_in_thread(config) as sb:
        user = sb.users[1]
        sb.deposit(user.user_id, 50 * orders)  # 10 to 48 USDC an order
        async with (
            AsyncClient(**options(sb)) as client,
            Desk(client, user_id=user.user_id, rate_limit_per_minute=1_000_000) as desk,
        ):
            quoters = [desk.quoter(m, o) for m in two_sided(sb, markets) for o in ("a", "b")]
            left = orders
            ladders = {}
            for q in quoters:
                n = min(per, left)
                left -= n
                if n:
                    ladders[q] = ladder(5, n, size=200)  # over any market's minimum
            await desk.requote(ladders)
            last, at_turn, calls = 0.0, 0, 0
            known = len(desk.execution.cache.cancellable())  # the first wave's size
            cancel = client.cancel_order
            turns = [0]

            async def noted(order_id: str) -> Any:
                nonlocal last, at_turn, calls
                calls += 1
                if calls == known:  # the first wave's last (a timed-out one goes again later)
                    last, at_turn = time.perf_counter(), turns[0]
                return await cancel(order_id)

            client.cancel_order = noted  # type: ignore[method-assign]  # the benchmark's probe

            async def count_turns() -> None:
                while True:
                    await asyncio.sleep(0)
                    turns[0] += 1

            counter = asyncio.ensure_future(count_turns())
            started = time.perf_counter()
            halting = asyncio.ensure_future(desk.halt())
            empty = await until_empty(sb, started, guard=300.0)
            with contextlib.suppress(*UNKNOWN_OUTCOME):  # a cancel timed out: swept again
                await halting
            counter.cancel()
            return last - started, at_turn, empty, known


def unknown_outcomes(version: int, orders: int) -> tuple[int, int, int, dict[str, int]]:
    """(told refused or never placed yet rested, keys with two orders, keys, told)."""
    config = {"exchange_version": version, "rate_limit_per_minute": None, "risk": None}
    with serve_in_thread(config) as sb:
        user = sb.users[1]
        with Client(**options(sb, timeout=0.3, max_retries=2, landing_time=2.0)) as client:
            market = two_sided(sb, 1)[0]
            client.prepare([market])
            sb.faults.configure(
                {
                    "error_rate": 0.3,
                    "after_commit": 0.5,
                    "latency_ms": [350, 900],
                    "latency_share": 0.3,
                    "latency_at": "before",
                    "seed": 11,
                }
            )
            told: dict[str, str] = {}
            for _ in range(orders):
                key, what = _place(client, market)
                told[key] = what
            sb.faults.configure(None)
            sb.faults.release()
            time.sleep(2.5)  # past the landing time
        rows = sb.engine.list_orders(user.user_id, page_size=100_000).items
        by_key: dict[str, int] = {}
        for row in rows:
            if row.order_source_id:
                by_key[row.order_source_id] = by_key.get(row.order_source_id, 0) + 1
        wrong = sum(
            1 for k, w in told.items() if w in ("refused", "never placed") and by_key.get(k)
        )
        doubled = sum(1 for n in by_key.values() if n > 1)
        counts: dict[str, int] = {}
        for what in told.values():
            counts[what] = counts.get(what, 0) + 1
        return wrong, doubled, len(told), counts


def _place(client: Client, market: str) -> tuple[str, str]:
    prepared = client.prepare_raw_order(market, "a", "BUY", "0.05", 20)
    key = prepared.result.client_order_id
    try:
        client.post_raw_order(prepared)
    except UNKNOWN_OUTCOME as exc:
        try:
            found = client.resolve_raw_order(exc.order or prepared.result, wait=True)
        except UNKNOWN_OUTCOME:
            return key, "unknown"
        return key, "never placed" if found is None else "placed"
    except ApiError:
        return key, "refused"
    return key, "placed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    args = parser.parse_args()
    big, raw = (60, 10) if args.quick else (2_000, 200)
    print("kill switch, 4 quoters x 3 levels, streams dropped, DELETE healthy:")
    for listing in ("held", "failing"):
        for leave in (False, True):
            took = asyncio.run(hanging_listing(listing, leave))
            how = "leaving the Desk block" if leave else "halt()"
            print(f"  listing {listing:7}  {how:22}  empty book after {took:.3f} s")
    last, turns, empty, known = asyncio.run(big_book(big))
    print(
        f"kill switch, {known} orders resting, healthy: the last of their DELETEs handed to "
        f"the client after {last:.3f} s ({turns} loop turns), empty book after {empty:.3f} s"
    )
    for version in (1, 2, 3):
        wrong, doubled, n, counts = unknown_outcomes(version, raw)
        print(
            f"unknown outcomes V{version}: {n} raw orders {counts}; told refused or never "
            f"placed yet rested: {wrong}; keys with two orders: {doubled}"
        )
        if wrong or doubled:
            sys.exit(1)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
