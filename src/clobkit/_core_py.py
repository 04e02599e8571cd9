"""Pure-Python twin of the core: the reference the compiled twin is held to.

Same names, signatures and exceptions as ``clobkit._core_c``. Everything here
is exact: amounts are integer arithmetic on parsed decimal digits (no binary
floating point), hashes come from pycryptodome (Keccak) and hashlib/hmac.

The compiled twin calls the validators below (``parse_number``, ``parse_side``,
``parse_uint256``, ...) on its slow path, so both twins reject bad input with
the same class and the same message.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from Crypto.Hash import keccak as _keccak

from ._columns import FLAG, SIDE, TOKEN, UINT, WORD, Column, is_columnar, nullable
from ._types import Amounts, OrderType
from ._wallet import UINT256_MAX, prepare_wallet
from .errors import (
    AmountError,
    InsufficientLiquidity,
    OrderFieldError,
    SignatureInputError,
)

__all__ = [
    "OrderHasher",
    "RequestSigner",
    "from_units",
    "keccak256",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "new_salt",
    "new_salts",
    "salts_from_bytes",
    "sha256_hex",
    "signature",
    "to_units",
    "verify_signature",
]

# ---------------------------------------------------------------------------
# Numbers: every price, size and amount is parsed to (negative, coef, exp) with
# value = (-1)**negative * coef * 10**exp and coef free of trailing zeros.

_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,9}))?\Z")
MAX_SIGNIFICANT_DIGITS = 96  # far beyond uint256 (78 digits); stops absurd inputs early
MAX_MAGNITUDE_DIGITS = 80  # a value >= 10**80 cannot become a uint256 amount
TICKS = {"0.1": 1, "0.01": 2, "0.001": 3, "0.0001": 4}
SALT_MAX = 10**12
_SALT_SPAN = SALT_MAX + 1
# 8-byte draws at or above this bound are rejected so ``draw % span`` is unbiased.
SALT_REJECT_FROM = (1 << 64) - (1 << 64) % _SALT_SPAN


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
                text = repr(value)
            else:
                text = value
            m = _NUMBER.match(text)
            if m is None or not (m.group(2) or m.group(3)):
                raise AmountError(field, value, "is not a decimal number")
            neg = m.group(1) == "-"
            frac = m.group(3) or ""
            text = (m.group(2) or "") + frac
            exp = int(m.group(4) or 0) - len(frac)
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


def parse_tick(tick_size: object) -> int:
    """Decimals of a tick size: 0.1 -> 1 ... 0.0001 -> 4."""
    try:
        neg, coef, exp = parse_number(tick_size, "tick_size")
    except AmountError:
        coef, exp, neg = 0, 0, True
    if neg or coef != 1 or not -4 <= exp <= -1:
        raise AmountError("tick_size", tick_size, "must be one of 0.1, 0.01, 0.001, 0.0001")
    return -exp


def parse_price(price: object, decimals: int, round_price: bool, field: str = "price") -> int:
    """Price in ticks of 10**-decimals, within [tick, 1 - tick]."""
    tick = TICKS_BY_DECIMALS[decimals]
    neg, coef, exp = parse_number(price, field)
    shift = exp + decimals
    if shift >= 0:
        ticks = coef * _pow10(shift)
    elif not round_price:
        raise AmountError(
            field, price, f"is not on the tick grid {tick} (pass round_price=True to round it)"
        )
    elif -shift > len(str(coef)) + 1:
        ticks = 0
    else:
        ticks, rest = divmod(coef, 10**-shift)
        twice, half = 2 * rest, 10**-shift
        if twice > half or (twice == half and ticks % 2 == 1):
            ticks += 1
    if neg or not 1 <= ticks <= 10**decimals - 1:
        raise AmountError(field, price, f"must lie in [{tick}, {1 - Decimal(tick)}]")
    return ticks


TICKS_BY_DECIMALS = {v: k for k, v in TICKS.items()}


def _hundredths(value: object, field: str) -> int:
    """A positive size or amount floored to 2 decimals, in hundredths."""
    neg, coef, exp = parse_number(value, field)
    if neg or coef == 0:
        raise AmountError(field, value, "must be positive")
    cents = _scaled_floor(coef, exp, 2)
    if cents == 0:
        raise AmountError(field, value, "rounds down to 0 at 2 decimals")
    return cents


def _amounts(maker: int, taker: int, field: str, value: object) -> Amounts:
    if maker > UINT256_MAX or taker > UINT256_MAX:
        raise AmountError(field, value, "is too large: the amount exceeds uint256")
    return Amounts(maker, taker)


def _terms(
    side: object, price: object, tick_size: object, round_price: bool, value: object, field: str
) -> tuple[int, int, int, int]:
    """Side (0/1), price decimals, price in ticks, and ``value`` floored to hundredths."""
    s = parse_side(side)
    decimals = parse_tick(tick_size)
    return s, decimals, parse_price(price, decimals, round_price), _hundredths(value, field)


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
        digits = units[1:] if units[:1] == "-" else units
        if not (digits.isascii() and digits.isdigit()) or len(digits.lstrip("0")) > 84:
            raise AmountError("units", units, "must be a decimal integer string")
        units = int(units)
    elif units.bit_length() > 280:
        raise AmountError("units", units, "is too large")
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
    p_neg, p_coef, p_exp = parse_number(price, f"levels[{i}].price")
    s_neg, s_coef, s_exp = parse_number(size, f"levels[{i}].size")
    if p_neg or p_coef == 0:
        raise AmountError(f"levels[{i}].price", price, "must be positive")
    if s_neg:
        raise AmountError(f"levels[{i}].size", size, "must not be negative")
    return Fraction(p_coef) * Fraction(10) ** p_exp, Fraction(s_coef) * Fraction(10) ** s_exp, price


def market_price(
    levels: Iterable[object], side: object, amount: object, order_type: object = "FOK"
) -> Decimal:
    """Worst price a market order must accept to fill ``amount`` against one book side.

    ``levels`` are the asks for a BUY (``amount`` in USDC) or the bids for a SELL
    (``amount`` in shares), each with ``price`` and ``size`` (USDC at that price).
    FOK raises ``InsufficientLiquidity`` when the book cannot fill the amount;
    other order types then take the worst price on the book.
    """
    s = parse_side(side)
    kind = order_type.value if isinstance(order_type, OrderType) else order_type
    if kind not in ("FOK", "FAK", "GTC", "GTD"):
        raise AmountError("order_type", order_type, "must be FOK, FAK, GTC or GTD")
    neg, coef, exp = parse_number(amount, "amount")
    if neg or coef == 0:
        raise AmountError("amount", amount, "must be positive")
    want = Fraction(coef) * Fraction(10) ** exp
    book = sorted((_level(level, i) for i, level in enumerate(levels)), key=lambda lv: lv[0])
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
        value = Fraction(int(value * 10**places), 10**places)
    with localcontext() as ctx:
        ctx.prec = 200  # exact: every operand here has far fewer digits
        return Decimal(value.numerator) / Decimal(value.denominator)


# ---------------------------------------------------------------------------
# Salts


def salts_from_bytes(data: bytes, n: int) -> list[int]:
    """Up to ``n`` salts from 8-byte little-endian draws, rejecting the biased tail."""
    out: list[int] = []
    for i in range(0, len(data) - 7, 8):
        if len(out) == n:
            break
        draw = int.from_bytes(data[i : i + 8], "little")
        if draw < SALT_REJECT_FROM:
            out.append(draw % _SALT_SPAN)
    return out


def new_salts(n: int) -> list[int]:
    """``n`` salts, each uniform on [0, 10**12], from the OS CSPRNG."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise OrderFieldError("n", n, "must be a non-negative int")
    out: list[int] = []
    while len(out) < n:
        need = n - len(out)
        out += salts_from_bytes(os.urandom(8 * need + 8), need)
    return out


