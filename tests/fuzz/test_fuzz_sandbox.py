"""Fuzzing the sandbox over loopback: HTTP (signed and unsigned) and the WebSocket.

Hypothesis drives arbitrary request lines, headers, queries and bodies (bytes
and near-valid JSON) at a running sandbox; every answer must be a 4xx (or a
200/201) in the JSON envelope, never a 500 other than the API's documented
risk refusal, never plain text, never a hang (each exchange has a 10 s
bound). The WebSocket gets arbitrary text and binary frames and must still
answer a ping. ``CLOBKIT_FUZZ_EXAMPLES`` (default 150) sets the examples per
test; CI keeps the default, a long run sets thousands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clobkit import RequestSigner
from clobkit.sandbox import Sandbox, serve_in_thread
from clobkit.sandbox.errors import RISK_CODE

pytestmark = pytest.mark.slow  # minutes of fuzzing; CI runs it, the fast loop does not

EXAMPLES = int(os.environ.get("CLOBKIT_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("CLOBKIT_FUZZ_EXAMPLES") is None,  # CI: the same cases each run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PREFIX = "/api/ext/v1"
TRADER = "00000000-0000-4000-8000-000000000001"
CONFIG = {
    "rate_limit_per_minute": None,
    "risk": None,
    "limits": {"max_body_bytes": 32 * 1024, "request_timeout_seconds": 5},
}


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with serve_in_thread(CONFIG) as sandbox:
        yield sandbox
        assert sandbox.engine.check_invariants() == []


def exchange(port: int, request: bytes) -> tuple[int, bytes, bytes]:
    """One request on its own connection: (status, head, body); fails on a 10 s silence."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with contextlib.suppress(OSError):  # refused mid-send (a 413 / 431): read the answer
            s.sendall(request)
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := s.recv(65536):
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), data[:200]
    return int(head.split()[1]), head, body


def check(status: int, head: bytes, body: bytes) -> None:
    """A JSON envelope; a 5xx only as the documented risk refusal or the connection cap."""
    assert b"content-type: application/json" in head.lower(), head
    payload = json.loads(body)
    assert isinstance(payload, dict), payload
    assert isinstance(payload.get("success"), bool) or "base_fee" in payload or "error" in payload
    if status >= 500:
        assert payload.get("code") == RISK_CODE, (status, payload)


def build(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    lines = [method + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    lines += [k + b": " + v for k, v in headers]
    if body:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


PATHS = [
    "/events",
    "/events/{id}",
    "/events/{id}/markets",
    "/markets",
    "/markets/{id}",
    "/orderbooks/{id}",
    "/orders",
    "/orders/raw",
    "/orders/{id}",
    "/wallet",
    "/portfolio/positions",
    "/portfolio/orders",
]
ADMIN = [
    "/admin/markets/{id}/settle",
    "/admin/markets/{id}/price",
    "/admin/orders/{id}/fill",
    "/admin/users/{id}/deposit",
    "/admin/users/{id}/balances",
    "/admin/invariants",
    "/fee-rate",
]
FIELDS = [
    "market_id",
    "outcome",
    "side",
    "amount",
    "shares",
    "order_type",
    "token_option",
    "limit_price",
    "take_profit_price",
    "stop_loss_price",
    "expiration",
    "token_id",
    "maker_amount",
    "taker_amount",
    "fee_rate_bps",
    "salt",
    "nonce",
    "client_order_id",
    "winner",
    "price",
    "bonus",
    "limit",
    "offset",
    "page",
    "page_size",
    "per_page",
    "q",
    "status",
    "sort_by",
    "league",
    "live",
    "ended",
    "token_id",
]
ORDER_FIELDS = FIELDS[:18]  # market_id ... client_order_id
ODD_NUMBERS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999999",
    "-1e999999",
    "1e-999999",
    "18446744073709551616",
    "-9223372036854775809",
    str(2**256),
    "0.0",
    "1.0",
    "-0",
    "0.005",
]
ODD_TEXT = ["", " ", " 5", "1_000", "\uff15", "GTC", "FOK", "GTD", "BUY", "SELL", "a", "b", "yes"]


def json_values() -> st.SearchStrategy[str]:
    """JSON text fragments: odd numbers raw, odd strings, containers, deep nesting."""
    scalars = st.one_of(
        st.sampled_from(ODD_NUMBERS),
        st.sampled_from(ODD_TEXT).map(json.dumps),
        st.sampled_from(ODD_NUMBERS).map(json.dumps),
        st.integers().map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.text(max_size=20).map(json.dumps),
        st.sampled_from(["true", "false", "null"]),
        st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
            st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4).map(
                lambda d: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in d.items()) + "}"
            ),
        ),
        max_leaves=8,
    )


