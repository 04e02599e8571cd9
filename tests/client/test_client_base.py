"""The sans-I/O core: signing, envelopes, error mapping, retry policy, validation."""

from __future__ import annotations

import inspect
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import msgspec
import pytest

from clobkit import AsyncClient, Client, OrderHasher, errors, verify_signature
from clobkit.client import _decode as shapes
from clobkit.client._config import ClientConfig
from clobkit.client._core import ClientCore
from clobkit.client._errors import api_error, retry_after_seconds
from clobkit.client._ops import NEVER, SAFE, Call, Gather, Receive, Send, Sleep
from clobkit.client._validate import RawOrderSpec
from clobkit.client._wire import Outgoing
from clobkit.models import CancelResult, StreamMessage, WalletInfo

from .conftest import DROP, KEY, MARKET_ID, SECRET, TOKEN_A, TOKEN_B, WALLET, FakeApi, fail, ok


def make_core(**settings: Any) -> ClientCore:
    config, signer = ClientConfig.resolve(
        "http://api.test", KEY, SECRET, clob_url="http://clob.test", **settings
    )
    core = ClientCore(config, signer)
    core.random = lambda: 1.0  # deterministic jitter: the top of the range
    return core


def drive(op: Any, answers: list[Any]) -> tuple[Any, list[Any]]:
    """Run an operation by hand: answer each Send from ``answers``; record every effect."""
    effects: list[Any] = []
    try:
        effect = op.send(None)
        while True:
            effects.append(effect)
            if isinstance(effect, Send):
                result = answers.pop(0)
            elif isinstance(effect, Sleep):
                result = None
            else:
                result = [drive(sub, answers)[0] for sub in effect.operations]
            effect = op.send(result)
    except StopIteration as stop:
        return stop.value, effects


def seen(outgoing: Outgoing) -> httpx.Request:
    """``outgoing`` as httpx reads it: an oracle of its URL, query and headers."""
    return httpx.Request(
        outgoing.method, outgoing.url, headers=outgoing.headers, content=outgoing.body
    )


def seen_build(core: ClientCore, call: Call) -> httpx.Request:
    return seen(core.build_outgoing(call))


def verify(request: httpx.Request) -> bool:
    h = request.headers
    return verify_signature(
        SECRET,
        request.method,
        request.url.raw_path.decode(),
        h["X-API-TIMESTAMP"],
        h["X-API-NONCE"],
        request.content,
        h["X-API-SIGNATURE"],
    )


# ---------------------------------------------------------------------------
# Request building


def test_get_is_signed_over_raw_path_with_query() -> None:
    core = make_core()
    call = Call(
        "GET",
        "/api/ext/v1/events",
        {"live": True, "limit": 5, "league": None},
        b"",
        shapes.EVENTS,
        SAFE,
    )
    request = seen_build(core, call)
    assert request.url.raw_path == b"/api/ext/v1/events?live=true&limit=5"
    assert request.content == b""
    assert "Content-Type" not in request.headers
    assert request.headers["X-API-KEY"] == KEY
    assert len(request.headers["X-API-NONCE"]) == 32
    assert verify(request)
    # the signature covers the query: the bare path does not verify
    h = request.headers
    assert not verify_signature(
        SECRET,
        "GET",
        "/api/ext/v1/events",
        h["X-API-TIMESTAMP"],
        h["X-API-NONCE"],
        b"",
        h["X-API-SIGNATURE"],
    )


def test_sign_query_false_signs_bare_path() -> None:
    core = make_core(sign_query=False)
    request = seen_build(
        core, Call("GET", "/api/ext/v1/orders", {"page": 2}, b"", shapes.ORDERS, SAFE)
    )
    h = request.headers
    assert verify_signature(
        SECRET,
        "GET",
        "/api/ext/v1/orders",
        h["X-API-TIMESTAMP"],
        h["X-API-NONCE"],
        b"",
        h["X-API-SIGNATURE"],
    )


def test_post_body_is_the_signed_compact_bytes() -> None:
    core = make_core()
    body = core.order_body(
        MARKET_ID,
        side="BUY",
        outcome="a",
        amount="12.50",
        shares=None,
        order_type="FOK",
        limit_price=None,
        token_option=None,
        expiration=None,
        take_profit_price=0.9,
        stop_loss_price="0.2",
    )
    assert body == (
        b'{"market_id":"' + MARKET_ID.encode() + b'","outcome":"a","amount":12.5,"side":"BUY",'
        b'"order_type":"FOK","take_profit_price":0.9,"stop_loss_price":0.2}'
    )
    request = seen_build(core, Call("POST", "/api/ext/v1/orders", None, body, shapes.PLACED, NEVER))
    assert request.content == body
    assert request.headers["Content-Type"] == "application/json"
    assert verify(request)


def test_path_segments_are_percent_encoded_and_signed_as_sent() -> None:
    core = make_core()
    op = core.get_event("a slug/with?odd chars")
    send = next(op)
    assert isinstance(send, Send)
    request = seen(send.request)
    assert request.url.raw_path == b"/api/ext/v1/events/a%20slug%2Fwith%3Fodd%20chars"
    assert verify(request)


