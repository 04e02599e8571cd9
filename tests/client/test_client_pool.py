"""Both clients' pools against a small HTTP/1.1 server on loopback that records what
reaches it: one write per request, connections kept and shared across concurrent
requests (at most ``max_connections``), a connection the server closed never reused,
the wait for a connection within the attempt's deadline."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import pytest

from clobkit import AsyncClient, Client

from .conftest import KEY, SECRET


@dataclass
class Server:
    """Answers every request; ``reads`` holds, per request, the socket reads it took."""

    port: int = 0
    accepted: int = 0
    reads: list[int] = field(default_factory=list)
    close_after_answer: bool = False
    delay: float = 0.0
    #: requests for a token named "hold-..." wait for ``release`` (set on the server's
    #: loop); ``held`` counts those waiting
    held: int = 0
    release: asyncio.Event = field(default_factory=asyncio.Event)
    loop: asyncio.AbstractEventLoop | None = None

    def let_go(self) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self.release.set)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        buffer = b""
        try:
            while True:
                reads = 0
                while b"\r\n\r\n" not in buffer:
                    chunk = await reader.read(65536)
                    if not chunk:
                        return
                    buffer += chunk
                    reads += 1
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    chunk = await reader.read(65536)
                    if not chunk:
                        return
                    buffer += chunk
                    reads += 1
                buffer = buffer[length:]
                self.reads.append(reads)
                if self.delay:
                    await asyncio.sleep(self.delay)
                if b"token_id=hold" in head:
                    self.held += 1
                    await self.release.wait()
                body = _body(head)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
                if self.close_after_answer:
                    return
        finally:
            writer.close()


def _body(head: bytes) -> bytes:
    """The answer's body: a placed order, an order read, else a fee rate."""
    if head.startswith(b"POST"):
        return json.dumps({"success": True, "data": {"order_id": "o-1"}}).encode()
    if head.startswith(b"GET /api/ext/v1/orders/"):
        order = {"order": {"id": "o-1", "status": "live"}}
        return json.dumps({"success": True, "data": order}).encode()
    return json.dumps({"base_fee": 0}).encode()


