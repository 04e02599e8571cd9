"""Request bodies into typed order specs: the number, price and uint256 parsers.

``parse_order`` reads a POST /orders body, ``parse_raw`` a POST /orders/raw
body; each answers an ``OrderSpec`` (integers in 6-decimal units, prices in
cents) or raises ``Rejected`` naming the field. Nothing here changes state.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_DOWN, Context, Decimal, InvalidOperation
from typing import Any

from .. import Amounts, limit_amounts, market_amounts, market_price, new_salt
from ..amounts import implied
from ..core.spec import (
    CLIENT_ORDER_ID_MAX,
    CODE_INVALID_EXPIRATION,
    CODE_INVALID_FEE_RATE,
    CODE_INVALID_MAKER_AMOUNT,
    CODE_INVALID_PRICE,
    CODE_INVALID_SALT,
    CODE_INVALID_TAKER_AMOUNT,
    CODE_INVALID_TOKEN,
    CODE_MARKET_NOT_ACTIVE,
    ORDER_TYPES,
    OUTCOME_A,
    OUTCOME_B,
    OUTCOMES,
    SALT_MAX,
    SIDES,
    UNIT_QUANTUM,
    expiration_refusal,
)
from ..errors import InsufficientLiquidity, ValidationError
from .errors import bad_body
from .state import ASK, BID, BUY, FOK, GTD, SELL, EngineState, MarketState, dec, own_levels

__all__ = [
    "OrderSpec",
    "cents",
    "check_client_order_id",
    "decimal",
    "fok_price",
    "parse_order",
    "parse_raw",
    "scaled",
    "units_text",
]

UINT256_MAX = (1 << 256) - 1
#: Arithmetic on a request's numbers (64 characters at most, exponents within 40),
#: exactly: the default context keeps 28 digits, which would round a long price onto
#: the grid, or raise on a large amount's cents (a 500 instead of an answer)
_EXACT = Context(prec=200, traps=[InvalidOperation])
_HUNDREDTH = Decimal("0.01")


@dataclass
class OrderSpec:
    """A validated order, before admission."""

    market: MarketState
    outcome: str
    side: int
    order_type: str
    limit_cents: int
    price_text: str
    size: int
    maker_amount: int
    taker_amount: int
    amount_based: bool
    value: int  # USDC value for limits and risk
    expiration: int = 0
    salt: int = 0
    nonce: int = 0
    fee_rate_bps: int = 0
    source: str = "manual"
    source_id: str | None = None
    client_order_id: str | None = None
    take_profit: int | None = None
    stop_loss: int | None = None
    notification_id: str = ""


#: A number as a string: ASCII digits, an optional sign, point and exponent. Decimal()
#: alone would also take " 5", "1_000", full-width digits, "NaN" and "Infinity".
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,4})?", re.ASCII)


def decimal(body: Mapping[str, Any], name: str) -> Decimal | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str, float)):
        raise bad_body(f"{name} must be a number")
    if isinstance(value, str) and not (len(value) <= 64 and _NUMBER_TEXT.fullmatch(value)):
        raise bad_body(f"{name} must be a decimal number, got {value[:64]!r}")
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise bad_body(f"{name} must be a number") from None
    if not number.is_finite() or abs(number.adjusted()) > 40:
        raise bad_body(f"{name} must be a finite number of sensible size")
    return number


def _positive(body: Mapping[str, Any], name: str) -> Decimal:
    number = decimal(body, name)
    if number is None:
        raise bad_body(f"{name} is required")
    if number <= 0:
        raise bad_body(f"{name} must be positive")
    return number


def _floor_hundredths(number: Decimal) -> Decimal:
    """The service takes an amount or share count with more decimals floored to 2;
    clobkit's amount functions refuse them, so the engine floors them here."""
    return number.quantize(_HUNDREDTH, ROUND_DOWN, _EXACT)


def scaled(number: Decimal, factor: int) -> Decimal:
    """``number * factor``, exactly (a request's number into cents or 6-decimal units)."""
    return _EXACT.multiply(number, factor)


def cents(number: Decimal, name: str) -> int:
    """A price on the 0.01 grid within [0.01, 0.99], in cents."""
    hundredths = scaled(number, 100)
    if hundredths != hundredths.to_integral_value():
        raise bad_body(f"{name} must be a multiple of 0.01 (the tick size)")
    cents = int(hundredths)
    if not 1 <= cents <= 99:
        raise bad_body(f"{name} must lie between 0.01 and 0.99")
    return cents