def test_base_url_with_prefix_is_kept_in_the_signed_path() -> None:
    config, signer = ClientConfig.resolve("http://gw.test/prefix/", KEY, SECRET)
    core = ClientCore(config, signer)
    send = next(core.get_wallet())
    assert isinstance(send, Send)
    request = seen(send.request)
    assert request.url.raw_path == b"/prefix/api/ext/v1/wallet"
    assert verify(request)


@pytest.mark.parametrize(
    ("base", "path"),
    [
        ("http://api.test/api/ext/v1", b"/api/ext/v1/wallet"),
        ("http://api.test/api/ext/v1/", b"/api/ext/v1/wallet"),
        ("http://gw.test/prefix/api/ext/v1", b"/prefix/api/ext/v1/wallet"),
    ],
)
def test_base_url_ending_in_the_api_path_is_taken_without_it(base: str, path: bytes) -> None:
    config, signer = ClientConfig.resolve(base, KEY, SECRET)
    assert not config.base_url.endswith("/api/ext/v1")
    send = next(ClientCore(config, signer).get_wallet())
    assert isinstance(send, Send)
    request = seen(send.request)
    assert request.url.raw_path == path
    assert verify(request)


def test_fee_rate_query_is_unsigned_and_goes_to_clob_url() -> None:
    core = make_core()
    fee, effects = drive(core.fee_rate(TOKEN_A), [httpx.Response(200, json={"base_fee": 25})])
    assert fee == 25
    request = seen(effects[0].request)
    assert str(request.url) == f"http://clob.test/fee-rate?token_id={TOKEN_A}"
    assert "X-API-SIGNATURE" not in request.headers


# ---------------------------------------------------------------------------
# Configuration and secrets


def test_config_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOBKIT_BASE_URL", "https://api.example/")
    monkeypatch.setenv("CLOBKIT_API_KEY", "env-key")
    monkeypatch.setenv("CLOBKIT_API_SECRET", "env-secret")
    monkeypatch.setenv("CLOBKIT_CLOB_URL", "https://clob.example")
    client = Client()
    try:
        assert client.config.base_url == "https://api.example"
        assert client.config.api_key == "env-key"
        assert client.config.clob_url == "https://clob.example"
        assert client.config.ws_url == "wss://api.example/api/ext/v1/ws"
        assert "env-secret" not in repr(client)
        assert "env-secret" not in repr(client.config)
    finally:
        client.close()


def test_clob_url_defaults_to_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLOBKIT_CLOB_URL", raising=False)
    config, _ = ClientConfig.resolve("http://h:1", KEY, SECRET)
    assert config.clob_url == "http://h:1"
    assert config.ws_url == "ws://h:1/api/ext/v1/ws"


