"""What one requote did, for the strategy: the orders placed, cancelled and kept, the
quotes the service refused for a reason it may lift, and the quotes whose order's
outcome is still unknown."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import ClobkitError
from ..models import Order
from .ladder import Level, Live, Quote
from .orders import State, TrackedOrder

__all__ = ["RequoteReport", "report"]


class RequoteReport(NamedTuple):
    """What one ``requote`` did: orders ``placed``, ``cancelled`` and ``kept`` (``Order``s);
    quotes the service ``refused`` for a reason it may lift (a risk control's rate,
    pacing learnt from it), each with its error; quotes whose order's outcome is still
    ``unknown`` (tracked until seen or ruled out: nothing is placed beside them)."""

    placed: list[Order]
    cancelled: list[Order]
    kept: list[Order]
    refused: list[tuple[Quote, ClobkitError]]
    unknown: list[Quote]


def report(
    wanted: list[Quote],
    levels: list[Level],
    new: list[TrackedOrder],
    gone: list[TrackedOrder],
    kept: list[Live],
    refused: list[tuple[Level, ClobkitError]],
) -> RequoteReport:
    quote_of = {level.key: quote for quote, level in zip(wanted, levels, strict=True)}
    return RequoteReport(
        placed=[t.record for t in new if t.state not in _NOT_PLACED and t.record is not None],
        cancelled=[t.record for t in gone if t.record is not None],
        kept=[o.handle.record for o in kept if o.handle.record is not None],
        refused=[(quote_of[level.key], error) for level, error in refused],
        unknown=[
            quote_of[t.level().key]
            for t in (*new, *(o.handle for o in kept))
            if t.state is State.UNKNOWN and t.level().key in quote_of
        ],
    )


_NOT_PLACED = frozenset({State.PLACING, State.UNKNOWN, State.REFUSED})
