"""The one pre-trade gate between every strategy and the service: a quoter's own limits
and the desk's (open orders, notional, position per market and per event) checked in
one place before anything is sent, and every request within the budget (a sliding
window like the service's, room always kept to cancel every open order, a bounded
number in flight, cancels first), slowed down by what the service's refusals teach
(a 429's ``Retry-After``, a per-minute risk refusal).

A ``Quoter`` on its own has a gate of its own (its limits, the default budget); a
``Desk``'s quoters share the desk's. ``AsyncClient.post_raw_order`` calls of one's own
can pass the same gate (``Desk.send_raw_order``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..client import UNKNOWN_OUTCOME, paced
from ..core.checks import positive_int, seconds
from ..core.spec import PAGE_SIZE_MAX, RATE_LIMIT_PER_MINUTE
from ..errors import QuoteRefused, RateLimited, RiskControlError
from .budget import Budget, Slots
from .ladder import Level
from .metrics import Counters
from .risk import NO_DESK_LIMITS, NONE, DeskLimits, Exposure, Limits, Sums, exposure, own_breach

__all__ = ["CANCEL", "OPEN_ORDERS", "PLACE", "Gate", "Halted", "Paced"]

T = TypeVar("T")
Owner = tuple[str, str]  # (market id, outcome)

log = logging.getLogger("clobkit.mm")

CANCEL = "DELETE /orders/:id"
PLACE = "POST /orders"
OPEN_ORDERS = "GET /orders?open"
#: The window of the service's per-minute risk control (s).
RISK_WINDOW = 60.0


class Halted(QuoteRefused):
    """A place the halted desk did not send: it never reached the service."""

    def __init__(self, reason: str) -> None:
        super().__init__("desk", reason, "is halted: no new quotes until resume()")


class Paced(QuoteRefused):
    """A place not sent: the service's refusals taught the gate that no more fit now
    (``Budget.learn``), and none had room within ``room_timeout`` s."""

    def __init__(self, limit: int | None, window: float) -> None:
        super().__init__(
            "quote",
            f"{limit} orders in {window:g} s",
            "not sent: the service allows no more orders now (learnt from its refusals)",
        )


class Gate:
    """Limits and budget of a desk, or of one lone quoter.

    ``limits`` the desk's (none for a lone quoter); each quoter's own ``Limits`` are
    registered with ``join``. ``rate_limit_per_minute`` and ``max_in_flight`` bound the
    requests, ``orders_per_minute`` the places (a service's per-minute risk control:
    learnt from its refusals when not given); ``room_timeout`` s is how long a place
    waits for room under the limits or the place rate before it is given up
    (``QuoteRefused``; at once when no room can come in time).
    """

    def __init__(
        self,
        limits: DeskLimits = NO_DESK_LIMITS,
        *,
        rate_limit_per_minute: int | None = RATE_LIMIT_PER_MINUTE,
        orders_per_minute: int | None = None,
        max_in_flight: int = 16,
        room_timeout: float = 10.0,
    ) -> None:
        for name, count in (
            ("rate_limit_per_minute", rate_limit_per_minute),
            ("orders_per_minute", orders_per_minute),
            ("max_in_flight", max_in_flight),
        ):
            if count is not None:
                positive_int(count, name)
        seconds(room_timeout, "room_timeout")
        #: The desk's limits, in units (1 USDC or 1 share = 1_000_000).
        self.limits = limits
        self.budget = Budget(rate_limit_per_minute)
        #: Places a minute: as configured (``orders_per_minute``), and as learnt from the
        #: service's risk refusals.
        self.places = Budget(orders_per_minute, RISK_WINDOW, spread=True)
        self.slots = Slots(max_in_flight)
        self.counters = Counters()
        self.room_timeout = room_timeout
        #: Why no new place may go (``halt``), else ``None``.
        self.halted: str | None = None
        #: Called with True after a request of unknown outcome, False after any other.
        self.on_outcome: Callable[[bool], None] | None = None
        self._own: dict[Owner, Limits] = {}
        #: What may rest on the service now, and what the requotes under way head to:
        #: each outcome's exposure and their sums (per market, per event).
        self.now = Sums()
        self.planned = Sums()
        self._waiting: list[asyncio.Future[None]] = []  # requotes waiting for room
        # when the requests and the places the service took were answered (a window's)
        self._answered: deque[float] = deque()
        self._placed: deque[float] = deque()

    # -- limits ---------------------------------------------------------------

    def join(self, owner: Owner, limits: Limits, event_id: str | None = None) -> None:
        """``owner``'s quoter trades through this gate, held to its own ``limits``."""
        self._own[owner] = limits
        self.now.set(owner, self.now.each.get(owner, NONE), event_id)
        self.planned.set(owner, self.planned.each.get(owner, NONE), event_id)

    def leave(self, owner: Owner) -> None:
        """``owner`` left: nothing of it counts against the limits any more."""
        self.now.set(owner, NONE)
        self.planned.set(owner, NONE)
        self._own.pop(owner, None)
        self.wake()

    @property
    def open_orders(self) -> int:
        """Orders that may rest on the service now, over every quoter of the gate."""
        return self.now.orders

    def plan(self, ladders: Mapping[Owner, tuple[Sequence[Level], int]]) -> None:
        """Check every ladder (``owner: (levels, held units)``) against its quoter's own
        limits and, together, against the desk's; ``QuoteRefused`` naming the first one
        broken, and nothing reserved. Else each ladder is what its quoter heads to."""
        if self.halted is not None and any(levels for levels, _ in ladders.values()):
            raise Halted(self.halted)
        targets: dict[Owner, Exposure] = {}
        for owner, (levels, held) in ladders.items():
            target = targets[owner] = exposure(levels, held)
            own = self._own.get(owner)
            refused = None if own is None else own_breach(target, own, held)
            if refused is not None:
                raise refused
        saved = {owner: self.planned.each.get(owner, NONE) for owner in targets}
        try:
            for owner, target in targets.items():
                refused = self.planned.breach(owner, target, self.limits)
                if refused is not None:
                    raise refused
                self.planned.set(owner, target)
        except BaseException:
            for owner, old in saved.items():
                self.planned.set(owner, old)
            raise

    def admit(self, owner: Owner, union: Sequence[Level], held: int) -> bool:
        """Reserve what may rest while ``owner``'s requote runs (``union``: the orders
        it keeps, cancels and places); True: the cancels must go first, since the old
        and new orders together would break a limit."""
        both = exposure(union, held)
        own = self._own.get(owner)
        if own is not None and own_breach(both, own, held, orders=False) is not None:
            return True
        if self.now.breach(owner, both, self.limits) is None:
            self.now.set(owner, both)
            return False
        return True

    async def admit_places(self, owner: Owner, resting: Sequence[Level], held: int) -> None:
        """After ``owner``'s cancels: wait (``room_timeout`` s at most) until what it may
        have resting (``resting``, its new places included) fits beside the others'."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.room_timeout
        new = exposure(resting, held)
        while True:
            if self.halted is not None:
                raise Halted(self.halted)
            refused = self.now.breach(owner, new, self.limits)
            if refused is None:
                self.now.set(owner, new)
                return
            left = deadline - loop.time()
            if left <= 0:
                raise refused
            waiter = loop.create_future()
            self._waiting.append(waiter)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await waiter

    def settle(self, owner: Owner, resting: Sequence[Level], held: int) -> None:
        """``owner``'s requote (cancel, reconcile) ended: what may rest on the service is
        ``resting``, and that is what it heads to."""
        now = exposure(resting, held)
        self.now.set(owner, now)
        self.planned.set(owner, now)
        self.wake()

    def wake(self) -> None:
        """Requotes waiting for room look again (room was freed, or the desk halted)."""
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    def halt(self, reason: str) -> None:
        """No new place goes out until ``resume``; those waiting give up."""
        self.halted = reason
        self.wake()
        self.budget.nudge()
        self.places.nudge()

    def resume(self) -> None:
        self.halted = None

    # -- requests -------------------------------------------------------------

    async def request(self, endpoint: str, call: Awaitable[T], cost: int = 1) -> T:
        """Await ``call`` (``cost`` requests to ``endpoint``) within the budget, counted.
        A place not yet sent when the desk halts is not sent (``Halted``); nor is one
        the learnt place rate has no room for within ``room_timeout`` s (``Paced``). A
        cancel of a halted desk goes at once (the budget always keeps room for it)."""
        urgent = endpoint == CANCEL
        if urgent and self.halted is not None:
            self.budget.spend(cost)
            return await self._send(endpoint, call)
        keep = 0 if urgent else self.now.orders  # room to cancel everything
        try:
            if endpoint == PLACE:
                await self._pace()
            await self.slots.acquire(urgent)
        except BaseException:
            _close(call)
            raise
        try:
            try:
                if not await self.budget.take(keep, cost, self._stop(endpoint)):
                    raise Halted(str(self.halted))  # halted while it waited for room
                if endpoint == PLACE and self.halted is not None:
                    raise Halted(self.halted)
            except BaseException:  # cancelled or halted before it was sent: never sent
                _close(call)
                raise
            # the client's own retries take room in the budget too
            with paced(lambda: self._room(keep)):
                return await self._send(endpoint, call, cost)
        finally:
            self.slots.release()

    def _stop(self, endpoint: str) -> Callable[[], bool]:
        return lambda: endpoint == PLACE and self.halted is not None

    async def _pace(self) -> None:
        """Room for one more place under the learnt place rate, else ``Paced``."""
        if self.halted is not None:
            raise Halted(self.halted)
        places = self.places
        if places.limit is None:
            return  # no pace configured nor learnt: nothing to wait for
        if places.delay() > self.room_timeout:
            raise Paced(places.limit, places.window)  # no room in time: not worth a wait
        halted = lambda: self.halted is not None  # noqa: E731 - a stop condition
        try:
            async with asyncio.timeout(self.room_timeout):
                took = await places.take(0, 1, halted)
        except TimeoutError:
            raise Paced(places.limit, places.window) from None
        if not took:
            raise Halted(str(self.halted))

    async def _room(self, keep: int) -> None:
        await self.budget.take(keep)

    async def _send(self, endpoint: str, call: Awaitable[T], cost: int = 1) -> T:
        start = time.perf_counter()
        try:
            result = await call
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._refused(endpoint, exc)
            outcome = "429" if isinstance(exc, RateLimited) else type(exc).__name__
            self.counters.request(endpoint, outcome, time.perf_counter() - start)
            if self.on_outcome is not None:
                self.on_outcome(isinstance(exc, UNKNOWN_OUTCOME))
            raise
        self.counters.request(endpoint, "ok", time.perf_counter() - start)
        now = time.monotonic()
        self._answered.append(now)
        if endpoint == PLACE:
            self._placed.append(now)
        if self.on_outcome is not None:
            self.on_outcome(False)
        if endpoint == OPEN_ORDERS and isinstance(result, list) and len(result) >= PAGE_SIZE_MAX:
            self.budget.spend(len(result) // PAGE_SIZE_MAX)  # its further pages (at most)
        return result

    def _refused(self, endpoint: str, exc: BaseException) -> None:
        """What a refusal teaches: a 429 holds every request to what the window took,
        and pauses them for its ``Retry-After``; a risk refusal of a place holds the
        places to what the service took in its minute."""
        if isinstance(exc, RateLimited):
            self.counters.rate_limited += 1
            budget = self.budget
            budget.learn(budget.used(asyncio.get_running_loop().time()))
            if exc.retry_after is not None:
                budget.pause(exc.retry_after)
            log.warning("the service limits the rate: %s requests a window for now", budget.limit)
        elif isinstance(exc, RiskControlError) and endpoint == PLACE:
            placed, since = self._placed, time.monotonic() - RISK_WINDOW
            while placed and placed[0] <= since:
                placed.popleft()
            if self.places.limit is None or len(placed) < self.places.limit:
                self.places.learn(len(placed))  # what the service took in its minute
                log.warning(
                    "the service refused a place (%s): %d a minute for now", exc, len(placed)
                )

    def admit_order(self, owner: Owner, union: Sequence[Level], held: int) -> None:
        """An order of one's own (``Desk.send_raw_order``) beside ``owner``'s resting
        ones (``union``: both): ``QuoteRefused`` naming the limit it would break (its
        quoter's own, or the desk's), else reserved."""
        if self.halted is not None:
            raise Halted(self.halted)
        both = exposure(union, held)
        own = self._own.get(owner)
        refused = None if own is None else own_breach(both, own, held)
        refused = refused or self.now.breach(owner, both, self.limits)
        if refused is not None:
            raise refused
        self.now.set(owner, both)


def _within(stamps: deque[float], window: float) -> int:
    """How many of ``stamps`` (``time.monotonic()``) fall in the last ``window`` s (the
    older ones dropped)."""
    since = time.monotonic() - window
    while stamps and stamps[0] <= since:
        stamps.popleft()
    return len(stamps)


def _close(call: Awaitable[Any]) -> None:
    """A call that will never be awaited: closed, so that it never starts (nor warns)."""
    if inspect.iscoroutine(call):
        call.close()
