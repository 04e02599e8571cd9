"""Exact 6-decimal exchange amounts (see DESIGN.md, "Rounding per tick").

Prices, sizes and amounts accept ``Decimal``, ``str``, ``int`` or ``float``
(read through its shortest repr, so ``0.29`` is ``Decimal("0.29")``); all
arithmetic is exact integer arithmetic.
"""

from __future__ import annotations

from ._core import from_units, limit_amounts, market_amounts, market_price, to_units
from ._types import Amounts, OrderType, Side

__all__ = [
    "Amounts",
    "OrderType",
    "Side",
    "from_units",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "to_units",
]
