"""A market maker on the embedded sandbox: a two-sided ladder around the book's mid,
requoted as the house moves the price, with fills and position printed.

Run: python examples/market_maker.py        (needs the sandbox extra; ends by itself)
"""

from __future__ import annotations

import asyncio
import random
import time
from decimal import Decimal

from clobkit import AsyncClient
from clobkit.errors import OrderBookNotFound
from clobkit.mm import Quote, Quoter
from clobkit.sandbox import Sandbox, serve_in_thread

CENT = Decimal("0.01")
LEVELS = 3  # per side
SIZE = 10  # shares per level
ROUNDS = 6


async def pick_market(client: AsyncClient) -> tuple[str, Decimal]:
    """A market whose outcome-a token has a two-sided book, and the house's mid there."""
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


def ladder(mid: Decimal) -> list[Quote]:
    """Bids from 2 cents under the mid down, asks from 2 cents over it up."""
    centre = mid.quantize(CENT)
    bids = [Quote("BUY", centre - (2 + k) * CENT, SIZE) for k in range(LEVELS)]
    asks = [Quote("SELL", centre + (2 + k) * CENT, SIZE) for k in range(LEVELS)]
    return [q for q in bids + asks if CENT * 5 <= Decimal(q.price) <= 1 - CENT * 5]


def show(quotes: list[Quote]) -> str:
    bids = " ".join(str(q.price) for q in quotes if q.side == "BUY")
    asks = " ".join(str(q.price) for q in quotes if q.side == "SELL")
    return f"bids {bids or '-'} | asks {asks or '-'}"


async def run(sb: Sandbox) -> None:
    user = sb.users[1]
    rng = random.Random(7)
    async with AsyncClient(
        sb.base_url, user.api_key, user.api_secret, clob_url=sb.clob_url, ws_url=sb.ws_url
    ) as client:
        market_id, mid = await pick_market(client)
        # inventory to sell: a market BUY of 30 USDC of outcome a
        await client.place_order(market_id, side="BUY", outcome="a", amount=30)
        async with Quoter(client, market_id, "a", max_position=300, max_notional=100) as q:
            print(f"market {market_id}, outcome a: book {q.book}, holding {q.position} shares")
            for round_no in range(1, ROUNDS + 1):
                mid = q.book.mid or mid
                quotes = ladder(mid)
                started = time.perf_counter()
                report = await q.requote(quotes)
                took = (time.perf_counter() - started) * 1000
                print(
                    f"round {round_no}: mid {mid:.3f}  {show(quotes)}  -> placed "
                    f"{len(report.placed)}, cancelled {len(report.cancelled)}, kept "
                    f"{len(report.kept)} in {took:.1f} ms"
                )
                # someone takes part of one of our quotes (the sandbox's house does it)
                taken = rng.choice(q.open_orders)
                sb.house_fill(taken.id, rng.randint(2, 6))
                # the house moves its price; the book topic brings the new mid
                step = rng.choice((-3, -2, 2, 3)) * CENT
                target = min(max(mid + step, Decimal("0.15")), Decimal("0.85")).quantize(CENT)
                before = q.book.hash
                sb.set_price(market_id, target)
                for _ in range(100):
                    if q.book.hash != before and q.fills:
                        break
                    await asyncio.sleep(0.01)
                while q.fills:
                    fill = q.fills.popleft()
                    print(f"   fill: {fill.side} {fill.shares} @ {fill.price}")
                print(f"   position {q.position} shares; house moved the mid to {target}")
            await q.reconcile()
            print(f"open orders: {len(q.open_orders)}, position {q.position} shares")
        print("left the quoter: its orders are cancelled")
    problems = sb.engine.check_invariants()
    print("sandbox invariants:", problems if problems else "hold")


def main() -> None:
    started = time.perf_counter()
    with serve_in_thread({"rate_limit_per_minute": None}) as sb:
        asyncio.run(run(sb))
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
