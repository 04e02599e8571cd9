"""The kill switch: cancel what you know first. ``halt()`` sends a ``DELETE`` for every
order the execution cache knows at once: no strategy's lock, no read before it. Only
then does it list the service's open orders to find what it did not know (places of
unknown outcome that landed, orders adopted elsewhere), and it keeps cancelling,
backing off, until a listing shows nothing of the desk resting and nothing of
unknown outcome can still land. A place answered while halted is cancelled as soon
as it is known. Reads that fail or hang never delay the first cancels.

``Watchdog`` fires it when the strategy's heartbeat, a stream or the error rate
says the desk should stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from ..client import UNKNOWN_OUTCOME
from ..core.checks import positive_int, seconds
from ..errors import ApiError, ValidationError
from ..models import Order
from .cache import ExecutionCache, Owner
from .gate import Gate
from .orders import LIVE, State, TrackedOrder
from .resolver import Resolver
from .sender import Sender
from .tasks import all_of

__all__ = ["KillSwitch", "Watchdog"]

log = logging.getLogger("clobkit.mm")

_RETRY_MAX = 30.0  # s: the longest wait between a halted desk's sweeps


class KillSwitch:
    """Cancels every order of one desk (or lone quoter) from its execution cache.

    ``list_open()`` reads the account's open orders; ``owns(record)`` names the owner
    (market id, outcome) a record of an order not in the cache belongs to, or ``None``
    when it is none of this desk's business.
    """

    def __init__(
        self,
        cache: ExecutionCache,
        gate: Gate,
        sender: Sender,
        resolver: Resolver,
        list_open: Callable[[], Awaitable[list[Order]]],
        owns: Callable[[Order], Owner | None],
    ) -> None:
        self.cache = cache
        self.gate = gate
        self.sender = sender
        self.resolver = resolver
        self.list_open = list_open
        self.owns = owns
        #: Why the kill switch holds (``None``: quoting is allowed).
        self.halted: str | None = None
        #: Times the kill switch fired.
        self.halts = 0
        #: Seconds before a halted desk sweeps again after a sweep that found orders
        #: resting or could not read (doubling each time, at most 30 s).
        self.retry = 1.0
        #: Sweeps of a halted desk that had to cancel again or could not read.
        self.retries = 0
        #: Whether the last sweep's listing showed nothing of this desk resting and
        #: nothing of unknown outcome could still land (``None``: no sweep yet).
        self.flat: bool | None = None
        #: Called when it fires or is resumed (a desk's sentinel is told at once).
        self.on_change: list[Callable[[], None]] = []
        self._sweeper: asyncio.Task[None] | None = None
        self._late: set[asyncio.Task[BaseException | None]] = set()
        cache.watchers.append(self._seen)

    async def halt(self, reason: str = "halt() called") -> list[Order]:
        """Refuse new places and cancel every order the cache knows at once; then sweep
        in the background until nothing rests. Returns once those cancels and the
        places in flight when it fired have been answered (each one placed cancelled
        as soon as it is known), with the orders cancelled; raises the failure of a
        cancel once all are done (the sweep goes on)."""
        if self.halted is None:
            self.halted = reason
            self.halts += 1
            self.gate.halt(reason)
            log.warning("desk halted: %s", reason)
            for told in self.on_change:
                told()
        flying = [t for t in self.cache.unknown() if t.state is State.PLACING]
        try:
            cancelled = await self.cancel_known()
            await self._landed(flying)
        finally:
            self._sweep_in_background()
        return cancelled + [t.record for t in flying if _cancelled(t) and t.record is not None]

    async def _landed(self, flying: list[TrackedOrder]) -> None:
        """Wait (the client's ``timeout`` at most) until every place in ``flying`` has
        its answer, and for the cancels of those that were placed (``_seen``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.resolver.client.config.timeout
        while any(t.state is State.PLACING for t in flying) and loop.time() < deadline:
            await asyncio.sleep(0.005)
        if self._late:
            await asyncio.wait(list(self._late))

    def resume(self) -> None:
        """Allow quoting again (the background sweep stops)."""
        self.halted = None
        self.gate.resume()
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None and not sweeper.done():
            sweeper.cancel()
        for told in self.on_change:
            told()

    async def cancel_known(self, owner: Owner | None = None) -> list[Order]:
        """A ``DELETE`` for every order of ``owner`` (default: all) that may rest under
        an id the cache knows, all at once; the orders cancelled. Raises the failure of
        a cancel that failed, once all are done."""
        orders = self.cache.cancellable(owner)
        failures = await all_of(self.sender.cancel(t) for t in orders)
        failure = next((f for f in failures if f is not None), None)
        if failure is not None:
            raise failure
        return [t.record for t in orders if t.state is State.DONE and t.record is not None]

    async def flatten(self, owner: Owner | None = None, timeout: float = 10.0) -> bool:
        """Cancel what the cache knows of ``owner`` (default: all), then sweep until a
        listing shows nothing of it resting, ``timeout`` s at most; whether it did."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        with contextlib.suppress(*UNKNOWN_OUTCOME, ApiError):
            await self.cancel_known(owner)
        delay = 0.01
        while True:
            left = deadline - loop.time()
            if left <= 0:
                return False
            try:
                if await asyncio.wait_for(self.sweep(owner), left):
                    return True
            except (TimeoutError, *UNKNOWN_OUTCOME, ApiError) as exc:
                log.info("sweeping the book: %s", exc)
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
            delay = min(2 * delay, 1.0)

    async def sweep(self, owner: Owner | None = None) -> bool:
        """List the open orders, take them into the cache (adopting what it did not
        know), read back what the listing no longer shows, cancel what rests, rule out
        places that can no longer land; True when the listing showed nothing of
        ``owner`` (default: the desk) resting and nothing can still land."""
        listed = await self.list_open()
        seen: set[str] = set()
        for record in listed:
            t = self.cache.find(record)
            if t is None:
                mine = self.owns(record)
                if mine is None or (owner is not None and mine != owner):
                    continue
                t = self.cache.adopt(record, mine)
            elif owner is not None and t.owner != owner:
                continue
            else:
                self.cache.apply(t, record)
            seen.add(t.key)
        gone = [t for t in self.cache.cancellable(owner) if t.key not in seen]
        await self.resolver.read_back(gone)  # cancelled or filled: their final records
        await self.cancel_known(owner)
        unknown = [t for t in self.cache.unknown(owner) if t.state is State.UNKNOWN]
        if unknown:
            await self.resolver.settle(unknown, resend=False)
        return not seen and not self.cache.orders(owner)

    def _sweep_in_background(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.ensure_future(self._keep_sweeping())

    async def _keep_sweeping(self) -> None:
        """While halted: sweep until flat, backing off after each sweep that was not."""
        wait = self.retry
        while self.halted is not None:
            try:
                self.flat = await self.sweep()
            except (*UNKNOWN_OUTCOME, ApiError) as exc:
                log.warning("the kill switch's sweep failed: %s", exc)
                self.flat = False
            if self.flat:
                return
            self.retries += 1
            await asyncio.sleep(wait)
            wait = min(2 * wait, _RETRY_MAX)

    def _seen(self, t: TrackedOrder, before: State) -> None:
        """An order became live while halted (a place answered late, a record of one of
        unknown outcome): cancel it now."""
        if self.halted is None or t.state not in LIVE or before in LIVE:
            return
        task = asyncio.ensure_future(self.sender.cancel(t))
        self._late.add(task)
        task.add_done_callback(self._late.discard)

    async def close(self) -> None:
        """Stop the background sweep and wait for the late cancels."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None and not sweeper.done():
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sweeper
        if self._late:
            await asyncio.wait(list(self._late))


class Watchdog:
    """Fires a kill switch when the strategy's ``heartbeat`` is older than
    ``heartbeat_timeout`` s (armed by the first beat), a stream has been down longer
    than ``stream_timeout`` s, or more than ``max_error_rate`` of the last
    ``error_window`` requests ended with an unknown outcome."""

    def __init__(
        self,
        kill: KillSwitch,
        streams_down: Callable[[], list[float]],
        heartbeat_timeout: float | None,
        stream_timeout: float | None,
        max_error_rate: float,
        error_window: int,
    ) -> None:
        for name, given in (
            ("heartbeat_timeout", heartbeat_timeout),
            ("stream_timeout", stream_timeout),
        ):
            if given is not None:
                seconds(given, name)
        positive_int(error_window, "error_window")
        rate = max_error_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
            raise ValidationError("max_error_rate", rate, "must be in (0, 1]")
        self.kill = kill
        self.streams_down = streams_down
        self.heartbeat_timeout = heartbeat_timeout
        self.stream_timeout = stream_timeout
        self.max_error_rate = max_error_rate
        #: Seconds between the watchdog's checks.
        self.interval = 0.05
        self._outcomes: deque[bool] = deque(maxlen=error_window)  # True: unknown outcome
        self._unknown = 0
        self._beat: float | None = None
        self._firing: asyncio.Task[Any] | None = None

    def heartbeat(self) -> None:
        self._beat = time.monotonic()

    def reset(self) -> None:
        """Re-arm every trigger (after ``resume``)."""
        self._beat = None
        self._outcomes.clear()
        self._unknown = 0

    def outcome(self, unknown: bool) -> None:
        """One request ended (``unknown``: with an unknown outcome)."""
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
            self.fire(
                f"error rate {self._unknown}/{len(window)} requests past max_error_rate "
                f"{self.max_error_rate}"
            )

    def fire(self, reason: str) -> None:
        if self.kill.halted is None and (self._firing is None or self._firing.done()):
            self._firing = asyncio.ensure_future(self.kill.halt(reason))
            self._firing.add_done_callback(_log_failure)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            if self.kill.halted is not None:
                continue
            beat, limit = self._beat, self.heartbeat_timeout
            if beat is not None and limit is not None and time.monotonic() - beat > limit:
                self.fire(f"heartbeat older than {limit} s")
                continue
            limit = self.stream_timeout
            downs = self.streams_down()
            if downs and limit is not None and loop.time() - min(downs) > limit:
                self.fire(f"stream down for more than {limit} s")

    async def close(self) -> None:
        firing, self._firing = self._firing, None
        if firing is not None and not firing.done():
            firing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await firing


def _cancelled(t: TrackedOrder) -> bool:
    return t.state is State.DONE and t.order_id is not None


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the kill switch's cancels failed: %s", task.exception())
