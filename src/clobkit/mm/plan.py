"""What a requote works from: the plan check before anything is sent (``check_plan``, a
desk's of all its quoters and a quoter's of its own, and ``check_ladders``, its last
step), the orders it may keep (with quotes that expire, only those whose expiration is
known, and none already renewed), whether its cancels must go before its places, and
the late landings its last ladder does not want."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol, TypeVar

from .cache import Owner
from .feed import Feed
from .gate import Gate, Halted
from .ladder import Level, Live, Quote, crosses, diff
from .orders import State, TrackedOrder
from .tasks import all_of

__all__ = [
    "Planner",
    "Standing",
    "cancels_first",
    "check_ladders",
    "check_plan",
    "live_of",
    "standing",
    "unwanted",
]


class Planner(Protocol):
    """A quoter as the plan check sees it (``quoter.Quoter`` is one)."""

    @property
    def owner(self) -> Owner: ...
    @property
    def position_units(self) -> int: ...
    @property
    def feed(self) -> Feed | None: ...
    def check_hearing(self) -> None: ...
    def read_quotes(self, quotes: Iterable[Quote]) -> list[Level]: ...


P = TypeVar("P", bound=Planner)


async def check_plan(
    gate: Gate, wanted: Mapping[P, list[Quote]], open_: Callable[[list[P]], Awaitable[None]]
) -> dict[P, list[Level]]:
    """The plan check of a requote (its one home: a desk's of every quoter it requotes,
    and each quoter's of its own): the quoters of non-empty ladders can quote (closed,
    deaf to fills: ``QuoteRefused``), the gate is not halted (``Halted``), ``open_``
    reads what they lack (market, positions, live orders), their markets' minimums are
    known, and every ladder passes ``check_ladders``. Each quoter's ladder as levels;
    nothing is sent before it returns."""
    for q, quotes in wanted.items():
        if quotes:
            q.check_hearing()
    if gate.halted is not None and any(wanted.values()):
        raise Halted(gate.halted)  # before any read: a halted desk asks nothing
    await open_(list(wanted))
    # the book was absent or is not heard
    await all_of(q.feed.learn_minimum() for q, w in wanted.items() if w and q.feed)
    levels = {q: q.read_quotes(w) for q, w in wanted.items()}
    check_ladders(gate, levels)
    return levels


def check_ladders(gate: Gate, ladders: Mapping[P, Sequence[Level]]) -> None:
    """Each quoter's ladder against its own limits and, together, the desk's, at the
    shares it holds now (``Gate.plan``: ``QuoteRefused`` naming the first one broken;
    else each ladder is what its quoter heads to)."""
    gate.plan({q.owner: (levels, q.position_units) for q, levels in ladders.items()})


class Standing(NamedTuple):
    """An outcome's orders as a requote sees them: those the diff may keep, those to
    replace whatever the ladder (on a quoter whose quotes expire, an order whose
    expiration is unknown: a GTC, or one adopted), and those renewed and left to
    expire (they still rest: the limits count them)."""

    keep: list[Live]
    replace: list[Live]
    retiring: list[Live]


def live_of(t: TrackedOrder) -> Live:
    """``t`` as the diff sees it."""
    return Live(t.side, t.price, t.remaining, t)


def standing(orders: list[TrackedOrder], expiring: bool) -> Standing:
    """``orders`` (an outcome's, not terminal) sorted for a requote; ``expiring``: its
    quotes are GTD orders that are renewed."""
    keep: list[Live] = []
    replace: list[Live] = []
    retiring: list[Live] = []
    for t in orders:
        if t.state not in (State.OPEN, State.UNKNOWN):
            continue
        if t.retiring:
            retiring.append(live_of(t))
        elif expiring and not t.expiration:
            replace.append(live_of(t))
        else:
            keep.append(live_of(t))
    return Standing(keep, replace, retiring)


def cancels_first(
    place: list[Level], gone: list[TrackedOrder], live: list[Live], held: int
) -> bool:
    """Whether a requote's cancels (``gone``) must be done before its places go out: a
    new order could trade with one being cancelled, or new SELLs need shares that a
    cancelled SELL still reserves (``live``: every order that may rest; ``held``: the
    shares held, units)."""
    selling = sum(level.shares for level in place if level.side == 1)
    reserved = sum(o.remaining for o in live if o.side == 1)
    crossing = crosses(place, [live_of(t) for t in gone])
    return crossing or bool(selling and selling > held - reserved)


def unwanted(orders: list[TrackedOrder], wanted: list[Level], expiring: bool) -> list[TrackedOrder]:
    """The open orders among ``orders`` (an outcome's) that the last ladder (``wanted``)
    does not want: late landings to cancel (on a quoter whose quotes expire, those
    whose expiration is unknown too)."""
    now = standing(orders, expiring)
    _, cancel, _ = diff(wanted, [o for o in now.keep if o.handle.state is State.OPEN])
    return [o.handle for o in (*cancel, *now.replace) if o.handle.state is State.OPEN]