def new_salt() -> int:
    """One salt, uniform on [0, 10**12], from the OS CSPRNG."""
    while True:
        draw = int.from_bytes(os.urandom(8), "little")
        if draw < SALT_REJECT_FROM:
            return draw % _SALT_SPAN


# ---------------------------------------------------------------------------
# Order ids


def keccak256(data: bytes) -> bytes:
    """Keccak-256 (Ethereum's, not SHA3-256) of ``data``."""
    return _keccak.new(data=bytes(memoryview(data)), digest_bits=256).digest()


def parse_side(value: object, field: str = "side") -> int:
    """0 for BUY, 1 for SELL, from a Side, "BUY"/"SELL" or 0/1."""
    if isinstance(value, str):
        if value == "BUY":
            return 0
        if value == "SELL":
            return 1
    elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return int(value)
    raise OrderFieldError(field, value, 'must be "BUY", "SELL", 0 or 1')


def parse_uint256(value: object, field: str) -> int:
    """An int or decimal digit string in [0, 2**256 - 1]."""
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value <= UINT256_MAX:
            return value
        raise OrderFieldError(field, value, "must lie in [0, 2**256 - 1]")
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()):
            raise OrderFieldError(field, value, "must be a non-negative decimal integer string")
        if len(value.lstrip("0")) > 78 or int(value) > UINT256_MAX:
            raise OrderFieldError(field, value, "must lie in [0, 2**256 - 1]")
        return int(value)
    raise OrderFieldError(field, value, "must be an int or a decimal integer string")


