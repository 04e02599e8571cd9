"""Every endpoint over real HTTP on loopback: shapes (every field of the API text), queries."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from decimal import Decimal
from typing import Any

import pytest

from clobkit import OrderHasher
from clobkit.sandbox import Sandbox

from ..conftest import loopback_http
from .conftest import MAKER, TRADER, book_market
from .signed import SignedClient, loads

ISO = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z\Z")
UUID = re.compile(r"\A[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
UINT = re.compile(r"\A[0-9]{1,78}\Z")
ADDRESS = re.compile(r"\A0x[0-9a-fA-F]{40}\Z")

TEAM = {
    "id",
    "name",
    "short_name",
    "name_zh",
    "short_name_zh",
    "abbreviation",
    "logo",
    "recent_form",
}
EVENT_COMMON = {
    "id", "external_id", "slug", "title", "description", "category", "subcategory", "league_id",
    "series_id", "start_date", "end_date", "volume", "trader_count", "live", "ended", "is_featured",
    "is_future", "team_match_status", "home_team_id", "away_team_id", "home_team", "away_team",
    "created_at", "updated_at",
}  # fmt: skip
EVENT_LIST = EVENT_COMMON | {"enriched_markets"}
EVENT_DETAIL = EVENT_COMMON | {"start_time", "game_id", "markets"}
ENRICHED_SIDE = {"id", "token_id", "token_id_a", "token_id_b", "outcome", "price", "odds"}
MARKET_SEARCH = {
    "id", "external_id", "token_id_a", "token_id_b", "question", "description", "category",
    "subcategory", "outcome_a", "outcome_b", "price_a", "price_b", "volume", "liquidity",
    "end_date", "status", "neg_risk", "is_featured", "created_at", "updated_at",
}  # fmt: skip
MARKET_DETAIL = {
    "id", "external_id", "condition_id", "token_id_a", "token_id_b", "event_id", "question",
    "category", "outcome_a", "outcome_b", "price_a", "price_b", "volume", "liquidity",
    "game_start_time", "status", "market_type", "group_item_title", "neg_risk", "is_featured",
    "created_at", "updated_at",
}  # fmt: skip
EVENT_MARKET = {
    "id", "external_id", "condition_id", "token_id_a", "token_id_b", "question", "outcome_a",
    "outcome_b", "price_a", "price_b", "odds_a", "odds_b", "volume", "liquidity", "game_start_time",
    "status", "market_type", "group_item_title",
}  # fmt: skip
ORDER = {
    "id", "user_id", "market_id", "outcome", "amount", "making_amount", "taking_amount", "odds",
    "potential_profit", "status", "side", "order_type", "order_source", "order_source_id",
    "clob_order_id", "original_size", "size_matched", "clob_price", "tx_hashes",
    "settlement_status", "settlement_amount", "settled_at", "submitted_at", "matched_at",
    "created_at", "updated_at",
}  # fmt: skip
ORDER_EXTRAS = {"limit_price", "avg_fill_price", "token_id", "expiration"}
POSITION = {
    "id", "market_id", "event_id", "market_name", "market_type", "group_item_title", "event_title",
    "event_slug", "category", "token_id", "outcome", "raw_outcome", "outcome_a", "outcome_b",
    "shares", "available_shares", "reserved_shares", "avg_cost", "bet_amount",
    "expected_win_amount", "initial_win_rate", "current_win_rate", "current_value", "pnl",
    "pnl_percent", "best_bid", "best_ask", "home_team", "away_team", "ended", "can_cashout",
    "confirming", "is_bonus", "is_future", "market_status", "updated_at",
}  # fmt: skip
POSITION_TEAM = {"name", "short_name", "logo", "abbreviation", "name_zh", "short_name_zh"}
PORTFOLIO_ORDER = {
    "id", "market_id", "event_id", "event_slug", "market_name", "home_team", "away_team", "outcome",
    "side", "making_amount", "taking_amount", "status", "tx_hashes", "is_bonus", "created_at",
}  # fmt: skip
ORDERBOOK = {"asset_id", "bids", "asks", "hash", "min_order_size", "timestamp", "updated_at_ms"}
WALLET = {"maker", "signer", "chain_id", "signature_type", "ctf_exchange", "neg_risk_exchange"}
PAGINATION = {"current_page", "total_pages", "total_count", "per_page"}


def is_number(v: Any) -> bool:
    return isinstance(v, (int, Decimal)) and not isinstance(v, bool)


def check_types(
    obj: dict[str, Any],
    *,
    numbers: AbstractSet[str] = frozenset(),
    ints: AbstractSet[str] = frozenset(),
    bools: AbstractSet[str] = frozenset(),
    stamps: AbstractSet[str] = frozenset(),
    uuids: AbstractSet[str] = frozenset(),
    strings: AbstractSet[str] = frozenset(),
    nullable: AbstractSet[str] = frozenset(),
) -> None:
    for key in numbers:
        assert is_number(obj[key]) or (key in nullable and obj[key] is None), (key, obj[key])
    for key in ints:
        assert isinstance(obj[key], int), (key, obj[key])
        assert not isinstance(obj[key], bool), (key, obj[key])
    for key in bools:
        assert isinstance(obj[key], bool), (key, obj[key])
    for key in stamps:
        v = obj[key]
        assert (v is None and key in nullable) or (isinstance(v, str) and ISO.match(v)), (key, v)
    for key in uuids:
        assert isinstance(obj[key], str), (key, obj[key])
        assert UUID.match(obj[key]), (key, obj[key])
    for key in strings:
        assert isinstance(obj[key], str) or (key in nullable and obj[key] is None), (key, obj[key])


def check_team(team: dict[str, Any], keys: set[str] = TEAM) -> None:
    assert set(team) == keys
    if "id" in keys:
        assert isinstance(team["id"], int)
        assert team["recent_form"] is None
    check_types(team, strings=keys - {"id", "recent_form"})
    assert team["logo"].startswith("https://")


def check_price(value: Any) -> None:
    assert is_number(value), value
    assert Decimal("0.01") <= value <= Decimal("0.99"), value


# -- markets:read -------------------------------------------------------------------------------


def test_event_list_shape(client: SignedClient) -> None:
    data = client.data("GET", "/events", limit=100, ended="true")
    assert set(data) == {"events", "total_count", "page", "page_size"}
    assert data["total_count"] == len(data["events"]) >= 30
    leagues = {e["league_id"] for e in data["events"]}
    assert leagues >= {"nba", "epl", "nfl", "lol"}
    for e in data["events"]:
        assert set(e) == EVENT_LIST
        check_types(
            e,
            numbers={"volume"},
            ints={"trader_count", "home_team_id", "away_team_id"},
            bools={"live", "ended", "is_featured", "is_future"},
            stamps={"start_date", "end_date", "created_at", "updated_at"},
            uuids={"id"},
            strings={
                "external_id",
                "slug",
                "title",
                "description",
                "category",
                "subcategory",
                "league_id",
                "series_id",
                "team_match_status",
            },
        )
        check_team(e["home_team"])
        check_team(e["away_team"])
        assert e["home_team_id"] == e["home_team"]["id"]
        enriched = e["enriched_markets"]
        assert set(enriched) == {"home_win", "away_win", "game_start_time"}
        assert ISO.match(enriched["game_start_time"])
        for side in ("home_win", "away_win"):
            m = enriched[side]
            assert set(m) == ENRICHED_SIDE
            assert UUID.match(m["id"])
            assert m["outcome"] in ("a", "b")
            assert m["token_id"] == m[f"token_id_{m['outcome']}"]
            assert all(UINT.match(m[k]) for k in ("token_id", "token_id_a", "token_id_b"))
            check_price(m["price"])
            assert is_number(m["odds"])
            assert m["odds"] >= 1
    assert any(e["team_match_status"] == "auto_matched" for e in data["events"])
    assert any(e["live"] for e in data["events"])
    assert any(e["ended"] for e in data["events"])
    assert any(e["is_future"] for e in data["events"])
    assert any(e["is_featured"] for e in data["events"])
    zh = {e["home_team"]["name_zh"] for e in data["events"]}
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in name) for name in zh)


def test_event_detail_by_id_and_slug(client: SignedClient) -> None:
    listed = client.data("GET", "/events", limit=1)["events"][0]
    by_id = client.data("GET", f"/events/{listed['id']}")
    by_slug = client.data("GET", f"/events/{listed['slug']}")
    assert set(by_id) == {"event"}
    event = by_id["event"]
    assert event["id"] == by_slug["event"]["id"] == listed["id"]
    assert set(event) == EVENT_DETAIL
    assert ISO.match(event["start_time"])
    assert isinstance(event["game_id"], int)
    assert event["markets"]
    for m in event["markets"]:
        assert set(m) == EVENT_MARKET
    markets = client.data("GET", f"/events/{listed['id']}/markets")
    assert set(markets) == {"markets", "count"}
    assert markets["count"] == len(markets["markets"]) == len(event["markets"])
    for m in markets["markets"]:
        assert set(m) == EVENT_MARKET
        check_types(
            m,
            numbers={"price_a", "price_b", "odds_a", "odds_b", "volume", "liquidity"},
            stamps={"game_start_time"},
            uuids={"id"},
            strings={
                "external_id",
                "condition_id",
                "token_id_a",
                "token_id_b",
                "question",
                "outcome_a",
                "outcome_b",
                "status",
                "market_type",
                "group_item_title",
            },
        )
        assert m["price_a"] + m["price_b"] == 1
        assert m["condition_id"].startswith("0x")
        assert len(m["condition_id"]) == 66
        assert m["market_type"] == "moneyline"


def test_three_way_and_futures_events_have_neg_risk_markets(client: SignedClient) -> None:
    epl = client.data("GET", "/events", league="epl", limit=1)["events"][0]
    markets = client.data("GET", f"/events/{epl['id']}/markets")["markets"]
    assert [m["group_item_title"] for m in markets][1] == "Draw"
    assert len(markets) == 3
    detail = client.data("GET", f"/markets/{markets[0]['id']}")["market"]
    assert detail["neg_risk"] is True
    future = client.data("GET", "/events", is_future="true", league="nba")["events"][0]
    assert len(client.data("GET", f"/events/{future['id']}/markets")["markets"]) == 6
    nba = client.data("GET", "/events", league="nba", is_future="false", limit=1)["events"][0]
    market_id = nba["enriched_markets"]["home_win"]["id"]
    assert client.data("GET", f"/markets/{market_id}")["market"]["neg_risk"] is False
    assert nba["enriched_markets"]["away_win"]["id"] == market_id  # one moneyline, two outcomes


def test_market_search_and_detail_shapes(client: SignedClient) -> None:
    data = client.data("GET", "/markets", q="lakers")
    assert set(data) == {"markets", "count"}
    assert data["count"] == len(data["markets"]) > 0
    for m in data["markets"]:
        assert set(m) == MARKET_SEARCH
        assert "lakers" in m["question"].lower() or m["outcome_a"] == "Los Angeles Lakers"
        check_types(
            m,
            numbers={"price_a", "price_b", "volume", "liquidity"},
            bools={"neg_risk", "is_featured"},
            stamps={"end_date", "created_at", "updated_at"},
            strings={"description", "category", "subcategory", "status"},
        )
    assert len(client.data("GET", "/markets", q="win", limit=3)["markets"]) == 3
    assert client.data("GET", "/markets", q="Arsenal Chelsea")["count"] >= 1
    assert client.data("GET", "/markets", q="zzz-no-such-team")["count"] == 0
    detail = client.data("GET", f"/markets/{data['markets'][0]['id']}")
    assert set(detail) == {"market"}
    assert set(detail["market"]) == MARKET_DETAIL
    check_types(
        detail["market"],
        uuids={"id", "event_id"},
        stamps={"game_start_time", "created_at"},
        bools={"neg_risk", "is_featured"},
    )


def test_orderbook_shape(client: SignedClient, sb: Sandbox) -> None:
    m = book_market(sb.engine)
    for token in (m.fx.token_id_a, m.fx.token_id_b):
        book = client.data("GET", f"/orderbooks/{token}")
        assert set(book) == ORDERBOOK
        assert book["asset_id"] == token
        for level in book["bids"] + book["asks"]:
            assert set(level) == {"price", "size"}
            assert isinstance(level["price"], str)
            assert isinstance(level["size"], str)
            check_price(Decimal(level["price"]))
            assert Decimal(level["size"]) > 0
        bids = [Decimal(lv["price"]) for lv in book["bids"]]
        asks = [Decimal(lv["price"]) for lv in book["asks"]]
        assert bids == sorted(bids, reverse=True)
        assert asks == sorted(asks)
        assert bids[0] < asks[0]
        assert is_number(book["min_order_size"])
        assert book["min_order_size"] > 0
        assert ISO.match(book["timestamp"])
        assert isinstance(book["updated_at_ms"], int)
        assert re.fullmatch(r"[0-9a-f]{64}", book["hash"])


def test_fee_rate_is_the_clob_query(sb: Sandbox) -> None:
    m = book_market(sb.engine)
    esports = next(x for x in sb.engine.markets.values() if x.fx.category == "esports")
    with loopback_http(base_url=sb.clob_url) as http:
        assert http.get("/fee-rate", params={"token_id": m.fx.token_id_a}).json() == {"base_fee": 0}
        assert http.get("/fee-rate", params={"token_id": esports.fx.token_id_b}).json() == {
            "base_fee": 200
        }
        assert http.get("/fee-rate", params={"token_id": "1"}).status_code == 404
        assert http.get("/fee-rate").status_code == 400


# -- orders, wallet, portfolio ------------------------------------------------------------------


def test_order_lifecycle_and_shapes(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        order = _placed_market_order(c, m.id)
        limit = _listed_limit_order(c, m.id, order)
        _check_wallet(c)
        _check_positions(c, order)
        _check_order_history(c, limit, order)


def _placed_market_order(c: SignedClient, market_id: str) -> dict[str, Any]:
    """A FOK buy placed and read back in the order shape."""
    placed = c.data(
        "POST", "/orders", {"market_id": market_id, "outcome": "a", "amount": 25}, expect=201
    )
    assert set(placed) == {"order_id", "notification_id"}
    assert UUID.match(placed["order_id"])
    assert UUID.match(placed["notification_id"])
    order = c.order(placed["order_id"])
    assert set(order) == ORDER | ORDER_EXTRAS
    check_types(
        order,
        numbers={
            "amount",
            "making_amount",
            "taking_amount",
            "odds",
            "potential_profit",
            "original_size",
            "size_matched",
            "clob_price",
            "settlement_amount",
        },
        stamps={"settled_at", "submitted_at", "matched_at", "created_at", "updated_at"},
        uuids={"id", "user_id", "market_id"},
        nullable={"settled_at"},
        strings={"order_source", "clob_order_id", "status", "side", "order_type"},
    )
    assert order["status"] == "matched"
    assert order["side"] == "BUY"
    assert order["order_type"] == "FOK"
    assert order["order_source"] == "manual"
    assert order["order_source_id"] is None
    assert re.fullmatch(r"0x[0-9a-f]{64}", order["clob_order_id"])
    assert order["user_id"] == TRADER
    assert isinstance(order["tx_hashes"], list)
    return order


def _listed_limit_order(c: SignedClient, market_id: str, order: dict[str, Any]) -> str:
    """A resting GTC order listed, filtered, cancelled and paged beside ``order``; its id."""
    limit = c.place(
        {
            "market_id": market_id,
            "order_type": "GTC",
            "token_option": "no",
            "limit_price": "0.05",
            "amount": 5,
        }
    )
    assert c.order(limit)["status"] == "live"
    listed = c.data("GET", "/orders")
    assert set(listed) == {"orders", "total_count", "page", "page_size"}
    assert listed["total_count"] == 2
    assert [o["id"] for o in listed["orders"]] == [
        limit,
        order["id"],
    ]
    assert c.data("GET", "/orders", status="live")["total_count"] == 1
    assert c.data("GET", "/orders", status="matched")["orders"][0]["id"] == order["id"]
    assert c.data("GET", "/orders", status="pending")["total_count"] == 0
    cancelled = c.data("DELETE", f"/orders/{limit}")
    assert cancelled == {"order_id": limit, "status": "cancelled"}
    assert c.order(limit)["status"] == "cancelled"
    page = c.data("GET", "/orders", page=2, page_size=1)
    assert page["page"] == 2
    assert page["page_size"] == 1
    assert [o["id"] for o in page["orders"]] == [order["id"]]
    assert c.data("GET", "/orders", page=3, page_size=1)["orders"] == []
    return limit


def _check_wallet(c: SignedClient) -> None:
    """The wallet shape: chain, exchanges, a maker apart from its signer."""
    wallet = c.data("GET", "/wallet")
    assert set(wallet) == WALLET
    assert wallet["chain_id"] == 137
    assert wallet["signature_type"] == 2
    assert wallet["ctf_exchange"] == "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E"
    assert wallet["neg_risk_exchange"] == "0xC5d563A36AE78145C45a50134d48A1215220f80a"
    assert ADDRESS.match(wallet["maker"])
    assert ADDRESS.match(wallet["signer"])
    assert wallet["maker"] != wallet["signer"]


def _check_positions(c: SignedClient, order: dict[str, Any]) -> None:
    """The one position ``order`` opened, in the positions shape."""
    positions = c.data("GET", "/portfolio/positions")
    assert set(positions) == {"positions", "pagination"}
    assert set(positions["pagination"]) == PAGINATION
    assert positions["pagination"] == {
        "current_page": 1,
        "total_pages": 1,
        "total_count": 1,
        "per_page": 10,
    }
    pos = positions["positions"][0]
    assert set(pos) == POSITION
    check_team(pos["home_team"], POSITION_TEAM)
    check_types(
        pos,
        ints={"id"},
        uuids={"market_id", "event_id"},
        numbers={
            "shares",
            "available_shares",
            "reserved_shares",
            "avg_cost",
            "bet_amount",
            "expected_win_amount",
            "initial_win_rate",
            "current_win_rate",
            "current_value",
            "pnl",
            "pnl_percent",
            "best_bid",
            "best_ask",
        },
        bools={"ended", "can_cashout", "confirming", "is_bonus", "is_future"},
        stamps={"updated_at"},
    )
    assert pos["shares"] == order["size_matched"]
    assert pos["raw_outcome"] == "a"


def _check_order_history(c: SignedClient, limit: str, order: dict[str, Any]) -> None:
    """Both orders in the portfolio history, newest first, filtered and paged."""
    history = c.data("GET", "/portfolio/orders")
    assert set(history) == {"orders", "pagination"}
    assert [o["id"] for o in history["orders"]] == [limit, order["id"]]
    for item in history["orders"]:
        assert set(item) == PORTFOLIO_ORDER
        assert set(item["home_team"]) == {"name", "logo"} == set(item["away_team"])
        check_types(
            item,
            numbers={"making_amount", "taking_amount"},
            bools={"is_bonus"},
            stamps={"created_at"},
        )
    assert c.data("GET", "/portfolio/orders", side="SELL")["orders"] == []
    assert c.data("GET", "/portfolio/orders", side="BUY", per_page=1)["pagination"] == {
        "current_page": 1,
        "total_pages": 2,
        "total_count": 2,
        "per_page": 1,
    }


def test_post_orders_precision_and_limit_orders_over_http(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        # a JSON number with many digits is read exactly (not through a binary float)
        r = c.request(
            "POST",
            "/orders",
            raw=b'{"market_id": "%s", "order_type": "GTC", "token_option": "yes",'
            b' "limit_price": 0.10, "amount": 10.000000000000000001}' % m.id.encode(),
        )
        assert r.status_code == 201, r.text
        order = c.order(loads(r.content)["data"]["order_id"])
        assert order["original_size"] == 100
        assert order["amount"] == 10
        gtd = c.place(
            {
                "market_id": m.id,
                "order_type": "GTD",
                "token_option": "no",
                "limit_price": "0.02",
                "amount": 2,
                "expiration": int(sb.engine._clock()) + 3600,
            }
        )
        assert c.order(gtd)["expiration"] > 0
        assert c.order(gtd)["order_type"] == "GTD"


def test_raw_order_over_http_precomputed_id_and_idempotency(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine, neg_risk=True)
    with (
        SignedClient(sb.base_url, sb.user(MAKER)) as c,
        loopback_http(base_url=sb.clob_url) as clob,
    ):
        wallet = c.data("GET", "/wallet")
        fee = clob.get("/fee-rate", params={"token_id": m.fx.token_id_b}).json()["base_fee"]
        body = {
            "market_id": m.id,
            "outcome": "b",
            "token_id": m.fx.token_id_b,
            "maker_amount": "1500000",
            "taker_amount": "30000000",
            "side": 0,
            "fee_rate_bps": fee,
            "order_type": "GTC",
            "salt": "424242",
            "client_order_id": "mm-0001",
        }
        expected = OrderHasher(wallet).order_id(
            token_id=body["token_id"],
            maker_amount=1500000,
            taker_amount=30000000,
            side=0,
            salt=424242,
            fee_rate_bps=fee,
            neg_risk=True,
        )
        first = c.data("POST", "/orders/raw", body, expect=201)
        assert first["notification_id"] == ""
        assert c.order(first["order_id"])["clob_order_id"] == expected
        second = c.data("POST", "/orders/raw", body, expect=201)
        assert second == first
        assert c.data("GET", "/orders")["total_count"] == 1


# -- query validation ---------------------------------------------------------------------------


def test_event_filters(client: SignedClient) -> None:
    def events(**params: Any) -> list[dict[str, Any]]:
        return list(client.data("GET", "/events", limit=100, **params)["events"])

    default = events()
    assert default
    assert not any(e["ended"] for e in default)
    with_ended = events(ended="true")
    assert len(with_ended) > len(default)
    assert any(e["ended"] for e in with_ended)
    assert all(e["ended"] for e in events(status="ended"))
    assert events(status="active") == default
    assert all(e["league_id"] == "nba" for e in events(league="nba"))
    assert {e["league_id"] for e in events(sport="soccer")} == {"epl"}
    assert {e["league_id"] for e in events(category="esports")} == {"lol"}
    assert {e["league_id"] for e in events(subcategory="american_football")} == {"nfl"}
    live = events(live="true")
    assert live
    assert all(e["live"] for e in live)
    assert not any(e["live"] for e in events(live="false"))
    assert all(e["is_featured"] for e in events(is_featured="true"))
    assert all(e["is_future"] for e in events(is_future="true"))
    assert not any(e["is_future"] for e in events(is_future="false"))
    assert events(league="mlb") == []


def test_event_sorting_and_paging(client: SignedClient) -> None:
    by_volume = client.data("GET", "/events", sort_by="volume", limit=100)["events"]
    volumes = [e["volume"] for e in by_volume]
    assert volumes == sorted(volumes, reverse=True)
    created = [
        e["created_at"]
        for e in client.data("GET", "/events", sort_by="created_at", limit=100)["events"]
    ]
    assert created == sorted(created, reverse=True)
    titles = [
        e["title"].lower()
        for e in client.data("GET", "/events", sort_by="title", limit=100)["events"]
    ]
    assert titles == sorted(titles)
    kickoff = [
        e["enriched_markets"]["game_start_time"]
        for e in client.data("GET", "/events", limit=100)["events"]
    ]
    assert kickoff == sorted(kickoff)  # default: by start time
    everything = client.data("GET", "/events", limit=100)
    page = client.data("GET", "/events", limit=5, offset=10)
    assert page["total_count"] == everything["total_count"]
    assert page["page"] == 3
    assert page["page_size"] == 5
    assert [e["id"] for e in page["events"]] == [e["id"] for e in everything["events"][10:15]]
    assert len(client.data("GET", "/events")["events"]) == 20  # default limit


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/events", {"limit": 0}),
        ("/events", {"limit": 101}),
        ("/events", {"limit": "ten"}),
        ("/events", {"offset": -1}),
        ("/events", {"live": "maybe"}),
        ("/events", {"ended": "yes"}),
        ("/events", {"is_featured": "2"}),
        ("/events", {"is_future": ""}),
        ("/events", {"sort_by": "price"}),
        ("/events", {"status": "closed"}),
        ("/events", {"league": ""}),
        ("/markets", {}),
        ("/markets", {"q": "  "}),
        ("/markets", {"q": "lakers", "limit": 500}),
        ("/orders", {"status": "won"}),
        ("/orders", {"status": "cancelled"}),
        ("/orders", {"page": 0}),
        ("/orders", {"page_size": 101}),
        ("/orders", {"page_size": "x"}),
        ("/portfolio/positions", {"per_page": 101}),
        ("/portfolio/positions", {"page": -2}),
        ("/portfolio/orders", {"side": "buy"}),
        ("/portfolio/orders", {"per_page": 0}),
    ],
)
def test_bad_query_values_are_400(client: SignedClient, path: str, params: dict[str, Any]) -> None:
    r = client.get(path, **params)
    assert r.status_code == 400, r.text
    body = client.fail(r)
    assert body["error"] == "invalid request parameters"
    assert body["detail"]


def test_max_page_sizes_are_accepted(client: SignedClient) -> None:
    assert client.data("GET", "/orders", page_size=100)["page_size"] == 100
    assert client.data("GET", "/portfolio/positions", per_page=100)["pagination"]["per_page"] == 100
    assert client.data("GET", "/portfolio/orders", per_page=100)["pagination"]["per_page"] == 100
    assert client.data("GET", "/events", limit=100)["page_size"] == 100


def test_admin_routes(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    with (
        SignedClient(sb.base_url, sb.user(TRADER)) as c,
        loopback_http(base_url=sb.base_url) as admin,
    ):
        order_id = c.place(
            {
                "market_id": m.id,
                "order_type": "GTC",
                "token_option": "yes",
                "limit_price": "0.10",
                "amount": 10,
            }
        )
        r = admin.post(f"/admin/orders/{order_id}/fill", json={"shares": "40"})
        assert r.status_code == 200
        assert loads(r.content)["data"]["size_matched"] == 40
        r = admin.post(f"/admin/markets/{m.id}/price", json={"price": "0.50"})
        assert loads(r.content)["data"]["price_a"] == Decimal("0.50")
        r = admin.post(f"/admin/users/{TRADER}/deposit", json={"amount": "5"})
        assert loads(r.content)["data"]["deposits"] == 10_005
        r = admin.post(f"/admin/markets/{m.id}/settle", json={"winner": "a"})
        assert loads(r.content)["data"]["payouts"] == 40
        assert c.order(order_id)["status"] == "cancelled"  # still live at settlement: cancelled
        assert c.order(order_id)["settlement_status"] == "won"
        check = loads(admin.get("/admin/invariants").content)["data"]
        assert check["violations"] == []
        assert loads(admin.get(f"/admin/users/{TRADER}/balances").content)["data"]["payouts"] == 40
        r = admin.post(f"/admin/markets/{m.id}/settle", json={"winner": "c"})
        assert r.status_code == 400
        assert admin.get("/admin/nothing").status_code == 404


@pytest.mark.slow
def test_gtd_expires_on_the_wall_clock(fresh: Any) -> None:
    """The background ticker cancels a GTD order once its expiration second has come."""
    import time

    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        # at least 2 s ahead when it is sent (a busy machine's request may take a while):
        # "+ 1" was as little as a few ms ahead at the end of a second, refused
        expiration = int(time.time()) + 3
        order_id = c.place(
            {
                "market_id": m.id,
                "order_type": "GTD",
                "token_option": "yes",
                "limit_price": "0.05",
                "amount": 5,
                "expiration": expiration,
            }
        )
        assert c.order(order_id)["status"] == "live"
        deadline = time.monotonic() + 15  # a hang guard only: it expires within 3 s
        while c.order(order_id)["status"] == "live":
            assert time.monotonic() < deadline, "the GTD order did not expire"
            time.sleep(0.05)
        assert time.time() >= expiration
        assert c.order(order_id)["status"] == "cancelled"
        assert sb.engine.balances(TRADER).cash_reserved == 0
