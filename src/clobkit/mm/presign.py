"""Orders signed ahead of their requote: a remote signer's latency (a KMS call, tens
of ms) taken while the current ladder rests, not when the next one is sent.

When it is safe: a pre-signed order is a whole order, its salt, amounts, side and
``client_order_id`` fixed and signed (on V1 its fee rate, nonce and expiration too;
on V2/V3 its ``timestamp``, the moment it was signed). It is used at most once
(taken, never copied: a salt and a key are never sent twice), only for a level
with exactly its side, price, size, order type and expiration, and only while
younger than ``max_age`` seconds (a V2/V3 order carries the time it was signed; a
V1 order the fee rate of that time, so a changed fee rate also voids it). What is
not taken is dropped: nothing pre-signed is ever sent by itself.
"""

from __future__ import annotations

import time
from collections import defaultdict

from ..client import PreparedRawOrder
from .cache import Owner
from .ladder import Level

__all__ = ["Presigned"]

#: (owner, side, price, shares, order type, expiration): what a pre-signed order fits.
Fit = tuple[Owner, int, int, int, str, int]


class Presigned:
    """Pre-signed orders by the level they fit, each with when it was signed."""

    def __init__(self, max_age: float = 30.0) -> None:
        self.max_age = max_age
        self._ready: defaultdict[Fit, list[tuple[float, PreparedRawOrder]]] = defaultdict(list)
        #: Pre-signed orders used, and dropped unused (too old, or a changed fee rate).
        self.used = 0
        self.dropped = 0

    @staticmethod
    def fit(owner: Owner, level: Level, order_type: str, expiration: int | None) -> Fit:
        return (owner, level.side, level.price, level.shares, order_type, expiration or 0)

    def has(self, fit: Fit) -> bool:
        return bool(self._ready.get(fit))

    def put(self, fit: Fit, prepared: PreparedRawOrder) -> None:
        self._ready[fit].append((time.monotonic(), prepared))

    def take(self, fit: Fit, fee_rate_bps: int | None) -> PreparedRawOrder | None:
        """A pre-signed order that fits, young enough (and on V1 of the fee rate in
        force, ``fee_rate_bps``), taken for good; else ``None``."""
        ready = self._ready.get(fit)
        oldest = time.monotonic() - self.max_age
        while ready:
            signed_at, prepared = ready.pop()
            result = prepared.result
            stale = result.clob_order_id_precomputed and result.fee_rate_bps != fee_rate_bps
            if signed_at >= oldest and not stale:
                self.used += 1
                return prepared
            self.dropped += 1
        return None

    def forget(self, owner: Owner) -> None:
        """Drop every pre-signed order of ``owner`` (it leaves, or its market changed)."""
        for fit in [f for f in self._ready if f[0] == owner]:
            self.dropped += len(self._ready.pop(fit))

    def count(self, owner: Owner) -> int:
        return sum(len(v) for f, v in self._ready.items() if f[0] == owner)
