"""Timing for ``clobkit bench``: run settings, contenders, the floors F and S, interleaved rounds.

Timing is best-of-N with ``time.perf_counter_ns`` over interleaved rounds:
each round samples every contender of an operation (and both floors) in turn,
forwards on even rounds and backwards on odd ones, so machine noise hits all of
them alike.
"""

from __future__ import annotations

import gc
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..core.extras import install_hint


def gil_bound(one: float, held: float, alone: float, threads: int) -> float:
    """The most speed-up ``threads`` can give a batch costing ``one`` per order on one
    thread, of which ``held`` holds the GIL and ``alone`` of that has no worker beside it
    (one unit for all three): the lone part, then the rest shared out, but never faster
    than the calling thread does its GIL part of every round."""
    return one / (alone + max(held - alone, (one - alone) / threads))


#: Where the peers come from (py-order-utils, py-clob-client(-v2), eth-account, matplotlib).
INSTALL_HINT = install_hint("bench")


@dataclass(frozen=True)
class Settings:
    """How long and how large a run is."""

    rounds: int  # interleaved rounds per operation (best of N)
    target_ms: float  # minimum duration of one timed sample, milliseconds
    batch: int  # orders per order_ids call
    sizes_max_cents: int  # grid sizes run 0.01 .. sizes_max_cents / 100
    floor_bytes: int  # buffer hashed by the floors, bytes
    memory_orders: int  # orders per memory measurement (0: skip)
    checks: int  # orders and requests compared with each peer
    batch_v2: int = 500_000  # orders per V2 order_ids call (issue #10's batch)
    file_orders: int = 200_000  # orders in each file of the order-ids file rows


DEFAULT = Settings(
    rounds=7,
    target_ms=20.0,
    batch=1_000_000,
    sizes_max_cents=3000,
    floor_bytes=4 << 20,
    memory_orders=1_000_000,
    checks=200,
    batch_v2=500_000,
)
QUICK = Settings(
    rounds=3,
    target_ms=2.0,
    batch=10_000,
    sizes_max_cents=500,
    floor_bytes=1 << 20,
    memory_orders=100_000,
    checks=40,
    batch_v2=10_000,
    file_orders=2_000,
)


@dataclass
class Contender:
    """One implementation of one operation; ``run(reps)`` does ``reps * per`` operations."""

    name: str
    kind: str  # "clobkit", "peer" or "floor"
    run: Callable[[int], object]
    per: float
    reps: int = 1
    best_ns: float = math.inf  # best nanoseconds per operation so far
    correctness: str = ""
    compared: int = 0
    mismatches: int = 0
    expect_equal: bool = True  # False for a peer known to differ (py-clob-client's floats)

    def sample(self) -> None:
        """Time one sample (garbage collector off, as timeit does) and keep the best."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter_ns()
            self.run(self.reps)
            elapsed = time.perf_counter_ns() - t0
        finally:
            if enabled:
                gc.enable()
        self.best_ns = min(self.best_ns, elapsed / (self.reps * self.per))

    def calibrate(self, target_ns: float) -> None:
        """Warm up, then pick ``reps`` so that one sample lasts at least ``target_ns``."""
        self.reps = 1
        self.sample()
        per_rep = self.best_ns * self.per
        if per_rep < target_ns:
            self.reps = max(1, math.ceil(target_ns / max(per_rep, 1.0)))


@dataclass
class Operation:
    """Contenders doing the same work; the first is clobkit's reference."""

    key: str
    title: str
    contenders: list[Contender] = field(default_factory=list)


def floors(size: int) -> tuple[Contender, Contender]:
    """F: five Keccak-f[1600] permutations (136-byte blocks); S: one SHA-256 compression."""
    buf = b"\x00" * size
    f = Contender(
        "F: 5 × Keccak-f[1600], hashlib.sha3_256",
        "floor",
        lambda reps: [hashlib.sha3_256(buf).digest() for _ in range(reps)],
        per=size / 136 / 5,
    )
    s = Contender(
        "S: 1 × SHA-256 compression, hashlib.sha256",
        "floor",
        lambda reps: [hashlib.sha256(buf).digest() for _ in range(reps)],
        per=size / 64,
    )
    return f, s


def time_operations(ops: Sequence[Operation], extra: Sequence[Contender], s: Settings) -> None:
    """Best-of-``s.rounds`` per contender, each round interleaving an operation's contenders.

    ``extra`` (the floors) join every operation's rounds, so their best is
    taken across the whole run.
    """
    target = s.target_ms * 1e6
    for c in extra:
        if c.best_ns == math.inf:
            c.calibrate(target)
    for op in ops:
        for c in op.contenders:
            c.calibrate(target)
        everyone = [*op.contenders, *extra]
        for r in range(s.rounds):
            for c in everyone if r % 2 == 0 else reversed(everyone):
                c.sample()


def tally(c: Contender, compared: int, mismatches: int, label: str) -> None:
    """Record a comparison: ``label: agreeing/compared``, flagged when any differ."""
    c.compared, c.mismatches = compared, mismatches
    c.correctness = f"{label}: {compared - mismatches:,}/{compared:,}"
    if mismatches:
        c.correctness += f" ({mismatches:,} DIFFER)"
