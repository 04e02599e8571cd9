"""An order's life as the market maker sees it: the states, the events that move
it, and the table of allowed (state, event) -> state transitions. This table is
the one home of that rule: every path that changes an order's state (a send and
its answer, a stream record, a listing, a resolution, a cancel, an expiry seen in
a record) fires an event through ``ExecutionCache.fire``, which applies only what
the table allows and refuses (logs and counts) anything else.

An order the service may hold is never called refused: ``REFUSED`` is reached only
from states where no copy is known to rest (a send refused for good, a send the
desk withheld, a copy ruled out once none can land any more), and a record seen
later of an order called refused makes it ``OPEN`` again: tracked, never left
resting untracked.
"""

from __future__ import annotations

import enum
import time
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple

from ..core.select import from_units
from ..core.spec import SIDES
from .ladder import Level

if TYPE_CHECKING:
    from ..client import PreparedRawOrder
    from ..models import Order

__all__ = [
    "CANCELLABLE",
    "LIVE",
    "TERMINAL",
    "TRANSITIONS",
    "Event",
    "Fill",
    "State",
    "TrackedOrder",
]


class State(enum.Enum):
    """Where an order stands, as far as the market maker knows."""

    PLACING = "placing"  # built; its POST in flight
    UNKNOWN = "unknown"  # a POST ended without a definite answer: it may rest or land later
    OPEN = "open"  # on the service (pending .. live)
    CANCELLING = "cancelling"  # a DELETE in flight
    CANCEL_UNKNOWN = "cancel_unknown"  # a DELETE failed or was refused: it may still rest
    DONE = "done"  # matched, cancelled (by us, by expiry), won or lost
    REFUSED = "refused"  # never placed: refused for good, withheld, or ruled out


class Event(enum.Enum):
    """What can happen to an order."""

    ACCEPTED = "accepted"  # a POST (or a resend under its key) answered with the order
    LOST = "lost"  # a POST ended without a definite answer
    REFUSED = "refused"  # a refusal proving the order absent (every copy, or none can land)
    WITHHELD = "withheld"  # a POST never sent (the desk halted, the budget gave no room)
    RULED_OUT = "ruled_out"  # not on the service, and no copy can land any more
    SEEN_OPEN = "seen_open"  # a record (stream, listing, GET) with an open status
    SEEN_FINAL = "seen_final"  # a record with a final status (matched, cancelled, won, lost)
    CANCEL = "cancel"  # a DELETE sent
    CANCELLED = "cancelled"  # a DELETE answered: cancelled
    CANCEL_FAILED = "cancel_failed"  # a DELETE without an answer, or refused (not live now)
    VANISHED = "vanished"  # the service does not know the order's id (404)


S, E = State, Event

#: The allowed transitions: (state, event) -> the new state. Anything else is refused.
TRANSITIONS: dict[tuple[State, Event], State] = {
    # a send in flight: its answer, or a record that came first
    (S.PLACING, E.ACCEPTED): S.OPEN,
    (S.PLACING, E.LOST): S.UNKNOWN,
    (S.PLACING, E.REFUSED): S.REFUSED,
    (S.PLACING, E.WITHHELD): S.REFUSED,
    (S.PLACING, E.SEEN_OPEN): S.OPEN,
    (S.PLACING, E.SEEN_FINAL): S.DONE,
    # unknown until it is known: seen, answered, or ruled out
    (S.UNKNOWN, E.ACCEPTED): S.OPEN,
    (S.UNKNOWN, E.LOST): S.UNKNOWN,
    (S.UNKNOWN, E.REFUSED): S.REFUSED,
    (S.UNKNOWN, E.WITHHELD): S.UNKNOWN,  # a resend withheld: the first copy may still land
    (S.UNKNOWN, E.RULED_OUT): S.REFUSED,
    (S.UNKNOWN, E.SEEN_OPEN): S.OPEN,
    (S.UNKNOWN, E.SEEN_FINAL): S.DONE,
    # on the service (a late answer of its send changes nothing)
    (S.OPEN, E.ACCEPTED): S.OPEN,
    (S.OPEN, E.LOST): S.OPEN,
    (S.OPEN, E.SEEN_OPEN): S.OPEN,
    (S.OPEN, E.SEEN_FINAL): S.DONE,
    (S.OPEN, E.CANCEL): S.CANCELLING,
    (S.OPEN, E.VANISHED): S.DONE,
    # a cancel in flight (a record older than the cancel may still come)
    (S.CANCELLING, E.CANCELLED): S.DONE,
    (S.CANCELLING, E.CANCEL_FAILED): S.CANCEL_UNKNOWN,
    (S.CANCELLING, E.CANCEL): S.CANCELLING,  # the kill switch's, beside a requote's
    (S.CANCELLING, E.ACCEPTED): S.CANCELLING,
    (S.CANCELLING, E.LOST): S.CANCELLING,
    (S.CANCELLING, E.SEEN_OPEN): S.CANCELLING,
    (S.CANCELLING, E.SEEN_FINAL): S.DONE,
    (S.CANCELLING, E.VANISHED): S.DONE,
    # a cancel that failed: still meant to go, sent again until it is done
    (S.CANCEL_UNKNOWN, E.CANCEL): S.CANCELLING,
    (S.CANCEL_UNKNOWN, E.CANCELLED): S.DONE,
    (S.CANCEL_UNKNOWN, E.CANCEL_FAILED): S.CANCEL_UNKNOWN,
    (S.CANCEL_UNKNOWN, E.ACCEPTED): S.CANCEL_UNKNOWN,
    (S.CANCEL_UNKNOWN, E.LOST): S.CANCEL_UNKNOWN,
    (S.CANCEL_UNKNOWN, E.SEEN_OPEN): S.CANCEL_UNKNOWN,
    (S.CANCEL_UNKNOWN, E.SEEN_FINAL): S.DONE,
    (S.CANCEL_UNKNOWN, E.VANISHED): S.DONE,
    # done: late messages change nothing (their fills still count)
    (S.DONE, E.ACCEPTED): S.DONE,
    (S.DONE, E.LOST): S.DONE,
    (S.DONE, E.SEEN_OPEN): S.DONE,
    (S.DONE, E.SEEN_FINAL): S.DONE,
    (S.DONE, E.CANCELLED): S.DONE,
    (S.DONE, E.CANCEL_FAILED): S.DONE,
    (S.DONE, E.VANISHED): S.DONE,
    # never placed, as far as anything showed: a record says otherwise, it is tracked
    (S.REFUSED, E.REFUSED): S.REFUSED,
    (S.REFUSED, E.WITHHELD): S.REFUSED,
    (S.REFUSED, E.LOST): S.REFUSED,
    (S.REFUSED, E.SEEN_OPEN): S.OPEN,
    (S.REFUSED, E.SEEN_FINAL): S.DONE,
}

