"""The two I/O shells against a scripted server on loopback (``FakeApi``): drivers,
paging, gather, waiting."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from clobkit import AsyncClient, Client, errors
from clobkit.client import paced
from clobkit.models import Order

from .conftest import (
    DROP,
    HANG,
    MARKET_ID,
    TOKEN_A,
    TOKEN_B,
    Action,
    FakeApi,
    _options,
    fail,
    ok,
)


def paged_events(total: int) -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params.get("offset", 0))
        limit = int(request.url.params.get("limit", 20))
        events = [{"id": f"e{i}"} for i in range(offset, min(total, offset + limit))]
        return ok({"events": events, "total_count": total, "page": 1, "page_size": limit})

    return answer


def paged_orders(total: int) -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        page = int(request.url.params["page"])
        size = int(request.url.params["page_size"])
        status = request.url.params.get("status", "live")
        start = (page - 1) * size
        orders = [
            {"id": f"{status}-{i}", "status": status}
            for i in range(start, min(total, start + size))
        ]
        return ok({"orders": orders, "total_count": total, "page": page, "page_size": size})

    return answer


def paged_positions(total: int, key: str) -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        page = int(request.url.params["page"])
        per = int(request.url.params["per_page"])
        start = (page - 1) * per
        items = [
            {"id": i} if key == "positions" else {"id": f"h{i}"}
            for i in range(start, min(total, start + per))
        ]
        pages = -(-total // per)
        return ok(
            {
                key: items,
                "pagination": {
                    "current_page": page,
                    "total_pages": pages,
                    "total_count": total,
                    "per_page": per,
                },
            }
        )

    return answer


def route_pages(fake: FakeApi) -> None:
    fake.on("GET", "/api/ext/v1/events", paged_events(45))
    fake.on("GET", "/api/ext/v1/orders", paged_orders(7))
    fake.on("GET", "/api/ext/v1/portfolio/positions", paged_positions(5, "positions"))
    fake.on("GET", "/api/ext/v1/portfolio/orders", paged_positions(4, "orders"))


def test_sync_iterators_walk_every_page(fake: FakeApi, mock_client: Client) -> None:
    route_pages(fake)
    events = list(mock_client.iter_events(limit=20, league="nba"))
    assert [e.id for e in events] == [f"e{i}" for i in range(45)]
    assert fake.count("GET", "/api/ext/v1/events") == 3
    assert all(r.url.params.get("league") == "nba" for r in fake.requests)
    assert len(list(mock_client.iter_orders("live", page_size=3))) == 7
    assert len(list(mock_client.iter_positions(per_page=2))) == 5
    assert len(list(mock_client.iter_portfolio_orders("BUY", per_page=3))) == 4
    assert mock_client.list_events(limit=10, offset=40).events[-1].id == "e44"


async def test_async_iterators_walk_every_page(fake: FakeApi, mock_aclient: AsyncClient) -> None:
    route_pages(fake)
    events = [e async for e in mock_aclient.iter_events(limit=20)]
    assert len(events) == 45
    assert len([o async for o in mock_aclient.iter_orders(page_size=3)]) == 7
    assert len([p async for p in mock_aclient.iter_positions(per_page=2)]) == 5
    assert len([p async for p in mock_aclient.iter_portfolio_orders(per_page=3)]) == 4
    page = await mock_aclient.list_events(limit=10, offset=40)
    assert page.events[-1].id == "e44"


def test_open_orders_reads_every_open_status(fake: FakeApi, mock_client: Client) -> None:
    fake.on("GET", "/api/ext/v1/orders", paged_orders(2))
    orders = mock_client.open_orders()
    assert sorted({o.status or "" for o in orders}) == ["live", "pending", "signing", "submitted"]
    assert len(orders) == 8


async def test_async_open_orders(fake: FakeApi, mock_aclient: AsyncClient) -> None:
    fake.on("GET", "/api/ext/v1/orders", paged_orders(2))
    assert len(await mock_aclient.open_orders()) == 8


class SlowFake(FakeApi):
    """Each answer takes 100 ms; records how many requests overlap (on the server)."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response | Action:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.1)
        with self.lock:
            self.active -= 1
        return super().__call__(request)


