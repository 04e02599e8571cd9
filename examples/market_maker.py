"""A market maker: a two-sided ladder around the book's mid, requoted as the price moves,
with fills and position printed. It runs the same on V1, V2 and V3 wallets.

Run:
  python examples/market_maker.py                        embedded sandbox, V1 wallets, 6 rounds
  python examples/market_maker.py --exchange-version 2   embedded sandbox, V2 wallets
  python examples/market_maker.py --duration 30          rounds for 30 s instead of 6
  python examples/market_maker.py --base-url URL         a running sandbox or the live service

On the embedded sandbox the house takes part of a quote and moves its price every
round, and the bot first buys 30 USDC of inventory to sell. With ``--base-url`` the
keys come from ``CLOBKIT_API_KEY`` / ``CLOBKIT_API_SECRET`` (and ``CLOBKIT_CLOB_URL``
for the fee-rate query, default the base URL); nothing is bought, asks are quoted
only for shares already held, and the exchange version is the service's own
(``--exchange-version`` is then checked against it). These are real orders on a
live service: 10 shares a level, at most 100 USDC over the ladder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from decimal import ROUND_DOWN, ROUND_UP, Decimal
from typing import TYPE_CHECKING

from clobkit import AsyncClient
from clobkit.errors import OrderBookNotFound
from clobkit.mm import Quote, Quoter

if TYPE_CHECKING:
    from clobkit.sandbox import Sandbox

CENT = Decimal("0.01")
LEVELS = 3  # per side
SIZE = 10  # shares per level
ROUNDS = 6  # without --duration
INTERVAL = 1.0  # seconds between rounds on a service that moves by itself


async def pick_market(client: AsyncClient) -> tuple[str, Decimal]:
    """A market whose outcome-a token has a two-sided book, and the book's mid there."""
    async for event in client.iter_events(league="nba", limit=50):
        if event.ended or event.is_future:
            continue
        for market in await client.get_event_markets(event.id):
            try:
                book = await client.get_orderbook(market.token_id_a or "")
            except OrderBookNotFound:
                continue
            if book.best_bid is not None and book.best_ask is not None:
                return market.id, (book.best_bid + book.best_ask) / 2
    raise SystemExit("no market with a two-sided book")


