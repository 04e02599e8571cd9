"""The sandbox's faults on purpose: failed requests (before or after commit) and
dropped streams. Against a running sandbox, with the real client."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from clobkit import AsyncClient, Client
from clobkit.errors import ServerError, TransportError
from clobkit.models import Reconnected
from clobkit.sandbox import SandboxConfig, serve_in_thread
from clobkit.sandbox.config import ConfigError
from clobkit.sandbox.faults import FaultConfig

from ..conftest import loopback_http_async


def _client(sb: Any, **overrides: Any) -> Client:
    user = sb.users[1]
    options: dict[str, Any] = {"clob_url": sb.clob_url, "ws_url": sb.ws_url, "max_retries": 0}
    options.update(overrides)
    return Client(sb.base_url, user.api_key, user.api_secret, **options)


def _market(sb: Any) -> str:
    for market_id, state in sb.engine.markets.items():
        if state.active and sb.engine.orderbook(state.fx.token_id_a) is not None:
            return str(market_id)
    raise AssertionError("no market with a book")


def _orders(sb: Any) -> int:
    return len(sb.engine.list_orders(sb.users[1].user_id, page_size=10_000).items)


def test_no_faults_by_default() -> None:
    assert SandboxConfig().faults is None
    with serve_in_thread() as sb, _client(sb) as client:
        for _ in range(30):
            client.get_wallet(refresh=True)
        assert sum(sb.faults.injected.values()) == 0


@pytest.mark.parametrize(
    ("faults", "words"),
    [
        ({"error_rate": 1.5}, "faults.error_rate must lie in"),
        ({"after_commit": -0.1}, "faults.after_commit must lie in"),
        ({"error_rate": "often"}, "faults.error_rate must be a number"),
        ({"seed": 1.5}, "faults.seed must be an integer"),
        ({"rate": 0.1}, "unknown faults keys"),
        ([0.2], "faults must be an object"),
    ],
)
def test_bad_fault_config(faults: Any, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        SandboxConfig.from_dict({"faults": faults})


def test_config_section_is_read() -> None:
    config = SandboxConfig.from_dict(
        {"faults": {"error_rate": 0.2, "after_commit": 0.5, "seed": 3}}
    )
    assert config.faults == FaultConfig(0.2, 0.5, 3)


def test_failures_before_commit_leave_nothing_behind() -> None:
    config = {"faults": {"error_rate": 1.0, "after_commit": 0.0, "seed": 1}}
    with serve_in_thread(config) as sb, _client(sb) as client:
        market = _market(sb)
        sb.faults.configure(None)
        client.prepare([market])
        sb.faults.configure(config["faults"])
        kinds = set()
        for _ in range(12):
            with pytest.raises((ServerError, TransportError)) as info:
                client.place_raw_order(market, "a", "BUY", "0.05", 40)
            kinds.add(type(info.value))
        assert kinds == {ServerError, TransportError}  # a 500 in the envelope, a dropped line
        assert _orders(sb) == 0
        assert sb.faults.injected["before_500"] + sb.faults.injected["before_drop"] == 12


def test_failures_after_commit_placed_the_order() -> None:
    config = {"faults": {"error_rate": 1.0, "after_commit": 1.0, "seed": 2}}
    with serve_in_thread(config) as sb, _client(sb) as client:
        market = _market(sb)
        sb.faults.configure(None)
        client.prepare([market])
        sb.faults.configure(config["faults"])
        for n in range(1, 7):
            with pytest.raises((ServerError, TransportError)):
                client.place_raw_order(market, "a", "BUY", "0.05", 40)
            assert _orders(sb) == n  # the answer was lost, the order was placed
        order_id = sb.engine.list_orders(sb.users[1].user_id).items[0].id
        with pytest.raises((ServerError, TransportError)):
            client.cancel_order(order_id)
        assert sb.engine.order(order_id).status == "cancelled"
        assert sb.engine.check_invariants() == []


def _outcome(client: Client) -> str:
    """``ok``, ``500`` or ``drop``: what one signed request met."""
    try:
        client.get_wallet(refresh=True)
    except ServerError as exc:
        return f"{exc.status} {exc.message}"
    except TransportError:
        return "drop"
    return "ok"


def test_injected_500_is_an_envelope() -> None:
    with serve_in_thread({"faults": {"error_rate": 1.0, "seed": 4}}) as sb, _client(sb) as client:
        seen = {_outcome(client) for _ in range(20)}
    assert seen == {"500 internal error (injected fault)", "drop"}


def test_the_draws_are_seeded() -> None:
    def outcomes(seed: int) -> list[str]:
        config = {"faults": {"error_rate": 0.5, "after_commit": 0.5, "seed": seed}}
        with serve_in_thread(config) as sb, _client(sb) as client:
            return [_outcome(client).split()[0] for _ in range(24)]

    first = outcomes(5)
    assert first == outcomes(5)
    assert first != outcomes(6)
    assert {"ok", "500", "drop"} <= set(first)


def test_fee_rate_query_is_not_faulted() -> None:
    with serve_in_thread({"faults": {"error_rate": 1.0, "seed": 1}}) as sb:
        token = next(iter(sb.engine.tokens))
        for _ in range(10):
            answer = httpx.get(sb.clob_url + "/fee-rate", params={"token_id": token})
            assert answer.status_code == 200


def test_drop_streams_and_its_admin_route() -> None:
    async def main(sb: Any) -> None:
        user = sb.users[1]
        async with AsyncClient(
            sb.base_url, user.api_key, user.api_secret, clob_url=sb.clob_url, ws_url=sb.ws_url
        ) as client:
            stream = client.stream([f"user:{user.user_id}:orders"], backoff=0.01)
            await stream.start()
            assert await asyncio.to_thread(sb.drop_streams) == 1
            item = await asyncio.wait_for(_next_marker(stream), 5)
            assert item.attempt == 1
            async with loopback_http_async() as admin:
                answer = await admin.post(sb.base_url + "/admin/streams/drop", json={})
            assert answer.json() == {"success": True, "data": {"dropped": 1}}
            item = await asyncio.wait_for(_next_marker(stream), 5)
            assert item.attempt == 2
            await stream.close()

    with serve_in_thread() as sb:
        asyncio.run(main(sb))
        assert sb.drop_streams() == 0


async def _next_marker(stream: Any) -> Reconnected:
    async for item in stream:
        if isinstance(item, Reconnected):
            return item
    raise AssertionError("the stream ended")


def test_faults_of_one_route_replace_the_others() -> None:
    """A listing that fails while cancels work (``faults.routes``): the kill switch's
    neighbours failing, on purpose."""
    routes = {"GET /orders": {"error_rate": 1.0, "seed": 2}, "DELETE /orders/{id}": None}
    config = {"faults": {"error_rate": 1.0, "seed": 1, "routes": routes}}
    with serve_in_thread({**config, "risk": None}) as sb, _client(sb) as client:
        faults = sb.faults
        faults.configure(None)
        market = _market(sb)
        placed = client.place_raw_order(market, "a", "BUY", "0.05", 20)
        faults.configure(config["faults"])
        with pytest.raises((ServerError, TransportError)):
            client.list_orders()  # its own faults: every one fails
        with pytest.raises((ServerError, TransportError)):
            client.get_wallet(refresh=True)  # the sandbox's: every one fails
        assert client.cancel_order(placed.order_id).status == "cancelled"  # none
        assert FaultConfig.from_dict(faults.config.to_dict()) == faults.config


@pytest.mark.parametrize(
    ("routes", "words"),
    [
        ({"GET /nowhere": None}, r"faults.routes names no endpoint: \['GET /nowhere'\]"),
        ({"orders": None}, "faults.routes keys are endpoints such as 'GET /orders'"),
        ({"GET /orders": 5}, r"faults.routes\['GET /orders'\] must be an object or null"),
        ({"GET /orders": {"routes": {}}}, "cannot have routes of its own"),
        ({"GET /orders": {"error_rate": 2}}, "faults.error_rate must lie in"),
        ([1], "faults.routes must be an object"),
    ],
)
def test_bad_routes_are_refused(routes: Any, words: str) -> None:
    with serve_in_thread() as sb, pytest.raises(ConfigError, match=words):
        sb.faults.configure({"routes": routes})
