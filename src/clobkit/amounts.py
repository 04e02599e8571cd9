"""Exact 6-decimal exchange amounts (see DESIGN.md, "Rounding per tick").

Prices, sizes and amounts accept ``Decimal``, ``str``, ``int`` or ``float``
(read through its shortest repr, so ``0.29`` is ``Decimal("0.29")``); all
arithmetic is exact integer arithmetic.
"""

from __future__ import annotations

from ._core import from_units, limit_amounts, market_amounts, market_price, to_units
from ._spec import SINGLE_ORDER_MAX
from ._types import Amounts, OrderType, Side
from .errors import AmountError

__all__ = [
    "MAX_ORDER_USDC",
    "Amounts",
    "OrderType",
    "Side",
    "check_raw_amounts",
    "from_units",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "to_units",
]

#: Single-order maximum of the service, in USDC (section 8), as an int.
MAX_ORDER_USDC = int(SINGLE_ORDER_MAX)
_MAX_ORDER_UNITS = MAX_ORDER_USDC * 1_000_000


def check_raw_amounts(side: int, maker: int, taker: int) -> None:
    """The raw-order ratio rule: the implied price (USDC per share: maker/taker for
    BUY = 0, taker/maker for SELL = 1) lies strictly between 0 and 1, and the USDC
    is within the single-order maximum. Raises ``AmountError`` otherwise."""
    usdc, shares = (maker, taker) if side == 0 else (taker, maker)
    if maker <= 0 or taker <= 0 or not usdc < shares:
        raise AmountError(
            "maker_amount" if side == 0 else "taker_amount",
            usdc,
            f"implies a price outside (0, 1) with {shares} share units",
        )
    if usdc > _MAX_ORDER_UNITS:
        raise AmountError(
            "maker_amount" if side == 0 else "taker_amount",
            usdc,
            f"exceeds the single-order maximum of {MAX_ORDER_USDC} USDC",
        )
