"""Decoding answers: the JSON envelope, each endpoint's Shape, the conversion into models."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from types import UnionType
from typing import Any, Final, Generic, TypeVar, Union, get_args, get_origin

import msgspec

from ..models import (
    CancelResult,
    Event,
    EventPage,
    Market,
    MarketList,
    Order,
    Orderbook,
    OrderPage,
    PlacedOrder,
    PortfolioOrder,
    PortfolioOrderPage,
    Position,
    PositionPage,
    WalletInfo,
)

log = logging.getLogger("clobkit.client")
T = TypeVar("T")


class _Envelope(msgspec.Struct, Generic[T]):
    success: bool = True
    data: T | None = None
    error: str | None = None
    code: str | None = None
    message: str | None = None
    detail: Any = None


_TIMESTAMP_KEY = re.compile(r"(_at|_date|_time)\Z|\Atimestamp\Z")


_TIMESTAMP_KEYS: dict[str, bool] = {}  # key -> names a timestamp field (the answers use few keys)


def _is_timestamp_key(key: str) -> bool:
    known = _TIMESTAMP_KEYS.get(key)
    if known is None:
        known = bool(_TIMESTAMP_KEY.search(key))
        if len(_TIMESTAMP_KEYS) < 4096:  # bounded: a hostile server cannot grow it
            _TIMESTAMP_KEYS[key] = known
    return known


def _timestamp(item: Any) -> Any:
    """A timestamp field's value: epoch numbers (s or ms) as ISO text, ``""`` as None."""
    if item == "":
        return None
    if isinstance(item, str) and item.isascii() and item.isdigit() and len(item) <= 20:
        item = int(item)  # ("²" is a digit to isdigit, not to int; 20 digits pass any epoch)
    if isinstance(item, (int, float)) and not isinstance(item, bool):
        try:
            seconds = item / 1000 if item > 10**11 else item  # a huge int overflows here
            return datetime.fromtimestamp(seconds, UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            return None
    return item


def _normalise_timestamps(value: Any) -> Any:
    """Turn epoch numbers (s or ms) and empty strings in timestamp fields into ISO text / None.

    ``value`` itself is returned when nothing changes (the usual answer): it runs
    for every stream message and record, and most values are text or None.
    """
    if isinstance(value, list):
        items = [_normalise_timestamps(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] | None = None
    for key, item in value.items():
        kind = type(item)
        if item is None or (kind is str and item and not item.isdigit()):
            continue  # nothing to change, whatever the key
        if isinstance(item, (dict, list)):
            new = _normalise_timestamps(item)  # only containers hold fields further down
        elif isinstance(key, str) and _is_timestamp_key(key):
            new = _timestamp(item)
        else:
            continue
        if new is not item:
            if out is None:
                out = dict(value)
            out[key] = new
    return value if out is None else out


def tolerant_convert(raw: Any, model: Any) -> Any:
    """Convert decoded JSON to ``model`` loosely: epoch or empty timestamps are
    normalised, and an optional field whose value cannot be read is dropped
    (it then takes its default) instead of failing the whole response.

    What may be dropped follows from the model's declared field types, never
    from the text of msgspec's errors: a required field, or an item of a list,
    that cannot be read still fails the conversion."""
    raw = _normalise_timestamps(raw)
    try:
        return msgspec.convert(raw, model, strict=False)
    except msgspec.ValidationError:
        pass
    return msgspec.convert(_readable(raw, model), model, strict=False)


def _check(value: Any, typ: Any) -> None:
    """Raise ``msgspec.ValidationError`` unless ``value`` converts to ``typ``."""
    msgspec.convert(value, typ, strict=False)


def _readable(value: Any, typ: Any) -> Any:
    """``value`` with every unreadable optional field of the Structs in ``typ`` removed.

    Raises ``msgspec.ValidationError`` when what is left still cannot be read
    as ``typ`` in a part that is not optional (a required field, a list item).
    """
    if isinstance(typ, type) and issubclass(typ, msgspec.Struct):
        return _readable_struct(value, typ) if isinstance(value, dict) else value
    origin, args = get_origin(typ), get_args(typ)
    if origin is list and args and isinstance(value, list):
        items = [_readable(item, args[0]) for item in value]
        for item in items:
            _check(item, args[0])  # an item is never dropped: that would lose it silently
        return items
    if origin in (Union, UnionType):
        for option in args:
            if option is type(None):
                continue
            try:
                item = _readable(value, option)
                _check(item, option)
            except msgspec.ValidationError:
                continue
            return item
    return value


def _readable_struct(value: dict[str, Any], typ: type[msgspec.Struct]) -> dict[str, Any]:
    """``_readable`` of one Struct's fields: an unreadable optional one is dropped."""
    out = dict(value)
    for field in msgspec.structs.fields(typ):
        key = field.encode_name
        if key not in value:
            continue
        item = _readable(value[key], field.type)
        try:
            _check(item, field.type)
        except msgspec.ValidationError as exc:
            if field.required:
                raise
            log.debug("ignoring an unreadable response field %s.%s: %s", typ.__name__, key, exc)
            del out[key]
        else:
            out[key] = item
    return out


class Shape(Generic[T]):
    """How the ``data`` of one endpoint's envelope becomes a ``T``.

    ``key`` names the wrapper object (``data.event``); a page model with
    ``items`` also accepts ``data`` as a bare array of ``item`` (guide shape).
    """

    def __init__(
        self,
        model: type[T],
        *,
        key: str | None = None,
        items: str | None = None,
        item: Any = None,
    ) -> None:
        self.model = model
        self.key = key
        self.items = items
        data_type: Any = model
        if key is not None:
            data_type = msgspec.defstruct(f"_{model.__name__}Wrap_{key}", [(key, model)])
        elif items is not None:
            data_type = Union[model, list[item]]  # noqa: UP007 - a runtime type expression
        self.decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(
            _Envelope[data_type],
            strict=False,
        )

    def from_data(self, data: Any) -> T:
        """The model from the typed-decoded ``data``."""
        if self.key is not None:
            return getattr(data, self.key)  # type: ignore[no-any-return]
        if self.items is not None and isinstance(data, list):
            return self.model(**{self.items: data})
        return data  # type: ignore[no-any-return]

    def from_raw(self, data: Any) -> T:
        """The model from untyped ``data``, leniently (slow path)."""
        if self.key is not None and isinstance(data, dict) and isinstance(data.get(self.key), dict):
            data = data[self.key]
        if self.items is not None and isinstance(data, list):
            data = {self.items: data}
        return tolerant_convert(data, self.model)  # type: ignore[no-any-return]


# One typed Shape per endpoint answer: ``ClientCore`` passes these objects, so an
# operation's result type (``Operation[EventPage]``...) follows from its shape.
EVENTS: Final[Shape[EventPage]] = Shape(EventPage, items="events", item=Event)
EVENT: Final[Shape[Event]] = Shape(Event, key="event")
MARKETS: Final[Shape[MarketList]] = Shape(MarketList, items="markets", item=Market)
MARKET: Final[Shape[Market]] = Shape(Market, key="market")
ORDERBOOK: Final[Shape[Orderbook]] = Shape(Orderbook)
PLACED: Final[Shape[PlacedOrder]] = Shape(PlacedOrder)
CANCEL: Final[Shape[CancelResult]] = Shape(CancelResult)
ORDERS: Final[Shape[OrderPage]] = Shape(OrderPage, items="orders", item=Order)
ORDER: Final[Shape[Order]] = Shape(Order, key="order")
WALLET: Final[Shape[WalletInfo]] = Shape(WalletInfo)
POSITIONS: Final[Shape[PositionPage]] = Shape(PositionPage, items="positions", item=Position)
PORTFOLIO_ORDERS: Final[Shape[PortfolioOrderPage]] = Shape(
    PortfolioOrderPage, items="orders", item=PortfolioOrder
)
#: Every shape, for tests that walk them all.
ALL_SHAPES: Final[tuple[Shape[Any], ...]] = (
    EVENTS,
    EVENT,
    MARKETS,
    MARKET,
    ORDERBOOK,
    PLACED,
    CANCEL,
    ORDERS,
    ORDER,
    WALLET,
    POSITIONS,
    PORTFOLIO_ORDERS,
)
