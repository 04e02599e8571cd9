"""A desk's request budget: a sliding window like the service's rate limit (``Budget``)
and a bound on the requests in flight, cancels first (``Slots``)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

__all__ = ["Budget", "Slots"]


class Budget:
    """At most ``limit`` requests in any ``window`` seconds (the service's rule, a
    sliding window); a request waits for room rather than spend a 429."""

    def __init__(self, limit: int, window: float = 60.0) -> None:
        self.limit = limit
        self.window = window
        self._sent: deque[float] = deque()
        #: Requests that had to wait for room.
        self.queued = 0
        self._nudge: asyncio.Future[None] | None = None  # wakes the waiters (``nudge``)

    def used(self, now: float) -> int:
        """Requests sent in the window ending at ``now`` (loop time, s)."""
        sent = self._sent
        cutoff = now - self.window
        while sent and sent[0] <= cutoff:
            sent.popleft()
        return len(sent)

    async def take(self, keep: int = 0, n: int = 1, stop: Callable[[], bool] | None = None) -> bool:
        """Wait until ``n`` more requests, with ``keep`` more after them, fit; count them
        sent (``n`` is what one call of the client costs: a listing of open orders is a
        request per open status). False, nothing counted, once ``stop()`` is true: it
        is asked before each try, and ``nudge()`` makes the waiters try again now."""
        loop = asyncio.get_running_loop()
        n = max(1, min(n, self.limit))
        keep = min(keep, self.limit - n)
        waited = False
        while True:
            if stop is not None and stop():
                return False
            now = loop.time()
            over = self.used(now) + n + keep - self.limit
            if over <= 0:
                self._sent.extend([now] * n)
                return True
            if not waited:
                waited = True
                self.queued += 1
            if self._nudge is None or self._nudge.done():
                self._nudge = loop.create_future()
            # asyncio.wait leaves the shared future alone when its time is up
            delay = max(0.001, self._sent[over - 1] + self.window - now)
            await asyncio.wait((self._nudge,), timeout=delay)

    def nudge(self) -> None:
        """Make every waiting ``take`` try again now (its ``stop`` may have become true)."""
        if self._nudge is not None and not self._nudge.done():
            self._nudge.set_result(None)

    def spend(self, n: int) -> None:
        """Count ``n`` more requests sent now (the further pages of a listing)."""
        now = asyncio.get_running_loop().time()
        self._sent.extend([now] * n)


class Slots:
    """At most ``n`` requests in flight; cancels (``urgent``) go before the others."""

    def __init__(self, n: int) -> None:
        self.free = n
        self._waiting: tuple[deque[asyncio.Future[None]], ...] = (deque(), deque())

    async def acquire(self, urgent: bool) -> None:
        if self.free > 0 and not (self._waiting[0] or self._waiting[1]):
            self.free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[0 if urgent else 1].append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot just as it was cancelled: pass it on
            raise

    def release(self) -> None:
        for waiting in self._waiting:
            while waiting:
                waiter = waiting.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self.free += 1
