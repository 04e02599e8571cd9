"""Exact order amounts in pure Python: the rules both core twins answer to.

The pure twin exports these functions; the compiled twin computes ordinary
inputs in C and hands everything else here, so both give the same result and
the same error for every input. Integer arithmetic on parsed decimal digits:
no binary floating point anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, localcontext

from ..errors import AmountError, InsufficientLiquidity
from .parse import parse_side
from .types import Amounts
from .wallet import UINT256_MAX

# typing, re and fractions stay off ``import clobkit``'s path: market_price,
# the one user of Fraction, imports it when called.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from fractions import Fraction

__all__ = [
    "from_units",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "parse_number",
    "parse_price",
    "parse_tick",
    "to_units",
]

# Every price, size and amount is parsed to (negative, coef, exp) with
# value = (-1)**negative * coef * 10**exp and coef free of trailing zeros.

MAX_SIGNIFICANT_DIGITS = 96  # far beyond uint256 (78 digits); stops absurd inputs early
MAX_MAGNITUDE_DIGITS = 80  # a value >= 10**80 cannot become a uint256 amount
# tick -> (price decimals, grid step in units of 10**-decimals). 0.005 and
# 0.0025 (the exchange's since 2026-07-01) round like 0.001 and 0.0001, as
# py-clob-client-v2's ROUNDING_CONFIG does, on a coarser grid.
TICKS = {
    "0.1": (1, 1),
    "0.01": (2, 1),
    "0.005": (3, 5),
    "0.0025": (4, 25),
    "0.001": (3, 1),
    "0.0001": (4, 1),
}
_TICK_OF = {(step, decimals): text for text, (decimals, step) in TICKS.items()}
_TICK_NAMES = ", ".join(TICKS)


def _digits(text: str) -> bool:
    """Only ASCII digits 0-9 (or nothing)."""
    return str.isascii(text) and (str.isdigit(text) or str.__len__(text) == 0)


def split_number(text: str) -> tuple[str, str, str, str] | None:
    """Sign, integer digits, fraction digits and exponent of a decimal number's text.

    The grammar is ``[+-]? digits* ("." digits*)? ([eE] [+-]? digits{1,9})?``
    in ASCII digits only (unlike ``float()`` and ``Decimal()``: no spaces,
    underscores, other scripts' digits, inf or nan); None if ``text`` does not
    follow it. Absent parts are empty strings; whether any digit is there is
    the caller's question.
    """
    sign = text[:1]
    if sign in ("+", "-"):
        text = text[1:]
    else:
        sign = ""
    mantissa, exponent = text, ""
    for mark in ("e", "E"):
        at = str.find(text, mark)
        if at >= 0:
            mantissa, exponent = text[:at], text[at + 1 :]
            body = exponent[1:] if exponent[:1] in ("+", "-") else exponent
            if not (_digits(body) and 1 <= len(body) <= 9):
                return None
            break
    whole, _, frac = str.partition(mantissa, ".")
    if not (_digits(whole) and _digits(frac)):
        return None
    return sign, whole, frac, exponent


def _strip(coef: int, exp: int) -> tuple[int, int]:
    if coef == 0:
        return 0, 0
    while coef % 10 == 0:
        coef //= 10
        exp += 1
    return coef, exp


def parse_number(value: object, field: str) -> tuple[bool, int, int]:
    """Read a Decimal, str, int or float (by its shortest repr) exactly."""
    if isinstance(value, bool) or value is None:
        raise AmountError(field, value, "must be a number (Decimal, str, int or float)")
    if isinstance(value, int):
        if value.bit_length() > 300:
            raise AmountError(field, value, "is too large")
        coef, exp = _strip(abs(value), 0)
        neg = value < 0
    elif isinstance(value, (str, float, Decimal)):
        if isinstance(value, Decimal):
            if not value.is_finite():
                raise AmountError(field, value, "must be finite")
            sign, digits, dexp = value.as_tuple()
            neg = bool(sign)
            text = "".join(map(str, digits))
            assert isinstance(dexp, int)
            exp = dexp
        else:
            if isinstance(value, float):
                if value != value or value in (float("inf"), float("-inf")):
                    raise AmountError(field, value, "must be finite")
                text = float.__repr__(value)  # a numpy float64's repr names its type
            else:
                text = value
            parts = split_number(str.__str__(text))
            if parts is None or not (parts[1] or parts[2]):
                raise AmountError(field, value, "is not a decimal number")
            neg = parts[0] == "-"
            _, whole, frac, exponent = parts
            text = whole + frac
            exp = int(exponent or 0) - len(frac)
        stripped = text.lstrip("0")
        body = stripped.rstrip("0")
        if len(body) > MAX_SIGNIFICANT_DIGITS:
            raise AmountError(field, value, "has too many significant digits")
        exp += len(stripped) - len(body)
        coef = int(body) if body else 0
        if coef == 0:
            exp = 0
    else:
        raise AmountError(field, value, "must be a number (Decimal, str, int or float)")
    if coef and len(str(coef)) + exp > MAX_MAGNITUDE_DIGITS:
        raise AmountError(field, value, "is too large")
    return neg and coef != 0, coef, exp


def _pow10(n: int) -> int:
    """10**n for n >= 0 (int ** int is Any to mypy)."""
    result: int = 10**n
    return result


def _scaled_floor(coef: int, exp: int, k: int) -> int:
    """floor(coef * 10**exp * 10**k) for coef >= 0."""
    shift = exp + k
    if shift >= 0:
        return coef * _pow10(shift)
    if -shift > len(str(coef)):
        return 0
    return coef // _pow10(-shift)


def parse_tick(tick_size: object) -> tuple[int, int]:
    """Price decimals and grid step of a tick size: 0.01 -> (2, 1), 0.005 -> (3, 5)."""
    try:
        neg, coef, exp = parse_number(tick_size, "tick_size")
    except AmountError:
        coef, exp, neg = 0, 0, True
    if neg or (coef, -exp) not in _TICK_OF:
        raise AmountError("tick_size", tick_size, f"must be one of {_TICK_NAMES}")
    return -exp, coef


def parse_price(
    price: object, decimals: int, round_price: bool, field: str = "price", step: int = 1
) -> int:
    """Price in units of 10**-decimals, a multiple of ``step``, within [tick, 1 - tick]."""
    tick = _TICK_OF[(step, decimals)]
    neg, coef, exp = parse_number(price, field)
    shift = exp + decimals
    if shift < 0 and -shift > len(str(coef)) + 1:
        # under a tenth of a 10**-decimals unit, so under half a step: rounds to 0
        # (and 10**-shift, which may have a billion digits, is never computed)
        steps, rest, den = 0, coef, 2 * coef + 1
    else:
        # price / tick = num / den exactly
        num = coef * _pow10(max(shift, 0))
        den = step * _pow10(max(-shift, 0))
        steps, rest = divmod(num, den)
    if rest:
        if not round_price:
            raise AmountError(
                field, price, f"is not on the tick grid {tick} (pass round_price=True to round it)"
            )
        twice = 2 * rest
        if twice > den or (twice == den and steps % 2 == 1):
            steps += 1  # half-even onto the grid
    ticks = steps * step
    if neg or not step <= ticks <= _pow10(decimals) - step:
        raise AmountError(field, price, f"must lie in [{tick}, {1 - Decimal(tick)}]")
    return ticks


def _hundredths(value: object, field: str) -> int:
    """A positive size or amount with at most 2 decimals, in hundredths.

    More decimals are refused, as an off-grid price is: flooring them would
    quietly trade less than asked (40.555 shares as 40.55).
    """
    neg, coef, exp = parse_number(value, field)
    if neg or coef == 0:
        raise AmountError(field, value, "must be positive")
    if exp < -2:
        cents = _scaled_floor(coef, exp, 2)
        hint = f"; rounded down it is {Decimal(cents).scaleb(-2)}" if cents else ""
        raise AmountError(field, value, f"has more than 2 decimals (at most 2 are allowed{hint})")
    return coef * _pow10(exp + 2)


def _amounts(maker: int, taker: int, field: str, value: object) -> Amounts:
    if maker > UINT256_MAX or taker > UINT256_MAX:
        raise AmountError(field, value, "is too large: the amount exceeds uint256")
    return Amounts(maker, taker)


def _terms(
    side: object, price: object, tick_size: object, round_price: bool, value: object, field: str
) -> tuple[int, int, int, int]:
    """Side (0/1), price decimals, price in ticks, and ``value`` in hundredths."""
    s = parse_side(side)
    decimals, step = parse_tick(tick_size)
    ticks = parse_price(price, decimals, round_price, step=step)
    return s, decimals, ticks, _hundredths(value, field)


def limit_amounts(
    side: object,
    price: object,
    size: object,
    tick_size: object = "0.01",
    *,
    round_price: bool = False,
) -> Amounts:
    """Maker/taker amounts (6-decimal units) of a limit order of ``size`` shares at ``price``."""
    s, decimals, ticks, cents = _terms(side, price, tick_size, round_price, size, "size")
    shares = cents * 10_000
    usdc = cents * ticks * _pow10(4 - decimals)  # shares x price: exact in units
    return _amounts(usdc, shares, "size", size) if s == 0 else _amounts(shares, usdc, "size", size)


def market_amounts(
    side: object,
    price: object,
    amount: object,
    tick_size: object = "0.01",
    *,
    round_price: bool = False,
) -> Amounts:
    """Maker/taker amounts of a market order: ``amount`` is USDC for a BUY, shares for a SELL."""
    s, decimals, ticks, cents = _terms(side, price, tick_size, round_price, amount, "amount")
    if s == 0:
        # shares = usdc / price, rounded up at (amount decimals + 4) then down
        # at amount decimals (= price decimals + 2); in units of 10**-(d+6):
        up = -(-(cents * _pow10(2 * decimals + 4)) // ticks)
        taker = up // 10_000 * _pow10(4 - decimals)
    else:
        taker = cents * ticks * _pow10(4 - decimals)
    return _amounts(cents * 10_000, taker, "amount", amount)


def to_units(value: object, field: str = "value") -> int:
    """Exact 6-decimal units of a non-negative USDC or share amount: "12.34" -> 12_340_000."""
    neg, coef, exp = parse_number(value, field)
    if neg:
        raise AmountError(field, value, "must not be negative")
    if exp < -6:
        raise AmountError(field, value, "has more than 6 decimals")
    units = coef * _pow10(exp + 6)
    if units > UINT256_MAX:
        raise AmountError(field, value, "is too large for uint256")
    return units


def from_units(units: object) -> Decimal:
    """The decimal value of 6-decimal units: 12_340_000 -> Decimal("12.34")."""
    if isinstance(units, bool) or not isinstance(units, (int, str)):
        raise AmountError("units", units, "must be an int or a decimal integer string")
    if isinstance(units, str):
        text = str.__str__(units)  # a subclass's own methods are not consulted
        digits = text[1:] if text[:1] == "-" else text
        if not (digits.isascii() and digits.isdigit()) or len(digits.lstrip("0")) > 84:
            raise AmountError("units", units, "must be a decimal integer string")
        # int() refuses a long run of leading zeros (Python's digit limit)
        magnitude = int(digits.lstrip("0") or "0")
        units = -magnitude if text[:1] == "-" else magnitude
    elif int.__index__(units).bit_length() > 280:
        raise AmountError("units", units, "is too large")
    else:
        units = int.__index__(units)  # an int subclass's own abs() or str() is not consulted
    # Built from digits, not by division: exact at any size, no context needed.
    digits = str(abs(units)).rjust(7, "0")
    whole, frac = digits[:-6], digits[-6:].rstrip("0")
    sign = "-" if units < 0 else ""
    return Decimal(f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}")


def _level(level: object, i: int) -> tuple[Fraction, Fraction, object]:
    if isinstance(level, Mapping):
        price, size = level.get("price"), level.get("size")
    elif isinstance(level, (tuple, list)) and len(level) == 2:
        price, size = level
    else:
        price, size = getattr(level, "price", None), getattr(level, "size", None)
    p_neg, p = _fraction(price, f"levels[{i}].price")
    s_neg, s = _fraction(size, f"levels[{i}].size")
    if p_neg or not p:
        raise AmountError(f"levels[{i}].price", price, "must be positive")
    if s_neg:
        raise AmountError(f"levels[{i}].size", size, "must not be negative")
    return p, s, price


def _fraction(value: object, field: str) -> tuple[bool, Fraction]:
    """(negative, |value|) exactly; a value under 10**-MAX_MAGNITUDE_DIGITS is refused, as
    one over 10**MAX_MAGNITUDE_DIGITS is ("1e-999999999" would build 10**999999999)."""
    from fractions import Fraction

    neg, coef, exp = parse_number(value, field)
    if coef and len(str(coef)) + exp <= -MAX_MAGNITUDE_DIGITS:
        raise AmountError(field, value, "is too small")
    return neg, Fraction(coef) * Fraction(10) ** exp


def market_price(
    levels: Iterable[object], side: object, amount: object, order_type: object = "FOK"
) -> Decimal:
    """Worst price a market order must accept to fill ``amount`` against one book side.

    ``levels`` are the asks for a BUY (``amount`` in USDC) or the bids for a SELL
    (``amount`` in shares), each with ``price`` and ``size`` (USDC at that price).
    FOK raises ``InsufficientLiquidity`` when the book cannot fill the amount;
    other order types then take the worst price on the book.
    """
    from fractions import Fraction

    s = parse_side(side)
    # an OrderType is the str it names: no need to import the enum to read it
    kind = str.__str__(order_type) if isinstance(order_type, str) else order_type
    if kind not in ("FOK", "FAK", "GTC", "GTD"):
        raise AmountError("order_type", order_type, "must be FOK, FAK, GTC or GTD")
    neg, want = _fraction(amount, "amount")
    if neg or not want:
        raise AmountError("amount", amount, "must be positive")
    try:
        given = list(levels)
    except TypeError:  # not iterable
        raise AmountError("levels", levels, "must be an iterable of (price, size) levels") from None
    book = sorted((_level(level, i) for i, level in enumerate(given)), key=lambda lv: lv[0])
    if s == 1:
        book.reverse()
    filled = Fraction(0)
    for price, size, _ in book:
        filled += size if s == 0 else size / price
        if filled >= want:
            return _decimal(price)
    if not book or kind == "FOK":
        raise InsufficientLiquidity(
            "amount", amount, f"the book fills only {_decimal(filled, 6)} of it"
        )
    return _decimal(book[-1][0])


def _decimal(value: Fraction, places: int | None = None) -> Decimal:
    """Exact Decimal of a terminating fraction (or truncated to ``places``)."""
    if places is not None:
        from fractions import Fraction

        value = Fraction(int(value * 10**places), 10**places)
    with localcontext() as ctx:
        ctx.prec = 200  # exact: every operand here has far fewer digits
        return Decimal(value.numerator) / Decimal(value.denominator)
