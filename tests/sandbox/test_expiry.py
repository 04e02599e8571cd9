"""GTD expiry on the sandbox's clock: exact to the millisecond of ``expiration`` (Unix
s), published on the stream when it falls due; ``min_expiration_seconds`` refuses an
expiry too soon with 400 ``ORDER_INVALID_EXPIRATION`` naming the minimum, which the
client reads as ``ExpirationRefused`` (an ``ApiError`` and a ``ValidationError``)."""

from __future__ import annotations

import asyncio
import math
import time
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient, Client, errors
from clobkit.client import orders_topic
from clobkit.core.spec import (
    CANCELLED,
    CODE_INVALID_EXPIRATION,
    expiration_minimum,
    expiration_refusal,
)
from clobkit.models import StreamMessage
from clobkit.sandbox import Engine, OrderRecord, Rejected, SandboxConfig
from clobkit.sandbox.config import ConfigError

from .conftest import TRADER, Clock, book_market, make_engine

D = Decimal


def gtd(engine: Engine, expiration: object, **extra: Any) -> OrderRecord:
    m = book_market(engine)
    body = {
        "market_id": m.id,
        "order_type": "GTD",
        "token_option": "yes",
        "limit_price": "0.05",
        "amount": 5,
        "expiration": expiration,
        **extra,
    }
    return engine.order(engine.place_order(TRADER, body).order_id)


def raw_gtd(engine: Engine, expiration: int) -> OrderRecord:
    """A raw GTD BUY of 100 shares at 0.05 (the body the client sends)."""
    m = book_market(engine)
    body = {
        "market_id": m.id,
        "outcome": "a",
        "token_id": m.fx.token_id_a,
        "maker_amount": "5000000",
        "taker_amount": "100000000",
        "side": 0,
        "fee_rate_bps": m.fx.fee_rate_bps,
        "order_type": "GTD",
        "expiration": str(expiration),
    }
    return engine.order(engine.place_raw_order(TRADER, body).order_id)


@pytest.mark.parametrize("place", [gtd, raw_gtd], ids=["order", "raw"])
def test_expiry_is_exact_on_the_sandbox_clock(place: Any) -> None:
    """Live one millisecond before ``expiration``, cancelled at it, whatever ticks it
    (the ticker, or the request that reads it)."""
    clock = Clock(1_800_000_000.4)
    engine = make_engine(clock=clock)
    expiration = 1_800_000_010
    order = place(engine, expiration)
    assert order.status == "live"
    clock.t = expiration - 0.001
    engine.tick()
    assert engine.order(order.id).status == "live"
    assert engine.next_due() == pytest.approx(0.001)
    clock.t = float(expiration)
    assert engine.list_orders(TRADER, status="live").items == []  # a read ticks first
    assert engine.order(order.id).status == "cancelled"
    assert engine.next_due() is None
    assert engine.check_invariants() == []


def test_a_minimum_expiry_refuses_what_is_too_soon_and_names_it() -> None:
    clock = Clock(1_800_000_000.25)
    engine = make_engine(SandboxConfig(min_expiration_seconds=60), clock)
    for place in (gtd, raw_gtd):
        for soon in (1_800_000_000, 1_800_000_001, 1_800_000_060):  # 60.25 s is the least
            with pytest.raises(Rejected) as caught:
                place(engine, soon)
            refusal = caught.value
            assert (refusal.status, refusal.code) == (400, CODE_INVALID_EXPIRATION)
            assert refusal.detail is not None
            assert "at least 60 s ahead" in refusal.detail
            assert expiration_minimum(refusal.detail) == 60
        assert place(engine, 1_800_000_061).status == "live"
    assert engine.check_invariants() == []


def test_without_a_minimum_a_gtd_expiry_must_lie_in_the_future() -> None:
    clock = Clock(1_800_000_000.25)
    engine = make_engine(clock=clock)
    for past in (1_799_999_000, 1_800_000_000):
        with pytest.raises(Rejected) as caught:
            raw_gtd(engine, past)
        assert caught.value.code == CODE_INVALID_EXPIRATION
        assert caught.value.detail is not None
        assert "in the future" in caught.value.detail
        assert expiration_minimum(caught.value.detail) == 0
    assert raw_gtd(engine, 1_800_000_001).status == "live"


def test_the_refusal_text_is_read_back_exactly() -> None:
    for minimum in (0, 1, 59, 60, 86_399):
        text = expiration_refusal(1_800_000_000, 1_799_999_990_123, minimum)
        assert expiration_minimum(text) == minimum
    assert expiration_minimum("expiration must be at least soon s ahead") == 0
    assert expiration_minimum("at least 99999999999 s ahead") == 0  # past any config


@pytest.mark.parametrize("bad", [-1, 1.5, "60", True, None, 86_400])
def test_bad_minimums_are_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="min_expiration_seconds"):
        SandboxConfig.from_dict({"min_expiration_seconds": bad})


def test_the_client_reads_the_refusal_as_a_validation_error_naming_the_minimum(
    fresh: Any,
) -> None:
    sb = fresh({"min_expiration_seconds": 60})
    user = sb.user(TRADER)
    market = book_market(sb.engine)
    with Client(sb.base_url, user.api_key, user.api_secret, clob_url=sb.clob_url) as client:
        soon = math.ceil(time.time()) + 10
        with pytest.raises(errors.ExpirationRefused) as caught:
            client.place_raw_order(market.id, "a", "BUY", "0.05", 100, "GTD", soon)
        refusal = caught.value
        assert isinstance(refusal, errors.ValidationError)
        assert isinstance(refusal, errors.InvalidRequest)
        assert refusal.field == "expiration"
        assert refusal.minimum == 60
        assert (refusal.status, refusal.code) == (400, CODE_INVALID_EXPIRATION)
        assert "at least 60 s ahead" in str(refusal)
        assert refusal.order is None  # refused for good: no copy can land
        later = math.ceil(time.time()) + 90
        placed = client.place_raw_order(market.id, "a", "BUY", "0.05", 100, "GTD", later)
        assert client.get_order(placed.order_id).status == "live"


@pytest.mark.slow
async def test_an_expiry_is_published_on_the_stream_when_it_falls_due(fresh: Any) -> None:
    """The ticker wakes for the next expiry: its record comes on the user's order topic
    without any request to tick the engine."""
    sb = fresh()
    user = sb.user(TRADER)
    market = book_market(sb.engine)
    options = {"clob_url": sb.clob_url, "ws_url": sb.ws_url}
    async with AsyncClient(sb.base_url, user.api_key, user.api_secret, **options) as client:
        async with client.stream([orders_topic(TRADER)]) as stream:
            expiration = math.ceil(time.time()) + 2  # ahead even on a busy machine
            placed = await client.place_raw_order(
                market.id, "a", "BUY", "0.05", 100, "GTD", expiration
            )
            async for item in stream:
                order = item.order if isinstance(item, StreamMessage) else None
                if order is not None and order.id == placed.order_id and order.status == CANCELLED:
                    break
            assert time.time() >= expiration
        record = await asyncio.wait_for(client.get_order(placed.order_id), 10)
        assert record.status == "cancelled"
