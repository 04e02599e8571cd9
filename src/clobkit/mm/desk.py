"""The ``Desk``: many ``Quoter``s on one stream, one request budget, limits over all of
them, a kill switch and metrics (docs/market-making.md).

One WebSocket carries the user's order topic and the book topic of every quoter;
each frame is decoded once and handed to the quoter it concerns (order updates by
market and outcome, book updates by topic). Every request of every quoter goes
through the desk: it waits for room in the budget (a sliding window like the
service's, keeping room to cancel every open order), and is counted by endpoint
and outcome. Before a quoter sends anything the desk checks the limits over the
whole desk against what may rest on the service at any moment of the requote.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from decimal import Decimal
from types import TracebackType
from typing import Any, TypeVar

from .._core import from_units, to_units
from .._spec import RATE_LIMIT_PER_MINUTE
from ..client import UNKNOWN_OUTCOME, AsyncClient, Stream, orders_topic, within
from ..errors import QuoteRefused, RateLimited, ValidationError
from ..models import Order, Reconnected, StreamMessage
from .budget import Budget, Slots
from .ladder import Level, Quote, read_ladder
from .metrics import Counters, collector
from .quoter import Quoter, RequoteReport
from .risk import NONE, DeskLimits, Sums, exposure

__all__ = ["Desk"]

log = logging.getLogger("clobkit.mm")

T = TypeVar("T")
Number = Decimal | str | int | float

CANCEL = "DELETE /orders/:id"
OPEN_ORDERS = "GET /orders?open"


class Desk:
    """Market making over many markets: ``async with Desk(client, ...) as desk``.

    ``desk.quoter(market_id, outcome)`` gives a ``Quoter`` fed by the desk's one
    stream; ``await desk.requote({q: quotes, ...})`` requotes many at once.

    Limits over the whole desk, checked before anything is sent (``QuoteRefused``
    names the limit and the numbers): ``max_open_orders``; ``max_notional`` USDC at
    risk (resting BUYs at their price, resting SELLs at 1 - price, per share);
    ``max_position_per_market`` / ``max_position_per_event`` shares, summed over the
    outcomes' positions if the worse side of every ladder filled. They hold at every
    moment: a requote whose old and new orders would not fit together cancels first.

    Requests: at most ``rate_limit_per_minute`` in any minute (the sandbox's default
    is 6,000 a minute per key), queued rather than spent on 429s; room to cancel
    every open order is always kept for cancels. At most ``max_in_flight`` at once
    (a requote of thousands of orders must not time out in the service's queue, and
    the HTTP pool's cost per request grows with its connections); cancels go first.

    Kill switch: ``halt()`` cancels every open order and refuses new quotes until
    ``resume()``. It fires by itself when the last ``heartbeat()`` is older than
    ``heartbeat_timeout`` s (armed by the first call), when the stream has been down
    longer than ``stream_timeout`` s, or when more than ``max_error_rate`` of the
    last ``error_window`` requests ended with an unknown outcome (timeout, 5xx, 429,
    dropped connection). On exit it cancels every open order (``cancel_on_exit``).

    ``books=False`` leaves the book topics out (a strategy pricing from elsewhere):
    each quoter's ``book`` then holds the book read over REST when it opened.
    """

    def __init__(
        self,
        client: AsyncClient,
        *,
        max_notional: Number | None = None,
        max_position_per_market: Number | None = None,
        max_position_per_event: Number | None = None,
        max_open_orders: int | None = None,
        rate_limit_per_minute: int = RATE_LIMIT_PER_MINUTE,
        max_in_flight: int = 16,
        heartbeat_timeout: float | None = 10.0,
        stream_timeout: float | None = 5.0,
        max_error_rate: float = 0.5,
        error_window: int = 50,
        room_timeout: float = 10.0,
        cancel_on_exit: bool = True,
        user_id: str | None = None,
        books: bool = True,
    ) -> None:
        for name, value in (
            ("max_open_orders", max_open_orders),
            ("rate_limit_per_minute", rate_limit_per_minute),
            ("max_in_flight", max_in_flight),
            ("error_window", error_window),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValidationError(name, value, "must be a positive int")
        for name, seconds in (
            ("heartbeat_timeout", heartbeat_timeout),
            ("stream_timeout", stream_timeout),
            ("room_timeout", room_timeout),
        ):
            if seconds is not None and (
                isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0
            ):
                raise ValidationError(name, seconds, "must be a positive number of seconds")
        if isinstance(max_error_rate, bool) or not 0 < max_error_rate <= 1:
            raise ValidationError("max_error_rate", max_error_rate, "must be in (0, 1]")
        self._client = client

        def units(value: Number | None, name: str) -> int | None:
            return None if value is None else to_units(value, name)

        #: The limits over the whole desk, in units (1 USDC or 1 share = 1_000_000).
        self.limits = DeskLimits(
            max_open_orders,
            units(max_notional, "max_notional"),
            units(max_position_per_market, "max_position_per_market"),
            units(max_position_per_event, "max_position_per_event"),
        )
        self.budget = Budget(rate_limit_per_minute)
        self.slots = Slots(max_in_flight)
        self.heartbeat_timeout = heartbeat_timeout
        self.stream_timeout = stream_timeout
        self.max_error_rate = max_error_rate
        self.room_timeout = room_timeout
        self.cancel_on_exit = cancel_on_exit
        self.user_id = user_id
        self.books = books
        #: Why the kill switch holds (``None``: quoting is allowed).
        self.halted: str | None = None
        #: Times the kill switch fired.
        self.halts = 0
        #: Seconds between the watchdog's checks (heartbeat, stream, error rate).
        self.watch_interval = 0.05
        self.counters = Counters()
        self._quoters: dict[tuple[str, str], Quoter] = {}  # (market id as given, outcome)
        self._by_outcome: dict[tuple[str, str], Quoter] = {}  # (market id, outcome)
        self._by_topic: dict[str, Quoter] = {}  # book topic -> quoter
        self._now = Sums()  # what may rest on the service now
        self._plan = Sums()  # what the requotes under way head to
        self._waiting: list[asyncio.Future[None]] = []
        self._outcomes: deque[bool] = deque(maxlen=error_window)  # True: unknown outcome
        self._unknown = 0
        self._beat: float | None = None
        self._stream: Stream | None = None
        self._frames = 0  # frames of streams closed before
        self._stream_lock = asyncio.Lock()
        self._acked = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._resync: asyncio.Task[None] | None = None
        self._resync_again = False
        self._resync_everyone = False
        self._halting: asyncio.Task[list[Order]] | None = None
        self._opening: dict[Quoter, asyncio.Task[None]] = {}
        self._held: asyncio.Task[dict[Any, int]] | None = None
        self._listed: asyncio.Task[list[Order]] | None = None
        self.reconnects = 0

    def __repr__(self) -> str:
        return (
            f"Desk(quoters={len(self._quoters)}, open={self._now.orders}, halted={self.halted!r})"
        )

    # -- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Desk:
        if self.user_id is None:
            page = await self.request("GET /orders", self._client.list_orders(page_size=1))
            if page.orders:
                self.user_id = page.orders[0].user_id
        if self.user_id is not None:
            await self._listen([orders_topic(self.user_id)])
        self._watch = asyncio.create_task(self._watchdog(), name="clobkit-desk-watch")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            opened = [q for q in self._quoters.values() if q.market is not None]
            results = await asyncio.gather(
                *(q.__aexit__(None, None, None) for q in opened), return_exceptions=True
            )
            for result in results:
                if isinstance(result, BaseException):
                    log.warning("closing a quoter of the desk failed: %s", result)
        finally:
            for task in (self._watch, self._resync, self._pump, self._halting):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            if self._stream is not None:
                await self._stream.close()

    def quoter(self, market_id: str, outcome: str, **options: Any) -> Quoter:
        """A ``Quoter`` of ``outcome`` of ``market_id`` run by this desk (the ``Quoter``'s
        own limits in ``options``); opened by ``open()`` or its first requote."""
        key = (market_id, outcome)
        if key in self._quoters:
            raise ValidationError("market_id", market_id, f"already has a quoter of {outcome!r}")
        options.setdefault("cancel_on_exit", self.cancel_on_exit)
        options.setdefault("user_id", self.user_id)
        q = Quoter(self._client, market_id, outcome, **options)
        q._host = self
        self._quoters[key] = q
        return q

    @property
    def quoters(self) -> list[Quoter]:
        """The desk's quoters, in the order they were made."""
        return list(self._quoters.values())

    async def open(self, *quoters: Quoter) -> None:
        """Open ``quoters`` (default: all) not yet open, concurrently: one read of the
        positions and of the live orders serves them all."""
        chosen = quoters or tuple(self._quoters.values())
        for q in chosen:
            if q._host is not self:
                raise ValidationError("quoter", q, "is not a quoter of this desk")
        if self.user_id is None and any(q.market is None for q in chosen):
            page = await self.request("GET /orders", self._client.list_orders(page_size=1))
            if page.orders and page.orders[0].user_id is not None:  # else its first order
                await self.subscribe_orders(page.orders[0].user_id)
        tasks = []
        for q in chosen:
            if q.market is not None:
                continue
            if q.user_id is None:
                q.user_id = self.user_id
            task = self._opening.get(q)
            if task is None:
                task = self._opening[q] = asyncio.ensure_future(self._open_one(q))
            tasks.append(task)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _open_one(self, q: Quoter) -> None:
        try:
            await q.__aenter__()
        finally:
            del self._opening[q]
            if not self._opening:  # the shared reads served this batch
                self._held = self._listed = None

    # -- the Quoter's host ------------------------------------------------------------------

    async def request(self, endpoint: str, call: Awaitable[T]) -> T:
        """Await ``call`` (one request to ``endpoint``) within the budget, counted."""
        urgent = endpoint == CANCEL
        keep = 0 if urgent else self._now.orders  # room to cancel everything
        try:
            await self.slots.acquire(urgent)
        except BaseException:
            if inspect.iscoroutine(call):
                call.close()  # never started
            raise
        try:
            return await self._send(endpoint, call, keep)
        finally:
            self.slots.release()

    async def _send(self, endpoint: str, call: Awaitable[T], keep: int) -> T:
        try:
            await self.budget.take(keep)
        except BaseException:
            if inspect.iscoroutine(call):
                call.close()  # never started
            raise
        start = time.perf_counter()
        try:
            result = await call
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if isinstance(exc, RateLimited):
                self.counters.rate_limited += 1
                outcome = "429"
            else:
                outcome = type(exc).__name__
            self.counters.request(endpoint, outcome, time.perf_counter() - start)
            self._outcome(isinstance(exc, UNKNOWN_OUTCOME))
            raise
        self.counters.request(endpoint, "ok", time.perf_counter() - start)
        self._outcome(False)
        if endpoint == OPEN_ORDERS and isinstance(result, list) and len(result) >= 100:
            self.budget.spend(len(result) // 100)  # its further pages
        return result

    def _outcome(self, unknown: bool) -> None:
        window = self._outcomes
        if len(window) == window.maxlen and window[0]:
            self._unknown -= 1
        window.append(unknown)
        self._unknown += unknown
        if (
            unknown
            and len(window) == window.maxlen
            and self._unknown > self.max_error_rate * len(window)
        ):
            self._fire(
                f"error rate {self._unknown}/{len(window)} requests past max_error_rate "
                f"{self.max_error_rate}"
            )

    async def attach(self, q: Quoter) -> None:
        key = (q.market_id, q.outcome)
        other = self._by_outcome.get(key)
        if other is not None and other is not q:
            raise ValidationError(
                "market_id", q.market_id, f"already has a quoter of {q.outcome!r}"
            )
        self._by_outcome[key] = q
        topics = []
        if self.books:
            self._by_topic[q._book_topic] = q
            topics.append(q._book_topic)
        if self.user_id is None and q.user_id is not None:
            self.user_id = q.user_id
        if self.user_id is not None:
            topics.append(orders_topic(self.user_id))
        if topics:
            await self._listen(topics)

    def detach(self, q: Quoter) -> None:
        if self._by_outcome.get((q.market_id, q.outcome)) is q:
            del self._by_outcome[(q.market_id, q.outcome)]
        if self._by_topic.get(q._book_topic) is q:
            del self._by_topic[q._book_topic]
        self._now.set(q, NONE)
        self._plan.set(q, NONE)
        self._wake()

    async def held(self, q: Quoter) -> int:
        if self._held is None:
            self._held = asyncio.ensure_future(self._read_positions())
        positions = await asyncio.shield(self._held)
        return positions.get(q.token_id, positions.get((q.market_id, q.outcome), 0))

    async def _read_positions(self) -> dict[Any, int]:
        positions: dict[Any, int] = {}
        async for pos in self._client.iter_positions():  # one request a page of 100
            units = to_units(pos.shares or 0, "shares")
            if pos.token_id is not None:
                positions[pos.token_id] = units
            elif pos.market_id is not None and pos.raw_outcome is not None:
                positions[(pos.market_id, pos.raw_outcome)] = units
        return positions

    async def listed(self) -> list[Order]:
        if self._listed is None:
            self._listed = asyncio.ensure_future(
                self.request(OPEN_ORDERS, self._client.open_orders())
            )
        return await asyncio.shield(self._listed)

    async def subscribe_orders(self, user_id: str) -> None:
        if self.user_id is None:
            self.user_id = user_id
            for q in self._quoters.values():
                if q.user_id is None:
                    q.user_id = user_id
                    q._orders_topic = orders_topic(user_id)
            self._acked.clear()
            await self._listen([orders_topic(user_id)])
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._acked.wait(), 1.0)
            # what happened before the subscription: one read for every open quoter (the
            # quoter that learnt the user re-reads its own at the end of its requote)
            self._schedule_resync(everyone=True)

    async def admit(self, q: Quoter, levels: Sequence[Level], union: Sequence[Level]) -> bool:
        """Check ``q``'s new ladder ``levels`` against the desk's limits (``QuoteRefused``)
        and reserve what may rest meanwhile; True: send the cancels first, since the
        old and new orders together (``union``) would not fit."""
        if self.halted is not None and levels:
            raise QuoteRefused("desk", self.halted, "is halted: no new quotes until resume()")
        held = q._position
        target = exposure(levels, held)
        refused = self._plan.breach(q, target, self.limits)
        if refused is not None:
            raise refused
        self._plan.set(q, target)
        both = exposure(union, held)
        if self._now.breach(q, both, self.limits) is None:
            self._now.set(q, both)
            return False
        return True

    async def admit_places(self, q: Quoter, place: Sequence[Level]) -> None:
        """After ``q``'s cancels: wait (``room_timeout`` s at most) until what it tracks
        (the orders left and ``place``, prepared) fits beside the other quoters', and
        reserve it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.room_timeout
        new = exposure(q.resting(), q._position)
        while True:
            if self.halted is not None:
                raise QuoteRefused("desk", self.halted, "is halted: no new quotes until resume()")
            refused = self._now.breach(q, new, self.limits)
            if refused is None:
                self._now.set(q, new)
                return
            left = deadline - loop.time()
            if left <= 0:
                raise refused
            waiter = loop.create_future()
            self._waiting.append(waiter)
            with contextlib.suppress(asyncio.TimeoutError):
                await within(waiter, left)

    def settle(self, q: Quoter) -> None:
        """``q``'s requote (cancel, reconcile) ended: what may rest on the service is
        what it tracks, and what it heads to."""
        now = exposure(q.resting(), q._position)
        self._now.set(q, now)
        self._plan.set(q, now)
        self._wake()

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    # -- the stream -----------------------------------------------------------------------

    async def _listen(self, topics: list[str]) -> None:
        async with self._stream_lock:
            if self._stream is None:
                self._stream = self._client.stream(topics, backoff=0.05, backoff_cap=1.0)
                await self._stream.start()
                self._pump = asyncio.create_task(self._consume(), name="clobkit-desk")
            else:
                await self._stream.subscribe(topics)

    async def _consume(self) -> None:
        assert self._stream is not None
        route = self.route
        async for item in self._stream:
            route(item)

    def route(self, item: StreamMessage | Reconnected) -> None:
        """Hand one stream item to the quoter it concerns (the desk's bookkeeping)."""
        counters = self.counters
        counters.messages += 1
        if type(item) is StreamMessage:
            order = item.order
            if order is not None:
                q = self._by_outcome.get((order.market_id or "", order.outcome or ""))
                stamp = order.updated_at
                if stamp is not None:
                    counters.lag.observe(max(0.0, time.time() - stamp.timestamp()))
            else:
                q = self._by_topic.get(item.topic or "")
                if q is None:
                    if item.type == "subscribed":
                        self._acked.set()
                    return
            if q is not None:
                q._on_item(item)
        elif type(item) is Reconnected:
            self.reconnects += 1
            for q in self._quoters.values():
                q.reconnects += 1
                q._stale = True
            self._schedule_resync()

    def _schedule_resync(self, everyone: bool = False) -> None:
        self._resync_again = True
        self._resync_everyone = self._resync_everyone or everyone
        if self._resync is None or self._resync.done():
            self._resync = asyncio.ensure_future(self._resync_all())

    async def _resync_all(self) -> None:
        """After a reconnect (or the order topic's late subscription): one read of the
        live orders brings every quoter up to date."""
        while self._resync_again:
            self._resync_again = False
            everyone, self._resync_everyone = self._resync_everyone, False
            quoters = [q for q in self._quoters.values() if q.market is not None]
            try:
                async with contextlib.AsyncExitStack() as stack:
                    for q in quoters:  # one at a time, in one order: no lock cycle
                        await stack.enter_async_context(q._lock)
                    stale = [q for q in quoters if q._stale or everyone]
                    if not stale:
                        continue
                    listed = await self.request(OPEN_ORDERS, self._client.open_orders())
                    results = await asyncio.gather(
                        *(q._reconcile(listed) for q in stale), return_exceptions=True
                    )
                    for q in stale:
                        self.settle(q)
                    for result in results:
                        if isinstance(result, Exception):
                            log.warning("re-reading orders after a reconnect failed: %s", result)
            except Exception as exc:  # each quoter's next requote re-reads what is stale
                log.warning("re-reading orders after a reconnect failed: %s", exc)

    # -- the kill switch ------------------------------------------------------------------

    def heartbeat(self) -> None:
        """The strategy's loop is alive (call it every round; arms ``heartbeat_timeout``)."""
        self._beat = time.monotonic()

    async def halt(self, reason: str = "halt() called") -> list[Order]:
        """Refuse new quotes and cancel every open order of the desk; the orders cancelled."""
        if self.halted is None:
            self.halted = reason
            self.halts += 1
            log.warning("desk halted: %s", reason)
        self._wake()  # requotes waiting for room give up
        opened = [q for q in self._quoters.values() if q.market is not None]
        results = await asyncio.gather(*(q.cancel_all() for q in opened), return_exceptions=True)
        cancelled: list[Order] = []
        failure: BaseException | None = None
        for result in results:
            if isinstance(result, BaseException):
                failure = result
            else:
                cancelled.extend(result)
        if failure is not None:
            raise failure
        return cancelled

    def resume(self) -> None:
        """Allow quoting again after ``halt()`` (and re-arm the automatic triggers)."""
        self.halted = None
        self._beat = None
        self._outcomes.clear()
        self._unknown = 0

    def _fire(self, reason: str) -> None:
        if self.halted is None and (self._halting is None or self._halting.done()):
            self._halting = asyncio.ensure_future(self.halt(reason))
            self._halting.add_done_callback(_log_failure)

    async def _watchdog(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.watch_interval)
            if self.halted is not None:
                continue
            beat, limit = self._beat, self.heartbeat_timeout
            if beat is not None and limit is not None and time.monotonic() - beat > limit:
                self._fire(f"heartbeat older than {limit} s")
                continue
            stream, limit = self._stream, self.stream_timeout
            down = None if stream is None else stream.down_since
            if down is not None and limit is not None and loop.time() - down > limit:
                self._fire(f"stream down for more than {limit} s")

    # -- many markets at once ------------------------------------------------------------------

    async def requote(
        self, ladders: Mapping[Quoter, Iterable[Quote]]
    ) -> dict[Quoter, RequoteReport]:
        """Requote every quoter of ``ladders`` to its quotes, concurrently. Every ladder
        and the desk as a whole after the requote are checked first (``QuoteRefused``,
        nothing sent). A failure of one quoter is raised once all are done."""
        wanted = {q: list(quotes) for q, quotes in ladders.items()}
        for q in wanted:
            if q._host is not self:
                raise ValidationError("quoter", q, "is not a quoter of this desk")
        if self.halted is not None and any(wanted.values()):
            raise QuoteRefused("desk", self.halted, "is halted: no new quotes until resume()")
        await self.open(*wanted)
        levels = {q: read_ladder(w, q._limits(), q._position) for q, w in wanted.items()}
        saved = {q: self._plan.each.get(q, NONE) for q in levels}
        try:  # the desk after every requote: checked as a whole, then the targets held
            for q, lv in levels.items():
                target = exposure(lv, q._position)
                refused = self._plan.breach(q, target, self.limits)
                if refused is not None:
                    raise refused
                self._plan.set(q, target)
        except BaseException:
            for q, old in saved.items():
                self._plan.set(q, old)
            raise
        results = await asyncio.gather(
            *(q.requote(w) for q, w in wanted.items()), return_exceptions=True
        )
        reports: dict[Quoter, RequoteReport] = {}
        failure: BaseException | None = None
        for q, result in zip(wanted, results, strict=True):
            if isinstance(result, BaseException):
                failure = failure or result
                self.settle(q)
            else:
                reports[q] = result
        if failure is not None:
            raise failure
        return reports

    # -- metrics ------------------------------------------------------------------------

    def metrics(self) -> dict[str, Any]:
        """A snapshot: requests by endpoint and outcome, latency histograms (s), retries,
        429s, queued requests, reconnects, messages routed and frames decoded, the
        message lag histogram (s), the kill switch, and per market fills, position
        (shares per outcome), open orders and notional at risk (USDC)."""
        c = self.counters
        markets: dict[str, dict[str, Any]] = {}
        orders = notional = 0
        for q in self._quoters.values():
            if q.market is None:
                continue
            row = markets.setdefault(
                q.market_id,
                {"fills": 0, "position": {}, "open_orders": 0, "notional": Decimal(0)},
            )
            e = exposure(q.resting(), q._position)
            orders += e.orders
            notional += e.notional
            row["fills"] += q.fill_count
            row["position"][q.outcome] = q.position
            row["open_orders"] += e.orders
            row["notional"] += from_units(e.notional)
        stream = self._stream
        return {
            "requests": [
                {"endpoint": e, "outcome": o, "count": n} for (e, o), n in c.requests.items()
            ],
            "latency": {e: h.snapshot() for e, h in c.latency.items()},
            "retries": sum(q.retries for q in self._quoters.values()),
            "rate_limited": c.rate_limited,
            "queued": self.budget.queued,
            "reconnects": self.reconnects,
            "messages": c.messages,
            "frames": self._frames + (0 if stream is None else stream.frames),
            "lag": c.lag.snapshot(),
            "halted": self.halted,
            "halts": self.halts,
            "open_orders": orders,
            "notional": from_units(notional),
            "markets": markets,
        }

    def collector(self) -> Any:
        """A ``prometheus_client`` collector of ``metrics()`` (the ``metrics`` extra)."""
        return collector(self.metrics)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the kill switch's cancels failed: %s", task.exception())
