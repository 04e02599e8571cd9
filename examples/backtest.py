"""A backtest: the market maker's Desk against a recorded day, replayed in the sandbox.

Run:
  python examples/backtest.py --synthetic-hours 24     make a day of 3 markets, then test on it
  python examples/backtest.py --recording DIR          a recording of clobkit record
  python examples/backtest.py --base-url URL           a running clobkit sandbox --replay DIR --step
  python examples/backtest.py --exchange-version 2     the bot on V2 wallets (1, 2 or 3)
  python examples/backtest.py --interval 5             5 recorded seconds a step
  python examples/backtest.py --speed 60               at most 60 recorded seconds a second

With ``--recording`` (or a synthetic day) it starts its own sandbox process
(``--replay DIR --step``, no rate or risk limits); with ``--base-url`` it drives one
already running, as the sandbox's default user ``maker``. Every ``--interval``
recorded seconds (default: the recording's span over 240 steps, from 1 to 60 s) it
steps the replay's clock (the updates that fell due apply, and the bot's resting
orders trade with them), re-reads its orders (``Desk.reconcile``) and the books
over REST, and requotes a ladder 2 cents either side of each book's mid without its
own orders, with the real client and ``Desk``, exactly as it would live. After a
fill it also steps to 1, 10 and 60 s past it to read the mid there (markouts),
without requoting. ``--speed X`` never lets the clock run more than X times real
time; 0 (the default) runs as fast as the bot answers. The report (``--out``,
default ``backtest-report/``): ``summary.txt`` (per market: fills, volume,
inventory, PnL, max drawdown; markouts per side), ``steps.csv``, ``fills.csv``,
``markouts.csv`` and, with matplotlib, ``pnl.png`` (backtest_report.py). The same
recording, sandbox seed and interval give the same report at every speed.
docs/backtesting.md.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from decimal import ROUND_DOWN, ROUND_UP, Decimal
from pathlib import Path
from typing import Any

import httpx

from clobkit import AsyncClient
from clobkit.core.spec import RATE_LIMIT_PER_MINUTE
from clobkit.errors import OrderBookNotFound, ValidationError
from clobkit.mm import Desk, Quote, Quoter
from clobkit.models import Orderbook
from clobkit.record import RecordedMarket, RecordingWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its report, beside it
from backtest_report import HORIZONS, Run, write_report

CENT = Decimal("0.01")
MICRO = Decimal("0.000001")
LEVELS = 3  # per side
SIZE = 10  # shares per level
MAX_POSITION = 100  # shares: no more bids past this holding
MAKER_KEY, MAKER_SECRET = "sandbox-maker-key", "sandbox-maker-secret"  # a default user
MAKER_ID = "00000000-0000-4000-8000-000000000002"  # its id (10,000 USDC at the start)
DAY_START_NS = 1_764_547_200 * 10**9  # 2025-12-01T00:00:00Z, the synthetic day's start


# -- a synthetic day ---------------------------------------------------------------------------


def synthetic_day(
    directory: str | Path,
    *,
    markets: int = 3,
    hours: float = 24,
    every: float = 10.0,
    seed: int = 7,
) -> Path:
    """Write a recording of ``markets`` of the sandbox (seed 0): each one's mid walks a cent
    at a time, now and then 2 to 4 (random, ``seed``), a book of 5 levels a side every
    ``every`` seconds."""
    from clobkit.sandbox import Engine

    engine = Engine({"seed": 0})
    chosen = [m for m in engine.markets.values() if m.mid is not None and m.active][:markets]
    recorded = [
        RecordedMarket(m.id, m.fx.event_id, m.fx.question, m.fx.token_id_a, m.fx.token_id_b)
        for m in chosen
    ]
    writer = RecordingWriter(directory, recorded, outcomes="a", rotate_seconds=1e9)
    writer.write_markets()
    rng = random.Random(seed)
    mids = [rng.randint(35, 65) for _ in chosen]
    steps = int(hours * 3600 / every)
    for i in range(steps):
        at = DAY_START_NS + int(i * every * 1e9)
        for k, m in enumerate(recorded):
            if rng.random() < 0.3:  # a cent, or now and then a jump of 2 to 4 (news)
                size = rng.randint(2, 4) if rng.random() < 0.1 else 1
                mids[k] = min(max(mids[k] + rng.choice((-1, 1)) * size, 10), 90)
            mid = mids[k]
            depth = [Decimal(rng.randint(200, 1500)) for _ in range(10)]
            bids = [
                {"price": str(CENT * (mid - j)), "size": str(depth[j - 1])} for j in range(1, 6)
            ]
            asks = [
                {"price": str(CENT * (mid + j)), "size": str(depth[j + 4])} for j in range(1, 6)
            ]
            writer.add("book", m.token_id_a, {"bids": bids, "asks": asks}, at)

    async def flush() -> None:
        await writer.flush()

    asyncio.run(flush())
    return Path(directory)


# -- the bot ------------------------------------------------------------------------------------


def ladder(mid: Decimal, held: Decimal, least: Decimal | None = None) -> list[Quote]:
    """Bids from 2 cents under the mid down (while under MAX_POSITION), asks from 2 cents
    over it up for the shares held; prices on the grid away from the mid; none worth
    less than ``least`` USDC (the market's minimum order)."""
    bids = []
    if held < MAX_POSITION:
        bids = [
            Quote("BUY", (mid - (2 + k) * CENT).quantize(CENT, ROUND_DOWN), SIZE)
            for k in range(LEVELS)
        ]
    asks = [
        Quote("SELL", (mid + (2 + k) * CENT).quantize(CENT, ROUND_UP), SIZE)
        for k in range(min(LEVELS, int(held // SIZE)))
    ]
    return [
        q
        for q in bids + asks
        if CENT <= Decimal(q.price) <= 1 - CENT and Decimal(q.price) * SIZE >= (least or 0)
    ]


def others_touch(book: Any, own: list[Any]) -> tuple[Decimal | None, Decimal | None]:
    """The best bid and ask of the book without the bot's own orders (sizes are USDC)."""
    mine: dict[tuple[str, Decimal], Decimal] = {}
    for o in own:
        left = (o.original_size or 0) - (o.size_matched or 0)
        price = o.limit_price or o.clob_price or Decimal(0)
        key = (o.side, price)
        mine[key] = mine.get(key, Decimal(0)) + left * price
    bid = next((lv.price for lv in book.bids if lv.size > mine.get(("BUY", lv.price), 0)), None)
    ask = next((lv.price for lv in book.asks if lv.size > mine.get(("SELL", lv.price), 0)), None)
    return bid, ask


def _best(orders: list[Any], side: str) -> str:
    prices = [o.limit_price or o.clob_price for o in orders if o.side == side]
    if not prices:
        return ""
    return str(max(prices) if side == "BUY" else min(prices))


def read_market(
    q: Quoter, book: Orderbook | None, mids: dict[str, Decimal]
) -> tuple[list[Quote], list[Any], dict[str, Any]]:
    """One market's round after the desk's reconcile: its new fills, the ladder wanted
    from its ``book`` (read over REST; ``None``: the market has no book now, nothing is
    quoted), and the step's row (before the requote)."""
    new_fills = list(q.fills)
    q.fills.clear()
    bid, ask = (None, None) if book is None else others_touch(book, q.open_orders)
    quotes: list[Quote] = []
    if bid is not None and ask is not None and book is not None:
        mids[q.market_id] = (bid + ask) / 2
        least = book.min_order_size or q.min_order_size  # the book read says the minimum
        quotes = ladder(mids[q.market_id], q.position, least)
    row = {
        "market": q.market_id[:8],
        "bid": bid or "",
        "ask": ask or "",
        "mid": mids.get(q.market_id, ""),
    }
    return quotes, new_fills, row


def open_desk(client: AsyncClient, unlimited: bool) -> Desk:
    """The bot's desk: one stream (orders only: books are read over REST, in step), no
    kill switch timers (the clock stops between steps), and a request budget past
    anything the bot sends on its own sandbox (``unlimited``: no rate limit there), the
    API's default rate elsewhere (a 429 or a risk refusal teaches it a lower one)."""
    return Desk(
        client,
        user_id=MAKER_ID,
        rate_limit_per_minute=10_000_000 if unlimited else RATE_LIMIT_PER_MINUTE,
        heartbeat_timeout=None,
        stream_timeout=None,
        books=False,
    )


async def read_book(client: AsyncClient, token_id: str) -> Orderbook | None:
    """A token's book, ``None`` while it has none (a market not yet or no more recorded)."""
    try:
        return await client.get_orderbook(token_id)
    except OrderBookNotFound:
        return None


class Bot:
    """The bot's session with a replaying sandbox: steps of ``interval_ms`` (and the
    markouts' steps after each fill), reads, requotes, and what it saw (``run``)."""

    def __init__(
        self,
        client: AsyncClient,
        step: Callable[[int], Awaitable[dict[str, Any]]],
        interval_ms: int,
        speed: float,
    ) -> None:
        self.client = client
        self.step = step
        self.interval_ms = interval_ms
        self.speed = speed
        self.run = Run(interval_s=interval_ms / 1000)
        self.mids: dict[str, Decimal] = {}  # the last mid of each market (full id)
        self.cash: dict[str, Decimal] = {}  # each market's cash (full id)
        self.samples: list[int] = []  # elapsed ms where a markout reads the mid (a heap)

    async def go(self, unlimited: bool) -> Run:
        """Step until the replay is done; what the bot saw."""
        status = await self.step(0)
        async with open_desk(self.client, unlimited) as desk:
            quoters = [desk.quoter(m, "a", max_notional=1000) for m in status["markets"]]
            await desk.open()
            for q in quoters:
                self.run.names[q.market_id[:8]] = (q.market.question if q.market else "") or ""
                self.cash[q.market_id] = Decimal(0)
            wall0, virtual0 = time.monotonic(), status["elapsed_ms"]
            regular = virtual0 + self.interval_ms
            while not status["done"]:
                target = min(regular, self.samples[0]) if self.samples else regular
                status = await self.step(max(target - status["elapsed_ms"], 1))
                elapsed = status["elapsed_ms"]
                while self.samples and self.samples[0] <= elapsed:
                    heapq.heappop(self.samples)
                if self.speed > 0:  # never faster than speed x real time
                    ahead = (elapsed - virtual0) / 1000 / self.speed - (time.monotonic() - wall0)
                    if ahead > 0:
                        await asyncio.sleep(ahead)
                due = elapsed >= regular or status["done"]
                if due:
                    regular = elapsed + self.interval_ms
                await self.round(desk, quoters, elapsed / 1000, due)
        return self.run

    async def round(self, desk: Desk, quoters: list[Quoter], t: float, requote: bool) -> None:
        """One step's work: the views made equal to the service's (every fill up to now)
        and the books read at once (nothing moves on the service between steps but the
        bot's orders); the fills booked; on a regular step the requote and its rows."""
        _, *books = await asyncio.gather(
            desk.reconcile(), *(read_book(self.client, q.token_id) for q in quoters)
        )
        rounds = [read_market(q, b, self.mids) for q, b in zip(quoters, books, strict=True)]
        for q, (_, new_fills, _) in zip(quoters, rounds, strict=True):
            self.book_fills(q.market_id, new_fills, t)
            if q.market_id in self.mids:
                self.run.mids.setdefault(q.market_id[:8], []).append((t, self.mids[q.market_id]))
        if not requote:
            return
        reports = await desk.requote(
            {q: quotes for q, (quotes, _, _) in zip(quoters, rounds, strict=True)}
        )
        self.run.refused += sum(len(r.refused) for r in reports.values())
        for q, (_, _, row) in zip(quoters, rounds, strict=True):
            live = q.open_orders
            mid = self.mids.get(q.market_id, Decimal(0))
            row |= {
                "t_s": t,
                "our_bid": _best(live, "BUY"),
                "our_ask": _best(live, "SELL"),
                "position": q.position,
                "cash": self.cash[q.market_id],
                "pnl": self.cash[q.market_id] + q.position * mid,
            }
            self.run.steps.append(row)

    def book_fills(self, market_id: str, new: list[Any], t: float) -> None:
        """A market's new fills: into the run, its cash, and a markout step after each."""
        for f in new:
            value = (f.shares * f.price).quantize(MICRO, ROUND_DOWN)
            self.cash[market_id] += value if f.side == "SELL" else -value
            self.run.fills.append(
                {
                    "t_s": t,
                    "market": market_id[:8],
                    "side": f.side,
                    "price": f.price,
                    "shares": f.shares,
                    "value": value,
                }
            )
            for horizon in HORIZONS:
                at = round(t * 1000) + horizon * 1000
                if at not in self.samples:
                    heapq.heappush(self.samples, at)


def check_pace(interval: float | None, speed: float) -> None:
    """Refuse an ``interval`` (s) under 1 ms or not finite, a ``speed`` negative or not
    finite: a step under 1 ms moved the clock by 0 and the loop never ended, a negative
    one was refused by the sandbox and read back as a KeyError."""
    if interval is not None and not 0.001 <= interval < math.inf:
        raise ValidationError("interval", interval, "must be at least 0.001 s, and finite")
    if not 0 <= speed < math.inf:
        raise ValidationError("speed", speed, "must be 0 or a positive, finite number")


def default_interval(status: dict[str, Any]) -> int:
    """The step (ms) when none is given: what is left of the recording over 240 steps,
    a whole number of seconds from 1 to 60 (a minute's recording: 60 steps of 1 s; a
    day's: 1,440 of 60 s)."""
    left_s = (status["stop_ms"] - status["now_ms"]) / 1000
    return int(min(max(round(left_s / 240), 1), 60)) * 1000


class Refused(Exception):
    """What the replaying sandbox at a URL cannot do for a backtest (said in one line)."""


def drive(
    base_url: str,
    out: str | Path,
    *,
    interval: float | None = None,
    speed: float = 0.0,
    plot: bool = True,
    unlimited: bool = False,
) -> str:
    """Run the bot against the replaying sandbox at ``base_url`` (``--replay DIR
    --step``), write the report to ``out``; the summary's text. ``interval``: recorded
    seconds a step (``None``: from the recording's span); ``speed``: at most that many
    times real time (0: as fast as the bot answers)."""
    check_pace(interval, speed)
    with httpx.Client(base_url=base_url, timeout=30) as admin:
        status = admin.get("/admin/replay").json()
        if not status.get("success", True) or "data" not in status:
            raise Refused(f"{base_url} serves no replay: start clobkit sandbox --replay DIR --step")
        data = status["data"]
        if data["running"]:
            raise Refused(f"{base_url}'s replay runs at a speed: start it with --step")
        if data["done"]:
            raise Refused(f"{base_url}'s replay is done: start the sandbox again")
        interval_ms = default_interval(data) if interval is None else int(interval * 1000)
        before = _cash(admin)
        run = asyncio.run(session(base_url, interval_ms, speed, unlimited))
        problems = admin.get("/admin/invariants").json()["data"]["violations"]
        moved = _cash(admin) - before
    if moved != run.cash:
        problems.append(f"the report's cash {run.cash} is not the service's {moved}")
    if problems:
        raise Refused(f"sandbox invariants broken: {problems}")
    return write_report(Path(out), run, plot)


def _cash(admin: httpx.Client) -> Decimal:
    """The maker's cash, reserved included (the admin route's JSON numbers read back
    through their text: 6 decimals)."""
    money = admin.get(f"/admin/users/{MAKER_ID}/balances").json()["data"]
    return (Decimal(str(money["cash"])) + Decimal(str(money["cash_reserved"]))).quantize(MICRO)


async def session(base_url: str, interval_ms: int, speed: float, unlimited: bool) -> Run:
    """The bot's session with the replaying sandbox at ``base_url`` (the default maker)."""
    ws_url = base_url.replace("http", "ws", 1) + "/api/ext/v1/ws"
    async with (
        AsyncClient(base_url, MAKER_KEY, MAKER_SECRET, ws_url=ws_url) as client,
        httpx.AsyncClient(base_url=base_url, timeout=30) as admin,
    ):

        async def step(ms: int) -> dict[str, Any]:
            if ms:
                answer = await admin.post("/admin/replay/step", json={"ms": ms})
            else:
                answer = await admin.get("/admin/replay")
            data: dict[str, Any] = answer.json()["data"]
            return data

        return await Bot(client, step, interval_ms, speed).go(unlimited)


def backtest(
    recording: str | Path,
    out: str | Path,
    *,
    exchange_version: int = 1,
    speed: float = 0.0,
    interval: float | None = None,
    sandbox_seed: int = 0,
    plot: bool = True,
) -> str:
    """Replay ``recording`` in a fresh sandbox (its own process, stepped through its admin
    route, no rate or risk limits, its house prices still), run the bot against it, write
    the report; the summary's text (``drive``)."""
    check_pace(interval, speed)
    config = {
        "seed": sandbox_seed,
        "exchange_version": exchange_version,
        "rate_limit_per_minute": None,
        "risk": {"per_minute": None, "daily": None, "monthly": None},
        "walk": None,
    }
    with tempfile.TemporaryDirectory() as tmp:
        config_file = Path(tmp) / "sandbox.json"
        config_file.write_text(json.dumps(config))
        command = [sys.executable, "-m", "clobkit.sandbox", "--port", "0"]
        command += ["--config", str(config_file), "--replay", str(recording), "--step"]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            first = server.stdout.readline()
            if not first.startswith("listening on "):
                raise Refused(f"the sandbox did not start: {first!r}")
            base_url = first.split()[-1]
            return drive(base_url, out, interval=interval, speed=speed, plot=plot, unlimited=True)
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(30)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--recording", help="a directory written by clobkit record")
    source.add_argument(
        "--synthetic-hours", type=float, default=24.0, help="hours of a synthetic day (24)"
    )
    source.add_argument(
        "--base-url", help="a running clobkit sandbox --replay DIR --step (its maker user)"
    )
    parser.add_argument("--markets", type=int, default=3, help="synthetic markets (3)")
    parser.add_argument("--seed", type=int, default=7, help="the synthetic day's seed (7)")
    parser.add_argument("--sandbox-seed", type=int, default=0, help="the sandbox's seed (0)")
    parser.add_argument("--exchange-version", type=int, choices=(1, 2, 3), default=1)
    parser.add_argument("--speed", type=float, default=0.0, help="at most X times real time")
    parser.add_argument(
        "--interval", type=float, help="recorded s a step (default: from the recording's span)"
    )
    parser.add_argument("--out", default="backtest-report", help="report directory")
    parser.add_argument("--no-plot", action="store_true", help="no pnl.png")
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    try:  # before a synthetic day is made
        check_pace(args.interval, args.speed)
    except ValidationError as exc:
        parser.error(f"--{exc.field}: {exc.reason} (got {exc.value})")
    if args.base_url and "--exchange-version" in sys.argv[1:]:
        parser.error("--exchange-version: the running sandbox's own (its --config)")
    started = time.perf_counter()
    try:
        summary = run(args)
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(summary, end="")
    print(f"report in {args.out}{os.sep}; done in {time.perf_counter() - started:.1f} s")


def run(args: argparse.Namespace) -> str:
    """The backtest the options ask for; its summary."""
    plot = not args.no_plot
    if args.base_url:
        return drive(args.base_url, args.out, interval=args.interval, speed=args.speed, plot=plot)
    with tempfile.TemporaryDirectory() as tmp:
        recording = args.recording
        if recording is None:
            recording = synthetic_day(
                Path(tmp) / "day", markets=args.markets, hours=args.synthetic_hours, seed=args.seed
            )
            print(f"synthetic day: {args.markets} markets, {args.synthetic_hours:g} h")
        return backtest(
            recording,
            args.out,
            exchange_version=args.exchange_version,
            speed=args.speed,
            interval=args.interval,
            sandbox_seed=args.sandbox_seed,
            plot=plot,
        )


if __name__ == "__main__":
    main()
