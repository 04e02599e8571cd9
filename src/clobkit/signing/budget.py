"""A remote signer's sign budget: calls started at ``rate`` a second at most after a
burst of ``burst``, at most ``max_in_flight`` at once, and the back-off after a
throttled call; ``_Retry``, a failed call worth another try.

A KMS quota is a rate of calls per second (AWS KMS: 300 ECC ``Sign`` calls a second
per account and region by default; Cloud KMS: per project and region per minute),
beside the service's own request budget. A token bucket: a requote's signatures go
out together (up to ``burst`` at once), and a bigger batch is spread at ``rate``
rather than sent as one wave (whose answers, arriving together, would each cost
the event loop the SDK's parsing at the same moment). The decisions are plain
arithmetic over the clock (``delay``); the async signer sleeps with
``asyncio.sleep``, the sync twin's threads with ``time.sleep``.
"""

from __future__ import annotations

import random
import threading
import time

from ..core.checks import positive_int

__all__ = ["SignBudget"]

#: The first back-off after a failed try (s), doubled each time, at most ``_CAP``.
_FIRST_BACKOFF = 0.05
_CAP = 2.0


class SignBudget:
    """The bucket of call starts, and what was counted: ``calls`` (KMS calls sent),
    ``throttled`` (answers that said slow down), ``retries`` (calls sent again),
    ``waited`` (calls that waited for a token)."""

    def __init__(self, rate: int, max_in_flight: int, burst: int = 32) -> None:
        self.rate = positive_int(rate, "rate")
        self.max_in_flight = positive_int(max_in_flight, "max_in_flight")
        self.burst = min(positive_int(burst, "burst"), self.rate)
        self._tokens = float(self.burst)
        self._at = time.monotonic()
        self._lock = threading.Lock()  # the sync twin's threads; uncontended under asyncio
        self.calls = 0
        self.throttled = 0
        self.retries = 0
        self.waited = 0

    def delay(self) -> float:
        """Reserve the next start: the seconds to wait until it (0.0: now). Every
        caller waits once, in the order it asked (no wake-up to ask again: a batch of
        thousands would otherwise wake thousands of times a token)."""
        with self._lock:
            now = time.monotonic()
            tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            self._tokens = tokens - 1.0  # below 0: starts reserved ahead
            self.calls += 1
            if tokens >= 1.0:
                return 0.0
            self.waited += 1
            return (1.0 - tokens) / self.rate

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


class _Retry(Exception):
    """A failed call worth another try (``throttled``: the KMS said slow down)."""

    def __init__(self, cause: str, throttled: bool) -> None:
        super().__init__(cause)
        self.cause = cause
        self.throttled = throttled
