"""A stream keeps the topics the service refused (``Stream.refused``, the one home of
that state: a desk, a quoter, a book mirror and a recorder read it), against a local
``websockets`` server that answers as the test says.

Before, each consumer kept its own copy from the ``error`` messages it read, and a
whole subscribe message refused without a topic (the sandbox past its topics per
message: every topic of a stream resubscribed at once after a reconnect) was refused
by nobody: every topic unheard, none said to be.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from clobkit import Client
from clobkit.client import book_topic, orders_topic

from .conftest import KEY, SECRET
from .test_client_cancelled import eventually
from .test_client_stream import WsServer, aclient_for, next_data, threaded_ws, ws_server

__all__ = ["threaded_ws"]  # the fixture, used here by name

ORDERS, BOOK, OTHER = orders_topic("u1"), book_topic("9"), book_topic("10")


async def test_a_refused_topic_is_kept_until_heard_or_subscribed_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "clobkit")
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([ORDERS, BOOK], backoff=0.01, backoff_cap=0.05)
        async with stream:
            await server.wait_subscribed(1)
            await server.push({"type": "error", "topic": BOOK, "error": "unknown token"})
            await eventually(lambda: stream.refused == {BOOK: "unknown token"})
            assert stream.refusal(BOOK) == "unknown token"
            assert stream.refusal(ORDERS) is None
            stream.refused.clear()  # a copy: the stream's own is untouched
            assert stream.refusal(BOOK) == "unknown token"
            assert f"the service refused the topic {BOOK}: unknown token" in caplog.text
            # a message on the topic: its subscription stands after all
            await server.push({"type": "snapshot", "topic": BOOK, "data": {"bids": []}})
            await eventually(lambda: stream.refused == {})
            # refused again, then a reconnect subscribes it anew: forgotten
            await server.push({"type": "error", "topic": BOOK, "error": "unknown token"})
            await eventually(lambda: BOOK in stream.refused)
            server.kill()
            await server.wait_subscribed(2)
            await eventually(lambda: stream.reconnects == 1)
            assert stream.refused == {}
            # refused, then dropped: not the stream's any more
            await server.push({"type": "error", "topic": BOOK, "error": "unknown token"})
            await eventually(lambda: BOOK in stream.refused)
            await stream.unsubscribe(BOOK)
            assert stream.refused == {}


async def test_a_whole_subscribe_message_refused_refuses_each_of_its_topics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "clobkit")
    async with ws_server() as server, aclient_for(server) as client:
        stream = client.stream([ORDERS], backoff=0.01, backoff_cap=0.05)
        async with stream:
            await server.wait_subscribed(1)
            server.refuse_whole = "at most 1 topics per message"
            await stream.subscribe([BOOK, OTHER])
            await eventually(lambda: len(stream.refused) == 2)
            assert stream.refused == dict.fromkeys([BOOK, OTHER], "at most 1 topics per message")
            for topic in (BOOK, OTHER):
                assert f"the service refused the topic {topic}" in caplog.text
            # after a reconnect every topic goes in one message: refused whole, each said
            server.kill()
            marker = await next_data(stream)
            assert marker.topics == [ORDERS, BOOK, OTHER]
            await eventually(lambda: len(stream.refused) == 3)
            # an answer to an unsubscribe refused whole is only said (nothing to refuse)
            server.refuse_whole = None
            await stream.unsubscribe(OTHER)
            await server.push({"type": "error", "error": "no such subscription"})
            await eventually(lambda: "answered an error: no such subscription" in caplog.text)
            assert set(stream.refused) == {ORDERS, BOOK}


def test_the_sync_stream_tells_its_refusals(threaded_ws: tuple[WsServer, Any]) -> None:
    server, loop = threaded_ws

    def on_loop(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(5)

    url = f"ws://127.0.0.1:{server.port}/api/ext/v1/ws"
    with (
        Client("http://api.test", KEY, SECRET, ws_url=url) as client,
        client.stream([ORDERS, BOOK]) as stream,
    ):
        on_loop(server.wait_subscribed(1))
        on_loop(server.push({"type": "error", "topic": BOOK, "error": "unknown token"}))
        types = [getattr(stream.get(5), "type", None) for _ in range(2)]
        assert types == ["subscribed", "error"]  # read: kept before it is yielded
        assert stream.refused == {BOOK: "unknown token"}
        assert stream.refusal(BOOK) == "unknown token"
        assert stream.refusal(ORDERS) is None
