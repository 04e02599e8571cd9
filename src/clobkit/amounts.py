"""Exact 6-decimal exchange amounts (docs/raw-orders.md, "Decisions you should know":
rounding per tick).

Prices, sizes and amounts accept ``Decimal``, ``str``, ``int`` or ``float``
(read through its shortest repr, so ``0.29`` is ``Decimal("0.29")``); all
arithmetic is exact integer arithmetic.
"""

from __future__ import annotations

from .core.select import from_units, limit_amounts, market_amounts, market_price, to_units
from .core.spec import SINGLE_ORDER_MAX, UNIT
from .core.types import Amounts
from .core.types import lazy as _lazy
from .errors import AmountError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .core.enums import OrderType, Side

__all__ = [
    "MAX_ORDER_USDC",
    "Amounts",
    "OrderType",
    "Side",
    "check_raw_amounts",
    "from_units",
    "implied",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "raw_amounts_flagged",
    "to_units",
]

#: Single-order maximum of the service, in USDC (section 8), as an int.
MAX_ORDER_USDC = int(SINGLE_ORDER_MAX)
"""The service's single-order maximum, in USDC (an ``int``): a larger order is refused."""
_MAX_ORDER_UNITS = MAX_ORDER_USDC * UNIT


def implied(side: int, maker: int, taker: int) -> tuple[int, int] | None:
    """(USDC, shares) in units of a raw order's amounts when they keep the ratio rule of
    section 4.8 (the implied price, USDC per share: maker/taker for BUY = 0,
    taker/maker for SELL = 1, strictly between 0 and 1); ``None`` when they break it
    (a zero amount included). The rule's one home: the client and the sandbox."""
    usdc, shares = (maker, taker) if side == 0 else (taker, maker)
    return (usdc, shares) if 0 < usdc < shares else None


def check_raw_amounts(side: int, maker: int, taker: int) -> None:
    """The raw-order ratio rule (``implied``), and the USDC within the single-order
    maximum. Raises ``AmountError`` otherwise."""
    usdc, shares = (maker, taker) if side == 0 else (taker, maker)
    if implied(side, maker, taker) is None:
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


def raw_amounts_flagged(sides: Any, makers: Any, takers: Any) -> Any:
    """``check_raw_amounts`` column-wise, on pyarrow integer arrays of hashed orders.

    A boolean array, True on each row that breaks the rule; ``check_raw_amounts``
    then words why, row by row, for those rows only (a file of millions of
    orders skips the per-row check on the rows that pass). ``sides`` 0/1;
    amounts non-negative (the core took them).
    """
    import pyarrow as pa

    from .core import arrow_compute as ac
    from .core.arrow_values import scalar  # pa.scalar would import pandas (slow) to rule it out

    u64 = pa.uint64()  # typed scalars: an untyped one would push the comparison to int64
    makers, takers = ac.cast(makers, u64), ac.cast(takers, u64)
    zero, most = scalar(pa, 0, u64), scalar(pa, _MAX_ORDER_UNITS, u64)
    buy = ac.equal(sides, scalar(pa, 0, sides.type))
    usdc, shares = ac.if_else(buy, makers, takers), ac.if_else(buy, takers, makers)
    empty = ac.or_(ac.equal(makers, zero), ac.equal(takers, zero))
    return ac.or_(ac.or_(empty, ac.greater_equal(usdc, shares)), ac.greater(usdc, most))


# ``Side`` and ``OrderType`` load on first use: ``enum`` is not free
__getattr__ = _lazy(globals(), {"Side": "clobkit.core.enums", "OrderType": "clobkit.core.enums"})