def test_missing_credentials_fail_without_leaking(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CLOBKIT_BASE_URL", "CLOBKIT_API_KEY", "CLOBKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(errors.ValidationError, match="base_url"):
        Client()
    with pytest.raises(errors.SignatureInputError, match="api_key"):
        Client("http://h")
    with pytest.raises(errors.SignatureInputError, match="api_secret"):
        Client("http://h", "k")
    with pytest.raises(errors.ValidationError, match="base_url"):
        Client("ftp://h", "k", "s")
    with pytest.raises(errors.ValidationError, match="max_retries"):
        Client("http://h", "k", "s", max_retries=-1)


def test_secret_never_in_repr_logs_or_errors(
    fake: FakeApi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.on("GET", "/api/ext/v1/orders/x", fail(401, "unauthorized"))
    fake.on("GET", "/api/ext/v1/events", DROP, fail(503, "down"), ok([]))
    client = Client(fake.url, KEY, SECRET, backoff=0.001)
    texts = [repr(client), repr(client._core), repr(client._core.signer), repr(client.config)]
    with pytest.raises(errors.AuthenticationError) as info:
        client.get_order("x")
    texts += [str(info.value), repr(info.value)]
    client.list_events()
    with pytest.raises(errors.AmountError) as bad:
        client.place_order(MARKET_ID, outcome="a", amount=-1)
    texts += [str(bad.value), repr(bad.value), repr(client.stream(["t"]))]
    texts += [record.getMessage() for record in caplog.records]
    assert any("retrying" in t for t in texts)
    for text in texts:
        assert SECRET not in text
    client.close()


# ---------------------------------------------------------------------------
# Envelopes and errors


@pytest.mark.parametrize(
    ("status", "error", "code", "cls"),
    [
        (400, "invalid request body", None, errors.InvalidRequest),
        (400, "insufficient balance", None, errors.InsufficientBalance),
        (401, "unauthorized", None, errors.AuthenticationError),
        (403, "forbidden: missing scope orders:write", None, errors.PermissionDenied),
        (403, "forbidden: ip not whitelisted", None, errors.PermissionDenied),
        (404, "order not found", "ORDER_NOT_FOUND", errors.NotFound),
        (404, "Market not found", None, errors.NotFound),
        (404, "Event not found", None, errors.NotFound),
        (200, "Order book not found", None, errors.OrderBookNotFound),
        (429, "rate limit exceeded", None, errors.RateLimited),
        (500, "risk", "ORDER_FAILED_PLACE_BET", errors.RiskControlError),
        (500, "internal error", None, errors.ServerError),
        (502, "bad gateway", None, errors.ServerError),
        (400, "bad salt", "ORDER_INVALID_SALT", errors.InvalidRequest),
        (200, "bad maker", "ORDER_INVALID_MAKER_AMOUNT", errors.InvalidRequest),
        (422, "unprocessable", None, errors.InvalidRequest),
    ],
)
def test_error_classes(status: int, error: str, code: str | None, cls: type[Exception]) -> None:
    core = make_core()
    call = Call("GET", "/api/ext/v1/x", None, b"", shapes.ORDER, NEVER)
    with pytest.raises(cls) as info:
        core.parse(call, fail(status, error, code))
    exc = info.value
    assert type(exc) is cls
    assert isinstance(exc, errors.ApiError)
    assert (exc.status, exc.code, exc.message) == (status, code, error)


def test_permission_denied_names_the_scope() -> None:
    exc = api_error(403, "forbidden: missing scope portfolio:read")
    assert isinstance(exc, errors.PermissionDenied)
    assert exc.scope == "portfolio:read"


def test_rate_limited_carries_retry_after() -> None:
    core = make_core()
    call = Call("GET", "/api/ext/v1/x", None, b"", shapes.ORDER, NEVER)
    with pytest.raises(errors.RateLimited) as info:
        core.parse(call, fail(429, "too many requests", **{"Retry-After": "3"}))
    assert info.value.retry_after == 3.0


def test_retry_after_forms() -> None:
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("1.5") == 1.5
    assert retry_after_seconds("-4") == 0.0
    assert retry_after_seconds("soon") is None
    later = datetime.now(UTC) + timedelta(seconds=30)
    seconds = retry_after_seconds(later.strftime("%a, %d %b %Y %H:%M:%S GMT"))
    assert seconds is not None
    assert 25 < seconds <= 31


def test_non_json_error_bodies() -> None:
    core = make_core()
    call = Call("GET", "/api/ext/v1/x", None, b"", shapes.ORDER, NEVER)
    with pytest.raises(errors.ServerError, match="Bad Gateway"):
        core.parse(call, httpx.Response(502, text="<html>Bad Gateway</html>"))
    with pytest.raises(errors.ServerError, match="not JSON"):
        core.parse(call, httpx.Response(200, text="hello"))
    with pytest.raises(errors.AuthenticationError):
        core.parse(call, httpx.Response(401, json={"detail": "nope"}))
    with pytest.raises(errors.ServerError, match="without data"):
        core.parse(call, httpx.Response(200, json={"success": True}))


def test_cancel_guide_shape_success_alone() -> None:
    core = make_core()
    result, _ = drive(core.cancel_order("o-9"), [httpx.Response(200, json={"success": True})])
    assert result == CancelResult(order_id="o-9", status="cancelled")
    result, _ = drive(core.cancel_order("o-9"), [ok({"order_id": "o-9", "status": "cancelled"})])
    assert result.status == "cancelled"


def test_slow_path_tolerates_odd_fields() -> None:
    core = make_core()
    answer = ok({"order": {"id": "o", "created_at": 1735689600000, "amount": [], "status": "live"}})
    order, _ = drive(core.get_order("o"), [answer])
    assert order.status == "live"
    assert order.amount is None
    assert order.created_at == datetime(2025, 1, 1, tzinfo=UTC)
    direct, _ = drive(core.get_order("o"), [ok({"id": "o", "status": "live"})])
    assert direct.id == "o"  # ``data`` holding the order itself, without the ``order`` key


# ---------------------------------------------------------------------------
# Retry policy


def test_get_retries_5xx_and_transport_errors_with_capped_backoff() -> None:
    core = make_core(max_retries=4, backoff=0.1, backoff_cap=0.3)
    answers = [
        fail(503, "down"),
        errors.TransportError("refused"),
        errors.TimeoutError("slow"),
        fail(500, "boom"),
        ok({"order": {"id": "o"}}),
    ]
    order, effects = drive(core.get_order("o"), answers)
    assert order.id == "o"
    sleeps = [e.seconds for e in effects if isinstance(e, Sleep)]
    assert sleeps == [0.1, 0.2, 0.3, 0.3]  # doubling, capped (jitter pinned at its top)
    nonces = {seen(e.request).headers["X-API-NONCE"] for e in effects if isinstance(e, Send)}
    assert len(nonces) == 5  # every attempt is signed afresh


def test_jitter_spreads_between_half_and_full_delay() -> None:
    core = make_core(backoff=1.0, backoff_cap=10.0)
    core.random = lambda: 0.0
    call = Call("GET", "/x", None, b"", None, SAFE)
    assert core.retry_delay(call, 2, errors.TransportError("x")) == 2.0
    core.random = lambda: 1.0
    assert core.retry_delay(call, 2, errors.TransportError("x")) == 4.0


def test_get_gives_up_after_max_retries() -> None:
    core = make_core(max_retries=2)
    with pytest.raises(errors.ServerError):
        drive(core.get_order("o"), [fail(503, "down")] * 3)
    with pytest.raises(errors.TimeoutError):
        drive(core.get_order("o"), [errors.TimeoutError("t")] * 3)
    with pytest.raises(errors.TransportError):
        drive(core.get_order("o"), [errors.TransportError("eof")] * 3)


def test_429_honours_retry_after() -> None:
    core = make_core(backoff=0.5)
    core.random = lambda: 0.0
    answers = [fail(429, "slow down", **{"Retry-After": "2"}), ok({"order": {"id": "o"}})]
    _, effects = drive(core.get_order("o"), answers)
    assert [e.seconds for e in effects if isinstance(e, Sleep)] == [2.0]


def test_429_with_long_retry_after_is_raised() -> None:
    core = make_core(max_retry_after=5)
    with pytest.raises(errors.RateLimited) as info:
        drive(core.get_order("o"), [fail(429, "later", **{"Retry-After": "60"})])
    assert info.value.retry_after == 60


def test_wait_for_order_polls_on_the_core_clock() -> None:
    """Waiting is an operation of the core: its sleeps and deadline follow the
    clock hook, so a fake clock gives exact, machine-independent timings."""
    core = make_core()
    now = [100.0]
    core.clock = lambda: now[0]
    op = core.wait_for_order("o", "matched", 1.0, 0.3, lambda order: None)
    sleeps: list[float] = []
    reads = 0

    def run() -> None:
        nonlocal reads
        effect = op.send(None)
        while True:
            if isinstance(effect, Sleep):
                sleeps.append(effect.seconds)
                now[0] += effect.seconds
                effect = op.send(None)
            else:
                assert isinstance(effect, Send)
                reads += 1
                effect = op.send(ok({"order": {"id": "o", "status": "live"}}))

    with pytest.raises(errors.TimeoutError, match="did not reach matched"):
        run()
    assert sleeps == pytest.approx([0.3, 0.3, 0.3, 0.1])
    assert reads == 5  # the first read, then one after each sleep


def test_wait_for_order_reads_again_on_stream_news() -> None:
    core = make_core()
    now = [0.0]
    core.clock = lambda: now[0]

    class Feed:
        inbox = "the shell's queue"
        closed = False
        closes = 0

        def close(self) -> None:
            Feed.closes += 1

    op = core.wait_for_order("o", None, 30.0, 0.5, lambda order: Feed())  # type: ignore[arg-type,return-value]
    live = ok({"order": {"id": "o", "user_id": "u", "status": "live"}})
    assert isinstance(op.send(None), Send)  # the first read
    assert isinstance(op.send(live), Send)  # read again once listening
    receive = op.send(live)
    assert isinstance(receive, Receive)
    assert (receive.inbox, receive.seconds) == ("the shell's queue", 5.0)
    other = StreamMessage(type="data", data={"id": "x"})
    assert isinstance(op.send(other), Receive)  # another order's news: keep listening
    assert isinstance(op.send(None), Send)  # nothing came in time: read again
    assert isinstance(op.send(live), Receive)
    assert isinstance(op.send(StreamMessage(type="data", data={"id": "o"})), Send)
    with pytest.raises(StopIteration) as done:
        op.send(ok({"order": {"id": "o", "status": "cancelled"}}))
    assert done.value.value.status == "cancelled"
    assert Feed.closes == 1  # the listener is removed


def test_client_errors_are_not_retried() -> None:
    core = make_core()
    for answer, cls in [
        (fail(404, "order not found", "ORDER_NOT_FOUND"), errors.NotFound),
        (fail(401, "unauthorized"), errors.AuthenticationError),
        (fail(400, "invalid request body"), errors.InvalidRequest),
    ]:
        op = core.get_order("o")
        with pytest.raises(cls):
            drive(op, [answer, ok({"order": {"id": "o"}})])


def test_place_order_is_never_retried() -> None:
    core = make_core()
    for answer in (
        fail(503, "down"),
        fail(429, "slow", **{"Retry-After": "0"}),
        errors.TransportError("x"),
    ):
        op = core.place_order(MARKET_ID, outcome="a", amount=5)
        with pytest.raises((errors.ApiError, errors.TransportError)):
            drive(op, [answer, ok({"order_id": "o"}, 201)])


def warm(core: ClientCore) -> None:
    from clobkit.client._endpoints import MarketInfo

    core.wallet = msgspec.convert(WALLET, WalletInfo)
    core.hasher = OrderHasher(core.wallet)
    core.markets[MARKET_ID] = MarketInfo(TOKEN_A, TOKEN_B, False)
    core.fee_rates[TOKEN_A] = (0, core.clock() + 60)
    core.fee_rates[TOKEN_B] = (0, core.clock() + 60)


def raw_spec(*args: Any, **kwargs: Any) -> RawOrderSpec:
    """The ``RawOrderSpec`` of ``place_raw_order(*args, **kwargs)`` (its public signature)."""
    bound = inspect.signature(Client.place_raw_order).bind(None, *args, **kwargs)
    asked = {k: v for k, v in bound.arguments.items() if k not in ("self", "signer")}
    return RawOrderSpec(**asked)


def test_the_raw_order_spec_is_the_signature_of_its_methods() -> None:
    """A parameter of ``place_raw_order`` / ``prepare_raw_order`` (but ``signer``) is a
    field of ``RawOrderSpec`` with the same default, in the same order."""
    fields = [(name, p.default) for name, p in inspect.signature(RawOrderSpec).parameters.items()]
    for cls in (Client, AsyncClient):
        for method in (cls.place_raw_order, cls.prepare_raw_order):
            params = inspect.signature(method).parameters.values()
            asked = [(p.name, p.default) for p in params if p.name not in ("self", "signer")]
            assert asked == fields, method


def test_raw_order_retries_the_same_bytes_under_one_client_order_id() -> None:
    core = make_core()
    warm(core)
    op = core.place_raw_order(raw_spec(MARKET_ID, "a", "BUY", "0.5", 10))
    answers = [
        errors.TransportError("lost"),
        fail(503, "down"),
        ok({"order_id": "x", "notification_id": ""}, 201),
    ]
    result, effects = drive(op, answers)
    sends = [seen(e.request) for e in effects if isinstance(e, Send)]
    assert len(sends) == 3  # warm caches: only the POST, three times
    assert all(r.url.path == "/api/ext/v1/orders/raw" for r in sends)
    assert len({r.content for r in sends}) == 1
    assert len({r.headers["X-API-NONCE"] for r in sends}) == 3
    assert all(verify(r) for r in sends)
    body = json.loads(sends[0].content)
    assert body["client_order_id"] == result.client_order_id
    assert len(result.client_order_id) <= 64


def test_raw_order_risk_control_is_not_retried() -> None:
    core = make_core()
    warm(core)
    op = core.place_raw_order(raw_spec(MARKET_ID, "a", "BUY", "0.5", 10))
    with pytest.raises(errors.RiskControlError):
        drive(op, [fail(500, "risk", "ORDER_FAILED_PLACE_BET"), ok({"order_id": "x"}, 201)])


def test_delete_is_not_retried() -> None:
    core = make_core()
    with pytest.raises(errors.ServerError):
        drive(
            core.cancel_order("o"),
            [fail(503, "down"), ok({"order_id": "o", "status": "cancelled"})],
        )


# ---------------------------------------------------------------------------
# The raw-order flow


def test_raw_order_cold_then_warm() -> None:
    core = make_core()
    answers = [
        ok(
            {
                "market": {
                    "id": MARKET_ID,
                    "token_id_a": TOKEN_A,
                    "token_id_b": TOKEN_B,
                    "neg_risk": True,
                }
            }
        ),
        ok(WALLET),
        httpx.Response(200, json={"base_fee": 7}),
        ok({"order_id": "srv-1", "notification_id": ""}, 201),
    ]
    result, effects = drive(
        core.place_raw_order(raw_spec(MARKET_ID, "b", "SELL", "0.40", "12.5", salt=42)), answers
    )
    paths = [seen(e.request).url.path for e in effects if isinstance(e, Send)]
    assert paths == [
        f"/api/ext/v1/markets/{MARKET_ID}",
        "/api/ext/v1/wallet",
        "/fee-rate",
        "/api/ext/v1/orders/raw",
    ]
    assert result.order_id == "srv-1"
    assert (result.maker_amount, result.taker_amount) == (12_500_000, 5_000_000)
    assert (result.token_id, result.side, result.fee_rate_bps, result.neg_risk) == (
        TOKEN_B,
        1,
        7,
        True,
    )
    expected = OrderHasher(WALLET).order_id(
        token_id=TOKEN_B,
        maker_amount=12_500_000,
        taker_amount=5_000_000,
        side=1,
        salt=42,
        fee_rate_bps=7,
        neg_risk=True,
    )
    assert result.clob_order_id == expected
    body = json.loads(effects[-1].request.body)
    assert body == {
        "market_id": MARKET_ID,
        "outcome": "b",
        "token_id": TOKEN_B,
        "maker_amount": "12500000",
        "taker_amount": "5000000",
        "side": 1,
        "fee_rate_bps": 7,
        "order_type": "GTC",
        "salt": "42",
        "nonce": "0",
        "expiration": "0",
        "client_order_id": result.client_order_id,
    }
    # warm: the next order sends the POST only
    _, effects = drive(
        core.place_raw_order(raw_spec(MARKET_ID, "b", "SELL", "0.40", 1)),
        [ok({"order_id": "srv-2"}, 201)],
    )
    assert [type(e) for e in effects] == [Send]


def test_raw_order_market_amounts_and_explicit_amounts() -> None:
    core = make_core()
    warm(core)
    result, _ = drive(
        core.place_raw_order(raw_spec(MARKET_ID, "a", "BUY", "0.3", amount=10, order_type="FOK")),
        [ok({"order_id": "x"}, 201)],
    )
    assert (result.maker_amount, result.taker_amount) == (10_000_000, 33_333_300)
    result, effects = drive(
        core.place_raw_order_amounts(
            MARKET_ID,
            "a",
            0,
            1_000_000,
            2_000_000,
            fee_rate_bps=3,
            salt="5",
            client_order_id="mine",
        ),
        [ok({"order_id": "y"}, 201)],
    )
    body = json.loads(seen(effects[0].request).content)
    assert (body["fee_rate_bps"], body["salt"], body["client_order_id"]) == (3, "5", "mine")


def test_raw_order_sends_the_validated_values_not_the_given_text() -> None:
    """Numbers given as digit strings are checked and sent as the typed values: a
    ``fee_rate_bps`` of ``"200"`` goes out as the JSON number 200 (the service
    answers 400 to a string), and the result carries ints too."""
    core = make_core()
    warm(core)
    result, effects = drive(
        core.place_raw_order_amounts(
            MARKET_ID,
            "a",
            "BUY",
            "1000000",
            "2000000",
            fee_rate_bps="200",  # type: ignore[arg-type]
            nonce="7",
            salt="5",
            client_order_id="typed",
        ),
        [ok({"order_id": "z"}, 201)],
    )
    body = json.loads(seen(effects[0].request).content)
    assert body["fee_rate_bps"] == 200
    assert (body["maker_amount"], body["taker_amount"]) == ("1000000", "2000000")
    assert (body["nonce"], body["salt"]) == ("7", "5")
    assert result.fee_rate_bps == 200
    assert (result.maker_amount, result.nonce, result.salt) == (1_000_000, 7, 5)
    with pytest.raises(errors.OrderFieldError, match="fee_rate_bps"):
        core.place_raw_order_amounts(MARKET_ID, "a", "BUY", 1, 2, fee_rate_bps="-1")  # type: ignore[arg-type]


def test_fee_rate_cache_expires() -> None:
    core = make_core(fee_rate_ttl=10)
    now = [1000.0]
    core.clock = lambda: now[0]
    fee, effects = drive(core.fee_rate(TOKEN_A), [httpx.Response(200, json={"base_fee": 1})])
    assert fee == 1
    assert len(effects) == 1
    fee, effects = drive(core.fee_rate(TOKEN_A), [])
    assert fee == 1
    assert effects == []
    now[0] += 11
    fee, effects = drive(core.fee_rate(TOKEN_A), [httpx.Response(200, json={"base_fee": 2})])
    assert fee == 2
    assert len(effects) == 1


def test_fee_rate_bad_answers() -> None:
    core = make_core()
    with pytest.raises(errors.ServerError, match="base_fee"):
        drive(core.fee_rate(TOKEN_A), [httpx.Response(200, json={"fee": 1})])
    with pytest.raises(errors.NotFound):
        drive(core.fee_rate(TOKEN_A), [httpx.Response(404, json={"error": "no token"})])
    fee, _ = drive(core.fee_rate(TOKEN_B), [ok({"base_fee": 3.0})])
    assert fee == 3
    # past the exchange's MAX_FEE_RATE_BIPS: an order signed with it could never match
    for odd in (1_001, 10**30, -1):
        with pytest.raises(errors.ServerError, match=r"base_fee in \[0, 1000\]"):
            drive(core.fee_rate(TOKEN_A), [httpx.Response(200, json={"base_fee": odd})])
    assert drive(core.fee_rate(TOKEN_A), [ok({"base_fee": 1_000})])[0] == 1_000


def test_a_fee_rate_past_the_exchanges_maximum_is_refused() -> None:
    core = make_core()
    for odd in (1_001, 10**30, "1001"):
        with pytest.raises(errors.OrderFieldError, match=r"fee_rate_bps.*\[0, 1000\]"):
            core.place_raw_order_amounts(MARKET_ID, "a", "BUY", 1, 2, fee_rate_bps=odd)  # type: ignore[arg-type]


def test_prepare_gathers_lookups() -> None:
    core = make_core()
    answers = [
        ok(WALLET),
        ok(
            {
                "market": {
                    "id": MARKET_ID,
                    "token_id_a": TOKEN_A,
                    "token_id_b": TOKEN_B,
                    "neg_risk": False,
                }
            }
        ),
        httpx.Response(200, json={"base_fee": 0}),
        httpx.Response(200, json={"base_fee": 0}),
    ]
    _, effects = drive(core.prepare([MARKET_ID, MARKET_ID]), answers)
    assert isinstance(effects[0], Gather)
    assert len(effects[0].operations) == 2  # wallet + one (deduplicated) market
    assert core.hasher is not None
    assert set(core.fee_rates) == {TOKEN_A, TOKEN_B}


# ---------------------------------------------------------------------------
# Validation before sending


def _no_send(op: Any) -> None:
    """Drive ``op`` and fail if it tries to send anything."""
    drive(op, [])


FUTURE = int(time.time()) + 3600


@pytest.mark.parametrize(
    ("kwargs", "cls", "field"),
    [
        ({"outcome": "a"}, errors.AmountError, "amount"),
        ({"outcome": "a", "amount": 0}, errors.AmountError, "amount"),
        ({"outcome": "a", "amount": "1.0000001"}, errors.AmountError, "amount"),
        ({"outcome": "a", "amount": 50_000.01}, errors.AmountError, "amount"),
        ({"amount": 5}, errors.OrderFieldError, "outcome"),
        ({"outcome": "c", "amount": 5}, errors.OrderFieldError, "outcome"),
        ({"outcome": "a", "amount": 5, "side": "HOLD"}, errors.OrderFieldError, "side"),
        ({"outcome": "a", "amount": 5, "order_type": "IOC"}, errors.OrderFieldError, "order_type"),
        (
            {"amount": 5, "order_type": "GTC", "token_option": "yes"},
            errors.AmountError,
            "limit_price",
        ),
        (
            {"amount": 5, "order_type": "GTC", "limit_price": 0.5},
            errors.OrderFieldError,
            "token_option",
        ),
        (
            {"amount": 5, "order_type": "GTC", "limit_price": 0.5, "token_option": "maybe"},
            errors.OrderFieldError,
            "token_option",
        ),
        (
            {"amount": 5, "order_type": "GTC", "limit_price": 1.5, "token_option": "yes"},
            errors.AmountError,
            "limit_price",
        ),
        (
            {"amount": 5, "order_type": "GTC", "limit_price": 0.555, "token_option": "yes"},
            errors.AmountError,
            "limit_price",
        ),
        (
            {"amount": 5, "order_type": "GTC", "limit_price": 0, "token_option": "yes"},
            errors.AmountError,
            "limit_price",
        ),
        (
            {"amount": 5, "order_type": "GTD", "limit_price": 0.5, "token_option": "yes"},
            errors.OrderFieldError,
            "expiration",
        ),
        (
            {
                "amount": 5,
                "order_type": "GTD",
                "limit_price": 0.5,
                "token_option": "yes",
                "expiration": 1000,
            },
            errors.OrderFieldError,
            "expiration",
        ),
        (
            {
                "amount": 5,
                "order_type": "GTD",
                "limit_price": 0.5,
                "token_option": "yes",
                "expiration": datetime(2099, 1, 1),
            },
            errors.OrderFieldError,
            "expiration",
        ),
        (
            {
                "amount": 5,
                "order_type": "GTC",
                "limit_price": 0.5,
                "token_option": "yes",
                "expiration": FUTURE,
            },
            errors.OrderFieldError,
            "expiration",
        ),
        (
            {"outcome": "a", "amount": 5, "take_profit_price": 0.999},
            errors.AmountError,
            "take_profit_price",
        ),
        (
            {"outcome": "a", "amount": 5, "stop_loss_price": "0.00"},
            errors.AmountError,
            "stop_loss_price",
        ),
        ({"side": "SELL", "outcome": "a"}, errors.AmountError, "shares"),
        ({"side": "SELL", "shares": -2}, errors.AmountError, "shares"),
        (
            {
                "side": "SELL",
                "shares": 200_000,
                "order_type": "GTC",
                "limit_price": 0.5,
                "token_option": "no",
            },
            errors.AmountError,
            "shares",
        ),
    ],
)
def test_place_order_validation(kwargs: dict[str, Any], cls: type[Exception], field: str) -> None:
    core = make_core()
    with pytest.raises(cls) as info:
        _no_send(core.place_order(MARKET_ID, **kwargs))
    assert type(info.value) is cls
    assert info.value.field == field  # type: ignore[attr-defined]
    assert field in str(info.value)


def test_place_order_valid_shapes() -> None:
    core = make_core()
    gtd = core.order_body(
        MARKET_ID,
        side="BUY",
        outcome=None,
        amount=25,
        shares=None,
        order_type="GTD",
        limit_price="0.45",
        token_option="no",
        expiration=datetime.now(UTC) + timedelta(hours=1),
        take_profit_price=None,
        stop_loss_price=None,
    )
    body = json.loads(gtd)
    assert body["order_type"] == "GTD"
    assert body["limit_price"] == 0.45
    assert body["expiration"] > time.time()
    sell = json.loads(
        core.order_body(
            MARKET_ID,
            side="SELL",
            outcome="b",
            amount=None,
            shares="3.5",
            order_type="FOK",
            limit_price=None,
            token_option=None,
            expiration=None,
            take_profit_price=None,
            stop_loss_price=None,
        )
    )
    assert sell == {
        "market_id": MARKET_ID,
        "outcome": "b",
        "side": "SELL",
        "shares": 3.5,
        "order_type": "FOK",
    }


@pytest.mark.parametrize(
    ("args", "kwargs", "cls", "field"),
    [
        (
            ("a", "BUY", "0.5", 10),
            {"client_order_id": "x" * 65},
            errors.OrderFieldError,
            "client_order_id",
        ),
        (
            ("a", "BUY", "0.5", 10),
            {"client_order_id": ""},
            errors.OrderFieldError,
            "client_order_id",
        ),
        (("a", "BUY", "0.5", 10), {"salt": 10**12 + 1}, errors.OrderFieldError, "salt"),
        (("a", "BUY", "0.5", 10), {"salt": -1}, errors.OrderFieldError, "salt"),
        (("a", "BUY", "0.505", 10), {}, errors.AmountError, "price"),
        (("a", "BUY", "1", 10), {}, errors.AmountError, "price"),
        (("a", "BUY", "0.5", 0), {}, errors.AmountError, "size"),
        (("a", "BUY", "0.5", 200_000), {}, errors.AmountError, "maker_amount"),
        (("a", "SELL", "0.5", 200_000), {}, errors.AmountError, "taker_amount"),
        (("a", "BUY", "0.5"), {}, errors.AmountError, "size"),
        (("a", "BUY", "0.5", 1), {"amount": 1}, errors.AmountError, "size"),
        (("x", "BUY", "0.5", 10), {}, errors.OrderFieldError, "outcome"),
        (("a", 2, "0.5", 10), {}, errors.OrderFieldError, "side"),
        (("a", "BUY", "0.5", 10, "GTD"), {}, errors.OrderFieldError, "expiration"),
        (("a", "BUY", "0.5", 10, "GTD", 5), {}, errors.OrderFieldError, "expiration"),
        (("a", "BUY", "0.5", 10, "GTC", FUTURE), {}, errors.OrderFieldError, "expiration"),
        (("a", "BUY", "0.5", 10, "XYZ"), {}, errors.OrderFieldError, "order_type"),
    ],
)
def test_raw_order_validation(
    args: tuple[Any, ...], kwargs: dict[str, Any], cls: type[Exception], field: str
) -> None:
    core = make_core()  # cold caches: any lookup would show up as a Send
    with pytest.raises(cls) as info:
        _no_send(core.place_raw_order(raw_spec(MARKET_ID, *args, **kwargs)))
    assert type(info.value) is cls
    assert info.value.field == field  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("maker", "taker", "side", "field"),
    [
        (2_000_000, 1_000_000, 0, "maker_amount"),  # BUY paying more USDC than shares
        (1_000_000, 1_000_000, 0, "maker_amount"),  # price exactly 1
        (0, 1_000_000, 0, "maker_amount"),
        (1_000_000, 2_000_000, 1, "taker_amount"),  # SELL receiving more USDC than shares
        ("12a", 1, 0, "maker_amount"),
        (-1, 1, 0, "maker_amount"),
    ],
)
def test_raw_amounts_validation(maker: Any, taker: Any, side: int, field: str) -> None:
    core = make_core()
    with pytest.raises(errors.ValidationError) as info:
        _no_send(core.place_raw_order_amounts(MARKET_ID, "a", side, maker, taker))
    assert info.value.field == field


def test_query_validation() -> None:
    core = make_core()
    with pytest.raises(errors.OrderFieldError, match="status"):
        core.list_orders("won", 1, 20)
    with pytest.raises(errors.ValidationError, match="page_size"):
        core.list_orders(None, 1, 101)
    with pytest.raises(errors.ValidationError, match="per_page"):
        core.list_positions(1, 0)
    with pytest.raises(errors.OrderFieldError, match="side"):
        core.list_portfolio_orders("HOLD", 1, 10)
    with pytest.raises(errors.ValidationError, match="q"):
        _no_send(core.search_markets("  ", 20))
    with pytest.raises(errors.OrderFieldError, match="order_id"):
        core.get_order("")


# ---------------------------------------------------------------------------
# Parity of the two shells


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and callable(member)
    }