@pytest.fixture
def slow() -> Any:
    api = SlowFake()
    yield api
    api.close()


def test_sync_prepare_warms_caches_concurrently(slow: SlowFake) -> None:
    with Client(**_options(slow.url)) as client:
        client.prepare([MARKET_ID])
        # wallet || market, then both fee rates together: requests overlapped (counted,
        # not timed, so a busy machine cannot fail it)
        assert slow.peak >= 2
        assert client._core.hasher is not None
        assert set(client._core.fee_rates) == {TOKEN_A, TOKEN_B}
        before = len(slow.requests)
        client.place_raw_order(MARKET_ID, "a", "BUY", "0.5", 2)
        assert len(slow.requests) == before + 1  # nothing looked up any more


async def test_async_prepare_warms_caches_concurrently(slow: SlowFake) -> None:
    async with AsyncClient(**_options(slow.url)) as client:
        await client.prepare([MARKET_ID])
        assert slow.peak >= 2  # requests overlapped
        before = len(slow.requests)
        result = await client.place_raw_order(MARKET_ID, "b", "SELL", "0.5", 2)
        assert len(slow.requests) == before + 1
        assert result.token_id == TOKEN_B


def test_sync_retry_with_real_sleeps(fake: FakeApi, make_mock_client: Any) -> None:
    fake.on(
        "GET",
        "/api/ext/v1/orders/o",
        fail(429, "slow down", **{"Retry-After": "0.2"}),
        DROP,
        ok({"order": {"id": "o", "status": "live"}}),
    )
    client = make_mock_client()
    started = time.perf_counter()
    assert client.get_order("o").status == "live"
    assert time.perf_counter() - started >= 0.2  # Retry-After honoured
    assert fake.count("GET", "/api/ext/v1/orders/o") == 3


async def test_async_retry_with_real_sleeps(fake: FakeApi) -> None:
    fake.on(
        "GET",
        "/api/ext/v1/orders/o",
        fail(429, "slow down", **{"Retry-After": "0.2"}),
        HANG,
        ok({"order": {"id": "o", "status": "live"}}),
    )
    started = time.perf_counter()
    async with AsyncClient(**_options(fake.url, timeout=0.3)) as client:
        assert (await client.get_order("o")).status == "live"
    assert time.perf_counter() - started >= 0.2
    assert fake.count("GET", "/api/ext/v1/orders/o") == 3


async def test_a_closed_async_client_refuses_its_calls(fake: FakeApi) -> None:
    # close() then a call sent the request anyway, on a pool opened again
    client = AsyncClient(**_options(fake.url))
    fake.on("GET", "/api/ext/v1/orders/o", ok({"order": {"id": "o"}}))
    assert (await client.get_order("o")).id == "o"
    await client.close()
    sent = len(fake.requests)
    with pytest.raises(errors.TransportError, match="closed"):
        await client.get_order("o")
    with pytest.raises(errors.TransportError, match="closed"):
        client.stream(["market:x:book"])
    with pytest.raises(errors.TransportError, match="closed"):
        await client.place_raw_order_amounts(MARKET_ID, "a", "BUY", 1_000_000, 2_000_000)
    assert len(fake.requests) == sent


