"""``AsyncClient`` requests cut short (a task cancelled, the client's own timeout) while
the sandbox holds them (``faults.latency_ms``): a clear outcome, no connection reused
half-read, no answer read by the wrong request, no pool slot lost.

The sandbox holds a request until the test releases it (``faults.held`` /
``faults.release()``): every cancellation point is controlled, none is raced.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.errors import TimeoutError as ClobkitTimeoutError
from clobkit.errors import TransportError
from clobkit.sandbox import serve_in_thread

GUARD = 30.0  # s: a hang guard only
HOLD = 60_000  # ms: held until the test releases it
SLOTS = 100  # the AsyncClient's connections at most (POOL_LIMITS)


@pytest.fixture
def sb() -> Iterator[Any]:
    with serve_in_thread({"rate_limit_per_minute": None, "risk": None}) as sandbox:
        yield sandbox
        sandbox.faults.release()


def aclient(sb: Any, **overrides: Any) -> AsyncClient:
    user = sb.users[1]
    options: dict[str, Any] = {"clob_url": sb.clob_url, "ws_url": sb.ws_url, "max_retries": 0}
    options.update(overrides)
    return AsyncClient(sb.base_url, user.api_key, user.api_secret, **options)


async def eventually(check: Callable[[], bool], timeout: float = GUARD) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, "the condition did not become true in time"
        await asyncio.sleep(0.005)


async def cancel(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results), results


def market_with_book(sb: Any) -> str:
    for market_id, state in sb.engine.markets.items():
        if state.active and sb.engine.orderbook(state.fx.token_id_a) is not None:
            return str(market_id)
    raise AssertionError("no market with a book")


def orders(sb: Any) -> list[Any]:
    return list(sb.engine.list_orders(sb.users[1].user_id, page_size=10_000).items)


async def test_own_timeout_after_commit_carries_the_order(sb: Any) -> None:
    """The client's own timeout on a raw order held after it took effect: the
    ``TimeoutError`` (a ``TransportError``) carries the order, which resolves to the
    one the service holds."""
    market = market_with_book(sb)
    async with aclient(sb, timeout=1.0, max_retries=1) as client:
        await client.prepare([market])
        sb.faults.configure({"latency_ms": HOLD})
        with pytest.raises(ClobkitTimeoutError) as info:
            await client.place_raw_order(market, "a", "BUY", "0.05", 40)
        assert isinstance(info.value, TransportError)
        sent = info.value.order
        assert sent is not None
        assert [r.order_source_id for r in orders(sb)] == [sent.client_order_id]
        sb.faults.configure(None)
        sb.faults.release()
        found = await client.resolve_raw_order(sent)
        assert found is not None
        assert found.id == orders(sb)[0].id
        assert len(orders(sb)) == 1  # the retry under the same key made none


@pytest.mark.parametrize("at", ["before", "after"])
async def test_cancelled_after_send_no_answer_goes_astray(sb: Any, at: str) -> None:
    """A place cancelled while its answer is held: the next request, sent before the
    held answer comes, reads its own answer (the cut connection is not reused)."""
    market = market_with_book(sb)
    async with aclient(sb) as client:
        await client.prepare([market])
        first = await client.place_raw_order(market, "a", "BUY", "0.05", 40)
        sb.faults.configure({"latency_ms": HOLD, "latency_at": at})
        task = asyncio.ensure_future(client.place_raw_order(market, "a", "BUY", "0.06", 40))
        await eventually(lambda: sb.faults.held == 1)
        await cancel([task])
        sb.faults.configure(None)
        # answered while the cut request is still held: not queued behind it
        order = await asyncio.wait_for(client.get_order(first.order_id), GUARD)
        assert order.id == first.order_id
        assert sb.faults.held == 1
        sb.faults.release()
        await eventually(lambda: len(orders(sb)) == 2)  # the cut place took effect
        for record in orders(sb):
            assert (await client.get_order(record.id)).id == record.id


async def test_a_thousand_cancelled_requests_keep_every_slot(sb: Any) -> None:
    """1,000 requests cancelled after they were sent, and more cancelled while waiting
    for a connection: all ``SLOTS`` connections can still be in use at once after."""
    batch = 50
    async with aclient(sb) as client:
        await client.get_wallet()
        sb.faults.configure({"latency_ms": HOLD, "latency_at": "before"})
        for _ in range(1000 // batch):
            tasks = [asyncio.ensure_future(client.get_wallet(refresh=True)) for _ in range(batch)]
            await eventually(lambda: sb.faults.held == batch)
            await cancel(tasks)
            sb.faults.release()
            await eventually(lambda: sb.faults.held == 0)
        # cancelled before they ever ran, and while waiting for a pool slot
        await cancel([asyncio.ensure_future(client.get_wallet(refresh=True)) for _ in range(5)])
        full = [asyncio.ensure_future(client.get_wallet(refresh=True)) for _ in range(SLOTS)]
        await eventually(lambda: sb.faults.held == SLOTS)
        waiting = [asyncio.ensure_future(client.get_wallet(refresh=True)) for _ in range(20)]
        await asyncio.sleep(0)
        await cancel(waiting)
        sb.faults.configure(None)
        sb.faults.release()
        await asyncio.wait_for(asyncio.gather(*full), GUARD)
        sb.faults.configure({"latency_ms": HOLD, "latency_at": "before"})
        again = [asyncio.ensure_future(client.get_wallet(refresh=True)) for _ in range(SLOTS)]
        await eventually(lambda: sb.faults.held == SLOTS)  # a slot lost would leave 99
        sb.faults.configure(None)
        sb.faults.release()
        await asyncio.wait_for(asyncio.gather(*again), GUARD)
        assert (await client.get_wallet(refresh=True)).maker
