"""Validating user input into typed values before anything is built or sent."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple, TypedDict
from urllib.parse import quote

import msgspec

from ..amounts import MAX_ORDER_USDC
from ..amounts import check_raw_amounts as _check_raw_amounts
from ..core.parse import parse_side
from ..core.select import from_units, limit_amounts, market_amounts, new_salt
from ..core.select import to_units as _to_units
from ..core.spec import (
    CLIENT_ORDER_ID_MAX,
    MAX_FEE_RATE_BPS,
    ORDER_TYPES,
    OUTCOME_A,
    OUTCOME_B,
    SALT_MAX,
    SIDES,
    OrderTypeName,
    OutcomeName,
    SideName,
)
from ..core.types import OrderType, Side
from ..errors import (
    AmountError,
    OrderFieldError,
    ValidationError,
)

_encoder = msgspec.json.Encoder(decimal_format="number")


def _segment(value: object, field: str, error: type[ValidationError] = ValidationError) -> str:
    """A path parameter, percent-encoded."""
    if not isinstance(value, str) or not value.strip():
        raise error(field, value, "must be a non-empty string")
    return quote(value, safe="")


def _price(value: object, field: str, tick_size: object = "0.01") -> Decimal:
    """A price in [tick, 1 - tick] on the tick grid, checked by the core."""
    try:
        limit_amounts(Side.BUY, value, 1, tick_size)
    except AmountError as exc:
        if exc.field == "price":
            raise AmountError(field, value, exc.reason) from None
        raise
    return from_units(_to_units(value, field))


def _usdc(value: object, field: str) -> Decimal:
    """A positive USDC / share amount with at most 6 decimals, exactly."""
    units = _to_units(value, field)
    if units == 0:
        raise AmountError(field, value, "must be positive")
    return from_units(units)


def _outcome(value: object) -> OutcomeName:
    if value == OUTCOME_A:
        return OUTCOME_A
    if value == OUTCOME_B:
        return OUTCOME_B
    raise OrderFieldError("outcome", value, f"must be {OUTCOME_A!r} or {OUTCOME_B!r}")


def _side_name(value: object) -> SideName:
    return SIDES[parse_side(value)]  # a Side is the int it names


def _order_type(value: object, allowed: tuple[OrderTypeName, ...] = ORDER_TYPES) -> OrderTypeName:
    text = value.value if isinstance(value, OrderType) else value
    for name in allowed:
        if text == name:
            return name
    raise OrderFieldError("order_type", value, f"must be one of {', '.join(allowed)}")


def _expiration(value: object, order_type: str, now: float) -> int:
    """Unix seconds of a GTD expiration (required, in the future); 0 otherwise."""
    if value is None or value == 0:
        if order_type == "GTD":
            raise OrderFieldError("expiration", value, "is required for a GTD order")
        return 0
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise OrderFieldError("expiration", value, "must be a timezone-aware datetime")
        seconds = int(value.timestamp())
    elif isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        seconds = int(value)
    else:
        raise OrderFieldError("expiration", value, "must be Unix seconds or an aware datetime")
    if order_type != "GTD":
        raise OrderFieldError("expiration", value, f"applies to GTD orders only, not {order_type}")
    if seconds <= now:
        raise OrderFieldError("expiration", value, "must be in the future")
    return seconds


def _client_order_id(value: object) -> str:
    if value is None:
        return uuid.uuid4().hex
    if not isinstance(value, str) or not value or not value.isascii() or not value.isprintable():
        raise OrderFieldError("client_order_id", value, "must be a non-empty ASCII string")
    if len(value) > CLIENT_ORDER_ID_MAX:
        raise OrderFieldError(
            "client_order_id", value, f"must be at most {CLIENT_ORDER_ID_MAX} characters"
        )
    return value


def _uint(value: object, field: str, high: int | None = None) -> int:
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OrderFieldError(field, value, "must be a non-negative integer")
    if high is not None and value > high:
        raise OrderFieldError(field, value, f"must lie in [0, {high}]")
    return value


def _market_ids(value: object) -> list[str]:
    """``prepare``'s markets: an iterable of ids, each once (a lone str is not one)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise OrderFieldError("market_ids", value, "must be an iterable of market ids")
    return list(dict.fromkeys(value))


