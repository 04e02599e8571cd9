"""A desk's request budget: a sliding window like the service's rate limit (``Budget``),
learnt from the service's refusals as well as configured, and a bound on the requests
in flight, cancels first (``Slots``)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

__all__ = ["Budget", "Slots"]


#: Windows a learnt limit lasts without another refusal before the configured one is back.
LEARNT_FOR = 10


class Budget:
    """At most ``limit`` requests in any ``window`` seconds (the service's rule, a
    sliding window); a request waits for room rather than spend a 429.

    ``limit`` ``None``: none configured. The service's refusals teach it too:
    ``learn(n)`` (a 429, a per-minute risk refusal) holds it to ``n`` a window for
    ``LEARNT_FOR`` windows after the last refusal, and ``pause(s)`` (a
    ``Retry-After``) lets nothing through for ``s`` seconds. ``spread`` also holds
    every sixth of the window to a sixth of the limit: a burst cannot fill the
    service's window in a second and leave nothing for the rest of it."""

    def __init__(self, limit: int | None, window: float = 60.0, *, spread: bool = False) -> None:
        self.configured = limit
        self.window = window
        self.spread = spread
        self._sent: deque[float] = deque()
        #: Requests that had to wait for room.
        self.queued = 0
        #: Times the service's refusals taught it a lower limit.
        self.learnt = 0
        self._learnt: int | None = None
        self._learnt_until = 0.0
        self._paused_until = 0.0
        self._nudge: asyncio.Future[None] | None = None  # wakes the waiters (``nudge``)

    @property
    def limit(self) -> int | None:
        """The limit in force: the one learnt while it lasts, else the configured one."""
        learnt = self._learnt
        if learnt is not None and time.monotonic() < self._learnt_until:
            return learnt if self.configured is None else min(learnt, self.configured)
        return self.configured

    def learn(self, n: int) -> None:
        """The service refused one request past ``n`` in the window: hold to ``n``."""
        self._learnt = max(1, n)
        self._learnt_until = time.monotonic() + LEARNT_FOR * self.window
        self.learnt += 1

    def pause(self, seconds: float) -> None:
        """Send nothing for ``seconds`` (a ``Retry-After``; at most one window)."""
        now = asyncio.get_running_loop().time()
        self._paused_until = max(self._paused_until, now + min(max(seconds, 0.0), self.window))

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
        waited = False
        while True:
            if stop is not None and stop():
                return False
            now = loop.time()
            delay = self._wait(now, n, keep)
            if delay <= 0:
                self._sent.extend([now] * max(1, n))
                return True
            if not waited:
                waited = True
                self.queued += 1
            if self._nudge is None or self._nudge.done():
                self._nudge = loop.create_future()
            # asyncio.wait leaves the shared future alone when its time is up
            await asyncio.wait((self._nudge,), timeout=max(0.001, delay))

    def _wait(self, now: float, n: int, keep: int) -> float:
        """Seconds until ``n`` more requests (``keep`` more after them) fit; 0: now."""
        if now < self._paused_until:
            return self._paused_until - now
        used = self.used(now)  # trims the window whatever the limit: learn() reads it
        limit = self.limit
        if limit is None:
            return 0.0
        n = max(1, min(n, limit))
        keep = min(keep, limit - n)
        over = used + n + keep - limit
        if over > 0:
            return self._sent[over - 1] + self.window - now
        if self.spread:
            return self._spread(now, n, limit)
        return 0.0

    def _spread(self, now: float, n: int, limit: int) -> float:
        """Seconds until ``n`` more fit in the last sixth of the window (a sixth of
        ``limit``, at least one)."""
        part, share = self.window / 6, max(1, limit // 6)
        sent, cutoff = self._sent, now - self.window / 6
        recent = 0
        for stamp in reversed(sent):  # newest first: the sixth is short
            if stamp <= cutoff:
                break
            recent += 1
        over = recent + min(n, share) - share
        return 0.0 if over <= 0 else sent[len(sent) - recent + over - 1] + part - now

    def delay(self, n: int = 1) -> float:
        """Seconds until ``n`` more requests fit (0: now)."""
        return max(0.0, self._wait(asyncio.get_running_loop().time(), n, 0))

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
