"""Limits over a whole desk: what each quoter's orders put at risk (``Exposure``), and
running sums of it over the desk, per market and per event (``Sums``), checked
against ``DeskLimits`` in O(1) per quoter."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from .._spec import UNIT
from ..errors import QuoteRefused
from .ladder import Level, _text

if TYPE_CHECKING:
    from .quoter import Quoter

__all__ = ["NONE", "DeskLimits", "Exposure", "Sums", "exposure"]


class DeskLimits(NamedTuple):
    """A desk's limits (``None``: none): open orders; notional at risk in USDC units;
    positions per market and per event in share units."""

    max_open_orders: int | None
    max_notional: int | None
    max_position_per_market: int | None
    max_position_per_event: int | None


class Exposure(NamedTuple):
    """What a ladder puts at risk: ``orders`` resting; ``notional`` USDC units (each BUY's
    price times its shares, each SELL's 1 - price times its shares: what it loses if
    the outcome wins); ``worst`` share units, the position if the worse side filled."""

    orders: int
    notional: int
    worst: int


def exposure(levels: Iterable[Level], held: int) -> Exposure:
    """The ``Exposure`` of ``levels`` (remaining shares) over a holding of ``held`` units."""
    orders = notional = bought = sold = 0
    for level in levels:
        orders += 1
        if level.side == 0:
            notional += -(-level.price * level.shares // UNIT)
            bought += level.shares
        else:
            notional += -(-(UNIT - level.price) * level.shares // UNIT)
            sold += level.shares
    return Exposure(orders, notional, max(held + bought, sold - held, 0))


NONE = Exposure(0, 0, 0)


class Sums:
    """Running sums of the quoters' exposures: over the desk, per market, per event."""

    def __init__(self) -> None:
        self.each: dict[Quoter, Exposure] = {}
        self.orders = 0
        self.notional = 0
        self.market: dict[str, int] = {}
        self.event: dict[str, int] = {}

    def set(self, q: Quoter, new: Exposure) -> None:
        old = self.each.get(q, NONE)
        self.each[q] = new
        self.orders += new.orders - old.orders
        self.notional += new.notional - old.notional
        self.market[q.market_id] = self.market.get(q.market_id, 0) + new.worst - old.worst
        if q.event_id is not None:
            self.event[q.event_id] = self.event.get(q.event_id, 0) + new.worst - old.worst

    def breach(self, q: Quoter, new: Exposure, limits: DeskLimits) -> QuoteRefused | None:
        """The limit ``new`` in place of ``q``'s exposure would break, or None."""
        old = self.each.get(q, NONE)
        limit = limits.max_open_orders
        if limit is not None and new.orders > old.orders:
            total = self.orders - old.orders + new.orders
            if total > limit:
                return QuoteRefused(
                    "max_open_orders",
                    f"{total} open orders",
                    f"the desk would have {total} open orders ({new.orders} of "
                    f"{q.market_id} {q.outcome}), over its max_open_orders {limit}",
                )
        limit = limits.max_notional
        if limit is not None and new.notional > old.notional:
            total = self.notional - old.notional + new.notional
            if total > limit:
                return QuoteRefused(
                    "max_notional",
                    f"{_text(total)} USDC",
                    f"the desk's notional at risk would be {_text(total)} USDC "
                    f"({_text(new.notional)} of {q.market_id} {q.outcome}), over its "
                    f"max_notional {_text(limit)} USDC",
                )
        if new.worst > old.worst:
            limit = limits.max_position_per_market
            if limit is not None:
                total = self.market.get(q.market_id, 0) - old.worst + new.worst
                if total > limit:
                    return QuoteRefused(
                        "max_position_per_market",
                        f"{_text(total)} shares",
                        f"market {q.market_id} could hold {_text(total)} shares "
                        f"({_text(new.worst)} of outcome {q.outcome}), over the desk's "
                        f"max_position_per_market {_text(limit)} shares",
                    )
            limit = limits.max_position_per_event
            if limit is not None and q.event_id is not None:
                total = self.event.get(q.event_id, 0) - old.worst + new.worst
                if total > limit:
                    return QuoteRefused(
                        "max_position_per_event",
                        f"{_text(total)} shares",
                        f"event {q.event_id} could hold {_text(total)} shares "
                        f"({_text(new.worst)} of {q.market_id} {q.outcome}), over the "
                        f"desk's max_position_per_event {_text(limit)} shares",
                    )
        return None
