"""Every row of the API text's error table, produced through real HTTP.

| Condition | Status | code | error |
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from clobkit.sandbox import Sandbox

from ..conftest import loopback_http
from .conftest import MAKER, READER, TRADER, book_market, bookless_market
from .signed import PREFIX, SignedClient, loads

NIL = "00000000-0000-0000-0000-000000000000"


def envelope(r: httpx.Response, status: int, error: str, code: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = loads(r.content)
    assert r.status_code == status, (r.status_code, body)
    assert body["success"] is False, body
    assert body["error"] == error, body
    assert body.get("code") == code, body
    assert set(body) <= {"success", "error", "code", "detail"}
    assert r.headers["content-type"].startswith("application/json")
    return body


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b"[1, 2]",
        b"",
        b'"text"',
        b'{"market_id": 5}',
        b'{"outcome": "a", "amount": 5}',
    ],
)
def test_malformed_body_on_place_order(client: SignedClient, raw: bytes) -> None:
    envelope(client.request("POST", "/orders", raw=raw), 400, "invalid request body")


def test_malformed_parameters_on_place_order(client: SignedClient, sb: Sandbox) -> None:
    m = book_market(sb.engine)
    for body in (
        {"market_id": m.id, "outcome": "a", "amount": -5},
        {
            "market_id": m.id,
            "outcome": "a",
            "amount": 5,
            "order_type": "GTC",
            "token_option": "yes",
        },
        {"market_id": m.id, "side": "SELL", "outcome": "a"},
        {"market_id": m.id, "outcome": "a", "amount": 5, "take_profit_price": 2},
    ):
        envelope(client.post("/orders", body), 400, "invalid request body")


def test_balance_too_low(client: SignedClient, sb: Sandbox) -> None:
    m = book_market(sb.engine)
    r = client.post("/orders", {"market_id": m.id, "outcome": "a", "amount": 20_000})
    envelope(r, 400, "insufficient balance")


@pytest.mark.parametrize(
    ("scopes", "method", "path", "missing"),
    [
        (["markets:read", "orders:read"], "POST", "/orders", "orders:write"),
        (["markets:read", "orders:read"], "POST", "/orders/raw", "orders:write"),
        (["markets:read", "orders:read"], "DELETE", f"/orders/{NIL}", "orders:write"),
        (["orders:write"], "GET", "/orders", "orders:read"),
        (["orders:write"], "GET", f"/orders/{NIL}", "orders:read"),
        (["orders:write"], "GET", "/wallet", "orders:read"),
        (["orders:read"], "GET", "/events", "markets:read"),
        (["orders:read"], "GET", f"/events/{NIL}", "markets:read"),
        (["orders:read"], "GET", f"/events/{NIL}/markets", "markets:read"),
        (["orders:read"], "GET", "/markets?q=x", "markets:read"),
        (["orders:read"], "GET", f"/markets/{NIL}", "markets:read"),
        (["orders:read"], "GET", "/orderbooks/1", "markets:read"),
        (["markets:read"], "GET", "/portfolio/positions", "portfolio:read"),
        (["markets:read"], "GET", "/portfolio/orders", "portfolio:read"),
    ],
)
def test_scope_missing(fresh: Any, scopes: list[str], method: str, path: str, missing: str) -> None:
    sb: Sandbox = fresh(
        {"users": [{"user_id": TRADER, "api_key": "k", "api_secret": "s", "scopes": scopes}]}
    )
    with SignedClient(sb.base_url, sb.users[0]) as c:
        r = c.request(method, path, {} if method == "POST" else None)
        envelope(r, 403, f"forbidden: missing scope {missing}")


def test_default_reader_cannot_place_orders(sb: Sandbox) -> None:
    with SignedClient(sb.base_url, sb.user(READER)) as c:
        r = c.post("/orders", {"market_id": NIL, "outcome": "a", "amount": 5})
        envelope(r, 403, "forbidden: missing scope orders:write")
        assert c.data("GET", "/orders")["orders"] == []  # but may read


def test_credentials_missing_or_invalid(sb: Sandbox) -> None:
    with loopback_http(base_url=sb.base_url) as http:
        envelope(http.get(PREFIX + "/orders"), 401, "unauthorized")
        envelope(http.get(PREFIX + "/events"), 401, "unauthorized")
        envelope(http.post(PREFIX + "/orders", json={}), 401, "unauthorized")
    bad_key = type(sb.users[0])(user_id=TRADER, api_key="nobody", api_secret="x")
    with SignedClient(sb.base_url, bad_key) as c:
        envelope(c.get("/orders"), 401, "unauthorized")
    wrong_secret = type(sb.users[0])(
        user_id=TRADER, api_key=sb.users[0].api_key, api_secret="wrong"
    )
    with SignedClient(sb.base_url, wrong_secret) as c:
        envelope(c.get("/portfolio/orders"), 401, "unauthorized")


def test_cancel_unknown_or_foreign_order(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    with (
        SignedClient(sb.base_url, sb.user(TRADER)) as owner,
        SignedClient(sb.base_url, sb.user(MAKER)) as other,
    ):
        order_id = owner.place(
            {
                "market_id": m.id,
                "order_type": "GTC",
                "token_option": "yes",
                "limit_price": "0.05",
                "amount": 5,
            }
        )
        envelope(other.delete(f"/orders/{order_id}"), 404, "order not found")
        envelope(owner.delete(f"/orders/{NIL}"), 404, "order not found")
        envelope(owner.delete("/orders/not-a-uuid"), 404, "order not found")
        assert owner.order(order_id)["status"] == "live"


def test_order_detail_unknown_or_foreign(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    with (
        SignedClient(sb.base_url, sb.user(TRADER)) as owner,
        SignedClient(sb.base_url, sb.user(MAKER)) as other,
    ):
        order_id = owner.place({"market_id": m.id, "outcome": "a", "amount": 5})
        envelope(other.get(f"/orders/{order_id}"), 404, "order not found", "ORDER_NOT_FOUND")
        envelope(owner.get(f"/orders/{NIL}"), 404, "order not found", "ORDER_NOT_FOUND")


def test_market_unknown(client: SignedClient) -> None:
    envelope(client.get(f"/markets/{NIL}"), 404, "Market not found")
    envelope(client.get("/markets/nope"), 404, "Market not found")
    envelope(
        client.post("/orders", {"market_id": NIL, "outcome": "a", "amount": 5}),
        404,
        "Market not found",
    )


def test_event_unknown(client: SignedClient) -> None:
    envelope(client.get(f"/events/{NIL}"), 404, "Event not found")
    envelope(client.get("/events/no-such-slug"), 404, "Event not found")
    envelope(client.get(f"/events/{NIL}/markets"), 404, "Event not found")


def test_no_orderbook_is_200_with_success_false(client: SignedClient, sb: Sandbox) -> None:
    envelope(
        client.get(f"/orderbooks/{bookless_market(sb.engine).fx.token_id_a}"),
        200,
        "Order book not found",
    )
    envelope(client.get("/orderbooks/123456789"), 200, "Order book not found")


def raw(m: Any, **kw: Any) -> dict[str, Any]:
    body = {
        "market_id": m.id,
        "outcome": "a",
        "token_id": m.fx.token_id_a,
        "maker_amount": "5000000",
        "taker_amount": "10000000",
        "side": 0,
        "fee_rate_bps": m.fx.fee_rate_bps,
        "order_type": "GTC",
    }
    return body | kw


@pytest.mark.parametrize("salt", [str(10**12 + 1), "-1", "abc", 10**13])
def test_raw_salt_outside_range(client: SignedClient, sb: Sandbox, salt: object) -> None:
    m = book_market(sb.engine)
    envelope(
        client.post("/orders/raw", raw(m, salt=salt)),
        400,
        "invalid request body",
        "ORDER_INVALID_SALT",
    )


def test_raw_salt_bounds_are_accepted(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        for salt in ("0", str(10**12)):
            c.data("POST", "/orders/raw", raw(m, salt=salt, maker_amount="1000000"), expect=201)


@pytest.mark.parametrize("amount", ["-1", "1.5", "0x10", "", 1000000, None, "１２"])
def test_raw_maker_amount_not_a_non_negative_integer_string(
    client: SignedClient, sb: Sandbox, amount: object
) -> None:
    m = book_market(sb.engine)
    r = client.post("/orders/raw", raw(m, maker_amount=amount))
    envelope(r, 400, "invalid request body", "ORDER_INVALID_MAKER_AMOUNT")


@pytest.mark.parametrize("amount", ["-1", "2.0", "ten", " 5", 5.0, None])
def test_raw_taker_amount_not_a_non_negative_integer_string(
    client: SignedClient, sb: Sandbox, amount: object
) -> None:
    m = book_market(sb.engine)
    r = client.post("/orders/raw", raw(m, taker_amount=amount))
    envelope(r, 400, "invalid request body", "ORDER_INVALID_TAKER_AMOUNT")


def test_risk_control_breach(fresh: Any) -> None:
    sb: Sandbox = fresh({"risk": {"per_minute": 2, "daily": "100000"}})
    m = book_market(sb.engine)
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        for _ in range(2):
            c.place({"market_id": m.id, "outcome": "a", "amount": 2})
        r = c.post("/orders", {"market_id": m.id, "outcome": "a", "amount": 2})
        body = envelope(r, 500, r.json()["error"], "ORDER_FAILED_PLACE_BET")
        assert "minute" in body["detail"]
        r = c.post("/orders/raw", raw(m, maker_amount="1000000"))
        envelope(r, 500, r.json()["error"], "ORDER_FAILED_PLACE_BET")


def test_order_above_single_order_maximum_fails(fresh: Any) -> None:
    sb: Sandbox = fresh(
        {"users": [{"user_id": TRADER, "api_key": "k", "api_secret": "s", "balance": "80000"}]}
    )
    m = book_market(sb.engine)
    with SignedClient(sb.base_url, sb.users[0]) as c:
        r = c.post("/orders", {"market_id": m.id, "outcome": "a", "amount": "50000.01"})
        body = envelope(r, 500, r.json()["error"], "ORDER_FAILED_PLACE_BET")
        assert "50000" in body["detail"]
        assert c.data("GET", "/orders")["total_count"] == 0


def test_rate_limit_429_with_retry_after(fresh: Any) -> None:
    sb: Sandbox = fresh({"rate_limit_per_minute": 3})
    with (
        SignedClient(sb.base_url, sb.user(TRADER)) as c,
        SignedClient(sb.base_url, sb.user(MAKER)) as other,
    ):
        for _ in range(3):
            assert c.get("/wallet").status_code == 200
        r = c.get("/wallet")
        envelope(r, 429, "rate limit exceeded", "RATE_LIMITED")
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        assert other.get("/wallet").status_code == 200  # per key


def test_ip_not_whitelisted(fresh: Any) -> None:
    users = [
        {
            "user_id": TRADER,
            "api_key": "in",
            "api_secret": "s",
            "ip_whitelist": ["127.0.0.0/8", "::1"],
        },
        {
            "user_id": MAKER,
            "api_key": "out",
            "api_secret": "s",
            "ip_whitelist": ["10.1.2.3", "192.168.0.0/16"],
        },
    ]
    sb: Sandbox = fresh({"users": users})
    with (
        SignedClient(sb.base_url, sb.users[0]) as ok,
        SignedClient(sb.base_url, sb.users[1]) as blocked,
    ):
        assert ok.get("/wallet").status_code == 200
        envelope(blocked.get("/wallet"), 403, "forbidden: ip not whitelisted")


def test_unknown_route_and_method(client: SignedClient) -> None:
    envelope(client.get("/nothing-here"), 404, "not found")
    envelope(client.request("PUT", "/orders", {}), 405, "method not allowed")
