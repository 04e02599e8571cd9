"""A remote signer's sign budget: at most ``rate`` calls started in any one second,
at most ``max_in_flight`` at once, and the back-off after a throttled call.

A KMS quota is a rate of calls per second (AWS KMS: 300 ECC ``Sign`` calls a second
per account and region by default; Cloud KMS: per project and region per minute),
beside the service's own request budget. A requote's signatures go out together
(a burst of up to ``rate`` in the same instant is allowed: a window, not a
spacing), and the next ones wait for the window to pass. The decisions are plain
arithmetic over the wall clock (``delay``); the async signer sleeps with
``asyncio.sleep``, the sync twin's threads with ``time.sleep``.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque

from .._checks import positive_int

__all__ = ["SignBudget"]

#: The first back-off after a failed try (s), doubled each time, at most ``_CAP``.
_FIRST_BACKOFF = 0.05
_CAP = 2.0


class SignBudget:
    """The window of call starts, and what was counted: ``calls`` (KMS calls sent),
    ``throttled`` (answers that said slow down), ``retries`` (calls sent again),
    ``waited`` (calls that waited for the window)."""

    def __init__(self, rate: int, max_in_flight: int) -> None:
        self.rate = positive_int(rate, "rate")
        self.max_in_flight = positive_int(max_in_flight, "max_in_flight")
        self._starts: deque[float] = deque()
        self._lock = threading.Lock()  # the sync twin's threads; uncontended under asyncio
        self.calls = 0
        self.throttled = 0
        self.retries = 0
        self.waited = 0

    def delay(self) -> float:
        """Seconds to wait before the next call may start; 0.0 records its start now."""
        with self._lock:
            now = time.monotonic()
            starts = self._starts
            while starts and starts[0] <= now - 1.0:
                starts.popleft()
            if len(starts) >= self.rate:
                self.waited += 1
                return starts[0] + 1.0 - now
            starts.append(now)
            self.calls += 1
            return 0.0

    def backoff(self, attempt: int, *, throttled: bool) -> float:
        """Seconds to wait after the ``attempt``-th failed try of a call (from 1; a
        ``throttled`` one is counted as such): full jitter over a doubling bound, so
        that calls throttled together spread out."""
        with self._lock:
            self.throttled += throttled
            self.retries += 1
        return random.uniform(0.0, min(_CAP, _FIRST_BACKOFF * 2 ** (attempt - 1)))

    def counts(self) -> dict[str, int]:
        """``calls``, ``throttled``, ``retries``, ``waited`` so far."""
        return {
            "calls": self.calls,
            "throttled": self.throttled,
            "retries": self.retries,
            "waited": self.waited,
        }
