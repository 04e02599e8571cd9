"""The checks of plain arguments that every layer shares (a number of seconds, a count):
one home, so the client, the market maker and the recorder refuse the same values in
the same words. Typed by what they accept: a ``bool`` is no number here, NaN and
infinity are no time."""

from __future__ import annotations

import math

from .errors import ValidationError

__all__ = ["number", "positive_int", "seconds"]


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