def ladder(mid: Decimal, held: Decimal) -> list[Quote]:
    """Bids from 2 cents under the mid down, asks from 2 cents over it up (as many as
    the shares ``held`` cover). A mid may lie between ticks (0.455): each price is
    rounded onto the 0.01 grid away from the mid, never tighter than wanted."""
    bids = [
        Quote("BUY", (mid - (2 + k) * CENT).quantize(CENT, ROUND_DOWN), SIZE) for k in range(LEVELS)
    ]
    asks = [
        Quote("SELL", (mid + (2 + k) * CENT).quantize(CENT, ROUND_UP), SIZE)
        for k in range(min(LEVELS, int(held // SIZE)))
    ]
    return [q for q in bids + asks if CENT * 5 <= Decimal(q.price) <= 1 - CENT * 5]


def house_takes(sb: Sandbox, order_id: str, shares: int) -> None:
    """The sandbox's house takes ``shares`` of a resting quote; a quote filled meanwhile
    (the house's price walked through it) is left as it is."""
    from clobkit.sandbox import Rejected

    with contextlib.suppress(Rejected):
        sb.house_fill(order_id, shares)


def show(quotes: list[Quote]) -> str:
    bids = " ".join(str(q.price) for q in quotes if q.side == "BUY")
    asks = " ".join(str(q.price) for q in quotes if q.side == "SELL")
    return f"bids {bids or '-'} | asks {asks or '-'}"


async def run(client: AsyncClient, sb: Sandbox | None, args: argparse.Namespace) -> None:
    rng = random.Random(7)
    market_id, mid = await pick_market(client)
    if sb is not None:  # inventory to sell: a market BUY of 30 USDC of outcome a
        await client.place_order(market_id, side="BUY", outcome="a", amount=30)
    # the embedded sandbox's per-minute risk control is known: paced under it from the
    # start; a service's is learnt from its first refusal (the gate slows down then)
    pace = None if sb is None or sb.config.risk is None else sb.config.risk.per_minute
    async with Quoter(
        client, market_id, "a", max_position=300, max_notional=100, orders_per_minute=pace
    ) as q:
        if args.exchange_version is not None and q.exchange_version != args.exchange_version:
            raise SystemExit(
                f"the service's wallet is on exchange V{q.exchange_version}, "
                f"not V{args.exchange_version}"
            )
        print(
            f"market {market_id}, outcome a, exchange V{q.exchange_version}: "
            f"book {q.book}, holding {q.position} shares"
        )
        started = time.monotonic()
        round_no = 0
        while (
            round_no < ROUNDS
            if args.duration is None
            else time.monotonic() - started < args.duration
        ):
            round_no += 1
            mid = q.book.mid or mid
            quotes = ladder(mid, q.position)
            t = time.perf_counter()
            report = await q.requote(quotes)
            took = (time.perf_counter() - t) * 1000
            print(
                f"round {round_no}: mid {mid:.3f}  {show(quotes)}  -> placed "
                f"{len(report.placed)}, cancelled {len(report.cancelled)}, kept "
                f"{len(report.kept)} in {took:.1f} ms"
            )
            for quote, error in report.refused:  # the service's rate: the loop goes on
                print(f"   not placed: {quote.side} {quote.price}: {error}")
            if sb is not None:
                # someone takes part of one of our quotes (the sandbox's house does it)
                if q.open_orders:  # none while the service's rate holds every place back
                    taken = rng.choice(q.open_orders)
                    house_takes(sb, taken.id, rng.randint(2, 6))
                # the house moves its price; the book topic brings the new mid
                step = rng.choice((-3, -2, 2, 3)) * CENT
                target = min(max(mid + step, Decimal("0.15")), Decimal("0.85")).quantize(CENT)
                before = q.book.hash
                sb.set_price(market_id, target)
                for _ in range(100):
                    if q.book.hash != before and q.fills:
                        break
                    await asyncio.sleep(0.01)
            else:
                await asyncio.sleep(INTERVAL)
            while q.fills:
                fill = q.fills.popleft()
                print(f"   fill: {fill.side} {fill.shares} @ {fill.price}")
            print(f"   position {q.position} shares; mid now {q.book.mid}")
        await q.reconcile()
        print(f"open orders: {len(q.open_orders)}, position {q.position} shares")
    print("left the quoter: its orders are cancelled")


async def on_sandbox(sb: Sandbox, args: argparse.Namespace) -> None:
    user = sb.users[1]
    async with AsyncClient(
        sb.base_url, user.api_key, user.api_secret, clob_url=sb.clob_url, ws_url=sb.ws_url
    ) as client:
        await run(client, sb, args)
    problems = sb.engine.check_invariants()
    print("sandbox invariants:", problems if problems else "hold")


async def on_service(args: argparse.Namespace) -> None:
    async with AsyncClient(args.base_url) as client:  # keys from the environment
        await run(client, None, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--exchange-version",
        type=int,
        choices=(1, 2, 3),
        help="the embedded sandbox's wallets (default 1); with --base-url, the version "
        "the service must report",
    )
    parser.add_argument(
        "--duration", type=float, help=f"seconds of rounds (default: {ROUNDS} rounds)"
    )
    parser.add_argument(
        "--base-url", help="a running sandbox or the live service (keys from the environment)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.base_url:
        asyncio.run(on_service(args))
    else:
        from clobkit.sandbox import serve_in_thread  # the sandbox extra

        config = {"exchange_version": args.exchange_version or 1}  # the default limits
        with serve_in_thread(config) as sb:
            asyncio.run(on_sandbox(sb, args))
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
