"""The ``Desk``'s gate: every request of its quoters within the budget (a sliding
window like the service's, room kept to cancel every open order, a bounded number
in flight, counted by endpoint and outcome), the reads its quoters share, and the
limits over the whole desk checked before anything is sent."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from .._core import to_units
from .._spec import PAGE_SIZE_MAX
from ..client import UNKNOWN_OUTCOME, AsyncClient, paced, within
from ..errors import ApiError, QuoteRefused, RateLimited
from ..models import Market, Order
from .budget import Budget, Slots
from .killswitch import KillSwitch
from .ladder import Level
from .metrics import Counters
from .quoter import Quoter
from .risk import NONE, DeskLimits, Sums, exposure
from .sending import LISTING, PREPARE

__all__ = ["CANCEL", "OPEN_ORDERS", "Gate", "Halted"]

T = TypeVar("T")

CANCEL = "DELETE /orders/:id"
PLACE = "POST /orders"
OPEN_ORDERS = "GET /orders?open"
POSITIONS = "GET /portfolio/positions"


class Halted(QuoteRefused, ApiError):
    """A place the halted desk did not send: it never reached the service. A
    ``QuoteRefused`` naming the reason (as a requote refused once halted); an
    ``ApiError`` too, so that its quoter forgets the order as one the service refused
    (``status`` 0: no answer came) and raises this once its requote is done."""

    def __init__(self, reason: str) -> None:
        self.field, self.value = "desk", reason
        self.reason = "is halted: no new quotes until resume()"
        self.message = f"desk: {self.reason} (got {reason!r})"  # as QuoteRefused says it
        self.status = 0
        self.code = self.detail = None
        Exception.__init__(self, self.message)  # (each base's __init__ wants its own args)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.value,))


class Gate(KillSwitch):
    """The requests, shared reads and limits of a ``Desk`` (the quoters' ``Host``)."""

    _client: AsyncClient
    _opening: dict[Quoter, asyncio.Task[None]]  # the quoters opening together
    #: Seconds a requote waits for room under the desk's limits (``admit_places``).
    room_timeout: float

    def _init_gate(
        self, limits: DeskLimits, rate_limit_per_minute: int, max_in_flight: int
    ) -> None:
        #: The limits over the whole desk, in units (1 USDC or 1 share = 1_000_000).
        self.limits = limits
        self.budget = Budget(rate_limit_per_minute)
        self.slots = Slots(max_in_flight)
        self.counters = Counters()
        self._now = Sums()  # what may rest on the service now
        self._plan = Sums()  # what the requotes under way head to
        self._held: asyncio.Task[dict[Any, int]] | None = None
        self._listed: asyncio.Task[dict[tuple[str, str], list[Order]]] | None = None
        self._markets: dict[str, asyncio.Task[Market]] = {}  # market id as given -> read

    async def request(
        self, endpoint: str, call: Awaitable[T], cost: int = 1, *, again: bool = False
    ) -> T:
        """Await ``call`` (``cost`` requests to ``endpoint``: a listing of open orders is
        one per open status) within the budget, counted. A place not yet sent when the
        desk halts is not sent (``Halted``): halt()'s cancels must not wait behind the
        places queued for room in the budget, holding their quoters' locks. A place sent
        ``again`` to settle one of unknown outcome is sent (the first may still land:
        settled, it is cancelled; forgotten, it would rest untracked)."""
        urgent = endpoint == CANCEL
        if urgent and self.halted is not None:
            # the kill switch: every cancel at once, bounded by the client's connection
            # pool alone (the budget always keeps room to cancel every open order)
            return await self._send(endpoint, call, 0, cost)
        keep = 0 if urgent else self._now.orders  # room to cancel everything
        try:
            self._refuse(endpoint, again)
            await self.slots.acquire(urgent)
        except BaseException:
            _close(call)
            raise
        try:
            return await self._send(endpoint, call, keep, cost, again)
        finally:
            self.slots.release()

    def _refuse(self, endpoint: str, again: bool) -> None:
        """``Halted`` for a new place while the desk is halted."""
        if self._halted_place(endpoint, again):
            raise Halted(str(self.halted))

    def _halted_place(self, endpoint: str, again: bool) -> bool:
        return self.halted is not None and endpoint == PLACE and not again

    async def _send(
        self, endpoint: str, call: Awaitable[T], keep: int, cost: int, again: bool = False
    ) -> T:
        try:
            self._refuse(endpoint, again)  # halted while it waited for a slot
            if not await self.budget.take(keep, cost, lambda: self._halted_place(endpoint, again)):
                raise Halted(str(self.halted))  # halted while it waited for room
        except BaseException:
            _close(call)
            raise
        start = time.perf_counter()
        try:
            # the client's own retries take room in the budget too
            with paced(lambda: self._room(keep)):
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
        if endpoint == OPEN_ORDERS and isinstance(result, list) and len(result) >= PAGE_SIZE_MAX:
            self.budget.spend(len(result) // PAGE_SIZE_MAX)  # its further pages (at most)
        return result

    async def _room(self, keep: int) -> None:
        await self.budget.take(keep)

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

    async def market(self, q: Quoter) -> Market:
        """``q``'s market, read and prepared (the wallet, both tokens' fee rates) once
        for the quoters of that market that open together: both outcomes of a market
        read it and its fee rates once, not once each (twice, racing)."""
        key = q.market_id
        task = self._markets.get(key)
        if task is None:
            task = self._markets[key] = asyncio.ensure_future(self._read_market(key))
        try:
            return await asyncio.shield(task)
        finally:
            self._forget_reads()

    async def _read_market(self, market_id: str) -> Market:
        market = await self.request("GET /markets/:id", self._client.get_market(market_id))
        await self.request("prepare", self._client.prepare([market.id]), PREPARE)
        return market

    async def held(self, q: Quoter) -> int:
        if self._held is None:
            self._held = asyncio.ensure_future(self._read_positions())
        try:
            positions = await asyncio.shield(self._held)
        finally:
            self._forget_reads()
        return positions.get(q.token_id, positions.get((q.market_id, q.outcome), 0))

    async def _read_positions(self) -> dict[Any, int]:
        """Every position, a page of 100 a request, each within the budget (the client's
        walk ends it, and ``paced`` makes each further page take room)."""
        return await self.request(POSITIONS, self._walk_positions())

    async def _walk_positions(self) -> dict[Any, int]:
        positions: dict[Any, int] = {}
        async for pos in self._client.iter_positions(per_page=PAGE_SIZE_MAX):
            units = to_units(pos.shares or 0, "shares")
            if pos.token_id is not None:
                positions[pos.token_id] = units
            elif pos.market_id is not None and pos.raw_outcome is not None:
                positions[(pos.market_id, pos.raw_outcome)] = units
        return positions

    async def listed(self, q: Quoter) -> list[Order]:
        """The live orders of ``q``'s market and outcome, from one listing shared by the
        desk's quoters (grouped once: each quoter reads its own, not the whole desk's)."""
        if self._listed is None:
            self._listed = asyncio.ensure_future(self._grouped())
        try:
            return (await asyncio.shield(self._listed)).get((q.market_id, q.outcome), [])
        finally:
            self._forget_reads()

    def _forget_reads(self) -> None:
        """The shared reads serve the quoters opening together (``Desk.open``); a quoter
        entered on its own, outside such a batch, must not leave them for later ones."""
        if not self._opening:
            self._held = self._listed = None
            self._markets.clear()

    async def _grouped(self) -> dict[tuple[str, str], list[Order]]:
        return by_outcome(await self.request(OPEN_ORDERS, self._client.open_orders(), LISTING))

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

    def release(self, q: Quoter) -> None:
        """``q`` left the desk: nothing of it counts against the limits any more."""
        self._now.set(q, NONE)
        self._plan.set(q, NONE)
        self._wake()


def by_outcome(orders: list[Order]) -> dict[tuple[str, str], list[Order]]:
    """A listing's orders by (market, outcome): one pass, so that handing each quoter its
    own costs the listing once, not once per quoter (quoters x orders on a big desk)."""
    groups: dict[tuple[str, str], list[Order]] = {}
    for order in orders:
        if order.market_id is not None and order.outcome is not None:
            groups.setdefault((order.market_id, order.outcome), []).append(order)
    return groups


def _close(call: Awaitable[Any]) -> None:
    """A call that will never be awaited: closed, so that it never starts (nor warns)."""
    if inspect.iscoroutine(call):
        call.close()
