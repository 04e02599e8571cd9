"""The execution cache: every order a desk (or a lone quoter) has sent or adopted,
by ``client_order_id`` and, once known, by ``order_id`` and ``clob_order_id``,
those of unknown outcome included; the state machine applied (``fire``); the
service's records taken in (``apply``: ids, fills, status); each outcome's holding
(position and fills). The kill switch cancels from here without asking a strategy.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from decimal import Decimal

from ..core.select import from_units, to_units
from ..core.spec import SIDES, UNIT, UNIT_QUANTUM
from ..models import FINAL_STATUSES, Order
from .ladder import Level
from .orders import CANCELLABLE, LIVE, TERMINAL, TRANSITIONS, Event, Fill, State, TrackedOrder

__all__ = ["ExecutionCache", "Holding", "Owner"]

log = logging.getLogger("clobkit.mm")

Owner = tuple[str, str]  # (market id, outcome)

# finished orders remembered, so that late stream messages still count their fills: the
# last 10,000 of an outcome at most, and past the last 1,000 only those finished within
# ``keep_done_seconds`` (a record of 1.6 KB each: 10,000 for each of 600 outcomes of a
# desk would be 9.4 GB, where a late message comes within seconds)
_KEEP_DONE = 10_000
_KEEP_DONE_ANYWAY = 1_000
_KEEP_UNCLAIMED = 1_000  # records of unknown orders held while places are in flight
_REFUSALS_KEPT = 20  # transitions the table refused, kept for a look


class Holding:
    """One outcome's shares held (units: the holding read on enter plus the fills
    since) and its fills (the last 10,000; ``count`` all of them)."""

    __slots__ = ("count", "fills", "position")

    def __init__(self) -> None:
        self.position = 0
        self.fills: deque[Fill] = deque(maxlen=10_000)
        self.count = 0


class _Outcome:
    """What the cache keeps per outcome: its orders not terminal, the finished ones
    remembered, the records nobody claims yet, and its holding."""

    __slots__ = ("done", "holding", "live", "unclaimed")

    def __init__(self) -> None:
        self.live: dict[str, TrackedOrder] = {}
        self.done: deque[TrackedOrder] = deque()
        self.unclaimed: dict[str, Order] = {}
        self.holding = Holding()


class ExecutionCache:
    """Every order sent or adopted, indexed, each moved only through ``fire``."""

    def __init__(self) -> None:
        self._outcomes: dict[Owner, _Outcome] = {}
        self._by_key: dict[str, TrackedOrder] = {}
        self._by_id: dict[str, TrackedOrder] = {}
        self._by_clob: dict[str, TrackedOrder] = {}
        #: Seconds a finished order is remembered past the last 1,000 of its outcome.
        self.keep_done_seconds = 600.0
        #: Transitions the table refused (none is applied), and the last few of them.
        self.refused = 0
        self.refusals: deque[tuple[str, State, Event]] = deque(maxlen=_REFUSALS_KEPT)
        #: Orders found on the service after they were called refused (never lost).
        self.late = 0
        #: Called with (order, state before) after every transition that moved one.
        self.watchers: list[Callable[[TrackedOrder, State], None]] = []
        #: Called with (order, state before) when an order of that owner became live.
        self.on_live: dict[Owner, Callable[[TrackedOrder, State], None]] = {}
        #: Set whenever an order's ``clob_order_id`` becomes known (V2/V3: its record).
        self.learnt = asyncio.Event()

    # -- the orders --------------------------------------------------------------

    def outcome(self, owner: Owner) -> _Outcome:
        found = self._outcomes.get(owner)
        if found is None:
            found = self._outcomes[owner] = _Outcome()
        return found

    def holding(self, owner: Owner) -> Holding:
        """``owner``'s position and fills."""
        return self.outcome(owner).holding

    def add(self, t: TrackedOrder) -> None:
        """Track ``t`` (built before its POST, or adopted) under its key and ids."""
        self._by_key[t.key] = t
        if t.clob_order_id:
            self._by_clob[t.clob_order_id] = t
        if t.order_id is not None:
            self._by_id[t.order_id] = t
        if t.state not in TERMINAL:
            self.outcome(t.owner).live[t.key] = t

    def orders(self, owner: Owner | None = None) -> list[TrackedOrder]:
        """The orders not terminal (of ``owner``, or all), oldest first."""
        if owner is not None:
            found = self._outcomes.get(owner)
            return [] if found is None else list(found.live.values())
        return [t for o in self._outcomes.values() for t in o.live.values()]

    def cancellable(self, owner: Owner | None = None) -> list[TrackedOrder]:
        """The orders that may rest under an id we know: what a kill switch cancels."""
        return [t for t in self.orders(owner) if t.state in CANCELLABLE and t.order_id]

    def resting(self, owner: Owner) -> list[Level]:
        """Every order of ``owner`` that may rest (open, or with a place or cancel in
        flight or of unknown outcome) as a ``Level`` of its remaining shares."""
        return [t.level() for t in self.orders(owner) if t.shares > t.matched]

    def unknown(self, owner: Owner | None = None) -> list[TrackedOrder]:
        """The places of unknown outcome (``PLACING`` too: in flight, unanswered)."""
        return [t for t in self.orders(owner) if t.state in (State.PLACING, State.UNKNOWN)]

    def find(self, record: Order) -> TrackedOrder | None:
        """The order a record is about: by ``id``, then by the key the record echoes
        (``order_source_id``), then by ``clob_order_id``."""
        t = self._by_id.get(record.id)
        if t is None:
            source = record.order_source_id
            t = self._by_key.get(source) if source else None
            if t is None:
                clob = record.clob_order_id
                t = self._by_clob.get(clob) if clob else None
        return t

    def by_key(self, key: str) -> TrackedOrder | None:
        return self._by_key.get(key)

    # -- the state machine --------------------------------------------------------

    def fire(self, t: TrackedOrder, event: Event) -> bool:
        """Move ``t`` by ``event`` as ``TRANSITIONS`` allows; anything else is refused
        (logged, counted, not applied). True when applied."""
        before = t.state
        after = TRANSITIONS.get((before, event))
        if after is None:
            self.refused += 1
            self.refusals.append((t.key, before, event))
            log.warning("order %s: %s refused in state %s", t.key, event.value, before.value)
            return False
        if after is before:
            return True
        t.state = after
        outcome = self.outcome(t.owner)
        if after in TERMINAL:
            outcome.live.pop(t.key, None)
            self._remember(outcome, t)
        elif before in TERMINAL:  # called refused (or done), and seen open: tracked again
            if before is State.REFUSED:
                self.late += 1
                log.warning("order %s rests after all: tracked again", t.key)
            outcome.live[t.key] = t
            self._index(t)
        for watch in self.watchers:
            watch(t, before)
        if after in LIVE and before not in LIVE:
            landed = self.on_live.get(t.owner)
            if landed is not None:
                landed(t, before)
        return True

    def _remember(self, outcome: _Outcome, t: TrackedOrder) -> None:
        t.mark_done()
        done = outcome.done
        done.append(t)
        oldest = t.done_at - self.keep_done_seconds
        while len(done) > _KEEP_DONE or (
            len(done) > _KEEP_DONE_ANYWAY and done[0].done_at < oldest
        ):
            self._unindex(done.popleft())

    def _index(self, t: TrackedOrder) -> None:
        self._by_key[t.key] = t
        if t.order_id is not None:
            self._by_id[t.order_id] = t
        if t.clob_order_id:
            self._by_clob[t.clob_order_id] = t

    def _unindex(self, t: TrackedOrder) -> None:
        if t.state not in TERMINAL:
            return  # reopened since (a late record): still tracked
        if self._by_clob.get(t.clob_order_id) is t:
            del self._by_clob[t.clob_order_id]
        if t.order_id is not None and self._by_id.get(t.order_id) is t:
            del self._by_id[t.order_id]
        if self._by_key.get(t.key) is t:
            del self._by_key[t.key]

    # -- the service's records ----------------------------------------------------

    def claim(self, t: TrackedOrder, order_id: str) -> None:
        """``t`` learnt its ``order_id``: index it, and take a record held for it."""
        if t.order_id is not None:
            return
        t.order_id = order_id
        self._by_id[order_id] = t
        held = self.outcome(t.owner).unclaimed.pop(order_id, None)
        if held is not None:
            self.apply(t, held)

    def apply(self, t: TrackedOrder, record: Order) -> Fill | None:
        """Take a record (stream or REST) into ``t``: ids, fills, status; the new fill,
        if the record shows more matched than known."""
        if t.order_id is None and record.id:
            self.claim(t, record.id)
        if not t.clob_order_id and record.clob_order_id:
            t.clob_order_id = record.clob_order_id
            self._by_clob[t.clob_order_id] = t
            self.learnt.set()
        fill = None
        newer = True
        matched = record.size_matched
        if matched is not None:
            units = int(matched * UNIT)
            if units > t.matched:
                fill = self._fill(t, record, units)
            elif units < t.matched:
                newer = False  # an older record than one already seen
        if newer:
            if record.status in FINAL_STATUSES:
                t.record = record
                self.fire(t, Event.SEEN_FINAL)
            elif t.state is not State.DONE:  # an open status, or one the API text lacks:
                t.record = record  # the service holds the order, not finished
                self.fire(t, Event.SEEN_OPEN)
        return fill

    def _fill(self, t: TrackedOrder, record: Order, units: int) -> Fill:
        delta = units - t.matched
        price = _fill_price(t, record, units, delta)
        t.matched = units
        holding = self.outcome(t.owner).holding
        holding.position += delta if t.side == 0 else -delta
        fill = Fill(record.id, SIDES[t.side], price, from_units(delta))
        holding.fills.append(fill)
        holding.count += 1
        return fill

    def adopt(self, record: Order, owner: Owner) -> TrackedOrder:
        """Track a live order found on the service (placed before, or elsewhere)."""
        side = 0 if record.side == "BUY" else 1
        price = record.limit_price if record.limit_price is not None else record.clob_price
        t = TrackedOrder(
            f"id:{record.id}",
            owner,
            side,
            to_units(price or 0, "price"),
            to_units(record.original_size or 0, "original_size"),
            State.OPEN,
            record.clob_order_id or "",
        )
        t.order_id = record.id
        t.matched = to_units(record.size_matched or 0, "size_matched")
        t.cost = (record.avg_fill_price or from_units(t.price)) * from_units(t.matched)
        t.record = record
        self.add(t)
        return t

    def hold(self, record: Order, owner: Owner) -> None:
        """A record of ``owner`` that no order claims, held while a place of it is in
        flight: its answer may name it (a service whose records echo no key)."""
        unclaimed = self.outcome(owner).unclaimed
        held = unclaimed.get(record.id)
        if held is None or (record.size_matched or 0) >= (held.size_matched or 0):
            unclaimed[record.id] = record
            while len(unclaimed) > _KEEP_UNCLAIMED:
                del unclaimed[next(iter(unclaimed))]

    def in_flight(self, owner: Owner) -> bool:
        """Whether a place of ``owner`` has no ``order_id`` yet (its record may come first)."""
        return any(t.order_id is None for t in self.unknown(owner))

    def release_unclaimed(self, owner: Owner) -> list[Order]:
        """Once no place of ``owner`` is in flight, the held records nobody claimed."""
        outcome = self._outcomes.get(owner)
        if outcome is None or not outcome.unclaimed or self.in_flight(owner):
            return []
        held, outcome.unclaimed = outcome.unclaimed, {}
        return [r for r in held.values() if self.find(r) is None]

    def forget(self, owner: Owner) -> None:
        """Drop ``owner``'s finished orders and held records (its quoter left for good);
        its orders not terminal stay tracked (the kill switch may still need them)."""
        outcome = self._outcomes.get(owner)
        if outcome is None:
            return
        for t in outcome.done:
            self._unindex(t)
        outcome.done.clear()
        outcome.unclaimed.clear()


def _fill_price(t: TrackedOrder, record: Order, units: int, delta: int) -> Decimal:
    """USDC per share of ``delta`` newly matched units of ``t`` (``units`` in all).

    From the record's ``avg_fill_price`` (over every matched share) when it gives one:
    a quote that crossed the book trades at the book's prices, not its own. Else the
    quote's price.
    """
    avg = record.avg_fill_price
    if avg is not None and avg.is_finite() and avg > 0:
        total = avg * from_units(units)
        price = ((total - t.cost) / from_units(delta)).quantize(UNIT_QUANTUM)
        if price > 0:
            t.cost = total
            return price
    price = from_units(t.price)
    t.cost += price * from_units(delta)
    return price
