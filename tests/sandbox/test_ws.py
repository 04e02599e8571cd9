"""The WebSocket channel: signed handshake, topics, snapshots, order updates, refusals."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from clobkit import RequestSigner
from clobkit.sandbox import Sandbox, UserConfig

from .conftest import MAKER, TRADER, book_market
from .signed import PREFIX, SignedClient, dumps, loads


@contextmanager
def channel(sb: Sandbox, user: UserConfig, **headers: str) -> Iterator[ClientConnection]:
    signed = RequestSigner(user.api_key, user.api_secret).headers("GET", PREFIX + "/ws")
    signed.update(headers)
    with connect(sb.ws_url, additional_headers=signed, open_timeout=5) as ws:
        yield ws


def recv(ws: ClientConnection, timeout: float = 5) -> dict[str, Any]:
    message: dict[str, Any] = loads(ws.recv(timeout=timeout))
    return message


def until(ws: ClientConnection, pred: Any, timeout: float = 5) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        message = recv(ws, max(0.01, deadline - time.monotonic()))
        if pred(message):
            return message


def subscribe(ws: ClientConnection, *topics: str) -> dict[str, Any]:
    """The first refusal, or the ``subscribed`` answer (which always comes last)."""
    ws.send(dumps({"action": "subscribe", "topics": list(topics)}))
    first_error = None
    while True:
        message = until(ws, lambda m: m["type"] in ("subscribed", "error"))
        if message["type"] == "subscribed":
            return first_error or message
        first_error = first_error or message


def test_handshake_must_be_signed(sb: Sandbox) -> None:
    with pytest.raises(InvalidStatus) as info, connect(sb.ws_url, open_timeout=5):
        pass
    assert info.value.response.status_code == 401
    assert loads(bytes(info.value.response.body or b"{}"))["error"] == "unauthorized"
    user = sb.user(TRADER)
    bad = RequestSigner(user.api_key, "wrong").headers("GET", PREFIX + "/ws")
    with (
        pytest.raises(InvalidStatus) as info,
        connect(sb.ws_url, additional_headers=bad, open_timeout=5),
    ):
        pass
    assert info.value.response.status_code == 401


def test_book_topic_snapshot_then_updates(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    topic = f"market:{m.fx.token_id_a}:book"
    with channel(sb, sb.user(TRADER)) as ws, SignedClient(sb.base_url, sb.user(MAKER)) as c:
        assert subscribe(ws, topic) == {"type": "subscribed", "topics": [topic]}
        snapshot = recv(ws)
        assert snapshot["type"] == "snapshot"
        assert snapshot["topic"] == topic
        rest = c.data("GET", f"/orderbooks/{m.fx.token_id_a}")
        assert snapshot["data"]["bids"] == rest["bids"]
        assert snapshot["data"]["asks"] == rest["asks"]
        mid = Decimal(m.mid or 0) / 100
        c.place(
            {
                "market_id": m.id,
                "order_type": "GTC",
                "token_option": "yes",
                "limit_price": mid,
                "amount": 10,
            }
        )
        update = until(ws, lambda msg: msg["type"] == "data")
        assert update["topic"] == topic
        assert update["data"]["bids"][0]["price"] == f"{mid:.2f}"
        assert update["data"]["asset_id"] == m.fx.token_id_a


def test_price_topic(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    topic = f"market:{m.fx.token_id_b}:price"
    with channel(sb, sb.user(TRADER)) as ws:
        subscribe(ws, topic)
        snap = recv(ws)
        assert snap["type"] == "snapshot"
        assert set(snap["data"]) == {
            "asset_id",
            "market_id",
            "price",
            "best_bid",
            "best_ask",
            "last_trade_price",
            "timestamp",
        }
        assert snap["data"]["price"] == 1 - Decimal(m.mid or 0) / 100
        sb.set_price(m.id, "0.40")
        update = until(ws, lambda msg: msg["type"] == "data")
        assert update["data"]["price"] == Decimal("0.60")


def test_user_orders_topic_streams_every_status_and_fill(fresh: Any) -> None:
    sb: Sandbox = fresh()
    m = book_market(sb.engine)
    user = sb.user(TRADER)
    topic = f"user:{user.user_id}:orders"
    with channel(sb, user) as ws, SignedClient(sb.base_url, user) as c:
        assert subscribe(ws, topic)["topics"] == [topic]
        fok = c.place({"market_id": m.id, "outcome": "a", "amount": 10})
        statuses: list[str | None] = []
        while not statuses or statuses[-1] != "matched":
            msg = until(ws, lambda x: x["type"] == "data")
            assert msg["topic"] == topic
            assert msg["data"]["id"] == fok
            assert {"status", "size_matched", "amount"} <= set(msg["data"])
            statuses.append(msg["data"]["status"])
        assert statuses[:4] == ["pending", "signing", "submitted", "live"]
        limit = c.place(
            {
                "market_id": m.id,
                "order_type": "GTC",
                "token_option": "yes",
                "limit_price": "0.10",
                "amount": 5,
            }
        )
        until(
            ws,
            lambda x: (
                x["type"] == "data" and x["data"]["id"] == limit and x["data"]["status"] == "live"
            ),
        )
        sb.house_fill(limit, 20)
        fill = until(ws, lambda x: x["type"] == "data" and x["data"]["id"] == limit)
        assert fill["data"]["status"] == "live"
        assert fill["data"]["size_matched"] == 20
        sb.house_fill(limit, 30)
        done = until(ws, lambda x: x["type"] == "data" and x["data"]["id"] == limit)
        assert done["data"]["status"] == "matched"
        assert done["data"]["size_matched"] == 50
        ws.send(dumps({"action": "unsubscribe", "topics": [topic]}))
        assert until(ws, lambda x: x["type"] == "unsubscribed")["topics"] == [topic]


def test_refused_topics(sb: Sandbox) -> None:
    with channel(sb, sb.user(TRADER)) as ws:
        other = f"user:{MAKER}:orders"
        err = subscribe(ws, other)
        assert err["type"] == "error"
        assert err["topic"] == other
        assert "forbidden" in err["error"]
        assert subscribe(ws, "market:123:book")["error"] == "unknown token"
        assert subscribe(ws, "weather:today")["error"] == "unknown topic"
        ws.send("not json")
        assert recv(ws)["type"] == "error"
        ws.send(dumps({"action": "dance"}))
        assert recv(ws)["type"] == "error"
        ws.send(dumps({"action": "ping"}))
        assert recv(ws) == {"type": "pong"}


def test_scopes_apply_to_topics(fresh: Any) -> None:
    users = [{"user_id": TRADER, "api_key": "k", "api_secret": "s", "scopes": ["orders:write"]}]
    sb: Sandbox = fresh({"users": users})
    m = book_market(sb.engine)
    with channel(sb, sb.users[0]) as ws:
        assert (
            subscribe(ws, f"user:{TRADER}:orders")["error"]
            == "forbidden: missing scope orders:read"
        )
        assert (
            subscribe(ws, f"market:{m.fx.token_id_a}:book")["error"]
            == "forbidden: missing scope markets:read"
        )
