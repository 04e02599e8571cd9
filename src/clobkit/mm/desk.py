"""The ``Desk``: many ``Quoter``s on shared streams, one request budget, limits over all
of them, a kill switch and metrics (docs/market-making.md).

A few WebSockets carry the user's order topic and the book topic of every quoter
(``topics_per_stream`` on each); each frame is decoded once and handed to the quoter
it concerns (order updates by market and outcome, book updates by topic). Every
request of every quoter goes through the desk: it waits for room in the budget (a
sliding window like the service's, keeping room to cancel every open order), and is
counted by endpoint and outcome. Before a quoter sends anything the desk checks the
limits over the whole desk against what may rest on the service at any moment of the
requote."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from decimal import Decimal
from types import TracebackType
from typing import Any

from .._checks import positive_int
from .._checks import seconds as positive_seconds
from .._core import from_units, to_units
from .._spec import RATE_LIMIT_PER_MINUTE
from ..client import AsyncClient, orders_topic
from ..errors import QuoteRefused, ValidationError
from .ladder import Quote, read_ladder
from .metrics import collector
from .quoter import Quoter, RequoteReport
from .risk import NONE, DeskLimits, exposure
from .routing import Routing

__all__ = ["Desk"]

log = logging.getLogger("clobkit.mm")

Number = Decimal | str | int | float


class Desk(Routing):
    """Market making over many markets: ``async with Desk(client, ...) as desk``.

    ``desk.quoter(market_id, outcome)`` gives a ``Quoter`` fed by the desk's
    streams; ``await desk.requote({q: quotes, ...})`` requotes many at once. A
    quoter closed on its own (``await q.__aexit__(...)``, or ``async with q``) is
    forgotten: its orders cancelled (``cancel_on_exit``), its book topic dropped,
    its market free for a new quoter.

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
    the HTTP pool's cost per request grows with its connections); cancels go first,
    and once halted they all go at once (bounded by the client's connection pool).

    Kill switch: ``halt()`` cancels every open order and refuses new quotes until
    ``resume()``. It fires by itself when the last ``heartbeat()`` is older than
    ``heartbeat_timeout`` s (armed by the first call), when one of its streams has been
    down longer than ``stream_timeout`` s, or when more than ``max_error_rate`` of the
    last ``error_window`` requests ended with an unknown outcome (timeout, 5xx, 429,
    dropped connection). On exit it cancels every open order (``cancel_on_exit``).

    ``books=False`` leaves the book topics out (a strategy pricing from elsewhere):
    each quoter's ``book`` then holds the book read over REST when it opened (never
    kept current: ``book.stale`` is always true, ``book.age`` the read's seconds).

    Streams: at most ``topics_per_stream`` topics (500; set it before the first
    quoter opens) on one WebSocket, another opened as the desk grows (the sandbox
    refuses more than 1,000 on a connection; the API text names no cap). A topic the
    service refuses is never silent: logged, in ``refused``, its quoter's book stale
    (``book.refused``); a refused order topic (``deaf``) makes every quoter refuse
    new quotes, since fills would go unheard.
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
        _check_options(
            {
                "max_open_orders": max_open_orders,
                "rate_limit_per_minute": rate_limit_per_minute,
                "max_in_flight": max_in_flight,
                "error_window": error_window,
            },
            {
                "heartbeat_timeout": heartbeat_timeout,
                "stream_timeout": stream_timeout,
                "room_timeout": room_timeout,
            },
            max_error_rate,
        )
        self._client = client
        self.cancel_on_exit = cancel_on_exit
        self.user_id = user_id
        self.books = books
        self.room_timeout = room_timeout
        limits = DeskLimits(
            max_open_orders,
            _units(max_notional, "max_notional"),
            _units(max_position_per_market, "max_position_per_market"),
            _units(max_position_per_event, "max_position_per_event"),
        )
        self._init_kill_switch(heartbeat_timeout, stream_timeout, max_error_rate, error_window)
        self._init_gate(limits, rate_limit_per_minute, max_in_flight)
        self._init_routing()
        self._watch: asyncio.Task[None] | None = None
        self._opening: dict[Quoter, asyncio.Task[None]] = {}

    def __repr__(self) -> str:
        return (
            f"Desk(quoters={len(self._quoters)}, open={self._now.orders}, halted={self.halted!r})"
        )

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
        self._closing = True  # the streams close next: no unsubscribe for each quoter
        try:
            opened = [q for q in self._quoters.values() if q.market is not None]
            results = await asyncio.gather(
                *(q.__aexit__(None, None, None) for q in opened), return_exceptions=True
            )
            for result in results:
                if isinstance(result, BaseException):
                    log.warning("closing a quoter of the desk failed: %s", result)
        finally:
            for task in (self._watch, self._resync, self._halting):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            await self._close_streams()

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
        q._desk_key = key
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
            self._forget_reads()  # the shared reads served this batch

    async def reconcile(self) -> None:
        """Re-read the service so that every open quoter's view equals it (every fill up
        to now counted): one listing of the live orders serves the whole desk (a
        request per open status, whatever the number of markets), then the final
        record of each order gone from it. Raises the first failure once all are done."""
        failures = await self._reread(everyone=True)
        if failures:
            raise failures[0]

    async def requote(
        self, ladders: Mapping[Quoter, Iterable[Quote]]
    ) -> dict[Quoter, RequoteReport]:
        """Requote every quoter of ``ladders`` to its quotes, concurrently. Every ladder
        and the desk as a whole after the requote are checked first (``QuoteRefused``,
        nothing sent). A failure of one quoter is raised once all are done."""
        wanted = {q: list(quotes) for q, quotes in ladders.items()}
        for q, w in wanted.items():
            if q._host is not self:
                raise ValidationError("quoter", q, "is not a quoter of this desk")
            if w:
                q._check_hearing()  # closed, or deaf to fills: before anything is planned
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

    def metrics(self) -> dict[str, Any]:
        """A snapshot: requests by endpoint and outcome, latency histograms (s), retries,
        429s, queued requests, reconnects, messages routed and frames decoded, the
        streams open, the topics the service refused (``refused``, ``deaf``), the
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
            "frames": sum(stream.frames for stream in self._streams),
            "streams": len(self._streams),
            "refused": dict(self.refused),
            "deaf": self.deaf,
            "lag": c.lag.snapshot(),
            "halted": self.halted,
            "halts": self.halts,
            "halt_retries": self.halt_retries,
            "open_orders": orders,
            "notional": from_units(notional),
            "markets": markets,
        }

    def collector(self) -> Any:
        """A ``prometheus_client`` collector of ``metrics()`` (the ``metrics`` extra)."""
        return collector(self.metrics)


def _check_options(
    counts: dict[str, int | None], seconds: dict[str, float | None], max_error_rate: float
) -> None:
    """``ValidationError`` naming the first option out of its range."""
    for name, value in counts.items():
        if value is not None:
            positive_int(value, name)
    for name, given in seconds.items():
        if given is not None:
            positive_seconds(given, name)
    rate = max_error_rate
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        raise ValidationError("max_error_rate", rate, "must be in (0, 1]")


def _units(value: Number | None, name: str) -> int | None:
    return None if value is None else to_units(value, name)