def parse_flag(value: object, field: str) -> bool:
    """A bool (or 0/1)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise OrderFieldError(field, value, "must be a bool")


#: Most hashing threads one batch uses: more than a few per core only adds
#: switching, and each native helper thread is kept alive between batches.
MAX_THREADS = 4 * (os.cpu_count() or 1)


def parse_threads(threads: object) -> int:
    """Worker count of a batch: None -> 1; above ``MAX_THREADS`` (4 per core) -> that."""
    if threads is None:
        return 1
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise OrderFieldError("threads", threads, "must be None or a positive int")
    return min(int.__index__(threads), MAX_THREADS)


def is_scalar(value: object) -> bool:
    """A batch argument given once for every order (broadcast); bytes are one bytes32."""
    return isinstance(value, (str, int, bytes, bytearray, memoryview)) or not isinstance(
        value, Sequence
    )


def batch_length(columns: Mapping[str, object]) -> int:
    """The common length of the sequence arguments of ``order_ids`` (1 if none)."""
    n: int | None = None
    first = ""
    for name, value in columns.items():
        if is_scalar(value):
            continue
        size = len(value)  # type: ignore[arg-type]
        if n is None:
            n, first = size, name
        elif size != n:
            raise OrderFieldError(
                name, f"<{size} items>", f"has a different length than {first} ({n})"
            )
    return 1 if n is None else n


def parse_word(value: object, field: str) -> int:
    """A bytes32 (``metadata``, ``builder``) as the big-endian integer of its 32 bytes.

    None is zero; otherwise 32 bytes, or ``0x`` followed by 64 hex digits.
    """
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 32:
            raise OrderFieldError(field, value, f"must be 32 bytes, not {len(raw)}")
        return int.from_bytes(raw, "big")
    if isinstance(value, str):
        if (
            len(value) != 66
            or value[:2] not in ("0x", "0X")
            or not _HEXDIGITS.issuperset(value[2:])
        ):
            raise OrderFieldError(field, value, "must be 0x followed by 64 hex digits")
        return int(value[2:], 16)
    raise OrderFieldError(field, value, "must be None, 32 bytes or 0x followed by 64 hex digits")


_HEXDIGITS = frozenset("0123456789abcdefABCDEF")


class _Unset:
    """Default of the version-specific order fields: "not given" (unlike an explicit 0)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
# what each batch keyword holds, for its columnar (pyarrow / numpy) form
COLUMN_KINDS = {
    "token_ids": TOKEN,
    "maker_amounts": UINT,
    "taker_amounts": UINT,
    "sides": SIDE,
    "salts": UINT,
    "fee_rate_bps": UINT,
    "nonces": UINT,
    "expirations": UINT,
    "timestamps": UINT,
    "metadatas": WORD,
    "builders": WORD,
    "neg_risk": FLAG,
}
V1_FIELDS = ("fee_rate_bps", "nonce", "expiration")
V2_FIELDS = ("timestamp", "metadata", "builder")
V1_COLUMNS = ("fee_rate_bps", "nonces", "expirations")
V2_COLUMNS = ("timestamps", "metadatas", "builders")


