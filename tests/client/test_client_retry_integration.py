"""Retries against the sandbox: lost responses, injected 5xx, the sandbox's rate limit.

A lossy proxy on loopback (``LossyProxy``) forwards every request to the real
sandbox and only then drops the connection instead of relaying the answer, which
is exactly the case where a naive retry would place a second order; or answers a
503 itself. The clients talk to it through their own transports.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from clobkit import errors

from ..conftest import loopback_http
from .conftest import full_scope_users
from .helpers import market_with_book, resting_buy_price

RAW = "/api/ext/v1/orders/raw"
ORDERS = "/api/ext/v1/orders"


class _Plan:
    """What to break: lose the first ``lose`` answers to ``method path`` (after the
    server handled them), or answer the first ``fail`` of them with a 503."""

    def __init__(self, method: str, path: str, *, lose: int = 0, fail: int = 0) -> None:
        self.method, self.path = method, path
        self.lose, self.fail = lose, fail
        self.seen: list[httpx.Request] = []

    def matches(self, request: httpx.Request) -> bool:
        return request.method == self.method and request.url.path == self.path

    def injected_503(self, request: httpx.Request) -> httpx.Response | None:
        if self.fail > 0:
            self.fail -= 1
            return httpx.Response(
                503, json={"success": False, "error": "injected: service unavailable"}
            )
        return None

    def should_lose(self) -> bool:
        if self.lose > 0:
            self.lose -= 1
            return True
        return False


class LossyProxy:
    """An HTTP/1.1 proxy on loopback in front of ``upstream`` (the sandbox's base URL),
    breaking the requests of ``plan`` as it says; ``url`` is the base URL to use."""

    def __init__(self, upstream: str, plan: _Plan) -> None:
        self.plan = plan
        self.upstream = loopback_http(base_url=upstream, timeout=30)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Lossy)
        self.server.daemon_threads = True
        self.server.proxy = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,))
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
        self.upstream.close()


class _Lossy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        proxy: LossyProxy = self.server.proxy  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = [(k, v) for k, v in self.headers.items() if k.lower() != "host"]
        request = httpx.Request(self.command, proxy.url + self.path, headers=headers, content=body)
        plan = proxy.plan
        answer = None
        if plan.matches(request):
            plan.seen.append(request)
            answer = plan.injected_503(request)
        if answer is None:
            answer = proxy.upstream.request(self.command, self.path, headers=headers, content=body)
            if plan.matches(request) and plan.should_lose():
                self.close_connection = True  # handled upstream; its answer never comes
                return
        head = [f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}".encode()]
        head += [f"Content-Length: {len(answer.content)}".encode()]
        head += [k + b": " + v for k, v in answer.headers.raw if k.lower() in _RELAYED]
        self.wfile.write(b"\r\n".join(head) + b"\r\n\r\n" + answer.content)

    do_GET = do_POST = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


_RELAYED = (b"content-type", b"retry-after")


@pytest.fixture
def lossy(sandbox: Any) -> Iterator[Callable[[_Plan], str]]:
    """``lossy(plan)``: the base URL of a ``LossyProxy`` in front of the sandbox."""
    made: list[LossyProxy] = []

    def make(plan: _Plan, upstream: Any = None) -> str:
        made.append(LossyProxy((upstream or sandbox).base_url, plan))
        return made[-1].url

    yield make
    for proxy in made:
        proxy.close()


def order_ids(api: Any) -> set[str]:
    return {o.id for o in api.iter_orders(page_size=100)}


def test_raw_order_retried_after_lost_answers_places_one_order(
    sandbox: Any, make_api: Any, flavour: str, lossy: Any
) -> None:
    me = full_scope_users(sandbox)[0]
    plain = make_api(sandbox, me, flavour)
    market = market_with_book(plain, "nba")
    price = resting_buy_price(plain.get_orderbook(market.token_id_a))
    before = order_ids(plain)

    plan = _Plan("POST", RAW, lose=2)
    api = make_api(sandbox, me, flavour, base_url=lossy(plan))
    api.prepare([market.id])
    result = api.place_raw_order(market.id, "a", "BUY", price, 40)

    assert len(plan.seen) == 3  # two lost answers, then the answer
    bodies = {r.content for r in plan.seen}
    assert len(bodies) == 1  # the very same bytes each time ...
    assert json.loads(plan.seen[0].content)["client_order_id"] == result.client_order_id
    assert len({r.headers["X-API-NONCE"] for r in plan.seen}) == 3  # ... signed afresh
    new = order_ids(plain) - before
    assert new == {result.order_id}  # no duplicate order
    assert plain.get_order(result.order_id).clob_order_id == result.clob_order_id
    plain.cancel_order(result.order_id)


def test_raw_order_retried_after_injected_5xx(
    sandbox: Any, make_api: Any, flavour: str, lossy: Any
) -> None:
    me = full_scope_users(sandbox)[0]
    plain = make_api(sandbox, me, flavour)
    market = market_with_book(plain, "nba")
    price = resting_buy_price(plain.get_orderbook(market.token_id_a))
    before = order_ids(plain)
    plan = _Plan("POST", RAW, fail=2, lose=1)
    api = make_api(sandbox, me, flavour, base_url=lossy(plan))
    result = api.place_raw_order(market.id, "a", "BUY", price, 40)
    assert len(plan.seen) == 4  # 503, 503, lost, answered
    assert order_ids(plain) - before == {result.order_id}
    plain.cancel_order(result.order_id)


def test_place_order_is_never_retried(
    sandbox: Any, make_api: Any, flavour: str, lossy: Any
) -> None:
    me = full_scope_users(sandbox)[0]
    plain = make_api(sandbox, me, flavour)
    market = market_with_book(plain, "nba")
    price = resting_buy_price(plain.get_orderbook(market.token_id_a))
    before = order_ids(plain)

    lost = _Plan("POST", ORDERS, lose=1)
    api = make_api(sandbox, me, flavour, base_url=lossy(lost))
    with pytest.raises(errors.TransportError):
        api.place_order(
            market.id, amount="2", order_type="GTC", limit_price=price, token_option="yes"
        )
    assert len(lost.seen) == 1
    placed = order_ids(plain) - before
    assert len(placed) == 1  # the server did place it: a retry would have doubled it
    plain.cancel_order(placed.pop())

    unavailable = _Plan("POST", ORDERS, fail=1)
    api = make_api(sandbox, me, flavour, base_url=lossy(unavailable))
    with pytest.raises(errors.ServerError) as info:
        api.place_order(market.id, outcome="a", amount="1")
    assert info.value.status == 503
    assert len(unavailable.seen) == 1


def test_gets_retry_injected_5xx_and_lost_answers(
    sandbox: Any, make_api: Any, flavour: str, lossy: Any
) -> None:
    me = full_scope_users(sandbox)[0]
    plan = _Plan("GET", "/api/ext/v1/wallet", fail=2, lose=1)
    api = make_api(sandbox, me, flavour, base_url=lossy(plan))
    assert api.get_wallet().maker
    assert len(plan.seen) == 4
    plan = _Plan("GET", "/api/ext/v1/orders", fail=5)
    api = make_api(sandbox, me, flavour, base_url=lossy(plan), max_retries=2)
    with pytest.raises(errors.ServerError) as info:
        api.list_orders()
    assert info.value.status == 503
    assert len(plan.seen) == 3


# ---------------------------------------------------------------------------
# The sandbox's own rate limit: a sliding 60 s window per API key, answered by
# 429 with ``Retry-After`` (whole seconds until the window has room again).

RATE = 30  # requests per minute and key


def rate_user(n: int) -> dict[str, Any]:
    return {
        "user_id": f"20000000-0000-4000-8000-{n:012d}",
        "api_key": f"rate-key-{n}",
        "api_secret": f"rate-secret-{n}",
        "scopes": ["markets:read", "orders:read", "orders:write", "portfolio:read"],
        "balance": "1000",
        "ip_whitelist": None,
    }


@pytest.fixture
def rate_sandbox(serve: Any) -> Any:
    with serve({"users": [rate_user(1), rate_user(2)], "rate_limit_per_minute": RATE}) as sb:
        yield sb


def exhaust(api: Any) -> errors.RateLimited:
    """Spend the key's window (the client must not retry: ``max_retries=0``)."""
    for _ in range(RATE + 1):
        try:
            api.get_wallet(refresh=True)
        except errors.RateLimited as exc:
            return exc
    raise AssertionError("the sandbox never rate limited")


def test_rate_limit_is_typed_and_never_blindly_retried(
    rate_sandbox: Any, make_api: Any, flavour: str, lossy: Any
) -> None:
    me, other = rate_sandbox.users
    setup = make_api(rate_sandbox, other, flavour)  # another key: its own window
    market = market_with_book(setup, "nba")

    limited = exhaust(make_api(rate_sandbox, me, flavour, max_retries=0))
    assert limited.status == 429
    assert limited.code == "RATE_LIMITED"
    assert limited.retry_after is not None
    assert 0 < limited.retry_after <= 60

    # Retry-After beyond max_retry_after: raised at once, not slept on or hammered
    gets = _Plan("GET", "/api/ext/v1/orders")
    impatient = make_api(
        rate_sandbox, me, flavour, max_retries=5, max_retry_after=1,
        base_url=lossy(gets, rate_sandbox),
    )  # fmt: skip
    with pytest.raises(errors.RateLimited):
        impatient.list_orders()
    # one request: the core sleeps only before a retry, so none was slept on either
    # (counted, not timed: a busy machine cannot fail it)
    assert len(gets.seen) == 1

    # POST /orders is never retried, whatever the client would accept to wait
    posts = _Plan("POST", ORDERS)
    patient = make_api(
        rate_sandbox, me, flavour, max_retries=5, max_retry_after=120,
        base_url=lossy(posts, rate_sandbox),
    )  # fmt: skip
    with pytest.raises(errors.RateLimited):
        patient.place_order(market.id, outcome="a", amount="2")
    assert len(posts.seen) == 1


@pytest.mark.slow
def test_rate_limit_waited_out_places_each_raw_order_once(
    rate_sandbox: Any, make_api: Any, lossy: Any
) -> None:
    """Both clients hit the sandbox's limit, sleep out its Retry-After (up to a
    minute: the window is 60 s) and then place their raw order exactly once."""
    import threading

    me, _ = rate_sandbox.users
    setup = make_api(rate_sandbox, me, "sync")
    market = market_with_book(setup, "nba")
    price = resting_buy_price(setup.get_orderbook(market.token_id_a))
    plans = {flavour: _Plan("POST", RAW) for flavour in ("sync", "async")}
    clients = {
        flavour: make_api(
            rate_sandbox,
            me,
            flavour,
            max_retries=3,
            max_retry_after=65,
            base_url=lossy(plans[flavour], rate_sandbox),
        )
        for flavour in ("sync", "async")
    }
    for client in clients.values():
        client.prepare([market.id])
    exhaust(make_api(rate_sandbox, me, "sync", max_retries=0))

    results: dict[str, Any] = {}

    def place(flavour: str) -> None:
        results[flavour] = clients[flavour].place_raw_order(market.id, "a", "BUY", price, 40)

    started = time.perf_counter()
    threads = [threading.Thread(target=place, args=(f,)) for f in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    waited = time.perf_counter() - started
    assert set(results) == {"sync", "async"}
    assert waited > 1  # the Retry-After was slept on
    for flavour, plan in plans.items():
        assert len(plan.seen) >= 2, flavour  # refused with 429, then retried
        assert len({r.content for r in plan.seen}) == 1, flavour
    placed = {o.id for o in setup.iter_orders(page_size=100)}
    assert placed == {results["sync"].order_id, results["async"].order_id}  # once each
