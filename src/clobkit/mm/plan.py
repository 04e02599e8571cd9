"""What a requote works from: the orders it may keep (with quotes that expire, only
those whose expiration is known, and none already renewed), whether its cancels must
go before its places, and the late landings its last ladder does not want."""

from __future__ import annotations

from typing import NamedTuple

from .ladder import Level, Live, crosses, diff
from .orders import State, TrackedOrder

__all__ = [
    "Standing",
    "cancels_first",
    "live_of",
    "standing",
    "unwanted",
]


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