def check_version_fields(version: int, given: Sequence[object], batch: bool = False) -> None:
    """Refuse a field of the other order version, and a V2/V3 order without a timestamp.

    ``given`` holds the six version-specific arguments in signature order
    (``fee_rate_bps, nonce, expiration, timestamp, metadata, builder``, plural
    in a batch), ``UNSET`` where the caller left them out. Never ignored
    silently: an explicit ``nonce=0`` on a V2 order is refused too.
    """
    names = (V1_COLUMNS + V2_COLUMNS) if batch else (V1_FIELDS + V2_FIELDS)
    foreign = range(3, 6) if version == 1 else range(3)
    for k in foreign:
        if given[k] is not UNSET:
            other = "V2/V3" if version == 1 else "V1"
            raise OrderFieldError(
                names[k],
                given[k],
                f"is a {other} order field, and this wallet's orders are V{version} "
                "(OrderHasher.version)",
            )
    if version != 1 and given[3] is UNSET:
        raise OrderFieldError(
            names[3], None, f"is required on a V{version} order (milliseconds since the epoch)"
        )


class OrderHasher:
    """The exchange's ``clob_order_id`` (EIP-712 order digest) for one wallet, offline.

    ``wallet`` is a ``WalletInfo`` or the ``data`` mapping of ``GET /wallet``.
    ``version`` (1, 2 or 3) is the exchange's order format; None takes it from
    the wallet's exchange addresses (docs/exchange-versions.md). Domain
    separators and the wallet's constant words are computed once here.
    """

    __slots__ = ("_domains", "_prepared", "_tail")

    def __init__(self, wallet: object, *, version: int | None = None) -> None:
        p = prepare_wallet(wallet, keccak256, version)
        self._prepared = p
        self._tail = p.maker + p.signer + (p.taker if p.version == 1 else b"")
        self._domains = (b"\x19\x01" + p.domain_ctf, b"\x19\x01" + p.domain_neg_risk)

    def __repr__(self) -> str:
        p = self._prepared
        return (
            f"OrderHasher(maker=0x{p.maker[12:].hex()}, chain_id={p.chain_id}, version={p.version})"
        )

    @property
    def version(self) -> int:
        """The exchange's order format: 1, 2 or 3."""
        return self._prepared.version

    @property
    def signature_type(self) -> int:
        """The wallet's signature type: 0 EOA, 1 POLY_PROXY, 2 POLY_GNOSIS_SAFE, 3 POLY_1271."""
        return self._prepared.signature_type_value

    @property
    def chain_id(self) -> int:
        """The EIP-712 domain's chain id (137 Polygon, 80002 Amoy)."""
        return self._prepared.chain_id

    @property
    def maker(self) -> str:
        """The order's maker address, EIP-55."""
        return self._prepared.maker_address

    @property
    def signer(self) -> str:
        """The order's signer address, EIP-55."""
        return self._prepared.signer_address

    def domain_separator(self, neg_risk: bool = False) -> bytes:
        """The 32-byte EIP-712 domain separator of the CTF (or NegRisk) exchange."""
        return self._domains[parse_flag(neg_risk, "neg_risk")][2:]

    def _message(
        self,
        token_id: int,
        maker_amount: int,
        taker_amount: int,
        side: int,
        salt: int,
        a: int,
        b: int,
        c: int,
    ) -> bytes:
        """The struct encoding; ``a, b, c`` are fee, nonce, expiration (V1) or
        timestamp, metadata, builder (V2/V3)."""
        p = self._prepared
        if p.version == 1:
            words = (salt, token_id, maker_amount, taker_amount, c, b, a, side)
            return b"".join(
                (
                    p.typehash,
                    words[0].to_bytes(32, "big"),
                    self._tail,
                    b"".join(w.to_bytes(32, "big") for w in words[1:]),
                    p.signature_type,
                )
            )
        return b"".join(
            (
                p.typehash,
                salt.to_bytes(32, "big"),
                self._tail,
                b"".join(
                    w.to_bytes(32, "big") for w in (token_id, maker_amount, taker_amount, side)
                ),
                p.signature_type,
                b"".join(w.to_bytes(32, "big") for w in (a, b, c)),
            )
        )

    def _digest(self, fields: tuple[int, int, int, int, int, int, int, int], neg_risk: bool) -> str:
        return "0x" + keccak256(self._domains[neg_risk] + keccak256(self._message(*fields))).hex()

    def _fields(
        self,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        given: tuple[object, object, object, object, object, object],
    ) -> tuple[int, int, int, int, int, int, int, int]:
        """Check the version's fields, then parse them in signature order."""
        version = self._prepared.version
        check_version_fields(version, given)
        head = (
            parse_uint256(token_id, "token_id"),
            parse_uint256(maker_amount, "maker_amount"),
            parse_uint256(taker_amount, "taker_amount"),
            parse_side(side),
            parse_uint256(salt, "salt"),
        )
        if version == 1:
            fee, nonce, expiration = (0 if v is UNSET else v for v in given[:3])
            return (
                *head,
                parse_uint256(fee, "fee_rate_bps"),
                parse_uint256(nonce, "nonce"),
                parse_uint256(expiration, "expiration"),
            )
        timestamp, metadata, builder = given[3:]
        return (
            *head,
            parse_uint256(timestamp, "timestamp"),
            parse_word(None if metadata is UNSET else metadata, "metadata"),
            parse_word(None if builder is UNSET else builder, "builder"),
        )

    def order_id(
        self,
        *,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        fee_rate_bps: object = UNSET,
        nonce: object = UNSET,
        expiration: object = UNSET,
        timestamp: object = UNSET,
        metadata: object = UNSET,
        builder: object = UNSET,
        neg_risk: object = False,
    ) -> str:
        """The ``clob_order_id`` of one order: ``"0x"`` + 64 lowercase hex digits.

        V1 orders take ``fee_rate_bps``, ``nonce``, ``expiration`` (0 when
        left out); V2/V3 orders take ``timestamp`` (ms, required) and the
        bytes32 ``metadata`` and ``builder`` (zero when left out). A field of
        the other version is an ``OrderFieldError``.
        """
        given = (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        fields = self._fields(token_id, maker_amount, taker_amount, side, salt, given)
        return self._digest(fields, parse_flag(neg_risk, "neg_risk"))

    def struct_hash(
        self,
        *,
        token_id: object,
        maker_amount: object,
        taker_amount: object,
        side: object,
        salt: object,
        fee_rate_bps: object = UNSET,
        nonce: object = UNSET,
        expiration: object = UNSET,
        timestamp: object = UNSET,
        metadata: object = UNSET,
        builder: object = UNSET,
        neg_risk: object = False,
    ) -> bytes:
        """The 32-byte EIP-712 ``hashStruct`` of the order (same keywords as ``order_id``)."""
        given = (fee_rate_bps, nonce, expiration, timestamp, metadata, builder)
        fields = self._fields(token_id, maker_amount, taker_amount, side, salt, given)
        parse_flag(neg_risk, "neg_risk")
        return keccak256(self._message(*fields))

    def order_ids(
        self,
        *,
        token_ids: object,
        maker_amounts: object,
        taker_amounts: object,
        sides: object,
        salts: object,
        fee_rate_bps: object = UNSET,
        nonces: object = UNSET,
        expirations: object = UNSET,
        timestamps: object = UNSET,
        metadatas: object = UNSET,
        builders: object = UNSET,
        neg_risk: object = False,
        threads: int | None = None,
    ) -> list[str]:
        """``clob_order_id`` of each order of a batch; each argument a sequence or a scalar."""
        parse_threads(threads)
        version = self._prepared.version
        given = (fee_rate_bps, nonces, expirations, timestamps, metadatas, builders)
        check_version_fields(version, given, batch=True)
        columns: dict[str, Any] = {
            "token_ids": token_ids,
            "maker_amounts": maker_amounts,
            "taker_amounts": taker_amounts,
            "sides": sides,
            "salts": salts,
        }
        if version == 1:
            for name, value in zip(V1_COLUMNS, given[:3], strict=True):
                columns[name] = 0 if value is UNSET else value
        else:
            for name, value in zip(V2_COLUMNS, given[3:], strict=True):
                columns[name] = None if value is UNSET else value
        columns["neg_risk"] = neg_risk
        # pyarrow / numpy columns as the list path takes them (nulls refused per row)
        columnar = [name for name, value in columns.items() if is_columnar(value)]
        for name in columnar:
            columns[name] = Column(columns[name], name, COLUMN_KINDS[name]).values()
        n = batch_length(columns)
        # Scalars first, then the sequences row by row: the first bad value
        # in that order is the one named, as in the compiled twin.
        parsed: list[list[Any]] = []
        sequences: list[tuple[list[Any], Sequence[Any], str, Any]] = []
        for name, value in columns.items():
            if name == "sides":
                parse: Any = parse_side
            elif name == "neg_risk":
                parse = parse_flag
            elif name in ("metadatas", "builders"):
                parse = parse_word
            else:
                parse = parse_uint256
            if name in columnar:
                parse = nullable(parse)
            if is_scalar(value):
                parsed.append([parse(value, name)] * n)
            else:
                column: list[Any] = [None] * n
                parsed.append(column)
                sequences.append((column, value, name, parse))
        for i in range(n):
            for column, value, name, parse in sequences:
                column[i] = parse(value[i], f"{name}[{i}]")
        tok, mak, tak, sid, sal, a, b, c, neg = parsed
        return [
            self._digest((tok[i], mak[i], tak[i], sid[i], sal[i], a[i], b[i], c[i]), neg[i])
            for i in range(n)
        ]

    def sign(self, signer: Any, **order: Any) -> Any:
        """Hash and sign one order: ``SignedOrder(order_id, signature)`` (see clobkit.signing)."""
        from clobkit.signing import sign_order  # type: ignore[import-not-found, unused-ignore]

        return sign_order(self, signer, order)

    def sign_many(self, signer: Any, *, threads: int | None = None, **columns: Any) -> Any:
        """Hash and sign a batch (``order_ids``' keywords): a list of ``SignedOrder``."""
        from clobkit.signing import sign_orders  # type: ignore[import-not-found, unused-ignore]

        return sign_orders(self, signer, columns, threads)


# ---------------------------------------------------------------------------
# Request signing

_PRINTABLE = re.compile(r"[\x21-\x7e]+\Z")
_LETTERS = re.compile(r"[A-Za-z]+\Z")
HIDDEN = "<hidden>"


def parse_secret(secret: object) -> bytes:
    """The HMAC key: the UTF-8 bytes of the secret string as issued."""
    if isinstance(secret, str):
        key = str.encode(secret, "utf-8")  # a subclass's own encode() is not consulted
    elif isinstance(secret, (bytes, bytearray, memoryview)):
        key = bytes(secret)
    else:
        raise SignatureInputError("api_secret", HIDDEN, "must be a str or bytes")
    if not key:
        raise SignatureInputError("api_secret", HIDDEN, "must not be empty")
    return key


def parse_token(value: object, field: str) -> str:
    """A header-safe token (key, nonce): printable ASCII without spaces."""
    if not isinstance(value, str) or not _PRINTABLE.match(value):
        raise SignatureInputError(field, value, "must be a non-empty printable ASCII string")
    return str.__str__(value)  # a plain str, also for a str subclass (both twins)


def parse_method(method: object) -> str:
    """HTTP method, upper-cased."""
    if not isinstance(method, str) or not _LETTERS.match(method):
        raise SignatureInputError("method", method, "must be an HTTP method such as GET or POST")
    return str.upper(method)


def parse_path(path: object) -> str:
    """Request path (and query) as sent: printable ASCII starting with '/'."""
    if not isinstance(path, str) or not str.startswith(path, "/") or not _PRINTABLE.match(path):
        raise SignatureInputError(
            "path", path, "must start with '/' and be printable ASCII (percent-encode the rest)"
        )
    return str.__str__(path)


def parse_timestamp(timestamp: object) -> str:
    """Milliseconds since the epoch as a decimal string."""
    if isinstance(timestamp, int) and not isinstance(timestamp, bool) and timestamp >= 0:
        return int.__repr__(timestamp)  # the digits, also for an IntEnum
    if isinstance(timestamp, str) and str.isascii(timestamp) and str.isdigit(timestamp):
        return str.__str__(timestamp)
    raise SignatureInputError("timestamp", timestamp, "must be non-negative milliseconds")


def parse_body(body: object) -> bytes:
    """Body bytes exactly as sent (a str is sent as UTF-8)."""
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    raise SignatureInputError("body", body, "must be bytes or str")


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _signing_string(method: str, path: str, ts: str, nonce: str, body: bytes) -> bytes:
    return f"{method}\n{path}\n{ts}\n{nonce}\n{hashlib.sha256(body).hexdigest()}".encode("ascii")


def signature(
    secret: object,
    method: object,
    path: object,
    timestamp: object,
    nonce: object,
    body: object = b"",
) -> str:
    """Lowercase hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nhex(SHA-256(body))."""
    message = _signing_string(
        parse_method(method),
        parse_path(path),
        parse_timestamp(timestamp),
        parse_token(nonce, "nonce"),
        parse_body(body),
    )
    return hmac.new(parse_secret(secret), message, hashlib.sha256).hexdigest()


def verify_signature(
    secret: object,
    method: object,
    path: object,
    timestamp: object,
    nonce: object,
    body: object,
    sig: object,
) -> bool:
    """True when ``sig`` is the signature of the request; compared in constant time.

    Inputs that cannot have been signed (a malformed path, nonce, signature)
    verify as False; only a bad secret raises.
    """
    key = parse_secret(secret)
    if not isinstance(sig, str) or not str.isascii(sig):
        return False
    sig = str.__str__(sig)
    try:
        expected = signature(key, method, path, timestamp, nonce, body)
    except SignatureInputError:
        return False
    return hmac.compare_digest(expected, sig)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class RequestSigner:
    """Signs requests with one API key: the four ``X-API-*`` headers.

    With ``sign_query=True`` (the default, as in the API's cURL examples) the
    signed PATH includes the query string exactly as sent; ``False`` signs the
    bare path. The secret never appears in ``repr`` or errors.
    """

    __slots__ = ("_key", "_mac", "api_key", "sign_query")

    def __init__(self, api_key: str, api_secret: str | bytes, *, sign_query: bool = True) -> None:
        self.api_key = parse_token(api_key, "api_key")
        self._key = parse_secret(api_secret)
        self._mac = hmac.new(self._key, digestmod=hashlib.sha256)
        self.sign_query = parse_flag(sign_query, "sign_query")

    def __repr__(self) -> str:
        return f"RequestSigner(api_key={self.api_key!r}, sign_query={self.sign_query})"

    def headers(
        self,
        method: str,
        path: str,
        body: bytes | str = b"",
        *,
        timestamp_ms: int | None = None,
        nonce: str | None = None,
    ) -> dict[str, str]:
        """``X-API-KEY``, ``-TIMESTAMP`` (ms), ``-NONCE`` (32 hex) and ``-SIGNATURE``."""
        m = parse_method(method)
        p = parse_path(path)
        if not self.sign_query:
            p = p.partition("?")[0]
        ts = parse_timestamp(_now_ms() if timestamp_ms is None else timestamp_ms)
        n = os.urandom(16).hex() if nonce is None else parse_token(nonce, "nonce")
        mac = self._mac.copy()
        mac.update(_signing_string(m, p, ts, n, parse_body(body)))
        return {
            "X-API-KEY": self.api_key,
            "X-API-TIMESTAMP": ts,
            "X-API-NONCE": n,
            "X-API-SIGNATURE": mac.hexdigest(),
        }

    def headers_many(self, requests: Iterable[Sequence[Any]]) -> list[dict[str, str]]:
        """Headers for each ``(method, path)`` or ``(method, path, body)`` of a batch."""
        out = []
        for i, request in enumerate(requests):
            if not isinstance(request, (tuple, list)) or len(request) not in (2, 3):
                raise SignatureInputError(
                    f"requests[{i}]", request, "must be (method, path) or (method, path, body)"
                )
            out.append(self.headers(*request))
        return out