#: States in which an order may rest on the service under an id we know.
LIVE = frozenset({S.OPEN, S.CANCELLING, S.CANCEL_UNKNOWN})
#: States from which a DELETE is worth sending (its id known).
CANCELLABLE = LIVE
#: States an order never leaves by itself (a record can still reopen a refused one).
TERMINAL = frozenset({S.DONE, S.REFUSED})


class Fill(NamedTuple):
    """Shares of one of the quoter's orders that traded (``price`` USDC per share)."""

    order_id: str
    side: str
    price: Decimal
    shares: Decimal


class TrackedOrder:
    """One order, from before its POST until it is done: what the market maker
    knows of it. ``owner`` is (market id, outcome); amounts in 6-decimal units."""

    __slots__ = (
        "born",
        "clob_order_id",
        "cost",
        "done_at",
        "expiration",
        "failure",
        "key",
        "matched",
        "order_id",
        "owner",
        "prepared",
        "price",
        "record",
        "retiring",
        "sent_at",
        "shares",
        "side",
        "state",
        "tries",
    )

    def __init__(
        self,
        key: str,
        owner: tuple[str, str],
        side: int,
        price: int,
        shares: int,
        state: State,
        clob_order_id: str = "",
        prepared: PreparedRawOrder | None = None,
    ) -> None:
        #: the client_order_id it was sent with; ``id:<order_id>`` for an adopted order
        self.key = key
        self.owner = owner
        self.side = side
        self.price = price  # units of USDC per share
        self.shares = shares  # units
        self.state = state
        self.clob_order_id = clob_order_id  # "" until known (V2/V3: from the service)
        self.prepared = prepared
        self.order_id: str | None = None
        self.matched = 0  # units
        self.cost = Decimal(0)  # USDC the matched shares traded for
        self.record: Order | None = None  # the newest record of the service
        #: Unix time (s) the last copy without a definite answer was sent (0: none)
        self.sent_at = 0.0
        self.done_at = 0.0  # time.monotonic() when it became terminal
        #: Why its last place or cancel ended without a definite answer (``None``: none).
        self.failure: BaseException | None = None
        self.tries = 0  # places handed to the gate (0: never sent)
        #: A GTD order's expiration (Unix s; 0: none known, a GTC or an adopted order).
        self.expiration = 0
        #: Renewed: a successor holds its level, and it is left to expire (it still
        #: rests and counts against the limits until a record says it ended).
        self.retiring = False
        self.born = time.monotonic()  # when it was tracked

    @property
    def remaining(self) -> int:
        """Shares (units) still open, if it rests."""
        return self.shares - self.matched

    def level(self) -> Level:
        """What it may have resting, as a ``Level`` (valued at its price)."""
        return Level(self.side, self.price, self.shares - self.matched, 0, 0)

    def mark_done(self) -> None:
        self.done_at = time.monotonic()
        self.prepared = None

    def __repr__(self) -> str:
        return (
            f"TrackedOrder({SIDES[self.side]} {from_units(self.price)} x "
            f"{from_units(self.shares)} matched {from_units(self.matched)}, "
            f"{self.state.value}, id={self.order_id})"
        )
