"""The raw-order flow on a wallet whose exchanges are V2 or V3 contracts.

The API text's raw order carries no timestamp, and V2/V3 order ids sign one,
so the client must never return an id it computed there: it reads the id the
service stored. Checked against sandboxes whose wallets report V2 and V3
addresses (config ``exchange_version``), in both client flavours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clobkit import OrderHasher
from clobkit.core.wallet import EXCHANGES_OF_VERSION

from .conftest import full_scope_users
from .helpers import market_with_book, resting_buy_price


@pytest.fixture(scope="module", params=[2, 3])
def versioned(request: pytest.FixtureRequest, serve: Callable[..., Any]) -> Iterator[Any]:
    with serve(config={"exchange_version": request.param}) as sb:
        yield sb


def test_wallet_reports_the_versions_contracts(versioned: Any, make_api: Any) -> None:
    api = make_api(versioned, full_scope_users(versioned)[0], "sync")
    wallet = api.get_wallet()
    version = versioned.engine.config.exchange_version
    assert (wallet.ctf_exchange, wallet.neg_risk_exchange) == EXCHANGES_OF_VERSION[version]
    assert OrderHasher(wallet).version == version


@pytest.mark.parametrize("league", ["nba", "epl"])  # CTF and NegRisk markets
def test_raw_order_reads_the_stored_id_back(
    versioned: Any, make_api: Any, flavour: str, league: str
) -> None:
    api = make_api(versioned, full_scope_users(versioned)[0], flavour)
    market = market_with_book(api, league)
    price = resting_buy_price(api.get_orderbook(market.token_id_a))
    result = api.place_raw_order(market.id, "a", "BUY", price, 40, order_type="GTC")
    assert result.clob_order_id_precomputed is False
    stored = api.get_order(result.order_id)
    assert result.clob_order_id == stored.clob_order_id
    assert result.clob_order_id.startswith("0x")
    assert len(result.clob_order_id) == 66
    # The V1 id of the same fields (what the client would have guessed) is not it.
    v1 = OrderHasher(api.get_wallet(), version=1).order_id(
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
    assert v1 != result.clob_order_id
    api.cancel_order(result.order_id)


def test_service_id_is_the_v2_digest_of_its_timestamp(versioned: Any, make_api: Any) -> None:
    """The sandbox's stored id is the V2/V3 digest of the order and its admission time."""
    api = make_api(versioned, full_scope_users(versioned)[0], "sync")
    market = market_with_book(api, "nba")
    price = resting_buy_price(api.get_orderbook(market.token_id_a))
    result = api.place_raw_order(market.id, "a", "BUY", price, 40, order_type="GTC")
    order = versioned.engine.orders[result.order_id]
    hasher = OrderHasher(api.get_wallet())
    expected = hasher.order_id(
        token_id=result.token_id,
        maker_amount=result.maker_amount,
        taker_amount=result.taker_amount,
        side=result.side,
        salt=result.salt,
        timestamp=order.created_ms,
        neg_risk=result.neg_risk,
    )
    assert result.clob_order_id == expected
    api.cancel_order(result.order_id)


def test_v1_wallet_still_precomputes(sandbox: Any, make_api: Any) -> None:
    api = make_api(sandbox, full_scope_users(sandbox)[0], "sync")
    market = market_with_book(api, "nba")
    price = resting_buy_price(api.get_orderbook(market.token_id_a))
    result = api.place_raw_order(market.id, "a", "BUY", price, 40, order_type="GTC")
    assert result.clob_order_id_precomputed is True
    assert api.get_order(result.order_id).clob_order_id == result.clob_order_id
    api.cancel_order(result.order_id)


def test_config_refuses_unknown_exchange_version(serve: Callable[..., Any]) -> None:
    from clobkit.sandbox.config import ConfigError

    for bad in (0, 4, "2", True, 2.0):
        with (
            pytest.raises(ConfigError, match="exchange_version"),
            serve(config={"exchange_version": bad}),
        ):
            pass
