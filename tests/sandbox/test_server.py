"""The sandbox as a real server (``server.py``, ``_http.py``, ``guard.py``, its routes) under
hostile input (issue 11): no way in, no crash, no exhaustion.

Each test here failed before its fix: forwarding headers let a local client
pick its whitelisted address, bodies and heads were unbounded, a 429 burned
its nonce, half-open connections lived for ever, duplicate WebSocket topics
leaked the watch counter, admin routes took cross-origin ``text/plain``, and
odd values answered 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets

from clobkit import RequestSigner, signature
from clobkit.sandbox import Sandbox, SandboxConfig, UserConfig
from clobkit.sandbox.auth import Authenticator
from clobkit.sandbox.errors import Rejected
from clobkit.sandbox.ws import Connection as _Connection

from ..conftest import loopback_http
from .conftest import MAKER, TRADER, Clock, book_market
from .signed import PREFIX, SignedClient, loads

WHITELISTED = "10.0.0.5"


def envelope(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.content[:300])
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body: dict[str, Any] = loads(r.content)
    assert body["success"] is False, body
    return body


def signed_headers(user: UserConfig, method: str, path: str, body: bytes = b"") -> dict[str, str]:
    return RequestSigner(user.api_key, user.api_secret).headers(method, path, body)


def raw_exchange(port: int, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection and read until the server closes it (or timeout)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


# -- forwarding headers and the IP whitelist ------------------------------------------------


def _whitelisted_config(**extra: Any) -> dict[str, Any]:
    user = {
        "user_id": TRADER,
        "api_key": "wl-key",
        "api_secret": "wl-secret",
        "ip_whitelist": [WHITELISTED],
    }
    return {"users": [user], **extra}


@pytest.mark.parametrize(
    "header",
    [
        {"X-Forwarded-For": WHITELISTED},
        {"X-Forwarded-For": f"{WHITELISTED}, 127.0.0.1"},
        {"X-Real-IP": WHITELISTED},
        {"Forwarded": f"for={WHITELISTED}"},
        {"Forwarded": f'for="{WHITELISTED}";proto=http'},
    ],
)
def test_forwarding_headers_do_not_pass_the_whitelist(fresh: Any, header: dict[str, str]) -> None:
    sb: Sandbox = fresh(_whitelisted_config())
    user = sb.user(TRADER)
    with loopback_http(base_url=sb.base_url) as http:
        h = signed_headers(user, "GET", PREFIX + "/wallet") | header
        r = http.get(PREFIX + "/wallet", headers=h)
    body = envelope(r, 403)
    assert body["error"] == "forbidden: ip not whitelisted"
    assert "127.0.0.1" in body["detail"]


def test_named_proxy_is_trusted_for_x_forwarded_for(fresh: Any) -> None:
    sb: Sandbox = fresh(_whitelisted_config(forwarded_allow_ips=["127.0.0.1"]))
    user = sb.user(TRADER)
    with loopback_http(base_url=sb.base_url) as http:
        h = signed_headers(user, "GET", PREFIX + "/wallet")
        assert http.get(PREFIX + "/wallet", headers=h | {"X-Forwarded-For": WHITELISTED}).is_success
        h = signed_headers(user, "GET", PREFIX + "/wallet")
        envelope(http.get(PREFIX + "/wallet", headers=h | {"X-Real-IP": WHITELISTED}), 403)


def test_forwarded_allow_ips_flag_reaches_the_config() -> None:
    from clobkit.sandbox.__main__ import build_config

    cfg = build_config(None, ["10.1.0.0/16", "127.0.0.1"])
    assert cfg.forwarded_allow_ips == ("10.1.0.0/16", "127.0.0.1")
    assert build_config(None, None).forwarded_allow_ips is None


# -- body and head sizes -----------------------------------------------------------------------


def test_body_over_the_limit_by_content_length(fresh: Any) -> None:
    sb: Sandbox = fresh({"limits": {"max_body_bytes": 1000}})
    big = b'{"x": "' + b"a" * 5000 + b'"}'
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        body = envelope(c.request("POST", "/orders", raw=big), 413)
        assert body["error"] == "request body too large"
        with loopback_http(base_url=sb.base_url) as http:  # unsigned and admin alike
            envelope(http.post(PREFIX + "/orders", content=big), 413)
            envelope(http.post(f"/admin/users/{TRADER}/deposit", content=big), 413)
        assert c.request("GET", "/wallet").status_code == 200  # the server carries on


def test_default_body_limit_refuses_megabytes(sb: Sandbox) -> None:
    with loopback_http(base_url=sb.base_url) as http:
        envelope(http.post(PREFIX + "/orders", content=b"x" * 2_000_000), 413)


def test_chunked_body_is_cut_off_while_streaming(fresh: Any) -> None:
    """No Content-Length: the 413 comes after the limit, long before the body would end."""
    sb: Sandbox = fresh({"limits": {"max_body_bytes": 10_000}})
    head = (
        f"POST {PREFIX}/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"%x\r\n%s\r\n" % (4096, b"a" * 4096)
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(head)
        answer = b""
        for _ in range(64):  # 256 KiB offered; the terminating chunk is never sent
            try:
                s.sendall(chunk)
            except OSError:
                break
            s.settimeout(0.05)
            try:
                answer += s.recv(65536)
            except TimeoutError:
                continue
            finally:
                s.settimeout(10)
            if answer:
                break
        while b"\r\n\r\n" in answer and not answer.rstrip().endswith(b"}"):
            more = s.recv(65536)
            if not more:
                break
            answer += more
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b'"error":"request body too large"' in answer


def test_oversized_head_answers_431_in_the_envelope(sb: Sandbox) -> None:
    with loopback_http(base_url=sb.base_url) as http:
        r = http.get(PREFIX + "/events", headers={"X-Padding": "a" * 40_000})
    assert envelope(r, 431)["error"] == "request header fields too large"


@pytest.mark.slow
def test_trickled_oversized_head_is_refused(sb: Sandbox) -> None:
    """A head arriving in pieces past h11's buffer bound: 400 in the envelope, connection closed."""
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        answer = b""
        with contextlib.suppress(OSError):  # the server may hang up while we still send
            for _ in range(40):
                s.sendall(b"X-Pad: " + b"a" * 1000 + b"\r\n")
                # Stop once the server has answered: bytes it never reads when it
                # closes make the kernel reset the connection, losing the answer.
                if select.select([s], [], [], 0.2)[0]:
                    break
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"application/json" in answer