def order_body(
    market_id: str,
    *,
    now: float,
    side: object,
    outcome: str | None,
    amount: object,
    shares: object,
    order_type: object,
    limit_price: object,
    token_option: str | None,
    expiration: object,
    take_profit_price: object,
    stop_loss_price: object,
) -> bytes:
    """The compact JSON body of ``POST /orders`` (validation per order type; ``now`` in Unix s)."""
    _segment(market_id, "market_id", OrderFieldError)
    side_name = _side_name(side)
    kind = _order_type(order_type)
    body: dict[str, Any] = {"market_id": market_id}
    if outcome is not None:
        body["outcome"] = _outcome(outcome)
    elif side_name == "BUY" and kind == "FOK":
        raise OrderFieldError("outcome", None, "is required for a BUY FOK order ('a' or 'b')")
    price = _limit_price(kind, limit_price, token_option)
    _add_sizes(body, side_name, amount, shares, price)
    body["order_type"] = kind
    if price is not None:
        body["limit_price"] = price
    if token_option is not None:
        body["token_option"] = token_option
    seconds = _expiration(expiration, kind, now)
    if seconds:
        body["expiration"] = seconds
    for field, value in (
        ("take_profit_price", take_profit_price),
        ("stop_loss_price", stop_loss_price),
    ):
        if value is not None:
            body[field] = _price(value, field)
    return _encoder.encode(body)


def _limit_price(kind: OrderTypeName, limit_price: object, token_option: object) -> Decimal | None:
    """The limit price, and a check of ``token_option``: both required unless the order is FOK."""
    price = None
    if kind != "FOK":
        if limit_price is None:
            raise AmountError("limit_price", None, f"is required for a {kind} order")
        price = _price(limit_price, "limit_price")
        if token_option not in ("yes", "no"):
            raise OrderFieldError(
                "token_option", token_option, f"must be 'yes' or 'no' for a {kind} order"
            )
    elif limit_price is not None:
        price = _price(limit_price, "limit_price")
    if token_option is not None and token_option not in ("yes", "no"):
        raise OrderFieldError("token_option", token_option, "must be 'yes' or 'no'")
    return price


def _add_sizes(
    body: dict[str, Any], side: SideName, amount: object, shares: object, price: Decimal | None
) -> None:
    """``amount`` (USDC; a BUY's size), ``side``, then ``shares`` (a SELL's size) into ``body``."""
    if side == "BUY":
        if amount is None:
            raise AmountError("amount", None, "is required for a BUY order (USDC)")
        usdc = _usdc(amount, "amount")
        if usdc > MAX_ORDER_USDC:
            raise AmountError(
                "amount", amount, f"exceeds the single-order maximum of {MAX_ORDER_USDC} USDC"
            )
        body["amount"] = usdc
    elif amount is not None:
        body["amount"] = _usdc(amount, "amount")
    body["side"] = side
    if side == "SELL":
        if shares is None:
            raise AmountError("shares", None, "is required for a SELL order")
        count = _usdc(shares, "shares")
        if price is not None and count * price > MAX_ORDER_USDC:
            raise AmountError(
                "shares",
                shares,
                f"at {price} exceeds the single-order maximum of {MAX_ORDER_USDC} USDC",
            )
        body["shares"] = count
    elif shares is not None:
        body["shares"] = _usdc(shares, "shares")


class RawOrderFields(NamedTuple):
    """A raw order's own fields, validated and typed: only these travel inward.

    Amounts are 6-decimal units, ``side`` the exchange's ``uint8`` (0 BUY, 1
    SELL), ``expiration`` Unix seconds (0: none); ``fee_rate_bps`` ``None``
    means "look it up".
    """

    market_id: str
    outcome: OutcomeName
    side: int
    maker_amount: int
    taker_amount: int
    order_type: OrderTypeName
    expiration: int
    client_order_id: str
    salt: int
    nonce: int
    fee_rate_bps: int | None


