"""The ladder: wanted quotes read exactly (the price grid, the sizes, the market's
minimum, no side and price twice), diffed against the live orders (what to keep, what
to cancel, what to place). Risk limits are the gate's (``gate.Gate``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

from ..core.parse import parse_side
from ..core.select import limit_amounts, to_units
from ..core.spec import DECIMALS
from ..core.types import Side
from ..errors import QuoteRefused

__all__ = ["Level", "Live", "Quote", "crosses", "diff", "read_ladder", "units_text"]

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


def read_ladder(
    quotes: Iterable[Quote], min_order: int | None = None, where: str = ""
) -> list[Level]:
    """The quotes as ``Level``s, or ``QuoteRefused`` / the core's ``AmountError``
    naming the first one that cannot be quoted; ``min_order`` the market's minimum
    order value in USDC units, ``where`` the market and outcome (``"<id> a"``) a
    refusal names."""
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
        if min_order is not None and level.usdc < min_order:
            raise QuoteRefused(
                f"quotes[{i}]",
                quote,
                f"is worth {units_text(level.usdc)} USDC, below the minimum order of "
                f"{_market(where)}: {units_text(min_order)} USDC",
            )
        levels.append(level)
    return levels


def _market(where: str) -> str:
    """``"<id> a"`` as words: ``market <id> (outcome a)``."""
    market_id, _, outcome = where.rpartition(" ")
    return f"market {market_id} (outcome {outcome})" if market_id else "the market"


def units_text(units: int) -> str:
    """Units (1_000_000 a share or a USDC) as a plain decimal."""
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
