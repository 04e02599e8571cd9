"""The checks of plain arguments that every layer shares (a number of seconds, a count):
one home, so the client, the market maker and the recorder refuse the same values in
the same words. Typed by what they accept: a ``bool`` is no number here, NaN and
infinity are no time.

``bounded`` is the one reader of a number a user or a file gives within a range
(a replay's ``--start``, its step's ``ms``, a recorded price, size or time): the
range is checked before anything is computed from the value, so ``1e999999999``
is a one-line refusal naming its field, never an overflow or a billion-digit int.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from ..errors import ValidationError

__all__ = ["MAX_NUMBER_TEXT", "bounded", "bounded_int", "number", "positive_int", "seconds"]

#: The longest text ``bounded`` reads as a number (characters).
MAX_NUMBER_TEXT = 64
# ASCII digits only (str.isdigit and Decimal take other scripts' digits), no "_"
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def number(value: object, field: str, *, zero: bool = False, unit: str = "") -> float:
    """A finite number (of ``unit``, named in the refusal): positive, or also 0 when
    ``zero``."""
    result = math.nan  # what is no number
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            result = float(value)
        except OverflowError:  # an int past float's range
            result = math.inf
    if not 0 <= result < math.inf or (result == 0 and not zero):
        kind = "non-negative" if zero else "positive"
        of = f" of {unit}" if unit else ""
        raise ValidationError(field, value, f"must be a {kind} finite number{of}")
    return result


def seconds(value: object, field: str, *, zero: bool = False) -> float:
    """A finite number of seconds: positive, or also 0 when ``zero``."""
    return number(value, field, zero=zero, unit="seconds")


def positive_int(value: object, field: str, high: int | None = None) -> int:
    """An ``int`` of at least 1 (at most ``high`` when given)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(field, value, "must be a positive int")
    if high is not None and value > high:
        raise ValidationError(field, value, f"must be at most {high}")
    return value


def _shown(number: Decimal | int) -> str:
    return f"{number:,}"


def bounded(
    value: object,
    field: str,
    low: Decimal | int,
    high: Decimal | int,
    *,
    places: int | None = None,
    text: bool = False,
    unit: str = "",
) -> Decimal:
    """``value`` as a Decimal in [``low``, ``high``] with at most ``places`` decimals.

    Takes an int (no bool), a finite float (as written) or Decimal, and with ``text``
    a decimal string (ASCII digits, an optional sign, point and exponent, at most
    ``MAX_NUMBER_TEXT`` characters, spaces around it ignored). Anything else, or a
    number out of range or off its decimals, is a ``ValidationError`` naming
    ``field`` and saying the range (in ``unit``)."""
    number: Decimal | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = Decimal(int.__index__(value))
    elif isinstance(value, float) and math.isfinite(value):
        number = Decimal(repr(value))  # 0.1 as written, not its binary expansion
    elif isinstance(value, Decimal) and value.is_finite():
        number = value
    elif text and isinstance(value, str) and len(value) <= MAX_NUMBER_TEXT:
        stripped = value.strip()
        if _DECIMAL.fullmatch(stripped):
            number = Decimal(stripped)
    # the range first: comparing 1e999999999 costs nothing, scaling it would overflow
    if number is None or not low <= number <= high or not _within(number, places):
        kind = "a whole number" if places == 0 else "a number"
        decimals = f" with at most {places} decimals" if places else ""
        of = f" {unit}" if unit else ""
        reason = f"must be {kind} in [{_shown(low)}, {_shown(high)}]{of}{decimals}"
        raise ValidationError(field, value, reason)
    return number


def _within(number: Decimal, places: int | None) -> bool:
    """Whether ``number`` (already in range) has at most ``places`` decimals."""
    if places is None:
        return True
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite
    return exponent >= -places or number == number.quantize(Decimal(1).scaleb(-places))


def bounded_int(
    value: object, field: str, low: int, high: int, *, text: bool = False, unit: str = ""
) -> int:
    """``bounded`` for a whole number in [``low``, ``high``], as an int (``1e3`` is 1000)."""
    return int(bounded(value, field, low, high, places=0, text=text, unit=unit))
