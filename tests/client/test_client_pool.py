"""The async client's httpx transport (``_pool.py``) against a small HTTP/1.1 server
on loopback that records what reaches it: one write per request, connections
kept and shared across concurrent requests, a connection the server closed
never reused."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from clobkit import AsyncClient

from .conftest import KEY, SECRET


@dataclass
class Server:
    """Answers every request; ``reads`` holds, per request, the socket reads it took."""

    port: int = 0
    accepted: int = 0
    reads: list[int] = field(default_factory=list)
    close_after_answer: bool = False
    delay: float = 0.0

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
                if head.startswith(b"POST"):
                    body = json.dumps({"success": True, "data": {"order_id": "o-1"}}).encode()
                else:
                    body = json.dumps({"base_fee": 0}).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
                if self.close_after_answer:
                    return
        finally:
            writer.close()


@pytest.fixture
def server() -> Iterator[Server]:
    """The server on its own event loop in a thread: it reads while the client writes."""
    state = Server()
    loop = asyncio.new_event_loop()
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


def client_of(server: Server) -> AsyncClient:
    return AsyncClient(f"http://127.0.0.1:{server.port}", KEY, SECRET, max_retries=0)


async def test_a_post_leaves_in_one_write(server: Server) -> None:
    async with client_of(server) as client:
        for _ in range(5):
            placed = await client.place_order("m-1", side="BUY", outcome="a", amount=5)
            assert placed.order_id == "o-1"
    # head and body in one segment: the server's first read held the whole request
    assert server.reads == [1] * 5


async def test_concurrent_requests_share_kept_connections(server: Server) -> None:
    server.delay = 0.02  # the 20 requests overlap
    async with client_of(server) as client:
        for _ in range(3):
            rates = await asyncio.gather(
                *(client.get_fee_rate(f"t-{k}", refresh=True) for k in range(20))
            )
            assert rates == [0] * 20
    # 20 connections opened once, then reused: no new TCP connection per round
    assert server.accepted == 20
    assert len(server.reads) == 60


async def test_a_connection_the_server_closed_is_not_reused(server: Server) -> None:
    server.close_after_answer = True
    async with client_of(server) as client:
        for _ in range(3):
            assert await client.get_fee_rate("t-1", refresh=True) == 0
            await asyncio.sleep(0.05)  # the server's close has arrived
    assert server.accepted == 3