async def test_paced_takes_room_before_each_request_sent_again(fake: FakeApi) -> None:
    mock_aclient = AsyncClient(**_options(fake.url, timeout=0.3))
    answers = [fail(503, "busy"), HANG, ok({"order": {"id": "o"}})]
    taken: list[str] = []

    async def take() -> None:
        taken.append("retry")
        await asyncio.sleep(0)

    fake.on("GET", "/api/ext/v1/orders/o", *answers)
    with paced(take):
        assert (await mock_aclient.get_order("o")).id == "o"
        gathered = [mock_aclient.get_order("o") for _ in range(2)]
        fake.on("GET", "/api/ext/v1/orders/o", ok({"order": {"id": "o"}}))
        await asyncio.gather(*gathered)  # first tries only: nothing taken
    assert taken == ["retry", "retry"]  # the two retries; the first try is the caller's
    fake.on("GET", "/api/ext/v1/orders/o", *answers)
    await mock_aclient.get_order("o")  # outside the block: nothing paces it
    assert taken == ["retry", "retry"]
    route_pages(fake)  # 5 positions, 2 a page: 3 requests, the first the caller's
    with paced(take):
        assert len([p async for p in mock_aclient.iter_positions(per_page=2)]) == 5
    assert taken == ["retry"] * 4
    await mock_aclient.close()


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_transport_error_classes(fake: FakeApi, flavour: str) -> None:
    fake.on("GET", "/api/ext/v1/wallet", HANG)
    fake.on("GET", "/api/ext/v1/orders/x", DROP)
    options = _options(fake.url, max_retries=0, timeout=0.3)
    if flavour == "sync":
        with Client(**options) as c:
            with pytest.raises(errors.TimeoutError) as timeout:
                c.get_wallet()
            with pytest.raises(errors.TransportError) as dropped:
                c.get_order("x")
    else:

        async def run() -> tuple[Any, Any]:
            async with AsyncClient(**options) as c:
                with pytest.raises(errors.TimeoutError) as t:
                    await c.get_wallet()
                with pytest.raises(errors.TransportError) as r:
                    await c.get_order("x")
                return t, r

        timeout, dropped = asyncio.run(run())
    assert isinstance(timeout.value, TimeoutError)  # also the builtin
    assert not isinstance(dropped.value, errors.TimeoutError)
    assert "server disconnected without sending an answer" in str(dropped.value)


def test_wallet_is_cached_for_the_client_life(fake: FakeApi, mock_client: Client) -> None:
    first = mock_client.get_wallet()
    assert mock_client.get_wallet() is first
    assert fake.count("GET", "/api/ext/v1/wallet") == 1
    mock_client.get_wallet(refresh=True)
    assert fake.count("GET", "/api/ext/v1/wallet") == 2


def test_market_cache_from_get_market_and_search(fake: FakeApi, mock_client: Client) -> None:
    fake.on(
        "GET",
        "/api/ext/v1/markets",
        ok(
            {
                "markets": [{"id": "m-s", "token_id_a": "1", "token_id_b": "2", "neg_risk": True}],
                "count": 1,
            }
        ),
    )
    mock_client.search_markets("lakers")
    assert mock_client._core.markets["m-s"].neg_risk is True
    mock_client.get_market(MARKET_ID)
    assert MARKET_ID in mock_client._core.markets
    mock_client.clear_caches()
    assert mock_client._core.markets == {}


def _order_sequence(*statuses: str) -> list[httpx.Response]:
    return [ok({"order": {"id": "o", "user_id": "u", "status": s}}) for s in statuses]


def test_wait_for_order_polls_without_a_stream(fake: FakeApi, mock_client: Client) -> None:
    fake.on("GET", "/api/ext/v1/orders/o", *_order_sequence("pending", "live", "live", "matched"))
    order = mock_client.wait_for_order("o", timeout=5, poll_interval=0.01)
    assert order.status == "matched"
    live = mock_client.wait_for_order("o", "matched", timeout=1)
    assert isinstance(live, Order)


def test_wait_for_order_times_out(fake: FakeApi, mock_client: Client) -> None:
    fake.on("GET", "/api/ext/v1/orders/o", *_order_sequence("live"))
    with pytest.raises(errors.TimeoutError, match="did not reach matched"):
        mock_client.wait_for_order("o", ["matched"], timeout=0.2, poll_interval=0.05)
    assert fake.count("GET", "/api/ext/v1/orders/o") >= 2  # polled until the deadline


async def test_async_wait_for_order_polls(fake: FakeApi, mock_aclient: AsyncClient) -> None:
    fake.on("GET", "/api/ext/v1/orders/o", *_order_sequence("live", "cancelled"))
    order = await mock_aclient.wait_for_order("o", timeout=5, poll_interval=0.01)
    assert order.status == "cancelled"
    fake.on("GET", "/api/ext/v1/orders/o", *_order_sequence("live"))
    with pytest.raises(errors.TimeoutError):
        await mock_aclient.wait_for_order("o", "won", timeout=0.1, poll_interval=0.02)