def raw_order_fields(
    market_id: object,
    outcome: object,
    side: object,
    maker_amount: object,
    taker_amount: object,
    *,
    order_type: object,
    expiration: object,
    client_order_id: object,
    salt: object,
    nonce: object,
    fee_rate_bps: object,
    now: float,
) -> RawOrderFields:
    """Check a raw order's fields once (``now`` in Unix s) into ``RawOrderFields``."""
    _segment(market_id, "market_id", OrderFieldError)
    assert isinstance(market_id, str)  # checked by _segment
    side_int = SIDES.index(_side_name(side))
    maker = _uint(maker_amount, "maker_amount")
    taker = _uint(taker_amount, "taker_amount")
    _check_raw_amounts(side_int, maker, taker)
    kind = _order_type(order_type)
    return RawOrderFields(
        market_id=market_id,
        outcome=_outcome(outcome),
        side=side_int,
        maker_amount=maker,
        taker_amount=taker,
        order_type=kind,
        expiration=_expiration(expiration, kind, now),
        client_order_id=_client_order_id(client_order_id),
        salt=new_salt() if salt is None else _uint(salt, "salt", SALT_MAX),
        nonce=_uint(nonce, "nonce"),
        fee_rate_bps=None
        if fee_rate_bps is None
        else _uint(fee_rate_bps, "fee_rate_bps", MAX_FEE_RATE_BPS),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RawOrderSpec:
    """A raw order as asked for (``place_raw_order`` / ``prepare_raw_order``): price and
    ``size`` shares, or ``amount`` (USDC BUY / shares SELL), and its own fields, not yet
    checked. Its one check is ``fields``; a new parameter of those methods is a field here.
    """

    market_id: object
    outcome: object
    side: object
    price: object
    size: object = None
    order_type: object = "GTC"
    expiration: object = None
    client_order_id: object = None
    amount: object = None
    salt: object = None
    nonce: object = 0
    tick_size: object = "0.01"
    round_price: bool = False

    def fields(self, now: float) -> RawOrderFields:
        """The order's checked fields (``now`` in Unix s), amounts in 6-decimal units."""
        _segment(self.market_id, "market_id", OrderFieldError)
        outcome = _outcome(self.outcome)
        side = _side_name(self.side)
        price, tick, rounded = self.price, self.tick_size, self.round_price
        if (self.size is None) == (self.amount is None):
            raise AmountError("size", self.size, "give exactly one of size (shares) or amount")
        if self.size is not None:
            amounts = limit_amounts(side, price, self.size, tick, round_price=rounded)
        else:
            amounts = market_amounts(side, price, self.amount, tick, round_price=rounded)
        return raw_order_fields(
            self.market_id,
            outcome,
            side,
            amounts.maker_amount,
            amounts.taker_amount,
            order_type=self.order_type,
            expiration=self.expiration,
            client_order_id=self.client_order_id,
            salt=self.salt,
            nonce=self.nonce,
            fee_rate_bps=None,
            now=now,
        )


class EventFilters(TypedDict, total=False):
    """The filters of ``GET /events``, the keyword arguments of ``list_events`` and
    ``iter_events`` of both clients. ``None`` leaves a filter out of the query;
    ``limit`` is the page size (at most 100), ``offset`` the first event's index."""

    league: str | None
    sport: str | None
    category: str | None
    subcategory: str | None
    live: bool | None
    ended: bool | None
    is_featured: bool | None
    is_future: bool | None
    sort_by: str | None
    limit: int
    offset: int


def event_params(filters: Mapping[str, object], limit: int) -> dict[str, Any]:
    """The query of ``GET /events``: every filter in declared order (``limit``
    defaulting to ``limit``, ``offset`` to 0); keys not declared pass through."""
    params: dict[str, Any] = dict.fromkeys(EventFilters.__annotations__)
    params["limit"] = limit
    params["offset"] = 0
    params.update(filters)
    return params
