"""``Sandbox.requests``: the HTTP requests a running sandbox received, counted by method
and path as the clients' own transports sent them (retries included), the most in
flight at once, and reset. Against a running sandbox with both real clients."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import httpx

from clobkit import AsyncClient, Client, errors
from clobkit.sandbox import serve_in_thread

GUARD = 30.0  # s: a hang guard only
PREFIX = "/api/ext/v1"


def options(sb: Any, **overrides: Any) -> dict[str, Any]:
    user = next(u for u in sb.users if "orders:write" in u.scopes)
    values: dict[str, Any] = {
        "base_url": sb.base_url,
        "api_key": user.api_key,
        "api_secret": user.api_secret,
        "backoff": 0.001,
        "backoff_cap": 0.01,
    }
    return values | overrides


def eventually(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + GUARD
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        time.sleep(0.005)


def test_requests_are_counted_by_method_and_path_and_reset() -> None:
    with serve_in_thread() as sb:
        with Client(**options(sb)) as client:
            client.get_wallet()
            client.get_wallet(refresh=True)
            with_query = list(client.iter_events(limit=5))
            with contextlib.suppress(errors.NotFound):
                client.cancel_order("no-such-order")
        wallet = ("GET", PREFIX + "/wallet")
        assert sb.requests.sent[wallet] == 2
        assert sb.requests.count("GET", PREFIX + "/wallet") == 2
        pages = sb.requests.count("GET", PREFIX + "/events")  # the query is not the path
        assert pages >= 1
        assert with_query
        assert sb.requests.count("DELETE", prefix=PREFIX + "/orders/") == 1
        assert sb.requests.count() == 2 + pages + 1
        assert sb.requests.in_flight() == 0
        sb.requests.reset()
        assert sb.requests.count() == 0
        assert sb.requests.sent == {}
        # a request the service refuses is counted too (a bad signature: 401)
        httpx.get(sb.base_url + PREFIX + "/wallet")
        assert sb.requests.count("GET", PREFIX + "/wallet") == 1


def test_retries_are_each_counted() -> None:
    config = {"faults": {"routes": {"GET /wallet": {"error_rate": 1.0, "seed": 1}}}}
    with serve_in_thread(config) as sb, Client(**options(sb, max_retries=2)) as client:
        with contextlib.suppress(errors.ServerError, errors.TransportError):
            client.get_wallet()
        assert sb.requests.count("GET", PREFIX + "/wallet") == 3  # the try and two retries


def test_the_most_in_flight_at_once() -> None:
    """Held by a latency fault until released, the requests a client sends at once are
    all in flight on the service at once."""
    config = {"faults": {"routes": {"GET /wallet": {"latency_ms": 60_000, "latency_at": "before"}}}}
    with serve_in_thread(config) as sb:

        async def run() -> None:
            async with AsyncClient(**options(sb, timeout=GUARD)) as client:
                calls = [asyncio.ensure_future(client.get_wallet(refresh=True)) for _ in range(6)]
                await asyncio.to_thread(eventually, lambda: sb.faults.held == 6)
                assert sb.requests.in_flight("GET") == 6
                sb.faults.release()
                await asyncio.gather(*calls)

        asyncio.run(run())
        assert sb.requests.most_in_flight("GET") == 6
        assert sb.requests.most_in_flight() == 6
        assert sb.requests.most_in_flight("DELETE") == 0
        assert sb.requests.in_flight() == 0
        sb.requests.reset()
        assert sb.requests.most_in_flight("GET") == 0
