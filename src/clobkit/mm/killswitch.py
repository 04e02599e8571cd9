"""The ``Desk``'s kill switch: ``halt()`` cancels every open order of the desk and
refuses new quotes until ``resume()``; a watchdog fires it when the strategy's
heartbeat, the stream or the error rate says the desk should stop, and while it
holds sends the cancels again (backing off) until nothing of the desk rests."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any

from ..client import Stream
from ..models import Order
from .budget import Budget
from .quoter import Quoter

__all__ = ["KillSwitch"]

log = logging.getLogger("clobkit.mm")

_RETRY_MAX = 30.0  # s: the longest wait between a halted desk's tries to cancel


class KillSwitch:
    """``heartbeat``, ``halt``, ``resume`` and the watchdog of a ``Desk``."""

    _quoters: dict[tuple[str, str], Quoter]
    _streams: list[Stream]
    budget: Budget

    def _init_kill_switch(
        self,
        heartbeat_timeout: float | None,
        stream_timeout: float | None,
        max_error_rate: float,
        error_window: int,
    ) -> None:
        self.heartbeat_timeout = heartbeat_timeout
        self.stream_timeout = stream_timeout
        self.max_error_rate = max_error_rate
        #: Why the kill switch holds (``None``: quoting is allowed).
        self.halted: str | None = None
        #: Times the kill switch fired.
        self.halts = 0
        #: Seconds between the watchdog's checks (heartbeat, stream, error rate).
        self.watch_interval = 0.05
        #: Seconds before a halted desk's failed cancels are sent again (doubling
        #: after each failure, at most ``_RETRY_MAX``).
        self.halt_retry = 1.0
        #: Times a halted desk sent its cancels again because orders still rested.
        self.halt_retries = 0
        self._retry_in = 0.0
        self._retry_at = 0.0
        self._cancelling = 0  # halts in progress (by hand or by the watchdog)
        self._outcomes: deque[bool] = deque(maxlen=error_window)  # True: unknown outcome
        self._unknown = 0
        self._beat: float | None = None
        self._halting: asyncio.Task[list[Order]] | None = None
        self._waiting: list[asyncio.Future[None]] = []  # requotes waiting for room

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
        self.budget.nudge()  # and so do their places waiting in the budget (not sent)
        return await self._cancel_all()

    async def _cancel_all(self) -> list[Order]:
        """Cancel every open order of every open quoter at once; the orders cancelled.
        Raises the last failure once all are done."""
        opened = [q for q in self._quoters.values() if q.market is not None]
        self._cancelling += 1
        try:
            results = await asyncio.gather(
                *(q.cancel_all() for q in opened), return_exceptions=True
            )
        finally:
            self._cancelling -= 1
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
        self._retry_in = 0.0
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
                self._recancel()
                continue
            beat, limit = self._beat, self.heartbeat_timeout
            if beat is not None and limit is not None and time.monotonic() - beat > limit:
                self._fire(f"heartbeat older than {limit} s")
                continue
            limit = self.stream_timeout
            downs = [s.down_since for s in self._streams if s.down_since is not None]
            if downs and limit is not None and loop.time() - min(downs) > limit:
                self._fire(f"stream down for more than {limit} s")

    def _recancel(self) -> None:
        """A halted desk whose orders still rest (its cancels failed: the same outage
        that fired it, say) sends them again, after ``halt_retry`` s doubling per try."""
        if self._cancelling or (self._halting is not None and not self._halting.done()):
            return
        if not any(q.resting() for q in self._quoters.values() if q.market is not None):
            self._retry_in = 0.0  # all cancelled: the next failure starts afresh
            return
        now = time.monotonic()
        if not self._retry_in:
            self._retry_in, self._retry_at = self.halt_retry, now + self.halt_retry
        if now < self._retry_at:
            return
        self._retry_in = min(2 * self._retry_in, _RETRY_MAX)
        self._retry_at = now + self._retry_in
        self.halt_retries += 1
        self._halting = asyncio.ensure_future(self._cancel_again())
        self._halting.add_done_callback(_log_failure)

    async def _cancel_again(self) -> list[Order]:
        if self.halted is None:  # resumed before this try began: nothing to do
            return []
        return await self._cancel_all()

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the kill switch's cancels failed: %s", task.exception())