def test_sync_and_async_expose_the_same_api() -> None:
    sync, aio = _public(Client), _public(AsyncClient)
    assert sorted(sync) == sorted(aio)
    for name, signature in sync.items():
        assert list(signature.parameters) == list(aio[name].parameters), name
        for param in signature.parameters.values():
            other = aio[name].parameters[param.name]
            assert (param.kind, param.default) == (other.kind, other.default), (name, param.name)
    for name in aio:
        member = getattr(AsyncClient, name)
        if name.startswith("iter_"):
            assert inspect.isasyncgenfunction(AsyncClient._iterate)
            assert not inspect.iscoroutinefunction(member)
        elif name in {"stream", "clear_caches"}:
            assert not inspect.iscoroutinefunction(member)
        else:
            assert inspect.iscoroutinefunction(member), name
    required = {
        "list_events", "iter_events", "get_event", "get_event_markets", "search_markets",
        "get_market", "get_orderbook", "place_order", "place_raw_order", "cancel_order",
        "list_orders", "iter_orders", "get_order", "get_wallet", "list_positions",
        "iter_positions", "list_portfolio_orders", "iter_portfolio_orders", "get_fee_rate",
        "stream", "prepare", "wait_for_order", "open_orders",
    }  # fmt: skip
    assert required <= set(sync)