def _price(body: Mapping[str, Any], name: str) -> int | None:
    number = decimal(body, name)
    return None if number is None else cents(number, name)


def _choice(
    body: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str | None
) -> str | None:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise bad_body(f"{name} must be one of {', '.join(allowed)}")
    return value


def _uint(value: object, name: str, code: str | None = None) -> int:
    """A uint256 from a decimal digit string: section 4.8 types a raw order's amounts,
    salt, nonce and expiration as strings, so a JSON number is refused too."""
    if not (isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 80):
        raise bad_body(f"{name} must be a non-negative integer string", code)
    number = int(value)
    if number > UINT256_MAX:
        raise bad_body(f"{name} must fit in uint256", code)
    return number


def units_text(units: int) -> str:
    return str(dec(units))


def check_client_order_id(client_id: object) -> str:
    """A raw order's ``client_order_id``: a string of 1 to CLIENT_ORDER_ID_MAX characters."""
    if not isinstance(client_id, str) or not 1 <= len(client_id) <= CLIENT_ORDER_ID_MAX:
        raise bad_body(f"client_order_id must be a string of 1 to {CLIENT_ORDER_ID_MAX} characters")
    return client_id


def parse_order(state: EngineState, body: Mapping[str, Any], now: int) -> OrderSpec:
    """A POST /orders body at ``now`` (ms) into an order spec."""
    if not isinstance(body, Mapping):
        raise bad_body("the body must be a JSON object")
    market = state._market(body.get("market_id"))
    side = BUY if _choice(body, "side", SIDES, "BUY") == "BUY" else SELL
    order_type = _choice(body, "order_type", ORDER_TYPES, FOK)
    assert order_type is not None
    outcome = _order_outcome(body, order_type, side)
    limit = _price(body, "limit_price")
    if order_type != FOK and limit is None:
        raise bad_body("limit_price is required for GTC and GTD orders")
    take_profit, stop_loss = _exits(body)
    expiration = _order_expiration(body, order_type, now, state.config.min_expiration_seconds)
    quantity = _positive(body, "amount" if side == BUY else "shares")
    _check_active(market)
    limit_cents, price, amounts = _order_amounts(market, outcome, side, order_type, quantity, limit)
    return OrderSpec(
        market=market,
        outcome=outcome,
        side=side,
        order_type=order_type,
        limit_cents=limit_cents,
        price_text=str(price),
        size=amounts.taker_amount if side == BUY else amounts.maker_amount,
        maker_amount=amounts.maker_amount,
        taker_amount=amounts.taker_amount,
        amount_based=order_type == FOK and side == BUY,
        value=amounts.maker_amount if side == BUY else amounts.taker_amount,
        expiration=expiration,
        salt=new_salt(),
        fee_rate_bps=market.fx.fee_rate_bps,
        take_profit=take_profit,
        stop_loss=stop_loss,
        notification_id=str(uuid.uuid4()),
    )


def _order_outcome(body: Mapping[str, Any], order_type: str, side: int) -> str:
    """The outcome of a POST /orders body: ``outcome``, or ``token_option`` (yes: a, no: b)."""
    outcome = _choice(body, "outcome", OUTCOMES, None)
    option = _choice(body, "token_option", ("yes", "no"), None)
    option_outcome = None if option is None else (OUTCOME_A if option == "yes" else OUTCOME_B)
    if order_type == FOK:
        if outcome is None and side == SELL:
            outcome = option_outcome
        if outcome is None:
            raise bad_body("outcome (a or b) is required for a FOK order")
    else:
        if option_outcome is None:
            raise bad_body("token_option (yes or no) is required for a limit order")
        outcome = outcome or option_outcome
    if option_outcome is not None and outcome != option_outcome:
        raise bad_body("outcome and token_option disagree")
    return outcome


