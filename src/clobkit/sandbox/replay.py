"""Replay a recording (``clobkit record``) in the sandbox on a virtual clock.

The replayed markets' liquidity is the recording's: at each recorded time the
house's quotes of a market become the recorded book of its outcome-a token
(token b's rows mirrored where a market has no token-a rows), one house
order per level, so the book the sandbox publishes is the recorded one plus
its users' orders, and users trade with it by the sandbox's own rules
(price-time priority, the maker's price). The house's own ladder is off for
those markets.

Between two recorded updates the book changes only by trading: a user's
order that takes recorded liquidity reduces (or removes) that house level
until the next recorded update, which puts the recorded sizes back (the
recording cannot know of the trade). A level whose recorded size changes
keeps its place in the queue (the house stays ahead of users who joined the
price later); a new recorded level joins behind the users resting there, and
one that crosses a user's resting order trades with it at the user's price
(the market moved through the quote). Prices are the sandbox's cent grid: an
off-grid recorded price is moved away from the touch (bids down, asks up)
and counted in ``snapped``.

The virtual clock is the recording's receive time (ms). ``run`` drives it at
``speed`` times real time on the server's loop; ``advance_to`` / ``step``
(and ``POST /admin/replay/step``) move it by hand, for deterministic tests
and backtests. Each update is its own engine operation, and on the loop each
is published before the next is applied.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from concurrent.futures import Future
from datetime import datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import TYPE_CHECKING, NamedTuple

from clobkit._spec import CANCELLED, LIVE
from clobkit.errors import ValidationError
from clobkit.record import GAP, iter_rows, read_markets

from .engine import Engine
from .state import ASK, BID, BUY, GTC, HOUSE, UNIT, MarketState, Order

if TYPE_CHECKING:
    from .server import Sandbox

__all__ = ["Replay", "ReplayUpdate", "attach", "parse_time"]

CENT = Decimal("0.01")


class ReplayUpdate(NamedTuple):
    """One recorded book of a market, in the engine's terms: A-space cents -> share units
    (a level's recorded size is USDC)."""

    at_ms: int  # virtual (recorded receive) time
    market_id: str
    bids: dict[int, int]
    asks: dict[int, int]


def parse_time(value: str, origin_ms: int) -> int:
    """A time of the recording (ms): seconds from its start (``90``, ``+90``), or an ISO
    8601 time (``2026-11-26T04:00:00Z``)."""
    text = value.strip()
    try:
        return origin_ms + int(Decimal(text.lstrip("+")) * 1000)
    except InvalidOperation:
        pass
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(
            "time", value, "must be seconds from the recording's start or an ISO 8601 time"
        ) from None
    if stamp.tzinfo is None:
        raise ValidationError("time", value, "an ISO time must name its zone (Z, +00:00)")
    return int(stamp.timestamp() * 1000)


def _side(levels: Iterable[tuple[str, str]], bid: bool, mirror: bool) -> tuple[dict[int, int], int]:
    """Recorded levels as A-space cents -> share units, and how many were snapped.

    ``bid``: the levels are bids of their own token (an off-grid price moves down);
    ``mirror``: they are token b's, whose price p is 1 - p in A-space."""
    out: dict[int, int] = {}
    snapped = 0
    for price_text, size_text in levels:
        try:
            price, size = Decimal(price_text), Decimal(size_text)
        except InvalidOperation:
            snapped += 1
            continue
        cents = int((price / CENT).to_integral_value(ROUND_FLOOR if bid else ROUND_CEILING))
        if cents * CENT != price:
            snapped += 1
        if not 1 <= cents <= 99:
            continue
        # a level's size is USDC, floor(shares * price) in units: the fewest shares
        # showing that size give the same size back
        usdc = int(size * UNIT)
        shares = -(-usdc * 100 // cents)
        if mirror:
            cents = 100 - cents
        if shares > 0:
            out[cents] = out.get(cents, 0) + shares
    return out, snapped


class Replay:
    """A recording served by one sandbox's engine on a virtual clock (see the module doc).

    ``Replay(engine, "rec/", start="60", end="3600")`` takes over the recorded
    markets (which must be markets of this sandbox: record a sandbox with the
    same ``seed``), and shows the last book recorded at or before ``start``.
    """

    def __init__(
        self,
        engine: Engine,
        directory: str | os.PathLike[str],
        *,
        start: str | None = None,
        end: str | None = None,
    ) -> None:
        self.engine = engine
        self.directory = str(directory)
        markets = read_markets(directory)
        unknown = [m.market_id for m in markets if m.market_id not in engine.markets]
        if unknown:
            raise ValidationError(
                "recording",
                self.directory,
                f"market {unknown[0]} is not one of this sandbox's markets (replay serves "
                "the sandbox's own markets: record a sandbox with the same seed)",
            )
        token_a = {m.token_id_a: m.market_id for m in markets}
        token_b = {m.token_id_b: m.market_id for m in markets}
        rows = [r for r in iter_rows(directory) if r.kind != GAP]
        with_a = {token_a[r.token_id] for r in rows if r.token_id in token_a}
        self.snapped = 0
        updates: list[ReplayUpdate] = []
        for r in rows:
            mirror = r.token_id in token_b and r.token_id not in token_a
            market_id = (token_b if mirror else token_a).get(r.token_id or "")
            if market_id is None or (mirror and market_id in with_a):
                continue  # another token's row, or token b where token a was recorded
            bids, n1 = _side(r.asks if mirror else r.bids, bid=not mirror, mirror=mirror)
            asks, n2 = _side(r.bids if mirror else r.asks, bid=mirror, mirror=mirror)
            self.snapped += n1 + n2
            updates.append(ReplayUpdate(r.recv_ns // 1_000_000, market_id, bids, asks))
        updates.sort(key=lambda u: u.at_ms)  # stable: the order received within a ms
        self.updates = updates
        self.market_ids = sorted({m.market_id for m in markets})
        origin = updates[0].at_ms if updates else 0
        #: The recording's first and last times (ms).
        self.first_ms, self.last_ms = origin, updates[-1].at_ms if updates else 0
        self.start_ms = origin if start is None else parse_time(start, origin)
        self.end_ms = self.last_ms if end is None else parse_time(end, origin)
        if self.end_ms < self.start_ms:
            raise ValidationError("end", end, "must not lie before start")
        self.index = 0  # the next update to apply
        self.now_ms = self.start_ms  # the virtual clock
        self.crossed = 0  # recorded asks at or under the recorded best bid, left out
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once serving
        self.running = False  # run() drives the clock (then nothing else may move it)
        with engine._op() as now:
            for market_id in self.market_ids:
                market = engine.markets[market_id]
                market.replayed = True  # house._requote leaves it to us
                for quote in list(market.house_quotes.values()):
                    engine._finish(quote, CANCELLED, now)
                engine._touch(market, now)
        last: dict[str, ReplayUpdate] = {}
        while self.index < len(updates) and updates[self.index].at_ms <= self.start_ms:
            last[updates[self.index].market_id] = updates[self.index]
            self.index += 1
        for update in sorted(last.values(), key=lambda u: u.at_ms):
            self._apply(update)

    def __repr__(self) -> str:
        return (
            f"Replay({self.directory!r}, at {self.now_ms - self.first_ms} ms, "
            f"{self.index}/{len(self.updates)} updates)"
        )

    @property
    def done(self) -> bool:
        """True once every update up to ``end`` was applied."""
        return self.index >= len(self.updates) or self.updates[self.index].at_ms > self.end_ms

    def next_ms(self) -> int | None:
        """The time of the next update to apply (None when done)."""
        return None if self.done else self.updates[self.index].at_ms

    # -- moving the clock ----------------------------------------------------------------------

    def _apply(self, update: ReplayUpdate) -> None:
        engine = self.engine
        with engine._op() as now:
            market = engine.markets[update.market_id]
            bids, asks = update.bids, update.asks
            if bids and asks and min(asks) <= max(bids):
                top = max(bids)
                self.crossed += sum(1 for p in asks if p <= top)
                asks = {p: n for p, n in asks.items() if p > top}
            _impose(engine, market, bids, asks, now)

    def _due(self, to_ms: int) -> ReplayUpdate | None:
        if self.done or self.updates[self.index].at_ms > to_ms:
            return None
        update = self.updates[self.index]
        self.index += 1
        return update

    def advance_to(self, to_ms: int) -> int:
        """Apply every update up to ``to_ms`` (virtual ms; at most ``end``) in this thread;
        the number applied. Off the server's loop, books in between may reach the stream
        merged; ``advance`` publishes each one."""
        count = 0
        while (update := self._due(min(to_ms, self.end_ms))) is not None:
            self._apply(update)
            count += 1
        self.now_ms = max(self.now_ms, min(to_ms, self.end_ms))
        return count

    async def advance(self, to_ms: int) -> int:
        """``advance_to`` on the server's loop, each update published before the next."""
        count = 0
        while (update := self._due(min(to_ms, self.end_ms))) is not None:
            self._apply(update)
            count += 1
            await asyncio.sleep(0)  # the hub sends this book before the next is applied
        self.now_ms = max(self.now_ms, min(to_ms, self.end_ms))
        return count

    def status(self) -> dict[str, object]:
        """Where the clock stands: virtual ms (and from the start), updates applied, done."""
        return {
            "now_ms": self.now_ms,
            "elapsed_ms": self.now_ms - self.first_ms,
            "next_ms": self.next_ms(),
            "applied": self.index,
            "updates": len(self.updates),
            "done": self.done,
            "running": self.running,
            "markets": self.market_ids,
        }

    def step(self, *, updates: int | None = None, ms: int | None = None) -> int:
        """Advance by ``ms`` of virtual time, or to the next ``updates`` update times (all
        updates of the last of those times included); from any thread. The number applied."""
        target = self.target(updates=updates, ms=ms)
        loop = self.loop
        if loop is not None and loop.is_running():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                return asyncio.run_coroutine_threadsafe(self.advance(target), loop).result()
        return self.advance_to(target)

    def target(self, *, updates: object = None, ms: object = None) -> int:
        """The virtual time (ms) that ``step(updates=..., ms=...)`` moves the clock to."""
        if (updates is None) == (ms is None):
            raise ValidationError("step", (updates, ms), "give either updates or ms")
        if ms is not None:
            if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
                raise ValidationError("ms", ms, "must be a non-negative int")
            return self.now_ms + ms
        if isinstance(updates, bool) or not isinstance(updates, int) or updates < 1:
            raise ValidationError("updates", updates, "must be a positive int")
        times = sorted({u.at_ms for u in self.updates[self.index : self.index + updates]})
        return times[-1] if times else self.end_ms

    async def run(self, speed: float) -> None:
        """Drive the clock at ``speed`` times real time until ``end`` (on the server's loop)."""
        if not speed > 0:
            raise ValidationError("speed", speed, "must be positive")
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.running = True
        try:
            wall0, virtual0 = loop.time(), self.now_ms
            while not self.done:
                due = self.updates[self.index].at_ms
                wait = wall0 + (due - virtual0) / 1000 / speed - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self.advance(due)
            self.now_ms = self.end_ms
        finally:
            self.running = False


def attach(sandbox: Sandbox, replay: Replay, speed: float | None = None) -> Future[None] | None:
    """Serve ``replay`` from a started ``sandbox`` (its admin routes step it); with
    ``speed`` its clock runs on the server's loop (the future of that run)."""
    st = sandbox.app.state.sandbox
    loop = st.hub.loop
    if loop is None:
        raise RuntimeError("attach a replay to a started sandbox")
    st.replay = replay
    replay.loop = loop
    if speed is None:
        return None
    if not speed > 0:
        raise ValidationError("speed", speed, "must be positive")
    return asyncio.run_coroutine_threadsafe(replay.run(speed), loop)


def _impose(
    engine: Engine, market: MarketState, bids: dict[int, int], asks: dict[int, int], now: int
) -> None:
    """Make the house's quotes of ``market`` the recorded levels (module doc: the rules)."""
    quotes = market.house_quotes
    for (side, price), old in list(quotes.items()):
        if price not in (bids if side == BID else asks):
            engine._finish(old, CANCELLED, now)
    for side, levels in ((BID, bids), (ASK, asks)):
        for price in sorted(levels, reverse=side == BID):  # best first
            units = levels[price]
            kept = quotes.get((side, price))
            if kept is not None:
                if kept.open_shares != units:
                    kept.size = kept.matched + units  # keeps its place in the queue
                    engine._touch(market, now)
                continue
            quote = Order(
                id=f"house-{engine._next_seq()}",
                user_id=HOUSE,
                market=market,
                outcome="a" if side == BID else "b",  # the house only buys
                side=BUY,
                order_type=GTC,
                limit_cents=price if side == BID else 100 - price,
                size=units,
                seq=engine._seq,
                source="house",
                status=LIVE,
                created_ms=now,
                updated_ms=now,
            )
            quotes[(side, price)] = quote
            engine.open_orders[quote.id] = quote
            engine._execute(quote, now)
    best_bid, best_ask = max(bids, default=None), min(asks, default=None)
    market.mid = None if best_bid is None or best_ask is None else (best_bid + best_ask) // 2
    engine._touch(market, now)