def json_bodies() -> st.SearchStrategy[bytes]:
    objects = st.dictionaries(st.sampled_from(FIELDS), json_values(), max_size=8).map(
        lambda d: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in d.items()) + "}"
    )
    return st.one_of(objects, json_values()).map(str.encode) | st.binary(max_size=200)


ODD_VALUES = [
    *ODD_NUMBERS,
    *map(json.dumps, ODD_NUMBERS + ODD_TEXT),
    *["true", "false", "null", "[]", "{}", '"0"', '"1"', "0", "1", "-1", "2"],
]


def _active(sb: Sandbox) -> list[Any]:
    return [m for m in sb.engine.markets.values() if m.active and m.mid is not None][:4]


def _valid_order(m: Any, raw: bool) -> dict[str, str]:
    """JSON fragments of an order the route accepts (a small GTC BUY of outcome a)."""
    if raw:
        return {
            "market_id": json.dumps(m.id),
            "outcome": '"a"',
            "token_id": json.dumps(m.fx.token_id_a),
            "fee_rate_bps": str(m.fx.fee_rate_bps),
            "side": "0",
            "order_type": '"GTC"',
            "maker_amount": '"1000000"',
            "taker_amount": '"50000000"',
        }
    return {
        "market_id": json.dumps(m.id),
        "outcome": '"a"',
        "token_option": '"yes"',
        "order_type": '"GTC"',
        "amount": '"1"',
        "limit_price": '"0.02"',
    }


def _order_bytes(fields: dict[str, str]) -> bytes:
    return ("{" + ",".join(f'"{k}":{v}' for k, v in fields.items()) + "}").encode()


def near_valid_orders(sb: Sandbox, raw: bool) -> st.SearchStrategy[bytes]:
    """A valid order with one or two fields made hostile, so each reaches its own check."""
    markets = _active(sb)
    fuzzed = st.dictionaries(
        st.sampled_from(ORDER_FIELDS), st.sampled_from(ODD_VALUES), min_size=1, max_size=2
    )
    return st.builds(
        lambda m, extra: _order_bytes(_valid_order(m, raw) | extra),
        st.sampled_from(markets),
        fuzzed,
    )


def segments(sb: Sandbox) -> st.SearchStrategy[str]:
    market = next(iter(sb.engine.markets.values()))
    known = [market.id, market.fx.token_id_a, market.event.id, TRADER, "x", "..", "%00"]
    return st.one_of(
        st.sampled_from(known), st.text(max_size=30).map(lambda t: quote_from_bytes(t.encode()))
    )


def queries() -> st.SearchStrategy[str]:
    pair = st.tuples(st.sampled_from(FIELDS), st.one_of(st.sampled_from(ODD_NUMBERS + ODD_TEXT)))
    encoded = st.lists(pair, max_size=5).map(
        lambda ps: "&".join(f"{k}={quote_from_bytes(v.encode())}" for k, v in ps)
    )
    raw = st.binary(max_size=40).map(lambda b: quote_from_bytes(b, safe="=&"))
    return st.one_of(st.just(""), encoded, raw)


def fill(template: str, segment: str) -> str:
    return template.replace("{id}", segment)


