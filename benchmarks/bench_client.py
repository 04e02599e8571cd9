"""Client overhead: ``place_raw_order`` round trips vs a bare httpx POST of the same bytes.

Both sides talk to one sandbox on loopback and place the same kind of order
(a resting GTC raw BUY, cancelled again outside the timed part). The client
side is the whole call with warm caches: amounts, salt, ``clob_order_id``,
body, signature, POST, envelope parsing, result model. The bare side sends
the very bytes and headers the client would have sent (taken from the
client's own request builder in the untimed setup) with ``httpx.Client.post``
and only checks the status. Issue #4 wants the client's overhead under 15%.

Run: python -m pytest benchmarks/bench_client.py
(``test_overhead_ratio`` prints the interleaved median ratio and asserts it.)

Run as a script (``PYTHONPATH=src python benchmarks/bench_client.py [--rounds 3 --n 200]``)
it prints the client CPU per request of issue #21 instead: both clients beside
aiohttp, httpx and a bare asyncio stream, against a sandbox in another process
(``bench_client_cpu.py``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from clobkit import Client
from clobkit.client._ops import Send
from clobkit.client._validate import RawOrderSpec
from clobkit.client._wire import Outgoing

pytest.importorskip("pytest_benchmark")
sandbox_server = pytest.importorskip("clobkit.sandbox")

SIZE = 50  # shares per order; at the resting price of 0.02 that is 1 USDC
PRICE = Decimal("0.02")
ROUNDS = 300
PAIRS = 400
TARGET = 1.15
USER = {
    "user_id": "30000000-0000-4000-8000-000000000001",
    "api_key": "bench-key",
    "api_secret": "bench-secret",
    "scopes": ["markets:read", "orders:read", "orders:write", "portfolio:read"],
    "balance": "100000000",
    "ip_whitelist": None,
}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    config = {"users": [USER], "rate_limit_per_minute": None, "risk": None}
    with sandbox_server.serve_in_thread(config) as sb:
        yield sb


@pytest.fixture(scope="module")
def client(sandbox: Any) -> Iterator[Client]:
    with Client(
        sandbox.base_url,
        USER["api_key"],
        USER["api_secret"],
        clob_url=sandbox.clob_url,
        ws_url=sandbox.ws_url,
    ) as client:
        yield client


@pytest.fixture(scope="module")
def market_id(client: Client) -> str:
    for event in client.iter_events(league="nba", limit=50):
        if event.ended or event.is_future:
            continue
        for market in client.get_event_markets(event.id):
            book = client.get_orderbook(market.token_id_a or "")
            if book.best_ask is not None and book.best_ask > PRICE * 2:
                client.prepare([market.id])  # warm: wallet, market tokens, fee rates
                return market.id
    raise AssertionError("no nba market with a book")


@pytest.fixture(scope="module")
def bare(sandbox: Any) -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


def client_order(client: Client, market_id: str) -> str:
    return client.place_raw_order(market_id, "a", "BUY", PRICE, SIZE).order_id


def prepared_request(client: Client, market_id: str) -> Outgoing:
    """The exact request (bytes and signed headers) ``place_raw_order`` would send now."""
    spec = RawOrderSpec(market_id=market_id, outcome="a", side="BUY", price=PRICE, size=SIZE)
    op = client._core.place_raw_order(spec)
    effect = op.send(None)
    op.close()
    assert isinstance(effect, Send), "caches must be warm: the first effect is the POST"
    return effect.request


def bare_order(bare: httpx.Client, request: Outgoing) -> str:
    response = bare.post(request.url, content=request.body, headers=request.headers)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["order_id"])


def test_place_raw_order(benchmark: Any, client: Client, market_id: str) -> None:
    benchmark.group = "raw order round trip"
    placed: list[str] = []
    benchmark.pedantic(
        lambda: placed.append(client_order(client, market_id)),
        rounds=ROUNDS,
        warmup_rounds=20,
    )
    for order_id in placed:
        client.cancel_order(order_id)


def test_bare_httpx_post(
    benchmark: Any, client: Client, bare: httpx.Client, market_id: str
) -> None:
    benchmark.group = "raw order round trip"
    placed: list[str] = []
    benchmark.pedantic(
        lambda request: placed.append(bare_order(bare, request)),
        setup=lambda: ((prepared_request(client, market_id),), {}),
        rounds=ROUNDS,
        warmup_rounds=20,
    )
    for order_id in placed:
        client.cancel_order(order_id)


def test_overhead_ratio(client: Client, bare: httpx.Client, market_id: str) -> None:
    """Client vs bare, interleaved pair by pair so both see the same server state."""
    client_times: list[float] = []
    bare_times: list[float] = []
    for i in range(PAIRS):
        request = prepared_request(client, market_id)
        # alternate who goes first, so neither always meets a just-warmed server
        steps = ("client", "bare") if i % 2 else ("bare", "client")
        for step in steps:
            started = time.perf_counter()
            if step == "client":
                order_id = client_order(client, market_id)
                client_times.append(time.perf_counter() - started)
            else:
                order_id = bare_order(bare, request)
                bare_times.append(time.perf_counter() - started)
            client.cancel_order(order_id)
    c, b = statistics.median(client_times), statistics.median(bare_times)
    ratio = c / b
    print(
        f"\nplace_raw_order {c * 1e6:.0f} us vs bare httpx POST {b * 1e6:.0f} us "
        f"(medians of {PAIRS} interleaved pairs): ratio {ratio:.3f}, "
        f"overhead {(ratio - 1) * 100:.1f}% (target < {(TARGET - 1) * 100:.0f}%)"
    )
    assert ratio < TARGET


if __name__ == "__main__":
    from bench_client_cpu import main  # the script's own folder is on sys.path

    main()
