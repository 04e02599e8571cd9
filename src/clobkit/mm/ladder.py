"""The ladder: wanted quotes read exactly, checked against the limits, diffed against
the live orders (what to keep, what to cancel, what to place)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple

from .._core import limit_amounts, to_units
from .._parse import parse_side
from .._spec import DECIMALS, UNIT
from .._types import Side
from ..errors import QuoteRefused

__all__ = ["Level", "Limits", "Quote", "diff", "read_ladder"]

Number = Decimal | str | int | float


class Quote(NamedTuple):
    """One wanted resting order: ``side`` ``BUY``/``SELL`` (or a ``Side``, 0, 1),
    ``price`` (0.01-0.99, USDC per share) and ``size`` (shares), read as the core
    reads them (``Decimal``, ``str``, ``int``, or ``float`` through its repr)."""

    side: Side | str | int
    price: Number
    size: Number


class Level(NamedTuple):
    """A quote in exact integer units (1 share or 1 USDC = 1_000_000).

    ``side`` 0 = BUY, 1 = SELL; ``price`` units of USDC per share; ``shares``
    after the core's rounding; ``maker`` / ``taker`` the order's amounts.
    """

    side: int
    price: int
    shares: int
    maker: int
    taker: int

    @property
    def usdc(self) -> int:
        """The order's USDC value in units (what the market minimum is about)."""
        return self.maker if self.side == 0 else self.taker

    @property
    def key(self) -> tuple[int, int]:
        return (self.side, self.price)


@dataclass(frozen=True)
class Limits:
    """A quoter's limits: ``max_open_orders``; ``max_position`` in share units (the
    position if every quote filled); ``max_notional`` in USDC units (the ladder's
    total value); ``min_order`` in USDC units (the market's minimum)."""

    max_open_orders: int
    max_position: int | None = None
    max_notional: int | None = None
    min_order: int | None = None


def read_ladder(quotes: Iterable[Quote], limits: Limits, position: int) -> list[Level]:
    """The quotes as ``Level``s, or ``QuoteRefused`` / the core's ``AmountError``
    naming the first one that cannot be quoted; ``position`` in share units."""
    levels: list[Level] = []
    seen: set[tuple[int, int]] = set()
    for i, quote in enumerate(quotes):
        if not isinstance(quote, tuple) or len(quote) != 3:
            raise QuoteRefused(f"quotes[{i}]", quote, "must be a Quote(side, price, size)")
        side, price, size = quote
        amounts = limit_amounts(side, price, size)  # checks side, price grid, size
        s = parse_side(side)  # checked by limit_amounts above
        shares = amounts.taker_amount if s == 0 else amounts.maker_amount
        level = Level(s, to_units(price, "price"), shares, *amounts)
        if level.key in seen:
            raise QuoteRefused(f"quotes[{i}]", quote, "repeats the side and price of a quote")
        seen.add(level.key)
        if limits.min_order is not None and level.usdc < limits.min_order:
            raise QuoteRefused(
                f"quotes[{i}]",
                quote,
                f"is worth {_text(level.usdc)} USDC, below the market's minimum "
                f"{_text(limits.min_order)} USDC",
            )
        levels.append(level)
    if len(levels) > limits.max_open_orders:
        raise QuoteRefused(
            "quotes", len(levels), f"exceeds max_open_orders {limits.max_open_orders}"
        )
    if limits.max_notional is not None:
        total = sum(level.usdc for level in levels)
        if total > limits.max_notional:
            raise QuoteRefused(
                "quotes",
                f"{_text(total)} USDC",
                f"exceeds max_notional {_text(limits.max_notional)} USDC",
            )
    if limits.max_position is not None:
        bought = sum(level.shares for level in levels if level.side == 0)
        sold = sum(level.shares for level in levels if level.side == 1)
        worst = max(position + bought, sold - position)
        if worst > limits.max_position:
            raise QuoteRefused(
                "quotes",
                f"{_text(worst)} shares",
                f"could take the position beyond max_position {_text(limits.max_position)} "
                f"shares (position now {_text(position)})",
            )
    return levels


def exceeds(levels: Sequence[Level], limits: Limits, position: int) -> bool:
    """Whether ``levels`` resting together (a requote's new orders beside the ones it is
    cancelling) could pass ``max_notional`` or ``max_position``: then the cancels go
    first. A level of a live order (no amounts) is valued at its price, rounded up."""
    if limits.max_notional is not None:
        total = sum(lv.usdc or -(-lv.shares * lv.price // UNIT) for lv in levels)
        if total > limits.max_notional:
            return True
    if limits.max_position is not None:
        bought = sum(lv.shares for lv in levels if lv.side == 0)
        sold = sum(lv.shares for lv in levels if lv.side == 1)
        return max(position + bought, sold - position) > limits.max_position
    return False


def _text(units: int) -> str:
    return f"{Decimal(units).scaleb(-DECIMALS).normalize():f}"


class Live(NamedTuple):
    """A live order as the diff sees it: its key, the shares still open, and a handle."""

    side: int
    price: int
    remaining: int
    handle: Any


def diff(
    wanted: Sequence[Level], live: Sequence[Live]
) -> tuple[list[Live], list[Live], list[Level]]:
    """``(kept, cancel, place)``: a live order with the side, price and remaining shares
    of a wanted level is kept (one per level); every other live order is cancelled and
    every wanted level without a kept order is placed."""
    by_key: dict[tuple[int, int], list[Live]] = {}
    for order in live:
        by_key.setdefault((order.side, order.price), []).append(order)
    kept: list[Live] = []
    cancel: list[Live] = []
    place: list[Level] = []
    for level in wanted:
        found = None
        for order in by_key.pop(level.key, ()):
            if found is None and order.remaining == level.shares:
                found = order
            else:
                cancel.append(order)
        if found is None:
            place.append(level)
        else:
            kept.append(found)
    for orders in by_key.values():
        cancel.extend(orders)
    return kept, cancel, place


def crosses(place: Sequence[Level], cancel: Sequence[Live]) -> bool:
    """True when a new order could trade with one of our orders still being cancelled
    (a BUY at or above a cancelled SELL, a SELL at or below a cancelled BUY)."""
    sells = [o.price for o in cancel if o.side == 1]
    buys = [o.price for o in cancel if o.side == 0]
    low_sell = min(sells) if sells else None
    high_buy = max(buys) if buys else None
    for level in place:
        if level.side == 0 and low_sell is not None and level.price >= low_sell:
            return True
        if level.side == 1 and high_buy is not None and level.price <= high_buy:
            return True
    return False