def test_shells_hold_no_request_logic() -> None:
    """The shells call the core for everything: no httpx.Request, JSON or signer use."""
    import clobkit.client._async as a
    import clobkit.client._sync as s

    for module in (s, a):
        source = inspect.getsource(module)
        for needle in ("httpx.Request(", "msgspec", "signer.", "json.", "headers("):
            assert needle not in source, (module.__name__, needle)


def test_models_roundtrip_is_exact() -> None:
    core = make_core()
    placed, _ = drive(
        core.place_order(MARKET_ID, outcome="a", amount="0.1"),
        [ok({"order_id": "o", "notification_id": "n"}, 201)],
    )
    assert msgspec.json.encode(placed) == b'{"order_id":"o","notification_id":"n"}'


def test_market_detail_without_neg_risk_or_tokens() -> None:
    core = make_core()
    guide = {
        "market": {
            "id": MARKET_ID,
            "outcomes": [
                {"id": "1", "name": "A", "token_id": TOKEN_A, "price": 0.5},
                {"id": "2", "name": "B", "token_id": TOKEN_B, "price": 0.5},
            ],
        }
    }
    info, _ = drive(core.market_info(MARKET_ID), [ok(guide)])
    assert (info.token_id_a, info.token_id_b, info.neg_risk) == (TOKEN_A, TOKEN_B, False)
    with pytest.raises(errors.ServerError, match="no token ids"):
        drive(make_core().market_info(MARKET_ID), [ok({"market": {"id": MARKET_ID}})])
