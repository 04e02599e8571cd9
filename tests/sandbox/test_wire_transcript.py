"""The sandbox's wire bytes, pinned: a fixed sequence of requests and stream messages.

One deterministic session (a clock that stands still, since the hub renders
book and price messages when it runs, counted UUIDs and salts) against a
real sandbox on loopback: every endpoint, the admin routes, refusals, and the
WebSocket messages they cause. Each answer's status, headers (without
``date``) and body bytes are compared with ``data/wire_transcript.jsonl``,
recorded before the engine stopped returning view dicts, so a refactor of the
engine or the HTTP layer cannot change a byte on the wire unnoticed. After a
deliberate change of the API's shapes, rewrite the file with
``CLOBKIT_RECORD_TRANSCRIPT=1``.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from clobkit import RequestSigner
from clobkit.sandbox import Sandbox
from clobkit.sandbox.engine import MarketState

from ..conftest import loopback_http
from .conftest import MAKER, TRADER, Clock, book_market, bookless_market
from .signed import PREFIX, dumps

GOLDEN = Path(__file__).with_name("data") / "wire_transcript.jsonl"


class Session:
    """Signed requests at the fake clock's time; every answer is appended to ``lines``."""

    def __init__(self, sb: Sandbox, clock: Clock) -> None:
        self.sb = sb
        self.clock = clock
        self.http = loopback_http(base_url=sb.base_url, timeout=10)
        self.lines: list[str] = []
        self.nonces = itertools.count()

    def headers(self, user: str, method: str, url: str, content: bytes) -> dict[str, str]:
        u = self.sb.user(user)
        signer = RequestSigner(u.api_key, u.api_secret)
        return signer.headers(
            method,
            url,
            content,
            timestamp_ms=round(self.clock() * 1000),
            nonce=f"{next(self.nonces):032x}",
        )

    def record(self, label: str, r: httpx.Response) -> Any:
        kept = [(k, v) for k, v in r.headers.items() if k.lower() != "date"]
        self.lines.append(
            json.dumps({"at": label, "status": r.status_code, "headers": kept, "body": r.text})
        )
        return json.loads(r.content) if r.content else None

    def api(self, method: str, path: str, body: Any = None, *, user: str = TRADER) -> Any:
        url = PREFIX + path
        content = b"" if body is None else dumps(body)
        h = self.headers(user, method, url, content)
        if content:
            h["Content-Type"] = "application/json"
        return self.record(
            f"{method} {path}", self.http.request(method, url, content=content, headers=h)
        )

    def plain(self, method: str, path: str, body: Any = None) -> Any:
        content = b"" if body is None else dumps(body)
        h = {"Content-Type": "application/json"} if content else {}
        return self.record(
            f"{method} {path}", self.http.request(method, path, content=content, headers=h)
        )


def run_session(sb: Sandbox, clock: Clock) -> list[str]:
    s = Session(sb, clock)
    m = book_market(sb.engine)
    other = book_market(sb.engine, skip=1)
    bare = bookless_market(sb.engine)
    event = next(iter(sb.engine.events.values()))
    ws_url = PREFIX + "/ws"
    ws_headers = s.headers(TRADER, "GET", ws_url, b"")
    with connect(sb.ws_url, additional_headers=ws_headers, open_timeout=5) as ws:
        token_a, token_b = m.fx.token_id_a, m.fx.token_id_b
        topics = [f"user:{TRADER}:orders", f"market:{token_a}:book", f"market:{token_b}:price"]
        ws.send(dumps({"action": "subscribe", "topics": topics}))
        for _ in range(3):  # subscribed, then the book and price snapshots
            s.lines.append(json.dumps({"at": "ws", "text": ws.recv(timeout=5)}))
        _reads(s, m, bare, event)
        fok, limit, tp, resting = _placed(s, m, other)
        _lifecycle(s, m, fok, limit, tp, resting)
        _refusals(s, m, fok)
        _edge_paths(s)
        _ping(s, ws)
    return s.lines


def _reads(s: Session, m: MarketState, bare: MarketState, event: Any) -> None:
    """Events, markets, books, the wallet and fee rates read."""
    token_a, token_b = m.fx.token_id_a, m.fx.token_id_b
    s.api("GET", "/events?limit=2")
    s.api("GET", "/events?limit=2&offset=1&sort_by=volume&status=active")
    s.api("GET", f"/events/{event.id}")
    s.api("GET", f"/events/{event.slug}/markets")
    s.api("GET", "/markets?q=win&limit=3")
    s.api("GET", f"/markets/{m.id}")
    s.api("GET", f"/orderbooks/{token_a}")
    s.api("GET", f"/orderbooks/{token_b}")
    s.api("GET", f"/orderbooks/{bare.fx.token_id_a}")
    s.api("GET", "/wallet")
    s.plain("GET", f"/fee-rate?token_id={token_a}")
    s.plain("GET", "/fee-rate?token_id=1")