def _exits(body: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The take-profit and stop-loss prices (cents), the first above the second."""
    take_profit = _price(body, "take_profit_price")
    stop_loss = _price(body, "stop_loss_price")
    if take_profit is not None and stop_loss is not None and take_profit <= stop_loss:
        raise bad_body("take_profit_price must be above stop_loss_price")
    return take_profit, stop_loss


def _order_expiration(body: Mapping[str, Any], order_type: str, now: int, minimum: int) -> int:
    """A GTD order's expiration (Unix seconds, ``minimum`` s after ``now`` in ms at
    least); 0 for the others."""
    if order_type != GTD:
        return 0
    raw = body.get("expiration")
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise bad_body("expiration (integer Unix seconds) is required for a GTD order")
    _check_expiration(raw, now, minimum)
    if raw > UINT256_MAX:  # the order's hashed field, as /orders/raw bounds it
        raise bad_body("expiration must fit in uint256")
    return raw


def _check_active(market: MarketState) -> None:
    if not market.active:
        raise bad_body(
            f"market {market.id} is not active (status {market.fx.status})", CODE_MARKET_NOT_ACTIVE
        )


def _order_amounts(
    market: MarketState,
    outcome: str,
    side: int,
    order_type: str,
    quantity: Decimal,
    limit: int | None,
) -> tuple[int, Decimal, Amounts]:
    """(limit in cents, price, signed amounts) of a FOK (at its book walk's worst price) or
    a limit order (a BUY's USDC amount floored to whole cents of 0.01 shares)."""
    try:
        if order_type == FOK:
            worst = fok_price(market, outcome, side, quantity, limit)
            price = Decimal(worst) / 100
            return worst, price, market_amounts(side, price, _floor_hundredths(quantity))
        assert limit is not None
        price = Decimal(limit) / 100
        if side == SELL:
            return limit, price, limit_amounts(SELL, price, _floor_hundredths(quantity))
        cents = int(scaled(quantity, 100).to_integral_value(ROUND_DOWN))
        shares = _EXACT.divide(Decimal(cents * 100 // limit), 100)
        if shares <= 0:
            raise bad_body("amount is too small to buy 0.01 shares at limit_price")
        return limit, price, limit_amounts(BUY, price, shares)
    except ValidationError as exc:
        raise bad_body(str(exc)) from None


def fok_price(
    market: MarketState, outcome: str, side: int, quantity: Decimal, limit: int | None
) -> int:
    """Worst price (cents) a FOK must accept: the book walk, capped by limit_price."""
    levels = _own_levels(market, outcome, ASK if side == BUY else BID)
    try:
        worst = int(market_price(levels, side, quantity, "FOK") * 100)
    except InsufficientLiquidity:
        # killed at execution; the worst price on the book (or the edge) still signs it
        worst = int(Decimal(levels[-1][0]) * 100) if levels else (99 if side == BUY else 1)
    if limit is not None:
        worst = min(worst, limit) if side == BUY else max(worst, limit)
    return worst


def _own_levels(market: MarketState, outcome: str, own_side: int) -> list[tuple[str, str]]:
    """One side of an outcome token's book, best first: (price, USDC size) strings."""
    out = []
    for price, size in own_levels(market, outcome, own_side):
        out.append((f"0.{price:02d}", units_text(size * price // 100)))
    return out


def parse_raw(state: EngineState, body: Mapping[str, Any], now: int) -> OrderSpec:
    """A POST /orders/raw body at ``now`` (ms) into an order spec."""
    market = state._market(body.get("market_id"))
    outcome = _raw_outcome(body, market)
    maker, taker = _raw_amounts(body)
    side = body.get("side")
    if type(side) is not int or side not in (0, 1):  # not True, 0.0 or Decimal("1.0")
        raise bad_body("side must be 0 (BUY) or 1 (SELL)")
    fee = _raw_fee(body, market)
    order_type = _choice(body, "order_type", ORDER_TYPES, FOK)
    assert order_type is not None
    salt = _raw_salt(body)
    raw_nonce = body.get("nonce")
    nonce = 0 if raw_nonce is None else _uint(raw_nonce, "nonce")
    expiration = _raw_expiration(body, order_type, now, state.config.min_expiration_seconds)
    usdc, shares, limit = _implied(maker, taker, side)
    _check_active(market)
    return OrderSpec(
        market=market,
        outcome=outcome,
        side=side,
        order_type=order_type,
        limit_cents=limit,
        price_text=str((Decimal(usdc) / Decimal(shares)).quantize(UNIT_QUANTUM).normalize()),
        size=shares,
        maker_amount=maker,
        taker_amount=taker,
        amount_based=order_type == FOK and side == BUY,
        value=usdc,
        expiration=expiration,
        salt=salt,
        nonce=nonce,
        fee_rate_bps=fee,
        source="raw",
        source_id=body.get("client_order_id"),
        client_order_id=body.get("client_order_id"),
    )


def _raw_outcome(body: Mapping[str, Any], market: MarketState) -> str:
    """A raw order's outcome, its ``token_id`` that outcome's token of ``market``."""
    outcome = _choice(body, "outcome", OUTCOMES, None)
    if outcome is None:
        raise bad_body("outcome (a or b) is required")
    token = body.get("token_id")
    if not isinstance(token, str):  # section 4.8 types it a string, as the amounts
        raise bad_body("token_id is required (a decimal string)")
    if token != market.token(outcome):
        raise bad_body(
            f"token_id is not the token of outcome {outcome} of market {market.id}",
            CODE_INVALID_TOKEN,
        )
    return outcome


def _raw_amounts(body: Mapping[str, Any]) -> tuple[int, int]:
    """A raw order's maker and taker amounts (units): uint256 digit strings. Zero is one
    (section 4.8: "non-negative"); ``_implied``'s ratio rule refuses it."""
    maker = _uint(body.get("maker_amount"), "maker_amount", CODE_INVALID_MAKER_AMOUNT)
    taker = _uint(body.get("taker_amount"), "taker_amount", CODE_INVALID_TAKER_AMOUNT)
    return maker, taker


def _raw_fee(body: Mapping[str, Any], market: MarketState) -> int:
    """A raw order's ``fee_rate_bps``: an integer, the market's own."""
    fee = body.get("fee_rate_bps")
    if isinstance(fee, bool) or not isinstance(fee, int):
        raise bad_body("fee_rate_bps (integer) is required")
    if fee != market.fx.fee_rate_bps:
        raise bad_body(
            f"fee_rate_bps must equal the token's fee ({market.fx.fee_rate_bps})",
            CODE_INVALID_FEE_RATE,
        )
    return fee


def _raw_salt(body: Mapping[str, Any]) -> int:
    """A raw order's salt, in [0, SALT_MAX]; a new one when absent."""
    salt_raw = body.get("salt")
    if salt_raw is None:
        return new_salt()
    salt = _uint(salt_raw, "salt", CODE_INVALID_SALT)
    if salt > SALT_MAX:
        raise bad_body(f"salt must lie in [0, {SALT_MAX}]", CODE_INVALID_SALT)
    return salt


def _raw_expiration(body: Mapping[str, Any], order_type: str, now: int, minimum: int) -> int:
    """A raw order's expiration (Unix seconds): for GTD, ``minimum`` s after ``now`` (ms)
    at least; else 0."""
    raw = body.get("expiration")
    expiration = 0 if raw is None else _uint(raw, "expiration")
    if order_type == GTD:
        _check_expiration(expiration, now, minimum)
    elif expiration != 0:
        raise bad_body("expiration is only supported for GTD orders (use 0)")
    return expiration


def _check_expiration(expiration: int, now: int, minimum: int) -> None:
    """A GTD ``expiration`` (Unix s) must lie after ``now`` (ms), and ``minimum`` s after
    it at least (``min_expiration_seconds``): else 400 ``CODE_INVALID_EXPIRATION``."""
    if expiration <= now // 1000 or expiration * 1000 - now < minimum * 1000:
        raise bad_body(expiration_refusal(expiration, now, minimum), CODE_INVALID_EXPIRATION)


def _implied(maker: int, taker: int, side: int) -> tuple[int, int, int]:
    """(USDC, shares, limit in cents) of a raw order's amounts: the ratio rule of section
    4.8, the one check of a zero amount (no price at all, or a price of 0)."""
    found = implied(side, maker, taker)  # BUY 0, SELL 1: the exchange's sides
    if found is None:
        names = "maker_amount / taker_amount" if side == BUY else "taker_amount / maker_amount"
        usdc, shares = (maker, taker) if side == BUY else (taker, maker)
        raise bad_body(
            f"{names} (the implied price) must lie strictly between 0 and 1, got {usdc} / {shares}",
            CODE_INVALID_PRICE,
        )
    usdc, shares = found
    # onto the 0.01 grid, against the order: a BUY floors, a SELL ceils
    limit = usdc * 100 // shares if side == BUY else -(-usdc * 100 // shares)
    if not 1 <= limit <= 99:
        raise bad_body(
            "the implied price rounds outside 0.01-0.99 on the tick grid", CODE_INVALID_PRICE
        )
    return usdc, shares, limit
