"""Every endpoint and every error class, over real HTTP on loopback, sync and async.

``api`` is a full-scope client of the shared default sandbox, once as
``Client`` and once as ``AsyncClient`` (see conftest). Amounts stay small: the
shared user starts with 10,000 USDC.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from clobkit import OrderHasher, errors, new_salt
from clobkit.models import Event, Order, WalletInfo

from .conftest import client_options, closed_port, full_scope_users
from .helpers import market_with_book, resting_buy_price, upcoming_events

FULL = ["markets:read", "orders:read", "orders:write", "portfolio:read"]


# ---------------------------------------------------------------------------
# Events and markets


def test_list_and_iter_events(api: Any) -> None:
    page = api.list_events(limit=5)
    assert len(page.events) == 5
    assert page.total_count is not None
    assert page.total_count > 5
    assert page.page_size == 5
    everything = list(api.iter_events(limit=7))
    assert len(everything) == page.total_count
    assert len({e.id for e in everything}) == len(everything)
    second = api.list_events(limit=5, offset=5)
    assert [e.id for e in second.events] == [e.id for e in everything[5:10]]
    for event in everything:
        assert isinstance(event, Event)
        assert event.created_at is None or event.created_at.tzinfo is not None
    nba = list(api.iter_events(league="nba"))
    assert nba
    assert {e.league_id for e in nba} == {"nba"}
    live = api.list_events(live=True, limit=100).events
    assert live
    assert all(e.live for e in live)
    futures = api.list_events(is_future=True, limit=100).events
    assert futures
    assert all(e.is_future for e in futures)
    listed = next(e for e in everything if e.enriched_markets is not None)
    assert listed.enriched_markets is not None
    home = listed.enriched_markets.home_win
    assert home is not None
    assert home.price is not None
    assert Decimal("0.01") <= home.price <= Decimal("0.99")


def test_event_detail_by_id_and_slug_and_its_markets(api: Any) -> None:
    event = upcoming_events(api, "epl")[0]
    detail = api.get_event(event.id)
    assert detail.id == event.id
    assert detail.start_time is not None
    assert detail.start_time.tzinfo is not None
    assert detail.markets
    assert event.slug is not None
    assert api.get_event(event.slug).id == event.id
    markets = api.get_event_markets(event.id)
    assert {m.id for m in markets} == {m.id for m in detail.markets}
    for market in markets:
        assert market.token_id_a
        assert market.token_id_b
        assert market.odds_a is not None


def test_event_not_found(api: Any) -> None:
    with pytest.raises(errors.NotFound) as info:
        api.get_event("no-such-event")
    assert info.value.status == 404
    assert info.value.message == "Event not found"
    with pytest.raises(errors.NotFound):
        api.get_event_markets(str(uuid.uuid4()))


def test_market_detail_search_and_not_found(api: Any) -> None:
    market = market_with_book(api, "nba")
    assert market.event_id
    assert market.neg_risk is False
    assert market.condition_id
    assert market.price_a is not None
    assert market.created_at is not None
    assert market.created_at.tzinfo is not None
    word = (market.outcome_a or "").split()[-1]
    found = api.search_markets(word, limit=50)
    assert market.id in {m.id for m in found}
    assert all(word.lower() in (m.question or "").lower() for m in found)
    assert len(api.search_markets(word, limit=1)) == 1
    with pytest.raises(errors.NotFound) as info:
        api.get_market(str(uuid.uuid4()))
    assert info.value.message == "Market not found"


def test_orderbook_and_order_book_not_found(api: Any) -> None:
    market = market_with_book(api, "nba")
    book = api.get_orderbook(market.token_id_a)
    assert book.asset_id == market.token_id_a
    bids = [level.price for level in book.bids]
    asks = [level.price for level in book.asks]
    assert bids == sorted(bids, reverse=True)
    assert asks == sorted(asks)
    assert bids[0] < asks[0]
    assert all(level.size > 0 for level in book.bids + book.asks)
    assert book.min_order_size is not None
    assert book.timestamp is not None
    assert book.timestamp.tzinfo is not None
    with pytest.raises(errors.OrderBookNotFound) as info:
        api.get_orderbook("123456789")
    assert info.value.status == 200
    assert info.value.message == "Order book not found"


# ---------------------------------------------------------------------------
# Wallet, fee rate, caches


def test_wallet_and_fee_rates(api: Any) -> None:
    wallet = api.get_wallet()
    assert isinstance(wallet, WalletInfo)
    assert wallet.maker.startswith("0x")
    assert len(wallet.maker) == 42
    assert wallet.chain_id == 137
    assert wallet.signature_type == 2
    OrderHasher(wallet)  # the addresses are valid, checksums included
    nba = market_with_book(api, "nba")
    lol = market_with_book(api, "lol")
    assert api.get_fee_rate(nba.token_id_a) == 0
    assert api.get_fee_rate(lol.token_id_b) == 200


# ---------------------------------------------------------------------------
# Orders


def test_market_order_then_sell_positions_and_history(api: Any) -> None:
    market = market_with_book(api, "nba")
    placed = api.place_order(market.id, outcome="a", amount="5")
    assert placed.order_id
    order = api.wait_for_order(placed.order_id, timeout=10, poll_interval=0.05)
    assert order.status == "matched"
    assert (order.market_id, order.side, order.order_type) == (market.id, "BUY", "FOK")
    assert order.amount == Decimal(5)
    assert order.size_matched is not None
    assert order.size_matched > 0
    assert order.clob_order_id is not None
    assert order.clob_order_id.startswith("0x")
    assert order.created_at is not None
    assert order.created_at.tzinfo is not None

    positions = list(api.iter_positions(per_page=2))
    held = [p for p in positions if p.market_id == market.id and p.raw_outcome == "a"]
    assert held
    assert held[0].shares is not None
    assert held[0].shares >= order.size_matched
    page = api.list_positions(page=1, per_page=100)
    assert page.pagination.total_count == len(positions)

    sell = api.place_order(market.id, side="SELL", outcome="a", shares="5")
    sold = api.wait_for_order(sell.order_id, timeout=10, poll_interval=0.05)
    assert sold.status == "matched"
    assert sold.side == "SELL"

    history = list(api.iter_portfolio_orders(per_page=3))
    ids = {o.id for o in history}
    assert {placed.order_id, sell.order_id} <= ids
    buys = api.list_portfolio_orders(side="BUY", per_page=100).orders
    assert placed.order_id in {o.id for o in buys}
    assert all(o.side == "BUY" for o in buys)
    assert api.list_portfolio_orders(page=1, per_page=1).pagination.per_page == 1

    with pytest.raises(errors.InvalidRequest):  # FOK orders cannot be cancelled
        api.cancel_order(placed.order_id)


def test_limit_orders_rest_list_and_cancel(api: Any) -> None:
    market = market_with_book(api, "nba")
    price = resting_buy_price(api.get_orderbook(market.token_id_a))
    gtc = api.place_order(
        market.id, amount="2", order_type="GTC", limit_price=price, token_option="yes"
    )
    gtd = api.place_order(
        market.id,
        amount="2",
        order_type="GTD",
        limit_price=price,
        token_option="yes",
        expiration=int(time.time()) + 3600,
    )
    for placed in (gtc, gtd):
        live = api.wait_for_order(placed.order_id, "live", timeout=10, poll_interval=0.05)
        assert live.status == "live"
    assert gtc.order_id in {o.id for o in api.list_orders(status="live", page_size=100).orders}
    assert gtd.order_id in {o.id for o in api.iter_orders("live", page_size=2)}
    assert {gtc.order_id, gtd.order_id} <= {o.id for o in api.open_orders()}
    page = api.list_orders(page=1, page_size=1)
    assert len(page.orders) == 1
    assert page.total_count is not None
    assert page.total_count >= 2
    for placed in (gtc, gtd):
        result = api.cancel_order(placed.order_id)
        assert result.order_id == placed.order_id
        assert result.status == "cancelled"
        assert api.get_order(placed.order_id).status == "cancelled"
    with pytest.raises(errors.InvalidRequest):  # only live orders can be cancelled
        api.cancel_order(gtc.order_id)
    assert gtc.order_id not in {o.id for o in api.open_orders()}


def test_order_not_found(api: Any) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(errors.NotFound) as info:
        api.get_order(missing)
    assert info.value.code == "ORDER_NOT_FOUND"
    assert info.value.message == "order not found"
    with pytest.raises(errors.NotFound) as cancel:
        api.cancel_order(missing)
    assert cancel.value.status == 404


# ---------------------------------------------------------------------------
# The raw-order flow


@pytest.mark.parametrize("league", ["nba", "epl", "lol"])  # CTF, NegRisk, non-zero fee
def test_raw_order_precomputed_id_equals_stored_id(api: Any, league: str) -> None:
    market = market_with_book(api, league)
    assert market.neg_risk is (league == "epl")
    price = resting_buy_price(api.get_orderbook(market.token_id_a))
    api.prepare([market.id])
    result = api.place_raw_order(market.id, "a", "BUY", price, 40, order_type="GTC")
    assert result.neg_risk is (league == "epl")
    assert result.fee_rate_bps == (200 if league == "lol" else 0)
    stored = api.get_order(result.order_id)
    assert stored.clob_order_id == result.clob_order_id
    assert stored.market_id == market.id
    assert api.wait_for_order(result.order_id, "live", timeout=10).status == "live"
    api.cancel_order(result.order_id)


def test_raw_order_fixed_salt_fok_and_explicit_amounts(api: Any) -> None:
    market = market_with_book(api, "nba")
    book_b = api.get_orderbook(market.token_id_b)
    assert book_b.best_ask is not None
    salt = new_salt()  # a caller-chosen salt (a fixed one would repeat across runs)
    fok = api.place_raw_order(
        market.id, "b", "BUY", book_b.best_ask, amount=3, order_type="FOK", salt=salt
    )
    assert fok.salt == salt
    filled = api.wait_for_order(fok.order_id, timeout=10, poll_interval=0.05)
    assert filled.status == "matched"
    assert filled.clob_order_id == fok.clob_order_id
    explicit = api.place_raw_order_amounts(
        market.id, "b", "BUY", 1_000_000, 50_000_000, client_order_id=f"explicit-{uuid.uuid4()}"
    )  # 1 USDC for 50 shares: 0.02, rests
    assert explicit.maker_amount == 1_000_000
    stored = api.get_order(explicit.order_id)
    assert stored.clob_order_id == explicit.clob_order_id
    api.cancel_order(explicit.order_id)


def test_raw_order_client_order_id_is_idempotent(api: Any) -> None:
    market = market_with_book(api, "nba")
    price = resting_buy_price(api.get_orderbook(market.token_id_a))
    key = f"idem-{uuid.uuid4()}"
    first = api.place_raw_order(market.id, "a", "BUY", price, 40, client_order_id=key)
    again = api.place_raw_order(market.id, "a", "BUY", price, 40, client_order_id=key)
    assert again.order_id == first.order_id
    api.cancel_order(first.order_id)


def test_raw_order_fee_mismatch_is_an_invalid_request(api: Any) -> None:
    market = market_with_book(api, "nba")
    with pytest.raises(errors.InvalidRequest) as info:
        api.place_raw_order_amounts(market.id, "a", "BUY", 1_000_000, 40_000_000, fee_rate_bps=7)
    assert info.value.status == 400


def test_validation_fails_before_sending(api: Any) -> None:
    market_id = str(uuid.uuid4())  # would be a 404 if anything were sent
    with pytest.raises(errors.AmountError):
        api.place_order(market_id, outcome="a", amount=60_000)
    with pytest.raises(errors.OrderFieldError):
        api.place_order(market_id, amount=5, order_type="GTC", limit_price="0.5")
    with pytest.raises(errors.OrderFieldError):
        api.place_raw_order(market_id, "a", "BUY", "0.5", 10, client_order_id="x" * 65)
    with pytest.raises(errors.AmountError):
        api.place_raw_order(market_id, "a", "BUY", "0.501", 10)


# ---------------------------------------------------------------------------
# Error classes that need their own sandbox configuration

ERR_USERS = [
    {
        "user_id": "10000000-0000-4000-8000-000000000001",
        "api_key": "err-full",
        "api_secret": "err-full-secret",
        "scopes": FULL,
        "balance": "10000",
        "ip_whitelist": None,
    },
    {
        "user_id": "10000000-0000-4000-8000-000000000002",
        "api_key": "err-poor",
        "api_secret": "err-poor-secret",
        "scopes": FULL,
        "balance": "1",
        "ip_whitelist": None,
    },
    {
        "user_id": "10000000-0000-4000-8000-000000000003",
        "api_key": "err-reader",
        "api_secret": "err-reader-secret",
        "scopes": ["markets:read"],
        "balance": "0",
        "ip_whitelist": None,
    },
    {
        "user_id": "10000000-0000-4000-8000-000000000004",
        "api_key": "err-walled",
        "api_secret": "err-walled-secret",
        "scopes": FULL,
        "balance": "100",
        "ip_whitelist": ["10.9.8.7"],
    },
]


@pytest.fixture(scope="module")
def err_sandbox(serve: Any) -> Any:
    with serve({"users": ERR_USERS, "risk": {"per_order": "100"}}) as sb:
        yield sb


def user(sb: Any, api_key: str) -> Any:
    return next(u for u in sb.users if u.api_key == api_key)


def test_authentication_error(err_sandbox: Any, make_api: Any, flavour: str) -> None:
    bad = make_api(err_sandbox, user(err_sandbox, "err-full"), flavour, api_secret="wrong")
    with pytest.raises(errors.AuthenticationError) as info:
        bad.get_wallet()
    assert info.value.status == 401
    assert info.value.message == "unauthorized"
    unknown = make_api(err_sandbox, user(err_sandbox, "err-full"), flavour, api_key="nobody")
    with pytest.raises(errors.AuthenticationError):
        unknown.list_orders()


def test_permission_denied_names_scope_and_ip(
    err_sandbox: Any, make_api: Any, flavour: str
) -> None:
    reader = make_api(err_sandbox, user(err_sandbox, "err-reader"), flavour)
    assert reader.list_events(limit=1).events  # markets:read is granted
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: reader.get_wallet(), "orders:read"),
        (lambda: reader.list_orders(), "orders:read"),
        (lambda: reader.list_positions(), "portfolio:read"),
        (lambda: reader.list_portfolio_orders(), "portfolio:read"),
        (lambda: reader.cancel_order(str(uuid.uuid4())), "orders:write"),
        (lambda: reader.place_order(str(uuid.uuid4()), outcome="a", amount=5), "orders:write"),
    ]
    for call, scope in cases:
        with pytest.raises(errors.PermissionDenied) as info:
            call()
        assert info.value.status == 403
        assert info.value.scope == scope
        assert info.value.message == f"forbidden: missing scope {scope}"
    walled = make_api(err_sandbox, user(err_sandbox, "err-walled"), flavour)
    with pytest.raises(errors.PermissionDenied) as ip:
        walled.get_wallet()
    assert ip.value.status == 403
    assert ip.value.scope is None


def test_insufficient_balance(err_sandbox: Any, make_api: Any, flavour: str) -> None:
    poor = make_api(err_sandbox, user(err_sandbox, "err-poor"), flavour)
    market = market_with_book(poor, "nba")
    with pytest.raises(errors.InsufficientBalance) as info:
        poor.place_order(market.id, outcome="a", amount=50)
    assert info.value.status == 400
    assert info.value.message == "insufficient balance"
    with pytest.raises(errors.InsufficientBalance):
        poor.place_raw_order(market.id, "a", "BUY", "0.10", 100)


def test_invalid_request(err_sandbox: Any, make_api: Any, flavour: str) -> None:
    full = make_api(err_sandbox, user(err_sandbox, "err-full"), flavour)
    market = market_with_book(full, "nba")
    with pytest.raises(errors.InvalidRequest) as info:
        full.place_raw_order_amounts(market.id, "a", "BUY", 1_000_000, 40_000_000, fee_rate_bps=9)
    assert type(info.value) is errors.InvalidRequest
    assert info.value.message == "invalid request body"
    with pytest.raises(errors.NotFound):
        full.place_order(str(uuid.uuid4()), outcome="a", amount=5)


def test_risk_control(err_sandbox: Any, make_api: Any, flavour: str) -> None:
    full = make_api(err_sandbox, user(err_sandbox, "err-full"), flavour)
    market = market_with_book(full, "nba")
    with pytest.raises(errors.RiskControlError) as info:
        full.place_order(market.id, outcome="a", amount=150)  # per-order limit is 100
    assert info.value.status == 500
    assert info.value.code == "ORDER_FAILED_PLACE_BET"
    price = resting_buy_price(full.get_orderbook(market.token_id_a))
    with pytest.raises(errors.RiskControlError):
        full.place_raw_order(market.id, "a", "BUY", price, 2000)


def test_transport_and_timeout_errors(
    sandbox: Any, make_api: Any, flavour: str, black_hole: str
) -> None:
    me = full_scope_users(sandbox)[0]
    refused = make_api(
        sandbox, me, flavour, base_url=f"http://127.0.0.1:{closed_port()}", max_retries=1
    )
    with pytest.raises(errors.TransportError) as info:
        refused.get_wallet()
    assert not isinstance(info.value, errors.TimeoutError)
    slow = make_api(sandbox, me, flavour, base_url=black_hole, timeout=0.2, max_retries=1)
    started = time.perf_counter()
    with pytest.raises(errors.TimeoutError):
        slow.list_events()
    assert time.perf_counter() - started < 3


def test_strict_query_signing(serve: Any, make_api: Any, flavour: str) -> None:
    with serve(strict_query_signing=True) as strict:
        me = full_scope_users(strict)[0]
        signed = make_api(strict, me, flavour)
        assert signed.list_events(limit=2, league="nba").events
        assert signed.list_orders(status="live", page_size=5).orders == []
        bare = make_api(strict, me, flavour, sign_query=False)
        assert bare.get_wallet().maker  # no query: both forms agree
        with pytest.raises(errors.AuthenticationError):
            bare.list_events(limit=2)


def test_every_order_record_is_typed(api: Any) -> None:
    for order in api.iter_orders(page_size=50):
        assert isinstance(order, Order)
        assert order.status in {
            "pending",
            "signing",
            "submitted",
            "live",
            "matched",
            "won",
            "lost",
            "cancelled",
        }


def test_client_options_do_not_leak_the_secret(sandbox: Any) -> None:
    me = full_scope_users(sandbox)[0]
    options = client_options(sandbox, me)
    from clobkit import Client

    with Client(**options) as client:
        assert me.api_secret not in repr(client)
        assert me.api_secret not in repr(client.config)
