"""The raw-order seam a loop of one's own is built on (issue #23): prepare an order
and know its ids with no request, send it later; the market info and exchange
version it is signed with. On V1 (id precomputed) and V2 (id read from the
service) wallets, in both client flavours, against the sandbox on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clobkit import OrderHasher
from clobkit.client import MarketInfo, PreparedRawOrder

from .conftest import full_scope_users
from .helpers import market_with_book, resting_buy_price


@pytest.fixture(scope="module", params=[1, 2])
def versioned(request: pytest.FixtureRequest, serve: Callable[..., Any]) -> Iterator[Any]:
    with serve(config={"exchange_version": request.param}) as sb:
        yield sb


def test_prepare_then_post(versioned: Any, make_api: Any, flavour: str) -> None:
    api = make_api(versioned, full_scope_users(versioned)[0], flavour)
    received = versioned.requests.count  # what the service received (sandbox.counting)
    version = versioned.engine.config.exchange_version
    market = market_with_book(api, "nba")
    price = resting_buy_price(api.get_orderbook(market.token_id_a))
    api.prepare([market.id])
    before = received()
    assert api.exchange_version() == version
    info = api.market_info(market.id)
    assert isinstance(info, MarketInfo)
    assert (info.token_id_a, info.token_id_b) == (market.token_id_a, market.token_id_b)
    assert info.neg_risk == bool(market.neg_risk)
    prepared = api.prepare_raw_order(market.id, "a", "BUY", price, 40)
    amounts = api.prepare_raw_order_amounts(market.id, "a", 0, 4_000_000, 40_000_000)
    assert received() == before  # all of the above from the warm caches
    assert isinstance(prepared, PreparedRawOrder)
    result = prepared.result
    assert result.order_id == ""
    assert result.token_id == market.token_id_a
    assert (amounts.result.maker_amount, amounts.result.taker_amount) == (4_000_000, 40_000_000)
    if version == 1:  # precomputed: the id the service will store, known before sending
        expected = OrderHasher(api.get_wallet()).order_id(
            token_id=result.token_id,
            maker_amount=result.maker_amount,
            taker_amount=result.taker_amount,
            side=result.side,
            salt=result.salt,
            fee_rate_bps=result.fee_rate_bps,
            nonce=result.nonce,
            expiration=result.expiration,
            neg_risk=result.neg_risk,
        )
        assert result.clob_order_id == expected
    else:  # signs the service's timestamp: never guessed
        assert result.clob_order_id == ""
    placed = api.post_raw_order(prepared)
    assert received() == before + 1  # the POST alone
    stored = api.get_order(placed.order_id)
    assert stored.order_source_id == result.client_order_id
    if version == 1:
        assert stored.clob_order_id == result.clob_order_id
    again = api.post_raw_order(prepared)  # the same body under its key: the same order
    assert again.order_id == placed.order_id
    sent = api.send_raw_order(amounts)  # V2: the stored id read back
    assert sent.clob_order_id == api.get_order(sent.order_id).clob_order_id
    assert sent.clob_order_id.startswith("0x")
    for order_id in (placed.order_id, sent.order_id):
        api.cancel_order(order_id)


def test_the_user_id_comes_from_an_order_then_is_kept(
    serve: Callable[..., Any], make_api: Any, flavour: str
) -> None:
    """``user_id()``: the one place the caller's user id is found (a ``Quoter`` or
    ``Desk`` subscribes ``orders_topic`` of it), one request, then cached."""
    with serve() as sb:
        api = make_api(sb, full_scope_users(sb)[0], flavour)
        market = market_with_book(api, "nba")
        price = resting_buy_price(api.get_orderbook(market.token_id_a))
        placed = api.place_raw_order(market.id, "a", "BUY", price, 10)
        owner = api.get_order(placed.order_id).user_id
        assert owner
        assert api.user_id() == owner
        before = sb.requests.count()
        assert api.user_id() == owner
        assert sb.requests.count() == before
