"""Statuses, sides and order types the API text does not name arrive intact.

The exchange may add a status (or an order type) at any time; the client
keeps the service's string as sent instead of reading it as ``None``. Known
values decode to themselves on every model that has such a field; unknown
ones arrive intact through the typed fast path, the tolerant slow path, the
WebSocket stream, and both clients against the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from clobkit.client import _decode
from clobkit.client._stream import parse_message
from clobkit.core.spec import ORDER_STATUSES, ORDER_TYPES, SIDES
from clobkit.models import CancelResult, Order, PortfolioOrder

from .conftest import full_scope_users
from .helpers import market_with_book

# every model field that holds one of these names, with the values the API names
FIELDS: list[tuple[type[Any], str, tuple[str, ...]]] = [
    (Order, "status", ORDER_STATUSES),
    (Order, "side", SIDES),
    (Order, "order_type", ORDER_TYPES),
    (CancelResult, "status", ORDER_STATUSES),
    (PortfolioOrder, "status", ORDER_STATUSES),
    (PortfolioOrder, "side", SIDES),
]
# values the exchange might add tomorrow, and odd but valid strings
UNKNOWN = ["paused", "FAK", "partially_filled", "LIVE", "", "ü-status"]


def _envelope(model: type[Any], field: str, value: str) -> tuple[_decode.Shape[Any], bytes]:
    """One endpoint's answer carrying ``value`` in ``field`` of ``model``."""
    if model is Order:
        return _decode.ORDER, _json({"order": {"id": "o-1", field: value}})
    if model is CancelResult:
        return _decode.CANCEL, _json({"order_id": "o-1", field: value})
    return _decode.PORTFOLIO_ORDERS, _json({"orders": [{"id": "o-1", field: value}]})


def _json(data: Any) -> bytes:
    return json.dumps({"success": True, "data": data}).encode()


def _the_record(shape: _decode.Shape[Any], result: Any) -> Any:
    return result.orders[0] if shape is _decode.PORTFOLIO_ORDERS else result


def _fast(shape: _decode.Shape[Any], raw: bytes) -> Any:
    return _the_record(shape, shape.from_data(shape.decoder.decode(raw).data))


def _slow(shape: _decode.Shape[Any], raw: bytes) -> Any:
    return _the_record(shape, shape.from_raw(json.loads(raw)["data"]))


def _cases(values: Callable[[tuple[str, ...]], list[str]]) -> list[Any]:
    return [
        pytest.param(model, field, value, id=f"{model.__name__}.{field}={value!r}")
        for model, field, known in FIELDS
        for value in values(known)
    ]


@pytest.mark.parametrize(("model", "field", "value"), _cases(list))
def test_each_known_value_decodes_to_itself(model: type[Any], field: str, value: str) -> None:
    shape, raw = _envelope(model, field, value)
    for read in (_fast, _slow):
        record = read(shape, raw)
        assert isinstance(record, model)
        assert getattr(record, field) == value


@pytest.mark.parametrize(("model", "field", "value"), _cases(lambda _: UNKNOWN))
def test_an_unknown_value_arrives_intact(model: type[Any], field: str, value: str) -> None:
    shape, raw = _envelope(model, field, value)
    for read in (_fast, _slow):
        record = read(shape, raw)
        assert getattr(record, field) == value
        assert type(getattr(record, field)) is str


def test_an_unknown_value_survives_a_slow_path_that_drops_another_field() -> None:
    # an unreadable optional field sends the answer down the tolerant path; the
    # unknown status must not be what it drops
    raw = _json({"order": {"id": "o-1", "status": "paused", "amount": {"not": "a number"}}})
    order = _decode.ORDER.from_raw(json.loads(raw)["data"])
    assert order.status == "paused"
    assert order.amount is None
    with pytest.raises(msgspec.ValidationError):
        _decode.ORDER.decoder.decode(raw)  # (it really took the slow path)


def test_a_non_string_status_is_still_dropped_not_invented() -> None:
    raw = _json({"order": {"id": "o-1", "status": 7, "side": ["BUY"]}})
    order = _slow(_decode.ORDER, raw)
    assert (order.status, order.side) == (None, None)


def test_an_unknown_value_on_the_stream_arrives_intact() -> None:
    frame = json.dumps(
        {
            "type": "data",
            "topic": "user:u-1:orders",
            "data": {"id": "o-1", "status": "paused", "side": "SELL", "order_type": "FAK"},
        }
    )
    message = parse_message(frame)
    assert message.order is not None
    assert (message.order.status, message.order.side, message.order.order_type) == (
        "paused",
        "SELL",
        "FAK",
    )
    assert not message.order.is_open  # an unknown status is not taken for an open one


def test_both_clients_read_an_unknown_status_from_the_sandbox(
    serve: Callable[..., Any], make_api: Callable[..., Any], flavour: str
) -> None:
    # The sandbox sends an order's status and order type as it stores them; the
    # test stores values the API text does not name, as a newer exchange would.
    with serve() as sb:
        api = make_api(sb, full_scope_users(sb)[0], flavour)
        market = market_with_book(api, "nba")
        placed = api.place_order(market.id, outcome="a", amount="5")
        api.wait_for_order(placed.order_id, timeout=10, poll_interval=0.05)
        with sb.engine._lock:
            record = sb.engine.orders[placed.order_id]
            record.status, record.order_type = "settling", "FAK"
        order = api.get_order(placed.order_id)
        assert (order.status, order.order_type, order.side) == ("settling", "FAK", "BUY")
        listed = {o.id: o for o in api.iter_orders()}
        assert listed[placed.order_id].status == "settling"
        history = {o.id: o for o in api.iter_portfolio_orders(per_page=100)}
        assert history[placed.order_id].status == "settling"
