"""The ``Desk``: many ``Quoter``s on shared streams, one execution layer (cache, gate,
sender, resolver, kill switch), limits over all of them, a watchdog and metrics
(docs/market-making.md).

A few WebSockets carry the user's order topic and the book topic of every quoter
(``topics_per_stream`` on each); each frame is decoded once and handed on (order
records into the execution cache, books to their quoter). Every request of every
quoter goes through the desk's gate: it waits for room in the budget (a sliding
window like the service's, keeping room to cancel every open order), and is counted
by endpoint and outcome. Before a quoter sends anything the gate checks the limits
over the whole desk against what may rest on the service at any moment of the
requote. The kill switch cancels from the cache, before it reads anything."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from decimal import Decimal
from types import TracebackType
from typing import Any

from ..client import AsyncClient, PreparedRawOrder
from ..core.select import from_units
from ..core.spec import RATE_LIMIT_PER_MINUTE
from ..errors import ClobkitError, ValidationError
from ..models import Market, Order, PlacedOrder
from ..signing.protocol import AsyncSigner
from .budget import Budget
from .execution import Execution
from .feed import Feed
from .gate import Gate
from .killswitch import Watchdog
from .ladder import Quote
from .lifeline import Lifeline, desk_name
from .metrics import collector
from .options import check_desk
from .plan import check_plan
from .quoter import Quoter, RequoteReport
from .reads import SharedReads, by_outcome
from .renewal import Expiry, expiry
from .risk import DeskLimits, exposure, units
from .router import Router
from .tasks import Rerun, each_of, leaving

__all__ = ["Desk"]

log = logging.getLogger("clobkit.mm")

Number = Decimal | str | int | float


class Desk:
    """Market making over many markets: ``async with Desk(client, ...) as desk``.

    ``desk.quoter(market_id, outcome)`` gives a ``Quoter`` fed by the desk's
    streams; ``await desk.requote({q: quotes, ...})`` requotes many at once. A
    quoter closed on its own (``await q.close()``, or leaving ``async with q``) is
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
    (cancels first; once halted they all go at once). At most ``orders_per_minute``
    places in any minute when given (a service's per-minute risk control); a 429 or a
    per-minute risk refusal teaches the budget a lower rate (``Budget.learn``), and
    the places it has no room for within ``room_timeout`` s are reported
    (``RequoteReport.refused``) rather than sent to be refused.

    Kill switch: ``halt()`` cancels every order the desk knows at once (no lock, no
    read before), then lists until nothing of the desk rests, and refuses new quotes
    until ``resume()``. It fires by itself when the last ``heartbeat()`` is older than
    ``heartbeat_timeout`` s (armed by the first call), when one of its streams has been
    down longer than ``stream_timeout`` s, or when more than ``max_error_rate`` of the
    last ``error_window`` requests ended with an unknown outcome (timeout, 5xx, 429,
    dropped connection). On exit it cancels every open order (``cancel_on_exit``),
    listing until nothing rests for ``exit_timeout`` s at most.

    When the process dies (docs/when-the-bot-dies.md): ``order_ttl`` (s, or an
    ``Expiry``) makes every quote a GTD order that expires that long after it is
    placed, renewed before it does while the desk lives (``renewal.Renewer``: the
    policy, the cost in ``metrics()["renewal"]``). ``sentinel`` (``http://HOST:PORT``
    of ``clobkit sentinel``, token ``CLOBKIT_SENTINEL_TOKEN``) sends a heartbeat from
    the desk's event loop several times the sentinel's timeout, which cancels every
    order of the account when they stop; the desk halts itself when the sentinel has
    not acknowledged one for longer than that timeout. ``name`` (host and process
    id) is the desk's in the sentinel's log.

    ``books=False`` leaves the book topics out (a strategy pricing from elsewhere):
    each quoter's ``book`` then holds the book read over REST when it opened (never
    kept current: ``book.stale`` is always true, ``book.age`` the read's seconds).

    ``signer`` (an ``AsyncSigner``: a KMS signer entered, or an ``OrderSigner``) signs
    every order of the desk's quoters before its POST, concurrently within a requote;
    its address is checked against the wallet's signer on enter. A failed signature
    sends nothing of that quoter's requote (``SignerError``).

    Streams: at most ``topics_per_stream`` topics (500; set it before the first
    quoter opens) on one WebSocket, another opened as the desk grows. A topic the
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
        orders_per_minute: int | None = None,
        max_in_flight: int = 16,
        heartbeat_timeout: float | None = 10.0,
        stream_timeout: float | None = 5.0,
        max_error_rate: float = 0.5,
        error_window: int = 50,
        room_timeout: float = 10.0,
        cancel_on_exit: bool = True,
        user_id: str | None = None,
        books: bool = True,
        order_ttl: float | Expiry | None = None,
        sentinel: str | None = None,
        signer: AsyncSigner | None = None,
    ) -> None:
        names = ("rate_limit_per_minute", "error_window", "max_open_orders", "orders_per_minute")
        given = (rate_limit_per_minute, error_window, max_open_orders, orders_per_minute)
        counts = {**dict(zip(names, given, strict=True)), "max_in_flight": max_in_flight}
        times = {"heartbeat_timeout": heartbeat_timeout, "stream_timeout": stream_timeout}
        check_desk(counts, {**times, "room_timeout": room_timeout}, max_error_rate)
        self.client = client
        self.cancel_on_exit = cancel_on_exit
        self.user_id = user_id
        #: The desk's name in the sentinel's log (host and process id; set it before
        #: entering to name it otherwise).
        self.name = desk_name()
        gate = Gate(
            _limits(max_open_orders, max_notional, max_position_per_market, max_position_per_event),
            rate_limit_per_minute=rate_limit_per_minute,
            orders_per_minute=orders_per_minute,
            max_in_flight=max_in_flight,
            room_timeout=room_timeout,
        )
        self.execution = Execution(client, gate, self._owns, expiry(order_ttl))
        self.execution.sender.signer = signer
        self.router = Router(client, self.execution.cache, gate.counters, self._resync, books)
        kill = self.execution.kill
        watched = (heartbeat_timeout, stream_timeout, max_error_rate, error_window)
        self.watchdog = Watchdog(kill, self.router.down_since, *watched)
        gate.on_outcome = self.watchdog.outcome
        #: The heartbeats to ``clobkit sentinel`` (``None``: no sentinel).
        fire = self.watchdog.fire
        self.lifeline = None if sentinel is None else Lifeline(sentinel, kill, gate, fire)
        #: Seconds leaving the desk keeps listing until nothing of it rests.
        self.exit_timeout = 10.0
        self._quoters: dict[tuple[str, str], Quoter] = {}  # (market id as given, outcome)
        self._opening: set[Quoter] = set()  # the quoters opening together
        self.reads = SharedReads(client, gate, lambda: bool(self._opening))
        self._watch: asyncio.Task[None] | None = None
        # one listing at a time brings the quoters up to date after lost messages
        self._resyncing = Rerun(self._resync_once, "clobkit-desk-resync", _resync_failed)
        self._resync_everyone = False

    def __repr__(self) -> str:
        return (
            f"Desk(quoters={len(self._quoters)}, open={self.gate.open_orders}, "
            f"halted={self.halted!r})"
        )

    # -- the parts, as the desk's users read them ----------------------------------

    @property
    def gate(self) -> Gate:
        """The desk's pre-trade gate (limits, budget)."""
        return self.execution.gate

    @property
    def limits(self) -> DeskLimits:
        """The limits over the whole desk, in units (1 USDC or 1 share = 1_000_000)."""
        return self.gate.limits

    @property
    def budget(self) -> Budget:
        return self.gate.budget

    @property
    def room_timeout(self) -> float:
        return self.gate.room_timeout

    @property
    def halted(self) -> str | None:
        """Why the kill switch holds (``None``: quoting is allowed)."""
        return self.execution.kill.halted

    @property
    def halts(self) -> int:
        """Times the kill switch fired."""
        return self.execution.kill.halts

    @property
    def halt_retries(self) -> int:
        """Sweeps of the halted desk that had to cancel again or could not read."""
        return self.execution.kill.retries

    @property
    def watch_interval(self) -> float:
        """Seconds between the watchdog's checks (heartbeat, stream, error rate)."""
        return self.watchdog.interval

    @watch_interval.setter
    def watch_interval(self, value: float) -> None:
        self.watchdog.interval = value

    @property
    def halt_retry(self) -> float:
        """Seconds before a halted desk sweeps again after a sweep that was not flat
        (doubling each time, at most 30 s)."""
        return self.execution.kill.retry

    @halt_retry.setter
    def halt_retry(self, value: float) -> None:
        self.execution.kill.retry = value

    @property
    def streams(self) -> list[Any]:
        return self.router.streams

    @property
    def refused(self) -> dict[str, str]:
        return self.router.refused

    @property
    def deaf(self) -> str | None:
        return self.router.deaf

    @property
    def reconnects(self) -> int:
        return self.router.reconnects

    @property
    def topics_per_stream(self) -> int:
        return self.router.topics_per_stream

    @topics_per_stream.setter
    def topics_per_stream(self, value: int) -> None:
        self.router.topics_per_stream = value

    # -- enter and exit -------------------------------------------------------

    async def __aenter__(self) -> Desk:
        signer = self.execution.sender.signer
        if signer is not None:  # the wallet's signer, or nothing is quoted
            await self.client.check_signer(signer)
        if self.user_id is None:
            self.user_id = await self.gate.request("GET /orders", self.client.user_id())
        await self.router.start(self.user_id)
        if self.lifeline is not None:
            try:
                await self.lifeline.start(self.name)  # heard before anything rests
            except BaseException:
                await self.router.close()
                raise
        self._watch = asyncio.create_task(self.watchdog.run(), name="clobkit-desk-watch")
        if self.execution.renewer is not None:
            self.execution.renewer.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await leaving(self._leave(), exc, "leaving the desk")

    async def _leave(self) -> None:
        """Cancel on exit, close the quoters and the desk's parts; ``ClobkitError``
        (once all is closed) when no listing could confirm that nothing rests."""
        self.router.closing = True  # the streams close next: no unsubscribe per quoter
        if self.execution.renewer is not None:
            await self.execution.renewer.close()  # no successor placed while leaving
        flat: bool | None = None
        try:
            opened = [q for q in self._quoters.values() if q.market is not None]
            flat = await self._cancel_on_exit(opened)
            results = await each_of(q.close(cancel=False) for q in opened)
            for result in results:
                if isinstance(result, BaseException):
                    log.warning("closing a quoter of the desk failed: %s", result)
        finally:
            watch = self._watch
            if watch is not None and not watch.done():
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watch
            await self._resyncing.close()
            await self.watchdog.close()
            await self.execution.close()
            if self.lifeline is not None:
                await self.lifeline.close(flat)
            await self.router.close()
        if flat is False:
            n = len(self.execution.cache.orders())
            within = f"within exit_timeout ({self.exit_timeout:g} s)"
            raise ClobkitError(
                f"no listing {within} showed nothing of the desk resting ({n} tracked)"
            )

    async def _cancel_on_exit(self, opened: list[Quoter]) -> bool | None:
        """Every order of the quoters that cancel on exit: what the cache knows at once,
        then listings until nothing rests (``exit_timeout`` s at most): one listing
        for the whole desk when all of them do (orders of one's own too). Whether a
        listing showed nothing resting; ``None``: nothing was to be cancelled."""
        kill = self.execution.kill
        if self.cancel_on_exit and all(q.cancel_on_exit for q in opened):
            flat = await kill.flatten(timeout=self.exit_timeout)
        else:
            owners = [q.owner for q in opened if q.cancel_on_exit]
            if not owners:
                return None
            done = await each_of(kill.flatten(owner, self.exit_timeout) for owner in owners)
            flat = all(result is True for result in done)
        return flat

    # -- quoters ----------------------------------------------------------------

    def quoter(self, market_id: str, outcome: str, **options: Any) -> Quoter:
        """A ``Quoter`` of ``outcome`` of ``market_id`` run by this desk (the ``Quoter``'s
        own limits in ``options``); opened by ``open()`` or its first requote."""
        key = (market_id, outcome)
        if key in self._quoters:
            raise ValidationError("market_id", market_id, f"already has a quoter of {outcome!r}")
        options.setdefault("cancel_on_exit", self.cancel_on_exit)
        options.setdefault("user_id", self.user_id)
        q = Quoter(self.client, market_id, outcome, desk=self, **options)
        self._quoters[key] = q
        return q

    @property
    def quoters(self) -> list[Quoter]:
        """The desk's quoters, in the order they were made."""
        return list(self._quoters.values())

    def _mine(self, q: Quoter) -> None:
        if q.desk is not self:
            raise ValidationError("quoter", q, "is not a quoter of this desk")

    async def open(self, *quoters: Quoter) -> None:
        """Open ``quoters`` (default: all) not yet open, concurrently: one read of the
        positions and of the live orders serves them all."""
        chosen = quoters or tuple(self._quoters.values())
        for q in chosen:
            self._mine(q)
        if self.user_id is None and any(q.market is None for q in chosen):
            user_id = await self.gate.request("GET /orders", self.client.user_id())
            if user_id is not None:  # else its first order
                await self.router.subscribe_orders(user_id)
                self.user_id = user_id
        todo = [q for q in chosen if q.market is None and q not in self._opening]
        for q in todo:
            if q.user_id is None:
                q.user_id = self.user_id
        self._opening.update(todo)
        try:
            results = await each_of(q.__aenter__() for q in todo)
        finally:
            self._opening.difference_update(todo)
            self.reads.forget()  # the shared reads served this batch
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _open_all(self, quoters: list[Quoter]) -> None:
        await self.open(*quoters)

    def join(self, q: Quoter) -> None:
        """``q`` opens on this desk (again, when it was closed on its own): one quoter
        per market and outcome."""
        self._mine(q)
        other = self._quoters.get(q.key)
        if other is not None and other is not q:
            raise ValidationError("market_id", q.key[0], f"already has a quoter of {q.key[1]!r}")
        self._quoters[q.key] = q

    async def read_market(self, market_id: str) -> Market:
        """A market read for one of the desk's quoters (shared while they open)."""
        return await self.reads.market(market_id)

    async def held(self, q: Quoter) -> int:
        """Share units ``q``'s account holds of its outcome (shared while quoters open)."""
        return await self.reads.held(q.token_id, q.owner)

    async def listed(self, q: Quoter) -> list[Order]:
        """``q``'s live orders on the service (one listing shared while quoters open)."""
        return await self.reads.listed(q.owner)

    # feed.Streams: a quoter's feed hears the desk's streams

    async def attach(self, feed: Feed) -> None:
        await self.router.attach(feed)

    async def detach(self, feed: Feed, forget: bool) -> None:
        await self.router.detach(feed, forget)

    def forget(self, q: Quoter) -> None:
        """``q`` was closed on its own: its market and outcome are free again."""
        if self._quoters.get(q.key) is q:
            del self._quoters[q.key]

    async def subscribe_orders(self, user_id: str) -> None:
        if self.user_id is None:
            self.user_id = user_id
        await self.router.subscribe_orders(user_id)

    def _owns(self, record: Order) -> tuple[str, str] | None:
        """The owner of a record when one of the desk's quoters trades its outcome."""
        owner = (record.market_id or "", record.outcome or "")
        return owner if owner in self.router.feeds else None

    # -- the desk's own work ------------------------------------------------------

    async def requote(
        self, ladders: Mapping[Quoter, Iterable[Quote]]
    ) -> dict[Quoter, RequoteReport]:
        """Requote every quoter of ``ladders`` to its quotes, concurrently. Every ladder
        and the desk as a whole after the requote are checked first (``QuoteRefused``,
        nothing sent). A failure of one quoter is raised once all are done."""
        wanted = {q: list(quotes) for q, quotes in ladders.items()}
        for q in wanted:
            self._mine(q)
        # the desk after every requote, checked as a whole (each quoter's requote checks
        # its own ladder again: the same targets, so it passes at once)
        await check_plan(self.gate, wanted, self._open_all)
        results = await each_of(q.requote(w) for q, w in wanted.items())
        reports: dict[Quoter, RequoteReport] = {}
        failure: BaseException | None = None
        for q, result in zip(wanted, results, strict=True):
            if isinstance(result, BaseException):
                failure = failure or result
            else:
                reports[q] = result
        if failure is not None:
            raise failure
        return reports

    async def send_raw_order(self, prepared: PreparedRawOrder) -> PlacedOrder | None:
        """An order of one's own through the desk: checked by its gate against the
        limits (its outcome's quoter's and the desk's) beside what rests, tracked in
        its execution cache (its records, the kill switch). ``Execution.send_raw_order``."""
        return await self.execution.send_raw_order(prepared)

    async def halt(self, reason: str = "halt() called") -> list[Order]:
        """Refuse new quotes and cancel every order the desk knows at once, then list
        until nothing rests (in the background). The orders cancelled now; raises the
        last failure of those cancels once all are done."""
        return await self.execution.kill.halt(reason)

    def resume(self) -> None:
        """Allow quoting again after ``halt()`` (and re-arm the automatic triggers)."""
        self.execution.kill.resume()
        self.watchdog.reset()

    def heartbeat(self) -> None:
        """The strategy's loop is alive (call it every round; arms ``heartbeat_timeout``)."""
        self.watchdog.heartbeat()

    async def reconcile(self) -> None:
        """Re-read the service so that every open quoter's view equals it (every fill up
        to now counted): one listing of the live orders serves the whole desk (a
        request per open status, whatever the number of markets), then the final
        record of each order gone from it. Raises the first failure once all are done."""
        failures = await self._reread(everyone=True)
        if failures:
            raise failures[0]

    def _resync(self, everyone: bool) -> None:
        """The order topic lost messages: one listing brings every quoter up to date
        (once more after the one running: it may have listed before the gap)."""
        self._resync_everyone = self._resync_everyone or everyone
        self._resyncing.ask()

    async def _resync_once(self) -> None:
        everyone, self._resync_everyone = self._resync_everyone, False
        for failure in await self._reread(everyone):
            _resync_failed(failure)

    async def _reread(self, everyone: bool) -> list[BaseException]:
        """One listing of the live orders brings the stale quoters (``everyone``: all
        of them) up to date; the failures of those it could not."""
        quoters = [q for q in self._quoters.values() if q.feed is not None]
        stale = [q for q in quoters if everyone or (q.feed is not None and q.feed.stale)]
        if not stale:
            return []
        try:
            listed = await self.execution.list_open()
        except BaseException:
            for q in stale:  # their next requote re-reads first
                if q.feed is not None:
                    q.feed.stale = True
            raise
        groups = by_outcome(listed)  # each quoter its own orders
        results = await each_of(q.reconcile(listed=groups.get(q.owner, [])) for q in stale)
        return [result for result in results if isinstance(result, BaseException)]

    def metrics(self) -> dict[str, Any]:
        """A snapshot: requests by endpoint and outcome, latency histograms (s), retries,
        429s, queued requests, learnt rates, reconnects, messages routed and frames
        decoded, the streams open, the topics the service refused (``refused``,
        ``deaf``), the message lag histogram (s), the sign latency histogram (s, with a
        ``signer``), the kill switch, the state machine's refused transitions, the renewal
        of quotes that expire (``renewal``: ``Renewer``'s metrics, ``None`` without
        ``order_ttl``), the heartbeats to the sentinel (``sentinel``, ``None`` without
        one), and per market fills, position (shares per outcome), open orders and
        notional at risk (USDC)."""
        c = self.gate.counters
        kill, cache, renewer = self.execution.kill, self.execution.cache, self.execution.renewer
        markets: dict[str, dict[str, Any]] = {}
        orders = notional = 0
        for q in self._quoters.values():
            if q.market is None:
                continue
            row = markets.setdefault(
                q.market_id,
                {"fills": 0, "position": {}, "open_orders": 0, "notional": Decimal(0)},
            )
            e = exposure(q.resting(), q.position_units)
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
            "learnt": self.budget.learnt + self.gate.places.learnt,
            "reconnects": self.reconnects,
            "messages": c.messages,
            "frames": sum(stream.frames for stream in self.streams),
            "streams": len(self.streams),
            "refused": dict(self.refused),
            "deaf": self.deaf,
            "lag": c.lag.snapshot(),
            "sign_latency": c.sign.snapshot(),
            "halted": self.halted,
            "halts": kill.halts,
            "halt_retries": kill.retries,
            "refused_transitions": cache.refused,
            "late_landings": cache.late,
            "open_orders": orders,
            "notional": from_units(notional),
            "renewal": None if renewer is None else renewer.metrics(),
            "sentinel": None if self.lifeline is None else self.lifeline.metrics(),
            "markets": markets,
        }

    def collector(self) -> Any:
        """A ``prometheus_client`` collector of ``metrics()`` (the ``metrics`` extra)."""
        return collector(self.metrics)


def _limits(
    orders: int | None,
    notional: Number | None,
    per_market: Number | None,
    per_event: Number | None,
) -> DeskLimits:
    """The desk's limits in units (``AmountError`` naming one that is not an amount)."""
    return DeskLimits(
        orders,
        units(notional, "max_notional"),
        units(per_market, "max_position_per_market"),
        units(per_event, "max_position_per_event"),
    )


def _resync_failed(exc: BaseException) -> None:
    # each quoter's next requote (or the next reconnect) re-reads what is stale
    log.warning("re-reading orders after a reconnect failed: %s", exc)
