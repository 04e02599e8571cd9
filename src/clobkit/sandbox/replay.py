"""Replay a recording (``clobkit record``) in the sandbox on a virtual clock.

At each recorded time the house's quotes of a replayed market become the recorded book
of its outcome-a token (token b's rows mirrored where it has no token-a rows), one house
order per level; the house's own ladder is off for it. Users trade with that liquidity
by the sandbox's rules (price-time priority, the maker's price): a trade holds until the
next recorded update puts the recorded sizes back; a level whose recorded size changes
keeps its place in the queue, a new one joins behind the users resting at its price and
trades with a resting order it crosses, at that order's price (the market moved through
the quote). An off-grid price is moved away from the touch (bids down, asks up) and
counted in ``snapped``.

The rows are read in arrival order (``recv_ns``, then ``seq``: after a snapshot, books
that arrived during its REST reads are written after it), and a market's book whose
service time is older than the last one taken is left out and counted in ``stale``
(the exchange never goes back in time; a row without one, an empty snapshot, is taken).
A ``gap`` row (a reconnect) starts the comparison afresh: a service that restarted may
have restarted its clock, and its books must not all read as stale.

The virtual clock is the recording's arrival time (ms). ``run`` drives it at ``speed``
times real time on the server's loop up to ``end``, or the last update before it;
``advance_to`` / ``step`` (and ``POST /admin/replay/step``) move it by hand. Each update
is its own engine operation, and on the loop each is published before the next is
applied. One replay drives a sandbox: ``attach`` stops the one attached before.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from datetime import datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from clobkit._spec import CANCELLED, LIVE
from clobkit.errors import ValidationError
from clobkit.record import GAP, BookRow, RecordedMarket, iter_rows, read_events, read_markets

from .engine import Engine
from .replay_markets import canonical, serve_markets
from .state import ASK, BID, BUY, GTC, HOUSE, UNIT, MarketState, Order

if TYPE_CHECKING:
    from .server import Sandbox

__all__ = ["Replay", "ReplayUpdate", "attach", "parse_time", "serve_markets"]

CENT = Decimal("0.01")
_T = TypeVar("_T")


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
        seconds = Decimal(text.lstrip("+"))
    except InvalidOperation:
        pass
    else:
        if not seconds.is_finite():  # NaN, Infinity: no time
            raise ValidationError("time", value, "must be a finite number of seconds")
        return origin_ms + int(seconds * 1000)
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
        except (InvalidOperation, TypeError, ValueError):  # not a number, or null
            snapped += 1
            continue
        if not (price.is_finite() and size.is_finite()) or size.adjusted() > 30:
            snapped += 1  # NaN, Infinity, an absurd size: no level
            continue
        if not 0 < price < 1:  # (1e999999999 would overflow the division below)
            continue  # off the book, as a price of cents outside 1..99 is
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

    ``Replay(engine, "rec/", start="60", end="3600")`` serves the recorded
    markets: one the sandbox lacks (a recording of the real service, or of a
    sandbox with another seed) is added with its event, as ``markets.json``
    describes them; one it has is taken over. It shows the last book recorded
    at or before ``start``.
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
        # all is read and checked first: a refused recording leaves the sandbox as it was
        markets = [canonical(m) for m in read_markets(directory)]
        events = read_events(directory)
        self.market_ids = sorted({m.market_id for m in markets})
        self.updates, self.snapped, self.stale = _updates(iter_rows(directory), markets)
        origin = self.updates[0].at_ms if self.updates else 0
        #: The recording's first and last times (ms).
        self.first_ms, self.last_ms = origin, self.updates[-1].at_ms if self.updates else 0
        self.start_ms = origin if start is None else parse_time(start, origin)
        if not origin <= self.start_ms <= self.last_ms:  # no book before, no move after
            at, edge = ("before", "first") if self.start_ms < origin else ("after", "last")
            raise ValidationError("start", start, f"lies {at} the recording's {edge} update")
        self.end_ms = self.last_ms if end is None else parse_time(end, origin)
        if self.end_ms < self.start_ms:
            raise ValidationError("end", end, "must not lie before start")
        with engine._op() as now:
            #: The recorded markets the sandbox did not have, added for the replay.
            self.added = serve_markets(engine, markets, events, now)
        self.index = 0  # the next update to apply
        self.now_ms = self.start_ms  # the virtual clock
        self.crossed = 0  # recorded asks at or under the recorded best bid, left out
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once serving
        self.running = False  # run() drives the clock (then nothing else may move it)
        self._pace: tuple[float, int, float] | None = None  # run's (loop time, ms, speed)
        self._task: asyncio.Task[None] | None = None  # run's, to stop it
        self.stopped = False  # another replay was attached to the sandbox: nothing moves
        self._take_over()
        self._show_start()

    def _take_over(self) -> None:
        """The house's own quotes of the recorded markets go; the recording's come."""
        engine = self.engine
        with engine._op() as now:
            for market_id in self.market_ids:
                market = engine.markets[market_id]
                market.replayed = True  # house._requote leaves it to us
                for quote in list(market.house_quotes.values()):
                    engine._finish(quote, CANCELLED, now)
                engine._touch(market, now)

    def _show_start(self) -> None:
        """Each market's last book recorded at or before ``start``."""
        while self.index < len(self.updates) and self.updates[self.index].at_ms <= self.start_ms:
            self.index += 1
        self._show_current()

    def _show_current(self) -> None:
        """Each market's last book applied, again (over another replay's, say)."""
        last = {u.market_id: u for u in itertools.islice(self.updates, self.index)}
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
            if not market.active:  # settled: its book stays empty (the service's rule)
                return
            bids, asks = update.bids, update.asks
            if bids and asks and min(asks) <= max(bids):
                top = max(bids)
                self.crossed += sum(1 for p in asks if p <= top)
                asks = {p: n for p, n in asks.items() if p > top}
            _impose(engine, market, bids, asks, now)

    def _due(self, to_ms: int) -> ReplayUpdate | None:
        if self.stopped or self.done or self.updates[self.index].at_ms > to_ms:
            return None
        update = self.updates[self.index]
        self.index += 1
        return update

    def _applying(self, to_ms: int) -> Iterator[None]:
        """Apply the updates due up to ``to_ms`` (at most ``end``), one per item."""
        while (update := self._due(min(to_ms, self.end_ms))) is not None:
            self._apply(update)
            yield
        self.now_ms = max(self.now_ms, min(to_ms, self.end_ms))

    def advance_to(self, to_ms: int) -> int:
        """Apply every update up to ``to_ms`` (virtual ms; at most ``end``) in this thread;
        the number applied. Off the server's loop, books in between may reach the stream
        merged; ``advance`` publishes each one."""
        return sum(1 for _ in self._applying(to_ms))

    async def advance(self, to_ms: int) -> int:
        """``advance_to`` on the server's loop, each update published before the next."""
        count = 0
        for _ in self._applying(to_ms):
            count += 1
            await asyncio.sleep(0)  # the hub sends this book before the next is applied
        return count

    @property
    def stop_ms(self) -> int:
        """Where ``run`` stops the clock (virtual ms): ``end``, or the last update before it
        (the books stay as they are after it: nothing to wait for)."""
        return min(self.end_ms, self.last_ms)

    def clock_ms(self) -> int:
        """The virtual clock (ms), also between two updates while ``run`` drives it."""
        pace, loop = self._pace, self.loop
        if pace is None or loop is None:
            return self.now_ms
        wall0, virtual0, speed = pace
        ran = virtual0 + int((loop.time() - wall0) * 1000 * speed)
        due = self.next_ms()
        return max(self.now_ms, min(ran, self.stop_ms if due is None else due - 1))

    def status(self) -> dict[str, object]:
        """Where the clock stands: virtual ms (and from the start), updates applied, done."""
        now = self.clock_ms()
        return {
            "now_ms": now,
            "elapsed_ms": now - self.first_ms,
            "next_ms": self.next_ms(),
            "applied": self.index,
            "updates": len(self.updates),
            "done": self.done,
            "running": self.running,
            "stale": self.stale,
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
        given = {k: v for k, v in (("updates", updates), ("ms", ms)) if v is not None}
        if self.stopped:
            raise ValidationError("step", given, "replaced by another replay of the sandbox")
        if self.running:  # two hands on the clock would skip its paced updates' times
            raise ValidationError("step", given, "the clock runs at a speed, not --step")
        if (updates is None) == (ms is None):
            raise ValidationError("step", given, "give either updates or ms")
        if ms is not None:
            if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
                raise ValidationError("ms", ms, "must be a non-negative int")
            return self.now_ms + ms
        if isinstance(updates, bool) or not isinstance(updates, int) or updates < 1:
            raise ValidationError("updates", updates, "must be a positive int")
        # the N-th distinct time from the next update on (the updates are in time order)
        last, seen = None, 0
        for update in itertools.islice(self.updates, self.index, None):
            if update.at_ms != last:
                if seen == updates:
                    break
                last, seen = update.at_ms, seen + 1
        return self.end_ms if last is None else last

    async def run(self, speed: float) -> None:
        """Drive the clock at ``speed`` times real time (on the server's loop) up to
        ``stop_ms``: ``end``, or the last update before it."""
        if not speed > 0:
            raise ValidationError("speed", speed, "must be positive")
        if self.stopped:
            raise ValidationError("speed", speed, "replaced by another replay of the sandbox")
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.running = True
        self._task = asyncio.current_task()
        try:
            wall0, virtual0, _ = self._pace = (loop.time(), self.now_ms, speed)
            while True:
                due = self.next_ms()
                at = self.stop_ms if due is None else due  # at its pace up to the stop
                wait = wall0 + (at - virtual0) / 1000 / speed - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self.advance(at)
                if due is None:
                    break
        finally:
            self.running = False
            self._pace = None
            self._task = None

    def stop(self) -> None:
        """Stop for good, on the server's loop: ``run`` ends, and nothing moves the clock
        again (``attach`` stops the replay it replaces)."""
        self.stopped = True
        if self._task is not None:
            self._task.cancel()


def _updates(
    rows: Iterable[BookRow], markets: list[RecordedMarket]
) -> tuple[list[ReplayUpdate], int, int]:
    """The recorded books in the engine's terms, in arrival order; how many levels were
    snapped to the cent grid, and how many books were stale (module doc). A market's
    token-a rows, or its token-b rows mirrored where token a was not recorded."""
    token_a = {m.token_id_a: m.market_id for m in markets}
    token_b = {m.token_id_b: m.market_id for m in markets}
    rows = list(rows)
    for r in rows:
        if isinstance(r.recv_ns, bool) or not isinstance(r.recv_ns, int):
            raise ValidationError("recv_ns", r.recv_ns, "must be an int in every row")
    rows.sort(key=lambda r: r.recv_ns)  # stable: in the order written within a ns
    books = [r for r in rows if r.kind != GAP]
    if books and not any(r.token_id in token_a or r.token_id in token_b for r in books):
        raise ValidationError(
            "recording", len(books), "has no book row of a market its markets.json lists"
        )
    with_a = {token_a[r.token_id] for r in books if r.token_id in token_a}
    snapped = stale = 0
    served: dict[str, int] = {}  # market -> the service time of its last book taken
    updates: list[ReplayUpdate] = []
    for r in rows:
        if r.kind == GAP:  # a reconnect: the service may have restarted, its clock too
            served.clear()
            continue
        mirror = r.token_id in token_b and r.token_id not in token_a
        market_id = (token_b if mirror else token_a).get(r.token_id or "")
        if market_id is None or (mirror and market_id in with_a):
            continue  # another token's row, or token b where token a was recorded
        if r.service_ms is not None:
            if r.service_ms < served.get(market_id, r.service_ms):
                stale += 1  # superseded before it arrived
                continue
            served[market_id] = r.service_ms
        bids, n1 = _side(r.asks if mirror else r.bids, bid=not mirror, mirror=mirror)
        asks, n2 = _side(r.bids if mirror else r.asks, bid=mirror, mirror=mirror)
        snapped += n1 + n2
        updates.append(ReplayUpdate(r.recv_ns // 1_000_000, market_id, bids, asks))
    return updates, snapped, stale


def attach(sandbox: Sandbox, replay: Replay, speed: float | None = None) -> Future[None] | None:
    """Serve ``replay`` from a started ``sandbox`` (its admin routes step it), stopping
    the replay attached before (two would drive one sandbox); with ``speed`` its clock
    runs on the server's loop (the future of that run)."""
    st = sandbox.app.state.sandbox
    loop = st.hub.loop
    if loop is None:
        raise RuntimeError("attach a replay to a started sandbox")
    if speed is not None and not speed > 0:  # before anything changes
        raise ValidationError("speed", speed, "must be positive")

    def take_over() -> None:
        old = st.replay
        if old is not None and old is not replay:
            old.stop()
            replay._show_current()  # its books, over any the old one applied since
        st.replay = replay

    _on_loop(loop, take_over)  # where the old one runs: it is between two updates
    replay.loop = loop
    if speed is None:
        return None
    return asyncio.run_coroutine_threadsafe(replay.run(speed), loop)


def _on_loop(loop: asyncio.AbstractEventLoop, call: Callable[[], _T]) -> _T:
    """``call()`` on ``loop`` (its thread), waiting for it; here when already on it."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop or not loop.is_running():
        return call()

    async def on_loop() -> _T:
        return call()

    return asyncio.run_coroutine_threadsafe(on_loop(), loop).result()


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
