"""The WebSocket stream against a local ``websockets`` server: handshake, parsing, reconnects."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from clobkit import AsyncClient, Client, errors, verify_signature
from clobkit.client import book_topic, orders_topic
from clobkit.client._stream import Stream, parse_message
from clobkit.models import Reconnected, StreamMessage

from .conftest import KEY, SECRET, FakeApi, ok


class WsServer:
    """A tiny topic server: records handshakes and subscriptions, pushes on demand."""

    def __init__(self) -> None:
        self.handshakes: list[Headers] = []
        self.subscriptions: list[list[str]] = []
        self.connections: list[ServerConnection] = []
        self.refuse: int | None = None
        self.hang_up = False  # accept the handshake, then close before any subscription
        self.refuse_whole: str | None = None  # answer a subscribe with a topic-less error
        self.port = 0

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        self.handshakes.append(request.headers)
        if self.refuse is not None:
            return connection.respond(
                self.refuse, json.dumps({"success": False, "error": "unauthorized"})
            )
        h = request.headers
        if not verify_signature(
            SECRET,
            "GET",
            request.path,
            h["X-API-TIMESTAMP"],
            h["X-API-NONCE"],
            b"",
            h["X-API-SIGNATURE"],
        ):
            return connection.respond(401, "bad signature")
        return None

    async def handler(self, connection: ServerConnection) -> None:
        if self.hang_up:
            await connection.close()
            return
        self.connections.append(connection)
        with contextlib.suppress(Exception):
            async for raw in connection:
                message = json.loads(raw)
                if message.get("action") == "subscribe":
                    self.subscriptions.append(message["topics"])
                    answer: dict[str, Any] = (
                        {"type": "subscribed", "topics": message["topics"]}
                        if self.refuse_whole is None
                        else {"type": "error", "error": self.refuse_whole}
                    )
                    await connection.send(json.dumps(answer))

    async def push(self, message: dict[str, Any]) -> None:
        for connection in list(self.connections):
            with contextlib.suppress(Exception):
                await connection.send(json.dumps(message))

    def kill(self) -> None:
        """Drop every connection without a closing handshake."""
        for connection in self.connections:
            connection.transport.abort()
        self.connections.clear()

    async def wait_subscribed(self, count: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.subscriptions) < count:
            assert time.monotonic() < deadline, "no subscription arrived"
            await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def ws_server() -> AsyncIterator[WsServer]:
    server = WsServer()
    async with serve(server.handler, "127.0.0.1", 0, process_request=server.process_request) as s:
        server.port = s.sockets[0].getsockname()[1]
        yield server


def aclient_for(server: WsServer, fake: FakeApi | None = None) -> AsyncClient:
    """A client of the stream ``server``; its REST requests go to ``fake`` (when given)."""
    return AsyncClient(
        "http://127.0.0.1:9" if fake is None else fake.url,
        KEY,
        SECRET,
        ws_url=f"ws://127.0.0.1:{server.port}/api/ext/v1/ws",
    )


async def next_data(stream: Any, timeout: float = 5.0) -> Any:
    while True:
        item = await asyncio.wait_for(stream.__anext__(), timeout)
        if isinstance(item, Reconnected) or item.type == "data":
            return item


def test_parse_message_shapes() -> None:
    msg = parse_message(
        '{"type":"data","topic":"user:u1:orders","data":{"id":"o1","status":"live","size_matched":"2.5","amount":5}}'
    )
    assert msg.type == "data"
    assert msg.topic == "user:u1:orders"
    assert msg.order is not None
    assert str(msg.order.size_matched) == "2.5"
    assert msg.order_id == "o1"
    via_order_id = parse_message('{"type":"data","data":{"order_id":"o2","status":"matched"}}')
    assert via_order_id.order is not None
    assert via_order_id.order.id == "o2"
    book = parse_message('{"type":"data","topic":"market:1:book","data":{"bids":[],"asks":[]}}')
    assert book.order is None
    assert book.data == {"bids": [], "asks": []}
    assert parse_message("not json").type == "invalid"
    assert parse_message("[1]").type == "unknown"
    assert orders_topic("u") == "user:u:orders"
    assert book_topic("7") == "market:7:book"


async def test_stream_signs_subscribes_parses_and_reconnects() -> None:
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1"), book_topic("9")], backoff=0.01)
        async with stream:
            await server.wait_subscribed(1)
            assert server.handshakes[0]["X-API-KEY"] == KEY
            assert server.subscriptions[0] == ["user:u1:orders", "market:9:book"]
            await server.push(
                {"type": "data", "topic": "user:u1:orders", "data": {"id": "o1", "status": "live"}}
            )
            msg = await next_data(stream)
            assert isinstance(msg, StreamMessage)
            assert msg.order is not None
            assert msg.order.status == "live"

            server.kill()
            marker = await next_data(stream)
            assert isinstance(marker, Reconnected)
            assert marker.topics == ["user:u1:orders", "market:9:book"]
            assert marker.attempt == 1
            await server.wait_subscribed(2)
            assert server.subscriptions[1] == server.subscriptions[0]
            assert len(server.handshakes) == 2
            assert server.handshakes[0]["X-API-NONCE"] != server.handshakes[1]["X-API-NONCE"]

            await server.push(
                {
                    "type": "data",
                    "topic": "user:u1:orders",
                    "data": {"id": "o1", "status": "matched"},
                }
            )
            msg = await next_data(stream)
            assert msg.order.status == "matched"

            await stream.subscribe(["market:10:book"])
            await server.wait_subscribed(3)
            assert server.subscriptions[2] == ["market:10:book"]
        assert stream.closed
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()


async def test_down_since_is_the_drop_until_a_subscription_stands_again() -> None:
    # every reconnect that opened a socket cleared down_since, and its loss set it anew:
    # through an outage of sockets closed at once the stream never read as down for
    # long, so a desk's stream_timeout kill switch never fired
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([book_topic("9")], backoff=0.005, backoff_cap=0.01)
        async with stream:
            await server.wait_subscribed(1)
            assert stream.down_since is None
            server.hang_up = True
            server.kill()
            while len(server.handshakes) < 3:  # a reconnect or two, refused at once
                await asyncio.sleep(0.001)
            down = stream.down_since
            assert down is not None
            while len(server.handshakes) < 8:
                assert stream.down_since == down  # the drop's time, every try long
                await asyncio.sleep(0)
            server.hang_up = False
            assert isinstance(await next_data(stream), Reconnected)
            assert stream.down_since is None


async def test_stream_first_connect_failures() -> None:
    async with ws_server() as server:
        server.refuse = 401
        async with aclient_for(server) as client:
            with pytest.raises(errors.AuthenticationError):
                await client.stream(["t"]).start()
            server.refuse = 403
            stream = client.stream(["t"])
            with pytest.raises(errors.PermissionDenied):
                async for _ in stream:
                    pass
    async with AsyncClient("http://api.test", KEY, SECRET, ws_url="ws://127.0.0.1:9/ws") as client:
        with pytest.raises(errors.TransportError, match="connect failed"):
            await client.stream(["t"]).start()


async def test_a_cancel_meeting_the_subscription_answer_ends_the_stream() -> None:
    """The stream's task is cancelled just as its wait for the subscription's answer
    completes: it must end, and ``close()`` return. (``asyncio.wait_for`` up to
    Python 3.11 returned the answer and dropped such a cancel; the task then read
    on, and ``close()``, awaiting it, hung: issue #13.) Which comes first, the
    answer or the cancel, is the event loop's order of callbacks: ``start()``
    returns (subscribed, then cancelled) or raises, and never waits for ever."""
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1")], ack_timeout=5.0)
        starting = asyncio.ensure_future(stream.start())
        reader: asyncio.Task[Any] | None = None
        deadline = time.monotonic() + 5
        while reader is None:  # the task reading the subscription's answer
            assert time.monotonic() < deadline, "the stream never waited for an answer"
            await asyncio.sleep(0)
            for task in asyncio.all_tasks():
                if task.get_coro().__qualname__.endswith(".recv"):  # type: ignore[union-attr]
                    reader = task
        stream_task = stream._task
        assert stream_task is not None
        # runs right after the answer arrives, before the stream's task resumes
        reader.add_done_callback(lambda _: stream_task.cancel())
        done, _ = await asyncio.wait({stream_task}, timeout=3.0)
        assert done, "the stream's task swallowed its cancellation and read on"
        assert stream_task.cancelled()
        await asyncio.wait_for(stream.close(), 3.0)
        try:
            await asyncio.wait_for(starting, 3.0)  # start() does not wait for ever either
        except errors.TransportError as exc:  # the cancel came before the answer was read
            assert "closed before it connected" in str(exc)  # noqa: PT017


async def test_wait_for_order_uses_an_open_stream(fake: FakeApi) -> None:
    statuses = ["live", "live", "matched"]
    reads: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        reads.append(time.monotonic())
        status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
        return ok({"order": {"id": "o1", "user_id": "u1", "status": status}})

    fake.on("GET", "/api/ext/v1/orders/o1", answer)
    async with (
        ws_server() as server,
        aclient_for(server, fake) as client,
        client.stream([orders_topic("u1")]),
    ):
        await server.wait_subscribed(1)
        waiter = asyncio.create_task(client.wait_for_order("o1", timeout=10, poll_interval=30))
        await asyncio.sleep(0.2)
        assert not waiter.done()  # poll_interval 30 s: nothing but the stream can wake it
        await server.push(
            {
                "type": "data",
                "topic": "user:u1:orders",
                "data": {"id": "other", "status": "matched"},
            }
        )
        await server.push(
            {
                "type": "data",
                "topic": "user:u1:orders",
                "data": {"id": "o1", "status": "matched"},
            }
        )
        order = await asyncio.wait_for(waiter, 5)
        assert order.status == "matched"
        assert len(reads) == 3  # first read, re-read after listening, read on the update


@pytest.fixture
def threaded_ws() -> Iterator[tuple[WsServer, asyncio.AbstractEventLoop]]:
    """The server on its own loop in a thread, for the sync stream."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        async with ws_server() as server:
            box["server"] = server
            box["stop"] = asyncio.Event()
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(5)
    yield box["server"], loop
    loop.call_soon_threadsafe(box["stop"].set)
    thread.join(5)
    loop.close()


def test_sync_stream_reconnects_and_yields_marker(threaded_ws: tuple[WsServer, Any]) -> None:
    server, loop = threaded_ws

    def on_loop(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(5)

    with Client(
        "http://api.test", KEY, SECRET, ws_url=f"ws://127.0.0.1:{server.port}/api/ext/v1/ws"
    ) as client:
        seen: list[Any] = []
        with client.stream(orders_topic("u1"), backoff=0.01) as stream:
            stream.add_listener(seen.append)
            on_loop(server.wait_subscribed(1))
            on_loop(
                server.push(
                    {
                        "type": "data",
                        "topic": "user:u1:orders",
                        "data": {"id": "o", "status": "live"},
                    }
                )
            )
            items = [stream.get(5), stream.get(5)]
            assert [None if i is None else i.type for i in items] == ["subscribed", "data"]
            loop.call_soon_threadsafe(server.kill)
            item = stream.get(5)
            assert isinstance(item, Reconnected)
            assert stream.reconnects == 1
            assert stream.get(0.01) is not None  # the new "subscribed"
            assert stream.get(0.05) is None
            stream.subscribe("market:1:book")
            on_loop(server.wait_subscribed(3))
        assert stream.closed
        assert any(isinstance(i, Reconnected) for i in seen)
        with pytest.raises(StopIteration):
            next(stream)


def test_sync_stream_refused(threaded_ws: tuple[WsServer, Any]) -> None:
    server, _ = threaded_ws
    server.refuse = 401
    with Client(
        "http://api.test", KEY, SECRET, ws_url=f"ws://127.0.0.1:{server.port}/ws"
    ) as client:
        stream = client.stream(["t"])
        with pytest.raises(errors.AuthenticationError):
            stream.start()
        assert stream.closed


async def test_many_topics_are_subscribed_in_messages_of_at_most_500() -> None:
    """Before, every topic went in one message, at start and after each reconnect: the
    sandbox refuses a message of more than 1,000 topics whole."""
    topics = [book_topic(str(k)) for k in range(1201)]
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream(topics[:1100], backoff=0.01)
        async with stream:
            await server.wait_subscribed(3)
            await stream.subscribe(topics[1100:])  # 101 more: one message
            await server.wait_subscribed(4)
            assert [len(s) for s in server.subscriptions] == [500, 500, 100, 101]
            server.kill()
            await server.wait_subscribed(7)  # resubscribed: 1,201 in three messages
            assert [len(s) for s in server.subscriptions[4:]] == [500, 500, 201]
            assert [t for s in server.subscriptions[4:] for t in s] == topics


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


async def test_a_burst_of_buffered_frames_gives_the_loop_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frames already buffered come back from ``recv`` without a wait: the stream gives
    the event loop a turn every ``STREAM_TURN`` s of handling them (0 here: a turn
    after each frame), so that a burst never holds the loop for its whole length."""
    import clobkit.client._stream as stream_module

    monkeypatch.setattr(stream_module, "STREAM_TURN", 0.0)
    turns = 0
    seen: list[int] = []  # the loop turns counted when each frame was decoded

    def decode(raw: bytes) -> None:
        if b'"burst"' in raw:
            seen.append(turns)
            if len(seen) == 1:
                time.sleep(0.2)  # the loop held: the burst's other frames arrive buffered

    async def spin() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([orders_topic("u1")], backoff=0.01)
        stream.decode = decode
        async with stream:
            await server.wait_subscribed(1)
            spinner = asyncio.ensure_future(spin())
            try:
                frames = [
                    json.dumps({"type": "data", "topic": "burst", "data": k}) for k in range(50)
                ]
                await send_all(server, frames)
                deadline = time.monotonic() + 10
                while len(seen) < 50:
                    assert time.monotonic() < deadline, f"{len(seen)} of 50 frames decoded"
                    await asyncio.sleep(0.01)
            finally:
                spinner.cancel()
    # every frame after the first (which held the loop while the rest were buffered)
    # was decoded in a later turn than the one before it
    assert all(b > a for a, b in itertools.pairwise(seen[1:])), seen
