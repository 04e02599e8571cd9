"""Quotes that expire on their own (``order_ttl``), renewed while the desk lives.

Every quote is a GTD order whose expiration lies ``order_ttl`` seconds ahead (rounded
up to the second: the service counts whole seconds), so that whatever happens to the
desk (its process, its host, its network), nothing it placed outlives it by more
than that. While the desk is healthy, ``Renewer`` keeps the ladder on the book:
``renew_before`` seconds before an order expires, a successor at the level the last
requote wanted goes out through the gate (its limits, the request budget, the
place rate), and then:

* ``renewal="expire"`` (the default): the old order is left to expire by itself.
  One request a renewal; the level is never absent; the two rest together for at
  most ``renew_before`` s, both counted by the gate (which refuses the overlap
  when it would break a limit: then the old order is cancelled first, and the
  level is absent for the successor's round trip, two requests);
* ``renewal="cancel"``: the old order is cancelled once its successor is placed.
  Two requests a renewal; the two rest together for one round trip.

Nothing is renewed while the desk is halted (its orders run out, or its kill switch
cancels them). An order not wanted by the last requote is left to expire; one whose
level a newer order already holds (a successor of unknown outcome) is too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from ..core.checks import seconds
from ..core.spec import CANCELLED, ORDER_TYPES
from ..errors import QuoteRefused, ValidationError
from .cache import ExecutionCache, Owner
from .gate import Gate
from .ladder import Level
from .orders import State, TrackedOrder
from .resolver import Resolver
from .sender import Sender
from .tasks import each_of

__all__ = ["RENEWALS", "Expiry", "Renewer", "expiry"]

log = logging.getLogger("clobkit.mm")

#: The renewal policies (see the module's doc).
RENEWALS = ("expire", "cancel")
GTD = ORDER_TYPES[2]
_WAKE_MAX = 0.5  # s: the longest the renewer sleeps (new orders are noticed as soon)
_RETRY = 1.0  # s before a failed renewal is tried again
_GRACE = 2.0  # s past its expiration before an order still open is read back


class Expiry(NamedTuple):
    """Quotes that expire on their own: ``ttl`` s of life each (``order_ttl``), renewed
    ``renew_before`` s before they expire, the old order left to expire or cancelled
    (``renewal``: ``expire``, ``cancel``); ``min_expiration``, the service's minimum (s)
    an expiration must lie ahead (the sandbox's ``min_expiration_seconds``; Polymarket's
    is a minute), which ``ttl`` must reach. ``Desk(order_ttl=30)`` is
    ``Desk(order_ttl=Expiry(30))``."""

    ttl: float
    renew_before: float = 2.0
    renewal: str = "expire"
    min_expiration: float = 0.0

    def expiration(self) -> int:
        """The expiration (Unix s) of an order placed now."""
        return math.ceil(time.time() + self.ttl)


def expiry(order_ttl: float | Expiry | None) -> Expiry | None:
    """``order_ttl`` (seconds, or an ``Expiry``) checked: ``ValidationError`` naming the
    first option wrong; ``None`` without one."""
    if order_ttl is None:
        return None
    given = order_ttl if isinstance(order_ttl, Expiry) else Expiry(order_ttl)
    ttl, renew_before, renewal, minimum = given
    seconds(ttl, "order_ttl")
    seconds(renew_before, "renew_before")
    seconds(minimum, "min_expiration", zero=True)
    if renewal not in RENEWALS:
        raise ValidationError("renewal", renewal, f"must be one of {', '.join(RENEWALS)}")
    if ttl < minimum:
        raise ValidationError(
            "order_ttl",
            ttl,
            f"must be at least the service's minimum expiry, min_expiration {minimum:g} s",
        )
    if renew_before * 2 > ttl:
        raise ValidationError(
            "renew_before", renew_before, f"must be at most half of order_ttl ({ttl:g} s)"
        )
    return Expiry(float(ttl), float(renew_before), renewal, float(minimum))


class Renewer:
    """Renews the GTD orders of one execution layer (a desk's, or a lone quoter's)
    before they expire. Each quoter registers how it renews its own
    (``quoters[owner]``: it takes its lock, then ``renew_owner``)."""

    def __init__(
        self,
        policy: Expiry,
        cache: ExecutionCache,
        gate: Gate,
        sender: Sender,
        resolver: Resolver,
    ) -> None:
        self.policy = policy
        self.cache = cache
        self.gate = gate
        self.sender = sender
        self.resolver = resolver
        self.quoters: dict[Owner, Callable[[list[TrackedOrder]], Awaitable[None]]] = {}
        #: Renewals done, the requests they sent, the seconds of order life they
        #: renewed, those that failed (the order left to run out), those that had to
        #: cancel first (no room for both), orders that expired while wanted.
        self.renewals = self.requests = self.failures = self.fallbacks = self.lapses = 0
        self.covered = 0.0
        self._recent: deque[float] = deque()  # monotonic times of the last minute's
        self._retry_at: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        #: Each owner's renewal under way: one owner's slow one (a place timing out)
        #: never holds back the others'.
        self._working: dict[Owner, asyncio.Task[None]] = {}
        self._reading: asyncio.Task[None] | None = None
        cache.watchers.append(self._seen)

    def order_kind(self) -> dict[str, Any]:
        """The ``Sender.prepare`` options of a quote placed now: GTD, ``ttl`` s ahead."""
        return {"order_type": GTD, "expiration": self.policy.expiration()}

    # -- what is due --------------------------------------------------------------------

    def due(self) -> dict[Owner, list[TrackedOrder]]:
        """The open GTD orders to renew now, by owner (none of an owner whose renewal is
        under way: they wait for it)."""
        wall = time.time()
        found: dict[Owner, list[TrackedOrder]] = {}
        for t in self._waiting():
            if wall >= t.expiration - self.policy.renew_before:
                found.setdefault(t.owner, []).append(t)
        return found

    def _waiting(self) -> list[TrackedOrder]:
        """The open GTD orders this renewer may renew when they fall due."""
        now = time.monotonic()
        return [
            t
            for t in self.cache.orders()
            if t.state is State.OPEN
            and t.expiration
            and not t.retiring
            and t.owner in self.quoters
            and t.owner not in self._working
            and self._retry_at.get(t.key, 0.0) <= now
        ]

    def _wake_in(self) -> float:
        """Seconds until the next order falls due (at most ``_WAKE_MAX``)."""
        wall = time.time()
        soonest = min(
            (t.expiration - self.policy.renew_before - wall for t in self._waiting()),
            default=_WAKE_MAX,
        )
        return min(_WAKE_MAX, max(0.01, soonest))

    # -- renewing ------------------------------------------------------------------------

    async def renew_owner(
        self, owner: Owner, due: list[TrackedOrder], wanted: Sequence[Level], held: int
    ) -> None:
        """Renew ``owner``'s ``due`` orders, each at the level of ``wanted`` (the last
        requote's) of its side and price, all at once (orders placed together fall due
        together: one by one, the last would lapse behind a busy service's queue); the
        others are left to expire. The caller holds the owner's quoter's lock."""
        levels = {level.key: level for level in wanted}
        todo: list[tuple[TrackedOrder, Level]] = []
        for t in due:
            if t.state is not State.OPEN or t.retiring or self.gate.halted is not None:
                continue
            level = levels.get((t.side, t.price))
            if level is None or self._succeeded(t):
                t.retiring = True  # not wanted any more, or a newer order holds its level
                continue
            todo.append((t, level))
        results = await each_of(self.renew(owner, t, level, held) for t, level in todo)
        failure = next((r for r in results if isinstance(r, BaseException)), None)
        if failure is not None:
            raise failure

    def _succeeded(self, t: TrackedOrder) -> bool:
        """Whether a newer order of ``t``'s owner already holds its side and price."""
        return any(
            o is not t
            and not o.retiring
            and (o.side, o.price) == (t.side, t.price)
            and (o.state in (State.PLACING, State.UNKNOWN) or o.expiration > t.expiration)
            for o in self.cache.orders(t.owner)
        )

    async def renew(self, owner: Owner, t: TrackedOrder, level: Level, held: int) -> None:
        """Place ``t``'s successor at ``level`` (its old self left to expire, or
        cancelled: the policy), or cancel ``t`` first when the gate has no room for
        both."""
        try:
            self.gate.admit_order(owner, [*self.cache.resting(owner), level], held)
            overlap = True
        except QuoteRefused:  # the limits hold the two apart (or the desk halted)
            if self.gate.halted is not None:
                return
            overlap = False
        sent = 0
        if not overlap:
            self.fallbacks += 1
            sent += 1
            if await self.sender.cancel(t) is not None or t.state is not State.DONE:
                self._failed(t, sent)  # it may still rest: nothing beside it
                return
            try:
                await self.gate.admit_places(owner, [*self.cache.resting(owner), level], held)
            except QuoteRefused:
                self._failed(t, sent)
                return
        new = await self.sender.prepare(owner, level, **self.order_kind())
        sent += 1
        if await self.sender.place(new) is not None:
            self._failed(t, sent)
            return
        if overlap and self.policy.renewal == "cancel":
            sent += 1
            await self.sender.cancel(t)
        else:
            t.retiring = True
        self._done(t, sent)

    def _done(self, t: TrackedOrder, sent: int) -> None:
        now = time.monotonic()
        self.renewals += 1
        self.requests += sent
        self.covered += now - t.born
        self._recent.append(now)

    def _failed(self, t: TrackedOrder, sent: int) -> None:
        self.failures += 1
        self.requests += sent
        self._retry_at[t.key] = time.monotonic() + _RETRY
        log.info("renewing %s failed: %s", t, t.failure)

    def _seen(self, t: TrackedOrder, before: State) -> None:
        """An order ended: one that expired while still wanted (not renewed in time) is a
        lapse."""
        if t.state is not State.DONE:
            return
        self._retry_at.pop(t.key, None)
        record = t.record
        if (
            before is State.OPEN
            and t.expiration
            and not t.retiring
            and record is not None
            and record.status == CANCELLED
            and time.time() >= t.expiration - 1
        ):
            self.lapses += 1

    # -- the loop -------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        """Stop: the loop, and the renewals under way (a place cut short is of unknown
        outcome: the kill switch's listing finds it)."""
        tasks = [self._task, self._reading, *self._working.values()]
        self._task = self._reading = None
        self._working.clear()
        for task in tasks:
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._wake_in())
            if self.gate.halted is not None:
                continue
            for owner, due in self.due().items():
                self._working[owner] = asyncio.ensure_future(self._renew(owner, due))
            if self._reading is None or self._reading.done():
                self._reading = asyncio.ensure_future(self._read_back_expired())

    async def _renew(self, owner: Owner, due: list[TrackedOrder]) -> None:
        hook = self.quoters.get(owner)
        try:
            if hook is not None:  # else its quoter left meanwhile
                await hook(due)
        except Exception as exc:  # the next round tries again
            log.warning("renewing the orders of %s failed: %s", owner, exc)
        finally:
            self._working.pop(owner, None)

    async def _read_back_expired(self) -> None:
        """Orders past their expiration whose end no record told (a stream message
        lost): read back, so that the gate stops counting them."""
        wall = time.time()
        stale = [
            t
            for t in self.cache.orders()
            if t.state is State.OPEN and t.expiration and wall > t.expiration + _GRACE
        ]
        if stale:
            with contextlib.suppress(Exception):
                await self.resolver.read_back(stale)

    def metrics(self) -> dict[str, Any]:
        """``renewals``, ``per_minute`` (the last minute's), ``requests``,
        ``requests_per_order_per_ttl`` (what keeping one order on the book for a TTL
        cost in requests), ``failures``, ``fallbacks`` (cancelled first), ``lapses``."""
        cutoff = time.monotonic() - 60.0
        recent = self._recent
        while recent and recent[0] <= cutoff:
            recent.popleft()
        cost = self.requests * self.policy.ttl / self.covered if self.covered else None
        return {
            "order_ttl": self.policy.ttl,
            "renewal": self.policy.renewal,
            "renewals": self.renewals,
            "per_minute": len(recent),
            "requests": self.requests,
            "requests_per_order_per_ttl": cost,
            "failures": self.failures,
            "fallbacks": self.fallbacks,
            "lapses": self.lapses,
        }