# -- nonces --------------------------------------------------------------------------------------


def _sign_with_nonce(user: UserConfig, nonce: str, ts: str | None = None) -> dict[str, str]:
    ts = ts or str(time.time_ns() // 1_000_000)
    sig = signature(user.api_secret, "GET", PREFIX + "/wallet", ts, nonce, b"")
    return {
        "X-API-KEY": user.api_key,
        "X-API-TIMESTAMP": ts,
        "X-API-NONCE": nonce,
        "X-API-SIGNATURE": sig,
    }


@pytest.mark.parametrize(
    ("nonce", "ok"),
    [
        ("0123456789abcdef" * 2, True),
        ("n" * 64, True),
        ("n" * 65, False),
        ("n" * 100_00, False),
    ],
)
def test_nonce_is_bounded(sb: Sandbox, nonce: str, ok: bool) -> None:
    user = sb.user(MAKER)
    with loopback_http(base_url=sb.base_url) as http:
        r = http.get(PREFIX + "/wallet", headers=_sign_with_nonce(user, nonce))
    if ok:
        assert r.status_code == 200, r.content
    else:
        assert "X-API-NONCE" in envelope(r, 401)["detail"]


def test_a_429_does_not_burn_its_nonce() -> None:
    clock = Clock(time.time())
    cfg = SandboxConfig.from_dict({"rate_limit_per_minute": 1, "skew_seconds": 120})
    auth = Authenticator(cfg, clock=clock)
    user = cfg.users[0]

    def attempt(nonce: str, ts: str) -> UserConfig:
        sig = signature(user.api_secret, "GET", "/p", ts, nonce, b"")
        headers = {
            "x-api-key": user.api_key,
            "x-api-timestamp": ts,
            "x-api-nonce": nonce,
            "x-api-signature": sig,
        }
        return auth.authenticate(
            method="GET", path="/p", query="", headers=headers, body=b"", client_ip="127.0.0.1"
        )

    ts = str(round(clock() * 1000))
    attempt("a" * 32, ts)
    with pytest.raises(Rejected) as refused:
        attempt("b" * 32, ts)
    assert refused.value.status == 429
    clock.advance(61)  # the rate window has room again, the timestamp is still fresh
    assert attempt("b" * 32, ts) is user  # the very request refused with 429, resent
    with pytest.raises(Rejected) as replay:
        attempt("b" * 32, ts)
    assert replay.value.detail == "nonce already used"


# -- slow and idle clients -----------------------------------------------------------------------


def _closed_within(port: int, data: bytes, bound: float) -> bytes:
    start = time.monotonic()
    answer = raw_exchange(port, data, timeout=bound)
    assert time.monotonic() - start < bound
    return answer


@pytest.mark.parametrize(
    "data",
    [
        b"",  # connects and says nothing
        b"GET /api/ext/v1/events HTTP/1.1\r\nHost: x\r\n",  # half a head
        b"POST /admin/invariants HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",  # a body
    ],
    ids=["silent", "half-head", "half-body"],
)
def test_half_open_connections_are_closed(fresh: Any, data: bytes) -> None:
    sb: Sandbox = fresh({"limits": {"request_timeout_seconds": 0.5}})
    answer = _closed_within(sb.port, data, 15.0)
    assert b"200 OK" not in answer


def test_idle_keep_alive_connection_is_closed(fresh: Any) -> None:
    sb: Sandbox = fresh({"limits": {"keep_alive_seconds": 0.5, "request_timeout_seconds": 0.5}})
    answer = _closed_within(sb.port, b"GET /fee-rate HTTP/1.1\r\nHost: x\r\n\r\n", 15.0)
    assert answer.startswith(b"HTTP/1.1 400 ")  # answered, then dropped when idle


@pytest.mark.slow
def test_a_slow_but_steady_client_is_still_cut_at_the_deadline(fresh: Any) -> None:
    """Each byte resets no timer: the whole request must arrive within the deadline."""
    sb: Sandbox = fresh({"limits": {"request_timeout_seconds": 1.0}})
    start = time.monotonic()
    closed = False
    with socket.create_connection(("127.0.0.1", sb.port), timeout=15) as s:
        s.sendall(b"GET / HTTP/1.1\r\n")
        for _ in range(100):
            time.sleep(0.1)
            try:
                s.sendall(b"X: y\r\n")
            except OSError:
                closed = True
                break
        if not closed:
            s.settimeout(15)
            closed = s.recv(1024) == b""
    assert closed
    assert time.monotonic() - start < 15


def test_connection_cap_answers_503(fresh: Any) -> None:
    sb: Sandbox = fresh({"limits": {"max_connections": 2}})
    held = [socket.create_connection(("127.0.0.1", sb.port)) for _ in range(3)]
    try:
        deadline = time.monotonic() + 10  # until the server has registered the held ones
        answer = b""
        while not answer.startswith(b"HTTP/1.1 503 ") and time.monotonic() < deadline:
            request = b"GET /fee-rate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            answer = raw_exchange(sb.port, request)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:100]
    finally:
        for s in held:
            s.close()
    with loopback_http(base_url=sb.base_url) as http:  # room again once they are gone
        deadline = time.monotonic() + 10
        while http.get("/fee-rate").status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert http.get("/fee-rate").status_code == 400


# -- WebSocket -----------------------------------------------------------------------------------


def _ws_headers(user: UserConfig) -> dict[str, str]:
    return signed_headers(user, "GET", PREFIX + "/ws")


async def _session(sb: Sandbox, user: UserConfig) -> Any:
    return await websockets.connect(sb.ws_url, additional_headers=_ws_headers(user))


async def _until(ws: Any, kind: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if message["type"] == kind:
            return message


def _watchers(sb: Sandbox, user_id: str) -> int:
    return sb.engine._watched.get(user_id, 0)


def _wait_watchers(sb: Sandbox, user_id: str, expected: int) -> None:
    deadline = time.monotonic() + 10
    while _watchers(sb, user_id) != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _watchers(sb, user_id) == expected


def test_duplicate_user_topics_keep_the_watch_counter_exact(fresh: Any) -> None:
    sb: Sandbox = fresh()
    user = sb.user(TRADER)
    mine = f"user:{TRADER}:orders"

    async def run() -> None:
        async with await _session(sb, user) as ws:
            await ws.send(json.dumps({"action": "subscribe", "topics": [mine, mine, mine]}))
            assert (await _until(ws, "subscribed"))["topics"] == [mine]
            assert _watchers(sb, TRADER) == 1
            await ws.send(json.dumps({"action": "subscribe", "topics": [mine]}))
            assert (await _until(ws, "subscribed"))["topics"] == []
            assert _watchers(sb, TRADER) == 1
            await ws.send(json.dumps({"action": "unsubscribe", "topics": [mine, mine]}))
            assert (await _until(ws, "unsubscribed"))["topics"] == [mine]
            assert _watchers(sb, TRADER) == 0
            await ws.send(json.dumps({"action": "unsubscribe", "topics": [mine]}))
            assert (await _until(ws, "unsubscribed"))["topics"] == []
            assert _watchers(sb, TRADER) == 0
            await ws.send(json.dumps({"action": "subscribe", "topics": [mine, mine]}))
            await _until(ws, "subscribed")
            async with await _session(sb, user) as other:
                await other.send(json.dumps({"action": "subscribe", "topics": [mine] * 5}))
                await _until(other, "subscribed")
                assert _watchers(sb, TRADER) == 2
        # both dropped without unsubscribing

    asyncio.run(run())
    _wait_watchers(sb, TRADER, 0)


def test_topics_are_bounded_per_message_and_per_connection(fresh: Any) -> None:
    sb: Sandbox = fresh({"limits": {"ws_max_topics": 3}})
    tokens = [m.fx.token_id_a for m in list(sb.engine.markets.values())[:5]]
    topics = [f"market:{t}:price" for t in tokens]

    async def run() -> None:
        async with await _session(sb, sb.user(TRADER)) as ws:
            await ws.send(json.dumps({"action": "subscribe", "topics": [topics[0]] * 4}))
            assert "at most 3 topics per message" in (await _until(ws, "error"))["error"]
            await ws.send(json.dumps({"action": "subscribe", "topics": topics[:2]}))
            assert (await _until(ws, "subscribed"))["topics"] == topics[:2]
            await ws.send(json.dumps({"action": "subscribe", "topics": topics[1:4]}))
            refused = await _until(ws, "error")
            assert refused["topic"] == topics[3]
            assert "per connection" in refused["error"]
            assert (await _until(ws, "subscribed"))["topics"] == [topics[2]]
            await ws.send(json.dumps({"action": "ping"}))
            await _until(ws, "pong")

    asyncio.run(run())


def test_many_duplicate_topics_do_not_stall_the_server(fresh: Any) -> None:
    sb: Sandbox = fresh({"limits": {"ws_max_message_bytes": 64 * 1024 * 1024}})
    token = book_market(sb.engine).fx.token_id_a

    async def run() -> None:
        async with await _session(sb, sb.user(TRADER)) as ws:
            many = {"action": "subscribe", "topics": [f"market:{token}:book"] * 150_000}
            await ws.send(json.dumps(many))
            await _until(ws, "error")  # refused whole, before any work on the topics
            await ws.send(json.dumps({"action": "ping"}))
            await _until(ws, "pong")

    asyncio.run(run())


def test_deeply_nested_message_gets_an_error_not_a_crash(sb: Sandbox) -> None:
    async def run() -> None:
        async with await _session(sb, sb.user(TRADER)) as ws:
            await ws.send("[" * 1000 + "]" * 1000)
            assert "nested" in (await _until(ws, "error"))["error"]
            await ws.send('{"action": "subscribe", "topics": ' + "[" * 1000 + "]" * 1000 + "}")
            await _until(ws, "error")
            await ws.send(b"\xff\xfe binary")
            await _until(ws, "error")
            await ws.send(json.dumps({"action": "ping"}))
            await _until(ws, "pong")

    asyncio.run(run())


def test_slow_subscriber_queue_is_capped_in_bytes() -> None:
    """Many small messages or one big one: what counts is bytes queued, then the drop."""

    async def run() -> None:
        conn = _Connection(None, None, max_queue_bytes=10_000)  # type: ignore[arg-type]
        for _ in range(50):
            conn.send({"type": "data", "data": "x" * 100})
        assert 5_000 < conn.queued_bytes <= 10_000
        assert not conn.closing
        conn.send({"type": "data", "data": "x" * 20_000})
        assert conn.closing
        assert conn.queued_bytes == 0
        assert conn.queue.qsize() == 1
        assert conn.queue.get_nowait() is None
        big = _Connection(None, None, max_queue_bytes=10_000)
        big.send({"type": "data", "data": "x" * 20_000})  # one message over the cap
        assert big.closing

    asyncio.run(run())


async def _drain(ws: Any) -> None:
    """Read until the server closes (raises ConnectionClosed), at most 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        await asyncio.wait_for(ws.recv(), 10)


def test_subscriber_over_its_byte_cap_is_dropped(fresh: Any) -> None:
    """On the real server: a burst bigger than the cap (here, book snapshots) drops it, 1008."""
    sb: Sandbox = fresh({"limits": {"ws_max_queue_bytes": 20_000}})
    books = [f"market:{m.fx.token_id_a}:book" for m in sb.engine.markets.values() if m.mid]

    async def run() -> None:
        async with await _session(sb, sb.user(TRADER)) as ws:
            await ws.send(json.dumps({"action": "subscribe", "topics": books}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await _drain(ws)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 1008
        async with await _session(sb, sb.user(TRADER)) as ws:  # others are unaffected
            await ws.send(json.dumps({"action": "subscribe", "topics": books[:2]}))
            await _until(ws, "subscribed")

    asyncio.run(run())


# -- admin routes --------------------------------------------------------------------------------


@pytest.fixture
def admin_http(sb: Sandbox) -> Iterator[httpx.Client]:
    with loopback_http(base_url=sb.base_url) as http:
        yield http


def test_admin_refuses_text_plain(sb: Sandbox, admin_http: httpx.Client) -> None:
    before = sb.engine.balances(TRADER).cash
    r = admin_http.post(
        f"/admin/users/{TRADER}/deposit",
        content=b'{"amount": "100"}',
        headers={"Content-Type": "text/plain"},
    )
    envelope(r, 415)
    r = admin_http.post(f"/admin/users/{TRADER}/deposit", content=b'{"amount": "100"}')
    envelope(r, 415)  # no Content-Type at all
    assert sb.engine.balances(TRADER).cash == before


def test_admin_refuses_cross_origin(sb: Sandbox, admin_http: httpx.Client) -> None:
    before = sb.engine.balances(TRADER).cash
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{sb.port + 1}"):
        r = admin_http.post(
            f"/admin/users/{TRADER}/deposit", json={"amount": "1"}, headers={"Origin": origin}
        )
        assert envelope(r, 403)["error"] == "forbidden: cross-origin admin request"
        envelope(admin_http.get("/admin/invariants", headers={"Origin": origin}), 403)
    assert sb.engine.balances(TRADER).cash == before
    own = {"Origin": f"http://127.0.0.1:{sb.port}"}
    assert admin_http.get("/admin/invariants", headers=own).status_code == 200


def test_admin_refuses_a_host_that_is_not_loopback(sb: Sandbox, admin_http: httpx.Client) -> None:
    """DNS rebinding: a page of evil.example, its name rebound to 127.0.0.1, is
    same-origin to itself (no Origin on its GETs), but its Host names it."""
    before = sb.engine.balances(TRADER).cash
    for host in ("evil.example", f"evil.example:{sb.port}", "127.0.0.1.evil.example", "[::1"):
        r = admin_http.get("/admin/invariants", headers={"Host": host})
        assert envelope(r, 403)["error"] == "forbidden: admin routes answer a loopback Host only"
        r = admin_http.post(
            f"/admin/users/{TRADER}/deposit", json={"amount": "1"}, headers={"Host": host}
        )
        envelope(r, 403)
    assert sb.engine.balances(TRADER).cash == before
    for host in (
        "localhost",
        f"localhost:{sb.port}",
        f"127.0.0.1:{sb.port}",
        "[::1]:80",
        "127.0.0.2",
    ):
        assert admin_http.get("/admin/invariants", headers={"Host": host}).status_code == 200


def test_admin_token_when_configured(fresh: Any) -> None:
    sb: Sandbox = fresh({"admin_token": "s3cret-admin"})
    with loopback_http(base_url=sb.base_url) as http:
        envelope(http.get("/admin/invariants"), 401)
        envelope(http.get("/admin/invariants", headers={"X-Admin-Token": "wrong"}), 401)
        r = http.post(
            f"/admin/users/{TRADER}/deposit",
            json={"amount": "1"},
            headers={"X-Admin-Token": "s3cret-admin"},
        )
        assert r.status_code == 200, r.content
    assert sb.deposit(TRADER, "1").cash  # the Python helpers need no token


# -- values that answered 500 --------------------------------------------------------------------


DEEP = b'{"a": ' + b"[" * 1000 + b"]" * 1000 + b"}"


def test_deeply_nested_bodies_are_400(sb: Sandbox, client: SignedClient) -> None:
    for path in ("/orders", "/orders/raw"):
        body = envelope(client.request("POST", path, raw=DEEP), 400)
        assert "nested" in body["detail"]
    with loopback_http(base_url=sb.base_url) as http:
        r = http.post(
            f"/admin/users/{TRADER}/deposit",
            content=DEEP,
            headers={"Content-Type": "application/json"},
        )
        envelope(r, 400)


@pytest.mark.parametrize("side", ["0.0", "1.0", "1e0", "true"])
def test_raw_order_side_must_be_the_integer(sb: Sandbox, client: SignedClient, side: str) -> None:
    m = book_market(sb.engine)
    fields = {
        "market_id": m.id,
        "outcome": "a",
        "token_id": m.fx.token_id_a,
        "maker_amount": "5000000",
        "taker_amount": "10000000",
        "fee_rate_bps": m.fx.fee_rate_bps,
        "order_type": "GTC",
    }
    body = json.dumps(fields)[:-1].encode() + b', "side": ' + side.encode() + b"}"
    r = client.request("POST", "/orders/raw", raw=body)
    assert "side" in envelope(r, 400)["detail"]


@pytest.mark.parametrize(
    ("route", "field"),
    [("deposit", "amount"), ("fill", "shares"), ("price", "price")],
)
@pytest.mark.parametrize(
    "value",
    [
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e999999",
        b"-1e999999",
        b'"NaN"',
        b'"Infinity"',
        b'"sNaN"',
        b'"1e999999"',
        b'"\xef\xbc\x95"',  # full-width 5
        b'"1_000"',
        b'" 5"',
        b'"5 "',
        b'"5\\n"',
        b"[]",
        b"true",
    ],
)
def test_admin_amounts_refuse_odd_numbers(
    sb: Sandbox, admin_http: httpx.Client, route: str, field: str, value: bytes
) -> None:
    m = book_market(sb.engine, skip=1)
    with SignedClient(sb.base_url, sb.user(MAKER)) as maker:
        order = {
            "market_id": m.id,
            "outcome": "a",
            "order_type": "GTC",
            "token_option": "yes",
            "amount": 2,
            "limit_price": "0.02",
        }
        oid = maker.place(order) if route == "fill" else ""
    path = {
        "deposit": f"/admin/users/{TRADER}/deposit",
        "fill": f"/admin/orders/{oid}/fill",
        "price": f"/admin/markets/{m.id}/price",
    }[route]
    before = sb.engine.totals()
    raw = b'{"%s": %s}' % (field.encode(), value)
    r = admin_http.post(path, content=raw, headers={"Content-Type": "application/json"})
    envelope(r, 400)
    assert sb.engine.totals() == before
    if oid:
        with SignedClient(sb.base_url, sb.user(MAKER)) as maker:
            maker.delete(f"/orders/{oid}")


@pytest.mark.parametrize("amount", ['"\\uff15"', '"1_000"', '" 5"', '"5 "', '"NaN"', '"Infinity"'])
def test_order_amounts_refuse_odd_numbers(sb: Sandbox, client: SignedClient, amount: str) -> None:
    m = book_market(sb.engine)
    raw = f'{{"market_id": "{m.id}", "outcome": "a", "amount": {amount}}}'.encode()
    envelope(client.request("POST", "/orders", raw=raw), 400)


@pytest.mark.parametrize("bonus", ['"false"', '"true"', "0", "1", "null", "[]"])
def test_deposit_bonus_must_be_a_boolean(sb: Sandbox, admin_http: httpx.Client, bonus: str) -> None:
    before = sb.engine.balances(TRADER)
    raw = f'{{"amount": "7", "bonus": {bonus}}}'.encode()
    r = admin_http.post(
        f"/admin/users/{TRADER}/deposit", content=raw, headers={"Content-Type": "application/json"}
    )
    assert "bonus" in envelope(r, 400)["detail"]
    assert sb.engine.balances(TRADER) == before


def test_deposit_refuses_sub_unit_amounts(sb: Sandbox, admin_http: httpx.Client) -> None:
    before = sb.engine.balances(TRADER)
    r = admin_http.post(f"/admin/users/{TRADER}/deposit", json={"amount": "1.0000005"})
    envelope(r, 400)
    assert sb.engine.balances(TRADER) == before


@pytest.mark.parametrize(
    "target",
    [
        PREFIX.encode() + b"/events/",
        PREFIX.encode() + b"/wallet/",
        b"/fee-rate/",
        b"/admin/invariants/",
        PREFIX.encode() + b"/events?league=\xc3\xa9",
        PREFIX.encode() + b"/ev\xe9nts",
        b"/fee-rate?token_id=\xff",
        PREFIX.encode() + b"/events?league=%ff%fe",
    ],
)
def test_odd_targets_answer_in_the_envelope(sb: Sandbox, target: bytes) -> None:
    answer = raw_exchange(
        sb.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    assert 400 <= status < 500, head
    assert b"application/json" in head.lower()
    assert json.loads(body)["success"] is False
