"""The stream never dies silently: bad frames are skipped and counted, a dead task
surfaces, a consumer that does not read does not grow memory without bound."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from clobkit import AsyncClient, errors
from clobkit.client import orders_topic
from clobkit.client._stream import Stream, parse_message
from clobkit.models import Reconnected, StreamMessage

from .conftest import KEY, SECRET
from .test_client_stream import aclient_for, next_data, ws_server

ORDER = {"type": "data", "topic": "user:u1:orders", "data": {"id": "o1", "status": "live"}}
BAD_FRAMES: list[str | bytes] = [
    b"\x00\xff\xfe binary",  # a binary frame, not UTF-8
    "\udcff".encode("utf-8", "surrogatepass"),  # invalid UTF-8 in a binary frame
    "[" * 100_000 + "]" * 100_000,  # a text frame nested too deeply to decode
    "not json",
    b'{"type": "data", "data": "\xff"}',  # JSON but for a string that is not UTF-8
]


async def send_all(server: Any, frames: list[Any]) -> None:
    for connection in list(server.connections):
        for frame in frames:
            await connection.send(frame)


async def test_bad_frames_are_skipped_counted_and_the_stream_goes_on() -> None:
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1")], backoff=0.01)
        async with stream:
            await server.wait_subscribed(1)
            await send_all(server, BAD_FRAMES)
            await server.push(ORDER)
            msg = await next_data(stream)
            assert isinstance(msg, StreamMessage)
            assert msg.order is not None
            assert stream.bad_frames == len(BAD_FRAMES)
            assert not stream.closed
            # and it still reconnects afterwards
            server.kill()
            assert isinstance(await next_data(stream), Reconnected)
            await server.wait_subscribed(2)
            await send_all(server, BAD_FRAMES[:1])
            await server.push(ORDER)
            assert (await next_data(stream)).order is not None
            assert stream.bad_frames == len(BAD_FRAMES) + 1


def test_parse_message_never_raises_on_bad_frames() -> None:
    for frame in BAD_FRAMES:
        assert parse_message(frame).type == "invalid"
    deep_order = '{"type":"data","data":{"id":"o","status":' + "[" * 5000 + "]" * 5000 + "}}"
    assert parse_message(deep_order).type in ("invalid", "data")


async def test_a_dead_task_surfaces_to_the_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Stream, raw: Any) -> None:
        raise RuntimeError("a bug in the stream")

    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1")], backoff=0.01, ack_timeout=0.05)
        async with stream:
            await server.wait_subscribed(1)
            monkeypatch.setattr(Stream, "_frame", broken)
            await server.push(ORDER)
            first = await asyncio.wait_for(stream.__anext__(), 5)  # the acknowledgement
            assert isinstance(first, StreamMessage)
            with pytest.raises(errors.TransportError, match="a bug in the stream"):
                await asyncio.wait_for(stream.__anext__(), 5)
            assert stream.closed


async def test_an_unread_stream_holds_at_most_max_queue_items() -> None:
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1")], backoff=0.01, max_queue=5)
        async with stream:
            await server.wait_subscribed(1)
            for _ in range(50):
                await server.push(ORDER)
            await asyncio.sleep(0.5)
            assert stream._queue.qsize() <= 5
            orders = 0  # nothing was lost meanwhile: the socket waited
            with contextlib.suppress(asyncio.TimeoutError):
                while orders < 50:
                    item = await asyncio.wait_for(stream.__anext__(), 2)
                    orders += isinstance(item, StreamMessage) and item.order is not None
            assert orders == 50


def test_stream_options_are_checked() -> None:
    from clobkit import AsyncClient

    client = AsyncClient("http://api.test", "k", "s")
    bads: tuple[Any, ...] = (0, -1, 1.5, True)  # not a positive int, on purpose
    for bad in bads:
        with pytest.raises(errors.ValidationError, match="max_queue"):
            client.stream(["t"], max_queue=bad)


BOMB_SERVER = """
import asyncio, json, sys
from websockets.asyncio.server import serve

async def handler(connection):
    bomb = len(sent) == 1  # the second connection: the first one warms the client up
    sent.append(1)
    async for raw in connection:
        if json.loads(raw).get("action") == "subscribe":
            await connection.send(json.dumps({"type": "subscribed"}))
            if bomb:  # compressed, were permessage-deflate offered
                await connection.send(b"[" * (64 << 20))
            else:
                await connection.send(json.dumps(%r))

async def main():
    async with serve(handler, "127.0.0.1", 0) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()

sent = []
asyncio.run(main())
"""


async def test_a_compressed_frame_bomb_is_refused_under_twice_max_size() -> None:
    """A 64 MiB frame costs the client under 2 x max_size (1 MiB): the stream offers
    no permessage-deflate (websockets would inflate a compressed frame up to
    max_size in one call, whose output buffer peaked at 2.3 MiB), so the frame is
    refused on its length; the stream drops that connection and goes on. The
    server is another process: only the client's memory is traced."""
    import subprocess
    import sys
    import tracemalloc

    server = subprocess.Popen(
        [sys.executable, "-c", BOMB_SERVER % (ORDER,)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        client = AsyncClient("http://127.0.0.1:9", KEY, SECRET, ws_url=f"ws://127.0.0.1:{port}/")
        async with client:
            async with client.stream([orders_topic("u1")]) as warm:  # imports, first use
                assert (await next_data(warm, 20.0)).order_id == "o1"
            stream = client.stream([orders_topic("u1")], backoff=0.01)
            tracemalloc.start()
            try:
                async with stream:
                    assert isinstance(await next_data(stream, 20.0), Reconnected)
                    item = await next_data(stream, 20.0)
                    _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        assert item.order_id == "o1"
        assert peak < 2 * (1 << 20), peak
    finally:
        server.kill()
        server.wait(10)


async def test_the_stream_offers_no_compression() -> None:
    async with ws_server() as server, aclient_for(server) as client:
        async with client.stream([orders_topic("u1")]):
            await server.wait_subscribed(1)
        assert "Sec-WebSocket-Extensions" not in server.handshakes[0]


async def test_a_text_frame_that_is_not_utf8_is_a_bad_frame_not_a_dead_stream() -> None:
    """Frames are read as bytes and the JSON decoder checks the text: a text frame of
    invalid UTF-8 is skipped and counted like a binary one, on the same connection."""
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1")], backoff=0.01)
        async with stream:
            await server.wait_subscribed(1)
            for connection in list(server.connections):
                await connection.send(b'{"type": "data", "x": "\xff"}', text=True)
            await server.push(ORDER)
            msg = await next_data(stream)
            assert isinstance(msg, StreamMessage)
            assert msg.order is not None
            assert stream.bad_frames == 1
            assert stream.reconnects == 0


async def test_a_decode_hook_reads_the_frames_it_knows_and_leaves_the_rest() -> None:
    seen: list[bytes] = []

    def decode(raw: bytes) -> StreamMessage | None:
        seen.append(raw)
        if b'"known"' in raw:
            return StreamMessage(type="data", topic="hooked", data=len(raw))
        return None

    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1")], backoff=0.01)
        stream.decode = decode
        async with stream:
            await server.wait_subscribed(1)
            await server.push({"type": "data", "topic": "known", "data": {}})
            hooked = await next_data(stream)
            assert (hooked.topic, hooked.order) == ("hooked", None)
            await server.push(ORDER)
            assert (await next_data(stream)).order is not None  # left to parse_message
            assert all(isinstance(raw, bytes) for raw in seen)
