"""Replay a recording (``clobkit record``) in the sandbox on a virtual clock.

At each recorded time the house's quotes of a replayed market become the recorded book
of its outcome-a token (token b's rows mirrored where it has no token-a rows), one house
order per level; the house's own ladder is off for it. Users trade with that liquidity
by the sandbox's rules (price-time priority, the maker's price): a trade holds until the
next recorded update puts the recorded sizes back; a level whose recorded size changes
keeps its place in the queue, a new one joins behind the users resting at its price and
trades with a resting order it crosses, at that order's price (the market moved through
the quote). A recording is checked whole before anything is served, and read as the
clock moves, in bounded memory (``replay_read``): books of the API's (prices on the
0.01 grid, positive sizes), or the recording is refused naming the row and field.

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
import logging
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Protocol, TypeVar

from starlette.applications import Starlette

from ..core.checks import bounded, bounded_int
from ..core.spec import CANCELLED, LIVE, OUTCOME_A, OUTCOME_B
from ..errors import ClobkitError, ValidationError
from ..record import read_events, read_markets
from .engine import Engine
from .replay_markets import canonical, check_events, serve_markets
from .replay_read import ReplayUpdate, check, index, updates
from .state import ASK, BID, BUY, GTC, HOUSE, MarketState, Order

__all__ = [
    "MAX_SECONDS",
    "MAX_SPEED",
    "MAX_STEP_MS",
    "MAX_STEP_UPDATES",
    "MIN_SPEED",
    "Replay",
    "ReplayUpdate",
    "Started",
    "attach",
    "parse_speed",
    "parse_time",
    "serve_markets",
]

log = logging.getLogger("clobkit.sandbox.replay")
_T = TypeVar("_T")
#: The farthest ``--start`` / ``--end`` given in seconds lie from the recording's start.
MAX_SECONDS = 10**10
#: The fastest a replay's clock runs (times real time), and the slowest.
MAX_SPEED = Decimal(10**6)
MIN_SPEED = Decimal("0.001")
#: The most virtual ms one step moves the clock, and the most update times.
MAX_STEP_MS = 10**13
MAX_STEP_UPDATES = 10_000


def parse_time(value: str, origin_ms: int, field: str = "time") -> int:
    """A time of the recording (ms): seconds from its start (``90``, ``+90``; at most
    ``MAX_SECONDS`` either way), or an ISO 8601 time (``2026-11-26T04:00:00Z``)."""
    text = value.strip()
    try:
        Decimal(text)  # a number (NaN and Infinity too: the bounded reader refuses them)
    except InvalidOperation:
        pass
    else:
        unit = "seconds from the recording's start"
        seconds = bounded(text, field, -MAX_SECONDS, MAX_SECONDS, text=True, unit=unit)
        return origin_ms + int(seconds * 1000)
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(
            field, value, "must be seconds from the recording's start or an ISO 8601 time"
        ) from None
    if stamp.tzinfo is None:
        raise ValidationError(field, value, "an ISO time must name its zone (Z, +00:00)")
    return int(stamp.timestamp() * 1000)


def parse_speed(value: object, field: str = "speed") -> float:
    """A replay clock's speed, virtual seconds a second (a number, or its text), in
    [``MIN_SPEED``, ``MAX_SPEED``]."""
    return float(bounded(value, field, MIN_SPEED, MAX_SPEED, text=True, unit="times real time"))


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
        check_events(events)
        self.market_ids = sorted({m.market_id for m in markets})
        self._index = index(directory, markets)
        tally = check(self._index)
        #: How many updates the recording holds, and how many books were stale (module doc).
        self.update_count, self.stale = tally.updates, tally.stale
        #: The books the recording holds, both outcomes' and the snapshots: the count
        #: of updates its recorder printed.
        self.recorded = self._index.books
        #: The recording's first and last times (ms).
        self.first_ms, self.last_ms = tally.first_ms or 0, tally.last_ms or 0
        origin = self.first_ms
        self.start_ms = origin if start is None else parse_time(start, origin, "start")
        if not origin <= self.start_ms <= self.last_ms:  # no book before, no move after
            at, edge = ("before", "first") if self.start_ms < origin else ("after", "last")
            raise ValidationError("start", start, f"lies {at} the recording's {edge} update")
        self.end_ms = self.last_ms if end is None else parse_time(end, origin, "end")
        if self.end_ms < self.start_ms:
            raise ValidationError("end", end, "must not lie before start")
        with engine._op() as now:
            #: The recorded markets the sandbox did not have, added for the replay.
            self.added = serve_markets(engine, markets, events, now)
        self._reading: Iterator[ReplayUpdate] = updates(self._index)  # as the clock moves
        self._ahead: deque[ReplayUpdate] = deque()  # read, not yet applied
        self._last: dict[str, ReplayUpdate] = {}  # each market's last update passed
        #: Why the replay stopped reading its files (one changed since it was checked).
        self.failed: str | None = None
        self.index = 0  # updates passed (applied, or passed over before start)
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
        while self._pass(self.start_ms) is not None:
            pass
        self._show_current()

    def _show_current(self) -> None:
        """Each market's last book passed, again (over another replay's, say)."""
        for update in sorted(self._last.values(), key=lambda u: u.at_ms):
            self._apply(update)

    def _peek(self, ahead: int = 0) -> ReplayUpdate | None:
        """The update ``ahead`` after the next one to apply (None past the last), read
        from the files as needed; a file changed since it was checked ends the reading
        (``failed`` says why)."""
        while len(self._ahead) <= ahead and self.failed is None:
            try:
                update = next(self._reading, None)
            except (ClobkitError, OSError) as exc:  # a ValidationError names the file
                self.failed = str(exc)
                log.warning("the replay of %s stopped: %s", self.directory, exc)
                break
            if update is None:
                break
            self._ahead.append(update)
        return self._ahead[ahead] if len(self._ahead) > ahead else None

    def _pass(self, to_ms: int) -> ReplayUpdate | None:
        """The next update if it is due at ``to_ms`` (virtual ms), taken off the reading."""
        update = self._peek()
        if update is None or update.at_ms > to_ms:
            return None
        self._ahead.popleft()
        self.index += 1
        self._last[update.market_id] = update
        return update

    def __repr__(self) -> str:
        return (
            f"Replay({self.directory!r}, at {self.now_ms - self.first_ms} ms, "
            f"{self.index}/{self.update_count} updates)"
        )

    @property
    def done(self) -> bool:
        """True once every update up to ``end`` was applied."""
        return self.next_ms() is None

    def next_ms(self) -> int | None:
        """The time of the next update to apply (None when done)."""
        update = self._peek()
        return None if update is None or update.at_ms > self.end_ms else update.at_ms

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
        return None if self.stopped else self._pass(min(to_ms, self.end_ms))

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
            "stop_ms": self.stop_ms,
            "applied": self.index,
            "updates": self.update_count,
            "recorded": self.recorded,
            "done": self.done,
            "running": self.running,
            "stale": self.stale,
            "markets": self.market_ids,
            "failed": self.failed,
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
            return self.now_ms + bounded_int(ms, "ms", 0, MAX_STEP_MS)
        count = bounded_int(updates, "updates", 1, MAX_STEP_UPDATES)
        # the N-th distinct time from the next update on (the updates are in time order),
        # read ahead of the clock: the books of at most MAX_STEP_UPDATES times are held
        last, seen, ahead = None, 0, 0
        while (update := self._peek(ahead)) is not None:
            if update.at_ms != last:
                if seen == count:
                    break
                last, seen = update.at_ms, seen + 1
            ahead += 1
        return self.end_ms if last is None else last

    async def run(self, speed: float) -> None:
        """Drive the clock at ``speed`` times real time (on the server's loop) up to
        ``stop_ms``: ``end``, or the last update before it."""
        speed = parse_speed(speed)
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


class Started(Protocol):
    """A started sandbox as ``attach`` sees it (``server.Sandbox`` is one): its app,
    whose ``state.sandbox`` holds the loop it serves on (``hub.loop``) and the replay
    it serves (``replay``). A protocol rather than an import of ``server``, which
    builds the app whose admin routes step a ``Replay``."""

    @property
    def app(self) -> Starlette: ...


def attach(sandbox: Started, replay: Replay, speed: float | None = None) -> Future[None] | None:
    """Serve ``replay`` from a started ``sandbox`` (its admin routes step it), stopping
    the replay attached before (two would drive one sandbox); with ``speed`` its clock
    runs on the server's loop (the future of that run)."""
    st = sandbox.app.state.sandbox
    loop = st.hub.loop
    if loop is None:
        raise RuntimeError("attach a replay to a started sandbox")
    if speed is not None:  # before anything changes
        speed = parse_speed(speed)

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
                outcome=OUTCOME_A if side == BID else OUTCOME_B,  # the house only buys
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
