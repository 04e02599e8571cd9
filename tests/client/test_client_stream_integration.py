"""The WebSocket stream against the sandbox, with the connection killed mid-flow.

The client reaches the sandbox's WebSocket through a loopback TCP proxy; the
test resets every proxied connection and refuses new ones while the house
fills the resting order, then lets the client back in. Every fill is seen:
live over the stream, and the one sent while the connection was down through
the REST resynchronisation that the ``Reconnected`` marker calls for.
"""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from typing import Any

import httpx

from clobkit import AsyncClient, Client
from clobkit.client import orders_topic
from clobkit.models import Reconnected, StreamMessage

from .conftest import client_options, full_scope_users
from .helpers import market_with_book, resting_buy_price

SIZE = 40  # shares of the resting order
FILLS = (Decimal(10), Decimal(5), Decimal(25))  # live, while down, live again


def ws_through(proxy: Any) -> str:
    return f"ws://127.0.0.1:{proxy.port}/api/ext/v1/ws"


def sandbox_port(sb: Any) -> int:
    return int(httpx.URL(sb.base_url).port or 80)


def order_update(item: Any, order_id: str) -> StreamMessage | None:
    if isinstance(item, StreamMessage) and item.order_id == order_id and item.order is not None:
        return item
    return None


async def test_async_stream_survives_a_killed_connection(sandbox: Any, tcp_proxy: Any) -> None:
    me = full_scope_users(sandbox)[0]
    proxy = tcp_proxy(sandbox_port(sandbox))
    options = client_options(sandbox, me, ws_url=ws_through(proxy))
    async with AsyncClient(**options) as client:
        market = await asyncio.to_thread(_market, sandbox, me)
        price = resting_buy_price(await client.get_orderbook(market.token_id_a))
        stream = client.stream([orders_topic(me.user_id)], backoff=0.05, backoff_cap=0.2)
        async with stream:
            placed = await client.place_raw_order(market.id, "a", "BUY", price, SIZE)
            order_id = placed.order_id
            await client.wait_for_order(order_id, "live", timeout=10)

            async def matched_after(total: Decimal) -> StreamMessage:
                deadline = time.monotonic() + 10
                while True:
                    item = await asyncio.wait_for(stream.__anext__(), deadline - time.monotonic())
                    update = order_update(item, order_id)
                    if update is not None and update.order.size_matched == total:  # type: ignore[union-attr]
                        return update

            await asyncio.to_thread(sandbox.house_fill, order_id, FILLS[0])
            first = await matched_after(FILLS[0])
            assert first.order is not None
            assert first.order.status == "live"

            proxy.blocked = True
            proxy.kill()
            await asyncio.to_thread(sandbox.house_fill, order_id, FILLS[1])  # while down
            await asyncio.sleep(0.3)  # reconnects are refused meanwhile
            proxy.blocked = False

            marker = None
            deadline = time.monotonic() + 10
            while marker is None:
                item = await asyncio.wait_for(stream.__anext__(), deadline - time.monotonic())
                if isinstance(item, Reconnected):
                    marker = item
            assert marker.topics == [orders_topic(me.user_id)]
            assert stream.reconnects >= 1
            resync = {o.id: o for o in await client.open_orders()}
            assert resync[order_id].size_matched == FILLS[0] + FILLS[1]  # the missed fill

            waiter = asyncio.create_task(client.wait_for_order(order_id, "matched", timeout=10))
            await asyncio.sleep(0.05)
            await asyncio.to_thread(sandbox.house_fill, order_id, FILLS[2])
            last = await matched_after(sum(FILLS, Decimal(0)))
            assert last.order is not None
            assert last.order.status == "matched"
            done = await asyncio.wait_for(waiter, 10)
            assert done.status == "matched"
            assert done.size_matched == Decimal(SIZE)
    assert proxy.accepted >= 2


def _market(sb: Any, me: Any) -> Any:
    with Client(**client_options(sb, me)) as client:
        return market_with_book(client, "nba")


def test_sync_stream_survives_a_killed_connection(sandbox: Any, tcp_proxy: Any) -> None:
    me = full_scope_users(sandbox)[0]
    proxy = tcp_proxy(sandbox_port(sandbox))
    with Client(**client_options(sandbox, me, ws_url=ws_through(proxy))) as client:
        market = market_with_book(client, "nba")
        assert market.token_id_a is not None
        price = resting_buy_price(client.get_orderbook(market.token_id_a))
        with client.stream(orders_topic(me.user_id), backoff=0.05, backoff_cap=0.2) as stream:
            placed = client.place_raw_order(market.id, "a", "BUY", price, SIZE)
            order_id = placed.order_id
            client.wait_for_order(order_id, "live", timeout=10)

            def matched_after(total: Decimal) -> StreamMessage:
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    update = order_update(stream.get(timeout=0.5), order_id)
                    if update is not None and update.order.size_matched == total:  # type: ignore[union-attr]
                        return update
                raise AssertionError(f"no update with size_matched {total}")

            sandbox.house_fill(order_id, FILLS[0])
            assert matched_after(FILLS[0]).order.status == "live"  # type: ignore[union-attr]

            proxy.blocked = True
            proxy.kill()
            sandbox.house_fill(order_id, FILLS[1])
            time.sleep(0.3)
            proxy.blocked = False
            deadline = time.monotonic() + 10
            while not isinstance(stream.get(timeout=0.5), Reconnected):
                assert time.monotonic() < deadline, "no Reconnected marker"
            resync = {o.id: o for o in client.open_orders()}
            assert resync[order_id].size_matched == FILLS[0] + FILLS[1]

            sandbox.house_fill(order_id, FILLS[2])
            last = matched_after(sum(FILLS, Decimal(0)))
            assert last.order is not None
            assert last.order.status == "matched"
            done = client.wait_for_order(order_id, "matched", timeout=10)
            assert done.size_matched == Decimal(SIZE)


def test_sync_wait_for_order_by_stream(sandbox: Any) -> None:
    me = full_scope_users(sandbox)[0]
    with Client(**client_options(sandbox, me)) as client:
        market = market_with_book(client, "nba")
        assert market.token_id_a is not None
        price = resting_buy_price(client.get_orderbook(market.token_id_a))
        placed = client.place_raw_order(market.id, "a", "BUY", price, SIZE)
        with client.stream(orders_topic(me.user_id)):
            import threading

            timer = threading.Timer(0.3, sandbox.house_fill, (placed.order_id, SIZE))
            timer.start()
            order = client.wait_for_order(placed.order_id, timeout=10, poll_interval=30)
            timer.join()
            # woken by the stream: without it the first re-read would come after the
            # 30 s poll, past the 10 s timeout (no wall-clock bound to fail when busy)
            assert order.status == "matched"
