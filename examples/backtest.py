"""A backtest: the market maker's Desk against a recorded day, replayed in the sandbox.

Run:
  python examples/backtest.py --synthetic-hours 24       make a day of 3 markets, then test on it
  python examples/backtest.py --recording DIR            a recording of clobkit record
  python examples/backtest.py --exchange-version 2       the bot on V2 wallets (1, 2 or 3)
  python examples/backtest.py --speed 60                 at most 60 recorded seconds a second

The sandbox serves the recording on a virtual clock moved by this program: every
``--interval`` recorded seconds it applies the updates that fell due (the recorded
books, with which the bot's resting orders trade by the sandbox's rules), then the
bot re-reads its orders (one listing for every market: ``Desk.reconcile``),
reads each market's book over REST and requotes every ladder with the real
client and ``Desk``, exactly as it would live. ``--speed X`` never lets the
clock run more than X times real time; 0 (the default) runs as fast as the bot
answers. The report (``--out``, default ``backtest-report/``): ``steps.csv`` (per
step and market: book, quotes, position; cash and mark-to-mid PnL), ``fills.csv``,
``summary.txt`` and, with matplotlib, ``pnl.png``. The same recording, sandbox
seed and interval give the same report at every speed. docs/backtesting.md.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
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
from clobkit._safe_files import atomic_output, unsafe_directory
from clobkit.errors import ValidationError
from clobkit.mm import Desk, Quote, Quoter
from clobkit.record import RecordedMarket, RecordingWriter

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
    at a time (random, ``seed``), a book of 5 levels a side every ``every`` seconds."""
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
            if rng.random() < 0.3:
                mids[k] = min(max(mids[k] + rng.choice((-1, 1)), 10), 90)
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
    q: Quoter, book: Any, mids: dict[str, Decimal]
) -> tuple[list[Quote], list[Any], dict[str, Any]]:
    """One market's round after the desk's reconcile: its new fills, the ladder wanted
    from its ``book`` (read over REST), and the step's row (before the requote)."""
    new_fills = list(q.fills)
    q.fills.clear()
    bid, ask = others_touch(book, q.open_orders)
    quotes: list[Quote] = []
    if bid is not None and ask is not None:
        mids[q.market_id] = (bid + ask) / 2
        quotes = ladder(mids[q.market_id], q.position, q.min_order_size)
    row = {
        "market": q.market_id[:8],
        "bid": bid or "",
        "ask": ask or "",
        "mid": mids.get(q.market_id, ""),
    }
    return quotes, new_fills, row


def open_desk(client: AsyncClient) -> Desk:
    """The bot's desk: one stream (orders only: books are read over REST, in step),
    no kill switch timers (the clock stops between steps), and a request budget
    past anything the bot sends (the replaying sandbox has no rate limit)."""
    return Desk(
        client,
        user_id=MAKER_ID,
        rate_limit_per_minute=10_000_000,
        heartbeat_timeout=None,
        stream_timeout=None,
        books=False,
    )


