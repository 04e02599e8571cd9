"""Models: every field of the API text, aware datetimes, exact Decimals, tolerance."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec
import pytest

from clobkit.client import _decode as shapes
from clobkit.client._decode import Shape, tolerant_convert
from clobkit.models import (
    Event,
    Market,
    Order,
    Orderbook,
    OrderPage,
    PortfolioOrder,
    Position,
    WalletInfo,
)

UTC = UTC


def decode(shape: Shape[Any], data: Any) -> Any:
    env = shape.decoder.decode(msgspec.json.encode({"success": True, "data": data}))
    return shape.from_data(env.data)


EVENT_LIST_ITEM = {
    "id": "e0000000-0000-4000-8000-000000000001",
    "external_id": "ext-1",
    "slug": "lakers-vs-celtics",
    "title": "Lakers vs Celtics",
    "description": "NBA",
    "category": "sports",
    "subcategory": "basketball",
    "league_id": "nba",
    "series_id": "nba-2025",
    "start_date": "2025-01-01T00:00:00Z",
    "end_date": "2025-01-02T00:00:00Z",
    "volume": 12345.67,
    "trader_count": 42,
    "live": False,
    "ended": False,
    "is_featured": True,
    "is_future": False,
    "team_match_status": "auto_matched",
    "home_team_id": 1,
    "away_team_id": 2,
    "home_team": {
        "id": 1,
        "name": "Lakers",
        "short_name": "LAL",
        "name_zh": "湖人",
        "short_name_zh": "湖人",
        "abbreviation": "LAL",
        "logo": "https://x/lal.png",
        "recent_form": None,
    },
    "away_team": {"id": 2, "name": "Celtics"},
    "enriched_markets": {
        "home_win": {
            "id": "m1",
            "token_id": "1",
            "token_id_a": "1",
            "token_id_b": "2",
            "outcome": "a",
            "price": 0.55,
            "odds": 1.82,
        },
        "away_win": {"id": "m1", "outcome": "b", "price": 0.45, "odds": 2.22},
        "game_start_time": "2025-01-01T19:30:00Z",
    },
    "created_at": "2024-12-01T00:00:00.123Z",
    "updated_at": "2024-12-02T00:00:00+00:00",
    "some_future_field": {"nested": [1, 2, 3]},
}


def test_event_list_shape_reads_every_field() -> None:
    page = decode(
        shapes.EVENTS, {"events": [EVENT_LIST_ITEM], "total_count": 1, "page": 1, "page_size": 20}
    )
    assert page.total_count == 1
    event = page.events[0]
    assert isinstance(event, Event)
    assert event.slug == "lakers-vs-celtics"
    assert event.volume == Decimal("12345.67")
    assert event.start_date == datetime(2025, 1, 1, tzinfo=UTC)
    assert event.created_at is not None
    assert event.created_at.tzinfo is not None
    assert event.home_team is not None
    assert event.home_team.name_zh == "湖人"
    assert event.enriched_markets is not None
    assert event.enriched_markets.home_win is not None
    assert event.enriched_markets.home_win.price == Decimal("0.55")
    assert event.enriched_markets.away_win is not None
    assert event.enriched_markets.away_win.token_id is None
    assert event.enriched_markets.game_start_time == datetime(2025, 1, 1, 19, 30, tzinfo=UTC)
    assert event.markets == []


def test_guide_shape_bare_array_pages() -> None:
    page = decode(shapes.EVENTS, [EVENT_LIST_ITEM])
    assert [e.id for e in page.events] == [EVENT_LIST_ITEM["id"]]
    assert page.total_count is None
    orders = decode(shapes.ORDERS, [{"id": "o1", "status": "live"}])
    assert orders.orders[0].status == "live"
    markets = decode(shapes.MARKETS, [{"id": "m1"}])
    assert markets.markets[0].id == "m1"


def test_event_detail_shape_with_markets() -> None:
    detail = dict(EVENT_LIST_ITEM, start_time="2025-01-01T19:30:00Z", game_id=99)
    detail.pop("enriched_markets")
    detail["markets"] = [
        {
            "id": "m1",
            "external_id": "x",
            "condition_id": "0xabc",
            "token_id_a": "1",
            "token_id_b": "2",
            "question": "Lakers vs Celtics",
            "outcome_a": "Lakers",
            "outcome_b": "Celtics",
            "price_a": 0.55,
            "price_b": 0.45,
            "odds_a": 1.82,
            "odds_b": 2.22,
            "volume": 10,
            "liquidity": 20,
            "game_start_time": "2025-01-01T19:30:00Z",
            "status": "active",
            "market_type": "moneyline",
            "group_item_title": "Moneyline",
        }
    ]
    event = decode(shapes.EVENT, {"event": detail})
    assert event.start_time == datetime(2025, 1, 1, 19, 30, tzinfo=UTC)
    assert event.game_id == 99
    market = event.markets[0]
    assert market.odds_a == Decimal("1.82")
    assert market.neg_risk is None
    assert market.token_id("b") == "2"


def test_market_search_and_detail_shapes() -> None:
    search = decode(
        shapes.MARKETS,
        {
            "markets": [
                {
                    "id": "m1",
                    "question": "q",
                    "description": "d",
                    "subcategory": "s",
                    "end_date": "2025-01-01T00:00:00Z",
                    "neg_risk": True,
                    "price_a": "0.3",
                    "price_b": 0.7,
                }
            ],
            "count": 1,
        },
    )
    assert search.count == 1
    assert search.markets[0].neg_risk is True
    assert search.markets[0].price_a == Decimal("0.3")
    detail = decode(shapes.MARKET, {"market": {"id": "m1", "event_id": "e1", "neg_risk": False}})
    assert detail.event_id == "e1"
    assert detail.outcomes == []


def test_guide_simplified_market() -> None:
    market = msgspec.convert(
        {
            "id": "m1",
            "type": "moneyline",
            "question": "q",
            "status": "active",
            "volume": 1,
            "outcomes": [
                {"id": "o1", "name": "Lakers", "token_id": "111", "price": 0.6},
                {"id": "o2", "name": "Celtics", "token_id": "222", "price": 0.4},
            ],
        },
        Market,
    )
    assert market.token_id("a") == "111"
    assert market.token_id("b") == "222"
    assert market.outcomes[1].price == Decimal("0.4")
    with pytest.raises(ValueError, match="outcome"):
        market.token_id("c")


def test_orderbook_levels_are_decimals() -> None:
    book = decode(
        shapes.ORDERBOOK,
        {
            "asset_id": "1",
            "bids": [{"price": "0.55", "size": "100.5"}, {"price": "0.54", "size": "10"}],
            "asks": [{"price": "0.56", "size": "7"}],
            "hash": "0xdead",
            "min_order_size": 5,
            "timestamp": "2025-01-01T00:00:00Z",
            "updated_at_ms": 1735689600000,
        },
    )
    assert isinstance(book, Orderbook)
    assert book.bids[0].size == Decimal("100.5")
    assert book.best_bid == Decimal("0.55")
    assert book.best_ask == Decimal("0.56")
    assert book.min_order_size == Decimal(5)
    assert book.timestamp == datetime(2025, 1, 1, tzinfo=UTC)
    empty = decode(shapes.ORDERBOOK, {"asset_id": "1"})
    assert empty.best_bid is None
    assert empty.best_ask is None


ORDER = {
    "id": "o1",
    "user_id": "u1",
    "market_id": "m1",
    "outcome": "a",
    "amount": 10.5,
    "making_amount": 10.5,
    "taking_amount": 21,
    "odds": 2,
    "potential_profit": 10.5,
    "status": "won",
    "side": "BUY",
    "order_type": "GTC",
    "order_source": "manual",
    "order_source_id": None,
    "clob_order_id": "0x" + "ab" * 32,
    "original_size": 21,
    "size_matched": 21,
    "clob_price": 0.5,
    "tx_hashes": ["0x1"],
    "settlement_status": "won",
    "settlement_amount": 21,
    "settled_at": "2025-01-03T00:00:00Z",
    "submitted_at": "2025-01-01T00:00:00Z",
    "matched_at": "2025-01-02T00:00:00Z",
    "created_at": "2025-01-01T00:00:00Z",
    "updated_at": "2025-01-03T00:00:00Z",
    "limit_price": 0.5,
    "avg_fill_price": 0.5,
}


def test_order_every_field() -> None:
    order = decode(shapes.ORDER, {"order": ORDER})
    assert isinstance(order, Order)
    assert order.amount == Decimal("10.5")
    assert order.size_matched == Decimal(21)
    assert order.settled_at == datetime(2025, 1, 3, tzinfo=UTC)
    assert order.tx_hashes == ["0x1"]
    assert order.limit_price == Decimal("0.5")
    assert not order.is_open
    minimal = decode(shapes.ORDER, {"order": {"id": "o2"}})
    assert minimal.status is None
    assert minimal.tx_hashes == []


def test_positions_and_portfolio_orders() -> None:
    page = decode(
        shapes.POSITIONS,
        {
            "positions": [
                {
                    "id": 7,
                    "market_id": "m1",
                    "event_id": "e1",
                    "token_id": "1",
                    "outcome": "Lakers",
                    "raw_outcome": "a",
                    "shares": 10,
                    "available_shares": 8,
                    "reserved_shares": 2,
                    "avg_cost": 0.5,
                    "pnl_percent": -3.25,
                    "home_team": {"name": "Lakers", "logo": "l"},
                    "can_cashout": True,
                    "updated_at": "2025-01-01T00:00:00Z",
                }
            ],
            "pagination": {"current_page": 1, "total_pages": 1, "total_count": 1, "per_page": 10},
        },
    )
    position = page.positions[0]
    assert isinstance(position, Position)
    assert position.reserved_shares == Decimal(2)
    assert position.pnl_percent == Decimal("-3.25")
    assert page.pagination.total_pages == 1
    history = decode(
        shapes.PORTFOLIO_ORDERS,
        {
            "orders": [
                {
                    "id": "o1",
                    "side": "SELL",
                    "making_amount": 3,
                    "taking_amount": 1.5,
                    "home_team": {"name": "A", "logo": "a"},
                    "is_bonus": False,
                    "created_at": "2025-01-01T00:00:00Z",
                }
            ],
            "pagination": {"current_page": 1, "total_pages": 1, "total_count": 1, "per_page": 10},
        },
    )
    assert isinstance(history.orders[0], PortfolioOrder)
    assert history.orders[0].taking_amount == Decimal("1.5")


def test_naive_timestamps_read_as_utc() -> None:
    order = decode(shapes.ORDER, {"order": {"id": "o", "created_at": "2025-01-01T12:00:00"}})
    assert order.created_at == datetime(2025, 1, 1, 12, tzinfo=UTC)


def test_decimal_is_exact_not_float() -> None:
    order = decode(shapes.ORDER, {"order": {"id": "o", "amount": 0.1, "clob_price": 0.29}})
    assert order.amount == Decimal("0.1")
    assert order.clob_price == Decimal("0.29")
    many = decode(shapes.ORDER, {"order": {"id": "o", "amount": 1234567.123456}})
    assert many.amount == Decimal("1234567.123456")


def test_tolerant_convert_fixes_epoch_and_drops_unreadable_optionals() -> None:
    raw = {
        "id": "o",
        "created_at": 1735689600000,  # epoch ms
        "updated_at": "1735689600",  # epoch s as a string
        "settled_at": "",  # empty
        "amount": "not a number",  # unreadable optional: dropped
        "status": "live",
    }
    order = tolerant_convert(raw, Order)
    assert order.created_at == datetime(2025, 1, 1, tzinfo=UTC)
    assert order.updated_at == datetime(2025, 1, 1, tzinfo=UTC)
    assert order.settled_at is None
    assert order.amount is None
    assert order.status == "live"
    with pytest.raises(msgspec.ValidationError):
        tolerant_convert({"status": "live"}, Order)  # the id is required


def test_tolerant_convert_drops_only_optional_fields_never_list_items() -> None:
    # an unreadable optional field deep inside a list item is dropped ...
    page = tolerant_convert({"orders": [{"id": "a", "amount": "x"}], "total_count": "?"}, OrderPage)
    assert [(o.id, o.amount) for o in page.orders] == [("a", None)]
    assert page.total_count is None
    # ... an unreadable optional nested model too ...
    event = tolerant_convert({"id": "e", "home_team": "junk"}, Event)
    assert (event.id, event.home_team) == ("e", None)
    # ... but a list item that cannot be read fails the answer: it is never lost silently
    for items in (["junk"], [{"amount": "1"}]):
        with pytest.raises(msgspec.ValidationError):
            tolerant_convert({"orders": items}, OrderPage)


def test_statuses_sides_and_types_are_the_api_names() -> None:
    order = decode(shapes.ORDER, {"order": {"id": "o", "status": "live", "side": "SELL"}})
    assert (order.status, order.side) == ("live", "SELL")
    # a name outside the API text arrives as sent, never as None (docs/architecture.md)
    odd = tolerant_convert({"id": "o", "status": "rejected", "order_type": "IOC"}, Order)
    assert (odd.id, odd.status, odd.order_type) == ("o", "rejected", "IOC")


def test_wallet_keeps_its_defaults() -> None:
    wallet = msgspec.convert({"maker": "0x1", "signer": "0x2"}, WalletInfo)
    assert wallet.chain_id == 137
    assert wallet.signature_type == 2
    assert wallet.ctf_exchange == "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E"
    assert wallet.neg_risk_exchange == "0xC5d563A36AE78145C45a50134d48A1215220f80a"


def test_models_are_immutable() -> None:
    order = msgspec.convert({"id": "o"}, Order)
    with pytest.raises(AttributeError):
        order.status = "live"  # type: ignore[misc]
