"""What orders put at risk, and the limits they are held to: a quoter's own
(``Limits``) and a desk's (``DeskLimits``, as running sums per market and per event,
``Sums``). The gate checks both, in one place, before anything is sent."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import NamedTuple

from ..core.select import to_units
from ..core.spec import UNIT
from ..errors import QuoteRefused
from .ladder import Level
from .ladder import units_text as text

__all__ = [
    "NONE",
    "NO_DESK_LIMITS",
    "DeskLimits",
    "Exposure",
    "Limits",
    "Sums",
    "exposure",
    "own_breach",
    "units",
]

Owner = tuple[str, str]  # (market id, outcome)


Number = Decimal | str | int | float


def units(value: Number | None, name: str) -> int | None:
    """A limit given in shares or USDC, in units (``None``: none); ``AmountError``
    naming ``name`` when it is not an exact amount."""
    return None if value is None else to_units(value, name)


class Limits(NamedTuple):
    """A quoter's own limits (``None``: none): ``max_open_orders``; ``max_position`` in
    share units (the position if every quote filled); ``max_notional`` in USDC units
    (the ladder's total value: each order's price times its shares)."""

    max_open_orders: int
    max_position: int | None = None
    max_notional: int | None = None


class DeskLimits(NamedTuple):
    """A desk's limits (``None``: none): open orders; notional at risk in USDC units;
    positions per market and per event in share units."""

    max_open_orders: int | None
    max_notional: int | None
    max_position_per_market: int | None
    max_position_per_event: int | None


#: No desk limits (a lone quoter's gate).
NO_DESK_LIMITS = DeskLimits(None, None, None, None)


class Exposure(NamedTuple):
    """What orders put at risk: ``orders`` resting; ``notional`` USDC units at risk (each
    BUY's price times its shares, each SELL's 1 - price times its shares: what it loses
    if the outcome wins); ``worst`` share units, the position if the worse side filled;
    ``value`` USDC units, each order's price times its shares (a quoter's notional);
    ``bought`` / ``sold`` share units resting on each side."""

    orders: int
    notional: int
    worst: int
    value: int = 0
    bought: int = 0
    sold: int = 0


def exposure(levels: Iterable[Level], held: int) -> Exposure:
    """The ``Exposure`` of ``levels`` (their remaining shares) over a holding of ``held``
    units. A level's value is its amounts' when it has them, else its price times its
    shares rounded up."""
    orders = notional = value = bought = sold = 0
    for level in levels:
        orders += 1
        worth = level.usdc or -(-level.price * level.shares // UNIT)
        value += worth
        if level.side == 0:
            notional += -(-level.price * level.shares // UNIT)
            bought += level.shares
        else:
            notional += -(-(UNIT - level.price) * level.shares // UNIT)
            sold += level.shares
    worst = max(held + bought, sold - held, 0)
    return Exposure(orders, notional, worst, value, bought, sold)


NONE = Exposure(0, 0, 0)


def own_breach(
    e: Exposure, limits: Limits, held: int, *, orders: bool = True
) -> QuoteRefused | None:
    """The first of a quoter's own ``limits`` that ``e`` breaks (``held``: its position
    in share units), or None; ``orders=False`` leaves ``max_open_orders`` out (old and
    new orders of a requote resting together count once each against it)."""
    if orders and e.orders > limits.max_open_orders:
        return QuoteRefused("quotes", e.orders, f"exceeds max_open_orders {limits.max_open_orders}")
    if limits.max_notional is not None and e.value > limits.max_notional:
        return QuoteRefused(
            "quotes",
            f"{text(e.value)} USDC",
            f"exceeds max_notional {text(limits.max_notional)} USDC",
        )
    if limits.max_position is not None and e.worst > limits.max_position:
        return QuoteRefused(
            "quotes",
            f"{text(e.worst)} shares",
            f"could take the position beyond max_position {text(limits.max_position)} "
            f"shares (position now {text(held)})",
        )
    return None


class Sums:
    """Running sums of each outcome's exposure: over the desk, per market, per event."""

    def __init__(self) -> None:
        self.each: dict[Owner, Exposure] = {}
        self.events: dict[Owner, str | None] = {}
        self.orders = 0
        self.notional = 0
        self.market: dict[str, int] = {}
        self.event: dict[str, int] = {}

    def set(self, owner: Owner, new: Exposure, event_id: str | None = None) -> None:
        old = self.each.get(owner, NONE)
        if event_id is not None:
            self.events[owner] = event_id
        event_id = self.events.get(owner)
        self.each[owner] = new
        self.orders += new.orders - old.orders
        self.notional += new.notional - old.notional
        market = owner[0]
        self.market[market] = self.market.get(market, 0) + new.worst - old.worst
        if event_id is not None:
            self.event[event_id] = self.event.get(event_id, 0) + new.worst - old.worst

    def breach(
        self, owner: Owner, new: Exposure, limits: DeskLimits, event_id: str | None = None
    ) -> QuoteRefused | None:
        """The desk limit ``new`` in place of ``owner``'s exposure would break, or None."""
        old = self.each.get(owner, NONE)
        market_id, outcome = owner
        limit = limits.max_open_orders
        if limit is not None and new.orders > old.orders:
            total = self.orders - old.orders + new.orders
            if total > limit:
                return QuoteRefused(
                    "max_open_orders",
                    f"{total} open orders",
                    f"the desk would have {total} open orders ({new.orders} of "
                    f"{market_id} {outcome}), over its max_open_orders {limit}",
                )
        limit = limits.max_notional
        if limit is not None and new.notional > old.notional:
            total = self.notional - old.notional + new.notional
            if total > limit:
                return QuoteRefused(
                    "max_notional",
                    f"{text(total)} USDC",
                    f"the desk's notional at risk would be {text(total)} USDC "
                    f"({text(new.notional)} of {market_id} {outcome}), over its "
                    f"max_notional {text(limit)} USDC",
                )
        if new.worst > old.worst:
            return self._position_breach(owner, new, old, limits, event_id)
        return None

    def _position_breach(
        self,
        owner: Owner,
        new: Exposure,
        old: Exposure,
        limits: DeskLimits,
        event_id: str | None,
    ) -> QuoteRefused | None:
        market_id, outcome = owner
        limit = limits.max_position_per_market
        if limit is not None:
            total = self.market.get(market_id, 0) - old.worst + new.worst
            if total > limit:
                return QuoteRefused(
                    "max_position_per_market",
                    f"{text(total)} shares",
                    f"market {market_id} could hold {text(total)} shares "
                    f"({text(new.worst)} of outcome {outcome}), over the desk's "
                    f"max_position_per_market {text(limit)} shares",
                )
        limit = limits.max_position_per_event
        event_id = event_id if event_id is not None else self.events.get(owner)
        if limit is not None and event_id is not None:
            total = self.event.get(event_id, 0) - old.worst + new.worst
            if total > limit:
                return QuoteRefused(
                    "max_position_per_event",
                    f"{text(total)} shares",
                    f"event {event_id} could hold {text(total)} shares "
                    f"({text(new.worst)} of {market_id} {outcome}), over the "
                    f"desk's max_position_per_event {text(limit)} shares",
                )
        return None