@FUZZ
@given(
    method=st.sampled_from([b"GET", b"POST", b"DELETE", b"PUT", b"OPTIONS", b"HEAD", b"X"]),
    target=st.binary(min_size=1, max_size=80),
    headers=st.lists(
        st.tuples(
            st.sampled_from(
                [b"Content-Type", b"Origin", b"X-API-KEY", b"X-API-NONCE", b"Transfer-Encoding"]
            )
            | st.binary(min_size=1, max_size=10),
            st.binary(max_size=40),
        ),
        max_size=4,
    ),
    body=st.binary(max_size=300),
)
def test_raw_bytes_requests(
    sb: Sandbox, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """Anything on the wire: an answer in the envelope (h11 refusals included), never a hang."""
    status, head, payload = exchange(sb.port, build(method, b"/" + target, headers, body))
    if method == b"HEAD":
        return  # no body to read
    check(status, head, payload)


@FUZZ
@given(data=st.data(), body=json_bodies(), query=queries())
def test_unsigned_routes(sb: Sandbox, data: st.DataObject, body: bytes, query: str) -> None:
    template = data.draw(st.sampled_from([PREFIX + p for p in PATHS] + ADMIN))
    path = fill(template, data.draw(segments(sb)))
    method = data.draw(st.sampled_from([b"GET", b"POST", b"DELETE"]))
    kind = data.draw(st.sampled_from([b"application/json", b"text/plain", b""]))
    headers = [(b"Content-Type", kind)] if kind else []
    target = (path + ("?" + query if query else "")).encode()
    status, head, payload = exchange(sb.port, build(method, target, headers, body))
    check(status, head, payload)


@FUZZ
@given(data=st.data(), query=queries())
def test_signed_routes(sb: Sandbox, data: st.DataObject, query: str) -> None:
    """Correctly signed requests with hostile bodies and queries reach the handlers."""
    body = data.draw(json_bodies() | near_valid_orders(sb, raw=data.draw(st.booleans())))
    user = sb.user(TRADER)
    signer = RequestSigner(user.api_key, user.api_secret)
    template = data.draw(st.sampled_from(PATHS))
    path = PREFIX + fill(template, data.draw(segments(sb)))
    method = data.draw(st.sampled_from(["GET", "POST", "DELETE"]))
    if template.startswith("/orders") and body.startswith(b'{"market_id"'):
        path, method = PREFIX + data.draw(st.sampled_from(["/orders", "/orders/raw"])), "POST"
    target = path + ("?" + query if query else "")
    if method != "POST":
        body = b""
    signed = signer.headers(method, target, body)
    headers = [(k.encode(), v.encode()) for k, v in signed.items()]
    headers.append((b"Content-Type", b"application/json"))
    status, head, payload = exchange(
        sb.port, build(method.encode(), target.encode(), headers, body)
    )
    check(status, head, payload)
    assert status != 401, payload  # the signature itself is right


def _post_signed(sb: Sandbox, path: str, body: bytes) -> tuple[int, bytes, bytes]:
    user = sb.user(TRADER)
    signed = RequestSigner(user.api_key, user.api_secret).headers("POST", path, body)
    headers = [(k.encode(), v.encode()) for k, v in signed.items()]
    headers.append((b"Content-Type", b"application/json"))
    return exchange(sb.port, build(b"POST", path.encode(), headers, body))


def test_every_order_field_with_every_odd_value(sb: Sandbox) -> None:
    """Exhaustive where sampling would be thin: each field, each odd value, both routes."""
    sb.deposit(TRADER, "100000")  # the valid orders rest (0.02 USDC a share) and reserve cash
    for raw, path in ((False, PREFIX + "/orders"), (True, PREFIX + "/orders/raw")):
        for field in ORDER_FIELDS:
            for value in ODD_VALUES:
                body = _order_bytes(_valid_order(_active(sb)[1], raw) | {field: value})
                status, head, payload = _post_signed(sb, path, body)
                assert status != 401, payload
                assert status < 500 or RISK_CODE.encode() in payload, (field, value, payload)
                check(status, head, payload)


@FUZZ
@given(data=st.data())
def test_signed_orders(sb: Sandbox, data: st.DataObject) -> None:
    """Order bodies that pass the first checks, with one or two fields made hostile."""
    raw = data.draw(st.booleans())
    body = data.draw(near_valid_orders(sb, raw))
    status, head, payload = _post_signed(sb, PREFIX + ("/orders/raw" if raw else "/orders"), body)
    check(status, head, payload)
    assert status != 401, payload


@FUZZ
@given(data=st.data(), body=json_bodies())
def test_admin_routes(sb: Sandbox, data: st.DataObject, body: bytes) -> None:
    template = data.draw(st.sampled_from(ADMIN[:4]))
    path = fill(template, data.draw(segments(sb)))
    headers = [(b"Content-Type", b"application/json")]
    status, head, payload = exchange(sb.port, build(b"POST", path.encode(), headers, body))
    check(status, head, payload)


frames = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200),
    json_bodies().map(lambda b: b.decode("utf-8", "replace")),
    st.lists(
        st.sampled_from([*ODD_TEXT, "market:1:book", f"user:{TRADER}:orders"]), max_size=50
    ).map(lambda ts: json.dumps({"action": "subscribe", "topics": ts})),
    st.sampled_from(["subscribe", "unsubscribe", "ping", None, 5]).map(
        lambda a: json.dumps({"action": a, "topics": [f"user:{TRADER}:orders"] * 3})
    ),
)


@FUZZ
@given(batch=st.lists(frames, min_size=1, max_size=5))
def test_websocket_frames(sb: Sandbox, batch: list[Any]) -> None:
    """Arbitrary frames, then a ping: the connection still answers, or was closed cleanly."""
    user = sb.user(TRADER)

    async def run() -> None:
        headers = RequestSigner(user.api_key, user.api_secret).headers("GET", PREFIX + "/ws", b"")
        async with websockets.connect(sb.ws_url, additional_headers=headers) as ws:
            for frame in batch:
                await ws.send(frame)
            await ws.send(json.dumps({"action": "ping"}))
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert isinstance(message, dict)
                assert "type" in message
                if message["type"] == "pong":
                    return

    asyncio.run(run())


def test_the_watch_counter_is_back_to_zero(sb: Sandbox) -> None:
    """Every fuzzed WebSocket left; subscriptions and watches are all gone with them."""
    import time

    deadline = time.monotonic() + 10
    while sb.engine._watched and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sb.engine._watched == {}
    state = sb.app.state.sandbox
    assert state.hub.subscribers == {}