async def run_bot(
    client: AsyncClient,
    step: Callable[[int], Awaitable[dict[str, Any]]],
    interval_ms: int,
    speed: float,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Step the replay by ``interval_ms`` (``step(ms)`` answers its status; 0 only reads
    it) and requote every market until the recording ends; the step rows and the fills."""
    steps: list[dict[str, Any]] = []
    fills: list[dict[str, Any]] = []
    status = await step(0)
    async with open_desk(client) as desk:
        quoters = [desk.quoter(m, "a", max_notional=1000) for m in status["markets"]]
        await desk.open()
        wall0, virtual0 = time.monotonic(), status["elapsed_ms"]
        mids: dict[str, Decimal] = {}
        while not status["done"]:
            status = await step(interval_ms)
            if speed > 0:  # never faster than speed x real time
                virtual = (status["elapsed_ms"] - virtual0) / 1000
                ahead = virtual / speed - (time.monotonic() - wall0)
                if ahead > 0:
                    await asyncio.sleep(ahead)
            # the views made equal to the service's (every fill up to now) and the books
            # read at once: nothing moves on the service between steps but the bot's orders
            _, *books = await asyncio.gather(
                desk.reconcile(), *(client.get_orderbook(q.token_id) for q in quoters)
            )
            rounds = [read_market(q, book, mids) for q, book in zip(quoters, books, strict=True)]
            await desk.requote(
                {q: quotes for q, (quotes, _, _) in zip(quoters, rounds, strict=True)}
            )
            cash = steps[-1]["cash"] if steps else Decimal(0)
            t = status["elapsed_ms"] / 1000
            for q, (_, new_fills, row) in zip(quoters, rounds, strict=True):
                cash = book_fills(fills, new_fills, t, q.market_id, cash)
                live = q.open_orders
                row |= {"our_bid": _best(live, "BUY"), "our_ask": _best(live, "SELL")}
                steps.append({"t_s": t, **row, "position": q.position, "cash": cash})
            pnl = cash + sum((q.position * mids.get(q.market_id, 0) for q in quoters), Decimal(0))
            for row in steps[-len(quoters) :]:
                row["pnl"] = pnl
    return steps, fills


def book_fills(
    fills: list[dict[str, Any]], new: list[Any], t: float, market_id: str, cash: Decimal
) -> Decimal:
    """Append a market's new fills to ``fills``; the cash after them (USDC)."""
    for f in new:
        value = (f.shares * f.price).quantize(MICRO, ROUND_DOWN)
        cash += value if f.side == "SELL" else -value
        fills.append(
            {
                "t_s": t,
                "market": market_id[:8],
                "side": f.side,
                "price": f.price,
                "shares": f.shares,
            }
        )
    return cash


def write_report(
    out: Path, steps: list[dict[str, Any]], fills: list[dict[str, Any]], plot: bool
) -> str:
    """steps.csv, fills.csv, summary.txt (and pnl.png): the summary's text. Each file is
    written under a new name and renamed into place (never through a link planted in
    ``out``); a directory other users can write is warned about."""
    unsafe = unsafe_directory(out)
    if unsafe is not None:
        print(f"warning: writing the report into an unsafe directory: {unsafe}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows, fields in (
        ("steps.csv", steps, list(steps[0]) if steps else ["t_s"]),
        ("fills.csv", fills, ["t_s", "market", "side", "price", "shares"]),
    ):
        with atomic_output(out / name, "w") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
    last = steps[-1] if steps else {"pnl": 0, "cash": 0}
    bought = sum(f["shares"] for f in fills if f["side"] == "BUY")
    sold = sum(f["shares"] for f in fills if f["side"] == "SELL")
    pnls = [s["pnl"] for s in steps] or [Decimal(0)]
    summary = (
        f"steps {len({s['t_s'] for s in steps})}, markets {len({s['market'] for s in steps})}\n"
        f"fills {len(fills)}: bought {bought} shares, sold {sold}\n"
        f"cash {last['cash']} USDC, mark-to-mid PnL {last['pnl']} USDC "
        f"(min {min(pnls)}, max {max(pnls)})\n"
    )
    with atomic_output(out / "summary.txt", "w") as fh:
        fh.write(summary)
    if plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ModuleNotFoundError:
            print("no matplotlib: no pnl.png (pip install matplotlib)", file=sys.stderr)
            return summary
        times = sorted({s["t_s"] for s in steps})
        by_t = {s["t_s"]: float(s["pnl"]) for s in steps}
        fig, (ax, bx) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        ax.plot([t / 3600 for t in times], [by_t[t] for t in times])
        ax.set_ylabel("mark-to-mid PnL (USDC)")
        ax.grid(alpha=0.3)
        first = steps[0]["market"]  # quotes against the book, in the first market

        def series(key: str) -> tuple[list[float], list[float]]:
            rows = [s for s in steps if s["market"] == first and s[key] != ""]
            return [s["t_s"] / 3600 for s in rows], [float(s[key]) for s in rows]

        for key, style in (("bid", "C0-"), ("ask", "C3-"), ("our_bid", "C0:"), ("our_ask", "C3:")):
            bx.plot(*series(key), style, lw=0.8, label=key.replace("_", " "))
        bx.set_ylabel(f"price, market {first}")
        bx.set_xlabel("recorded hours")
        bx.legend(loc="upper right", fontsize=8, ncol=4)
        bx.grid(alpha=0.3)
        fig.tight_layout()
        with atomic_output(out / "pnl.png") as png:
            fig.savefig(png, format="png", dpi=100, metadata={"Software": None})
        plt.close(fig)
    return summary


def check_pace(interval: float, speed: float) -> None:
    """Refuse an ``interval`` (s) under 1 ms or not finite, a ``speed`` negative or not
    finite: a step under 1 ms moved the clock by 0 and the loop never ended, a negative
    one was refused by the sandbox and read back as a KeyError."""
    if not 0.001 <= interval < math.inf:
        raise ValidationError("interval", interval, "must be at least 0.001 s, and finite")
    if not 0 <= speed < math.inf:
        raise ValidationError("speed", speed, "must be 0 or a positive, finite number")


def backtest(
    recording: str | Path,
    out: str | Path,
    *,
    exchange_version: int = 1,
    speed: float = 0.0,
    interval: float = 60.0,
    sandbox_seed: int = 0,
    plot: bool = True,
) -> str:
    """Replay ``recording`` in a fresh sandbox (its own process, stepped through its admin
    route), run the bot against it, write the report; the summary's text. ``interval``:
    recorded seconds a step (at least 0.001); ``speed``: at most that many times real
    time (0: as fast as the bot answers)."""
    check_pace(interval, speed)
    config = {
        "seed": sandbox_seed,
        "exchange_version": exchange_version,
        "rate_limit_per_minute": None,
        "risk": {"per_minute": None, "daily": None, "monthly": None},
    }
    with tempfile.TemporaryDirectory() as tmp:
        config_file = Path(tmp) / "sandbox.json"
        config_file.write_text(json.dumps(config))
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "clobkit.sandbox",
                "--port",
                "0",
                "--config",
                str(config_file),
                "--replay",
                str(recording),
                "--step",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            first = server.stdout.readline()
            if not first.startswith("listening on "):
                raise SystemExit(f"the sandbox did not start: {first!r}")
            base_url = first.split()[-1]
            steps, fills = asyncio.run(session(base_url, int(interval * 1000), speed))
            problems = httpx.get(f"{base_url}/admin/invariants").json()["data"]["violations"]
            money = httpx.get(f"{base_url}/admin/users/{MAKER_ID}/balances").json()["data"]
            # the report's cash, summed from the fills the quoters saw, against the service's
            # (the admin route gives JSON numbers: 6 decimals read back through their text)
            cash = Decimal(str(money["cash"])) + Decimal(str(money["cash_reserved"]))
            held = (cash - 10_000).quantize(MICRO)
            reported = steps[-1]["cash"] if steps else Decimal(0)
            if held != reported:
                problems.append(f"the report's cash {reported} is not the service's {held}")
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(30)
    if problems:
        raise SystemExit(f"sandbox invariants broken: {problems}")
    return write_report(Path(out), steps, fills, plot)


async def session(
    base_url: str, interval_ms: int, speed: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The bot's session with the replaying sandbox at ``base_url`` (the default maker)."""
    ws_url = base_url.replace("http", "ws", 1) + "/api/ext/v1/ws"
    async with (
        AsyncClient(base_url, MAKER_KEY, MAKER_SECRET, ws_url=ws_url) as client,
        httpx.AsyncClient(base_url=base_url) as admin,
    ):

        async def step(ms: int) -> dict[str, Any]:
            if ms:
                answer = await admin.post("/admin/replay/step", json={"ms": ms})
            else:
                answer = await admin.get("/admin/replay")
            data: dict[str, Any] = answer.json()["data"]
            return data

        return await run_bot(client, step, interval_ms, speed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--recording", help="a directory written by clobkit record")
    source.add_argument(
        "--synthetic-hours", type=float, default=24.0, help="hours of a synthetic day (24)"
    )
    parser.add_argument("--markets", type=int, default=3, help="synthetic markets (3)")
    parser.add_argument("--seed", type=int, default=7, help="the synthetic day's seed (7)")
    parser.add_argument("--sandbox-seed", type=int, default=0, help="the sandbox's seed (0)")
    parser.add_argument("--exchange-version", type=int, choices=(1, 2, 3), default=1)
    parser.add_argument("--speed", type=float, default=0.0, help="at most X times real time")
    parser.add_argument("--interval", type=float, default=60.0, help="recorded s a step (60)")
    parser.add_argument("--out", default="backtest-report", help="report directory")
    parser.add_argument("--no-plot", action="store_true", help="no pnl.png")
    args = parser.parse_args()
    try:  # before a synthetic day is made
        check_pace(args.interval, args.speed)
    except ValidationError as exc:
        parser.error(f"--{exc.field}: {exc.reason} (got {exc.value})")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        recording = args.recording
        if recording is None:
            recording = synthetic_day(
                Path(tmp) / "day", markets=args.markets, hours=args.synthetic_hours, seed=args.seed
            )
            print(f"synthetic day: {args.markets} markets, {args.synthetic_hours:g} h")
        summary = backtest(
            recording,
            args.out,
            exchange_version=args.exchange_version,
            speed=args.speed,
            interval=args.interval,
            sandbox_seed=args.sandbox_seed,
            plot=not args.no_plot,
        )
    print(summary, end="")
    print(f"report in {args.out}/; done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