def _placed(s: Session, m: MarketState, other: MarketState) -> tuple[str, str, str, str]:
    """A FOK, two limit orders and a raw order (sent twice, then with a bad salt): their ids."""
    token_b = m.fx.token_id_b
    fok = s.api("POST", "/orders", {"market_id": m.id, "outcome": "a", "amount": 25})
    limit = s.api(
        "POST",
        "/orders",
        {
            "market_id": m.id,
            "order_type": "GTC",
            "token_option": "no",
            "limit_price": "0.05",
            "amount": 5,
        },
    )
    tp = s.api(
        "POST",
        "/orders",
        {
            "market_id": other.id,
            "order_type": "GTC",
            "token_option": "yes",
            "limit_price": "0.03",
            "amount": 3,
        },
    )
    raw = {
        "market_id": m.id,
        "outcome": "b",
        "token_id": token_b,
        "maker_amount": "1500000",
        "taker_amount": "30000000",
        "side": 0,
        "fee_rate_bps": m.fx.fee_rate_bps,
        "order_type": "GTC",
        "salt": "424242",
        "client_order_id": "mm-0001",
    }
    placed = s.api("POST", "/orders/raw", raw)
    s.api("POST", "/orders/raw", raw)  # the same client_order_id: the same order
    s.api("POST", "/orders/raw", dict(raw, salt="x"))
    ids = [o["data"]["order_id"] for o in (fok, limit, tp, placed)]
    return ids[0], ids[1], ids[2], ids[3]


def _lifecycle(s: Session, m: MarketState, fok: str, limit: str, tp: str, resting: str) -> None:
    """The orders listed, filled, repriced, cancelled, settled and read back."""
    token_a = m.fx.token_id_a
    s.api("GET", "/orders")
    s.api("GET", "/orders?status=live&page_size=2")
    s.api("GET", f"/orders/{fok}")
    s.plain("POST", f"/admin/orders/{resting}/fill", {"shares": "7.5"})
    s.api("GET", f"/orders/{resting}")
    s.plain("POST", f"/admin/markets/{m.id}/price", {"price": "0.40"})
    s.api("GET", f"/orderbooks/{token_a}")
    s.api("DELETE", f"/orders/{limit}")
    s.api("DELETE", f"/orders/{limit}")
    s.api("DELETE", f"/orders/{uuid.UUID(int=7)}")
    s.api("GET", "/portfolio/positions")
    s.api("GET", "/portfolio/orders?side=BUY&per_page=2")
    s.plain("POST", f"/admin/users/{TRADER}/deposit", {"amount": "12.5"})
    s.plain("GET", f"/admin/users/{TRADER}/balances")
    s.plain("POST", f"/admin/markets/{m.id}/settle", {"winner": "b"})
    s.plain("POST", f"/admin/markets/{m.id}/settle", {"winner": "b"})
    s.api("GET", f"/orders/{resting}")
    s.api("GET", f"/orders/{tp}")
    s.api("GET", "/portfolio/positions?per_page=1&page=2")
    s.api("GET", f"/markets/{m.id}")
    s.plain("GET", "/admin/invariants")


def _refusals(s: Session, m: MarketState, fok: str) -> None:
    """Requests the service refuses: bad queries, unknown paths, another user's order."""
    s.api("GET", "/events?limit=0")
    s.api("GET", "/events?live=maybe")
    s.api("GET", "/markets")
    s.api("GET", "/nowhere")
    s.api("GET", f"/orders/{fok}", user=MAKER)
    s.api("POST", "/orders", {"market_id": m.id})
    s.api("POST", "/orders", [1])
    s.plain("GET", PREFIX + "/orders")
    s.plain("DELETE", PREFIX + "/events")


def _edge_paths(s: Session) -> None:
    """Paths at the edges of the routes ({id} is one non-empty segment)."""
    s.api("GET", "/orders/raw")
    s.api("DELETE", "/orders/raw")
    s.api("PUT", "/orders/raw")
    s.api("GET", "/orders/")
    s.api("GET", "/orderbooks/")
    s.api("GET", "/orders//x")
    s.api("GET", "/events/x/markets")
    s.api("HEAD", "/orders")
    s.api("GET", "/orders?page=0")


def _ping(s: Session, ws: ClientConnection) -> None:
    """A ping, and every frame up to its pong."""
    ws.send(dumps({"action": "ping"}))
    while True:
        text = ws.recv(timeout=5)
        s.lines.append(json.dumps({"at": "ws", "text": text}))
        if json.loads(text).get("type") == "pong":
            break


def test_the_wire_bytes_of_a_session_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = itertools.count(1)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(counter), version=4))
    salts = itertools.count(1000)
    for module in ("house", "parse"):
        monkeypatch.setattr(f"clobkit.sandbox.{module}.new_salt", lambda: next(salts))
    clock = Clock()
    with Sandbox({"walk": None}, clock=clock) as sb:  # a still book: the same bytes
        lines = run_session(sb, clock)
    if os.environ.get("CLOBKIT_RECORD_TRANSCRIPT"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text("\n".join(lines) + "\n")
    expected = GOLDEN.read_text().splitlines()
    assert len(lines) == len(expected)
    for got, want in zip(lines, expected, strict=True):
        assert got == want