@pytest.fixture
def server() -> Iterator[Server]:
    """The server on its own event loop in a thread: it reads while the client writes."""
    loop = asyncio.new_event_loop()
    state = Server(loop=loop)
    listening = loop.run_until_complete(asyncio.start_server(state.handle, "127.0.0.1", 0))
    state.port = listening.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        # the kept connections' handlers end on the loop, before it stops: left
        # pending, each would close its writer on a closed loop when collected
        asyncio.run_coroutine_threadsafe(_shut(listening), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


async def _shut(listening: asyncio.Server) -> None:
    """Stop listening, cancel every connection's handler and wait for them."""
    listening.close()
    handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in handlers:
        task.cancel()
    await asyncio.gather(*handlers, return_exceptions=True)
    await listening.wait_closed()


def client_of(server: Server, **options: Any) -> AsyncClient:
    return AsyncClient(f"http://127.0.0.1:{server.port}", KEY, SECRET, max_retries=0, **options)


def sync_client_of(server: Server, **options: Any) -> Client:
    return Client(f"http://127.0.0.1:{server.port}", KEY, SECRET, max_retries=0, **options)


async def until(check: Callable[[], bool], guard: float = 20.0) -> None:
    """Wait for ``check()`` (polled; ``guard`` s is a hang guard, not a time asserted)."""
    end = time.monotonic() + guard
    while not check():
        assert time.monotonic() < end, "the condition did not come true"
        await asyncio.sleep(0.01)


async def test_a_post_leaves_in_one_write(server: Server) -> None:
    async with client_of(server) as client:
        for _ in range(5):
            placed = await client.place_order("m-1", side="BUY", outcome="a", amount=5)
            assert placed.order_id == "o-1"
    # head and body in one segment: the server's first read held the whole request
    assert server.reads == [1] * 5


def rounds(server: Server, flavour: str, calls: int, **options: Any) -> list[list[int]]:
    """Three rounds of ``calls`` fee-rate queries at once on one client."""

    async def run() -> list[list[int]]:
        async with client_of(server, **options) as client:
            return [
                list(
                    await asyncio.gather(
                        *(client.get_fee_rate(f"t-{k}", refresh=True) for k in range(calls))
                    )
                )
                for _ in range(3)
            ]

    if flavour == "async":
        return asyncio.run(run())
    with sync_client_of(server, **options) as sync, ThreadPoolExecutor(calls) as threads:
        return [
            list(threads.map(lambda k: sync.get_fee_rate(f"t-{k}", refresh=True), range(calls)))
            for _ in range(3)
        ]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_concurrent_requests_share_kept_connections(server: Server, flavour: str) -> None:
    server.delay = 0.05  # the 20 requests overlap
    assert rounds(server, flavour, 20) == [[0] * 20] * 3
    # connections opened once, then reused: no new TCP connection per round (the sync
    # client keeps 20 idle)
    assert server.accepted <= 20
    assert len(server.reads) == 60


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_at_most_max_connections_are_open(server: Server, flavour: str) -> None:
    server.delay = 0.05
    assert rounds(server, flavour, 12, max_connections=3) == [[0] * 12] * 3
    assert server.accepted == 3  # the other requests waited for one of the three
    assert len(server.reads) == 36


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_connection_the_server_closed_is_not_reused(server: Server, flavour: str) -> None:
    server.close_after_answer = True

    async def run() -> None:
        async with client_of(server) as client:
            for _ in range(3):
                assert await client.get_fee_rate("t-1", refresh=True) == 0
                await asyncio.sleep(0.05)  # the server's close has arrived

    if flavour == "async":
        asyncio.run(run())
    else:
        with sync_client_of(server) as sync:
            for _ in range(3):
                assert sync.get_fee_rate("t-1", refresh=True) == 0
                time.sleep(0.05)
    assert server.accepted == 3


# ---------------------------------------------------------------------------
# The wait for a pool slot (issue #41: with the one connection busy, a call with
# a 1 s deadline came back after 5 s: the async client waited for a slot outside
# the attempt's timer)


@pytest.mark.parametrize(
    ("flavour", "pool"), [("async", None), ("async", 1), ("sync", None), ("sync", 2)]
)
def test_the_wait_for_a_connection_ends_by_the_deadline(
    server: Server, flavour: str, pool: int | None
) -> None:
    """A wait for an order (1 s) reads it once, then every connection of the pool (100
    by default) is taken by a request the server answers only when told: the wait's
    next read, bounded by the wait's deadline, times out while they are still held,
    not once one of them is answered."""
    size = pool or 100
    options: dict[str, Any] = {"timeout": 60.0}
    if pool is not None:
        options["max_connections"] = pool
    if flavour == "async":
        outcome = asyncio.run(_async_pool_wait(server, size, options))
    else:
        outcome = _sync_pool_wait(server, size, options)
    assert outcome == ("TimeoutError", size, 0)  # the waiter timed out; none answered


WAIT_S, POLL_S = 1.0, 0.2  # the wait's deadline and poll interval


async def _async_pool_wait(
    server: Server, size: int, options: dict[str, Any]
) -> tuple[str, int, int]:
    async with client_of(server, **options) as client:
        waiter = asyncio.ensure_future(
            client.wait_for_order("o-1", timeout=WAIT_S, poll_interval=POLL_S)
        )
        await until(lambda: len(server.reads) > 0)  # its first read is answered
        holders = [
            asyncio.ensure_future(client.get_fee_rate(f"hold-{k}", refresh=True))
            for k in range(size)
        ]
        await until(lambda: server.held == size)
        await asyncio.wait({waiter}, timeout=20)  # a hang guard: the holders never end
        answered = sum(h.done() for h in holders)
        kind = type(waiter.exception()).__name__ if waiter.done() else "still waiting"
        server.let_go()
        await asyncio.gather(*holders, return_exceptions=True)
        if not waiter.done():
            await asyncio.gather(waiter, return_exceptions=True)
    return kind, server.held, answered


def _sync_pool_wait(server: Server, size: int, options: dict[str, Any]) -> tuple[str, int, int]:
    with sync_client_of(server, **options) as client, ThreadPoolExecutor(size + 1) as threads:
        waiter = threads.submit(client.wait_for_order, "o-1", timeout=WAIT_S, poll_interval=POLL_S)
        asyncio.run(until(lambda: len(server.reads) > 0))
        holders = [
            threads.submit(client.get_fee_rate, f"hold-{k}", refresh=True) for k in range(size)
        ]
        asyncio.run(until(lambda: server.held == size))
        wait([waiter], timeout=20)  # a hang guard
        answered = sum(h.done() for h in holders)
        kind = type(waiter.exception()).__name__ if waiter.done() else "still waiting"
        server.let_go()
        wait([*holders], timeout=20)
        wait([waiter], timeout=20)
    return kind, server.held, answered
