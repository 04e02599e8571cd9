"""Dropping topics from a stream, and the server's words on a refused topic, against the
sandbox on loopback.

Before, a stream could only add topics (a desk kept every closed quoter's book topic,
and subscribed it again after each reconnect), and an ``error`` message lost its words.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from clobkit import AsyncClient, Client
from clobkit.client import book_topic
from clobkit.client._stream import parse_message
from clobkit.models import Reconnected, StreamMessage

from .conftest import client_options, full_scope_users

SIZE = 100  # shares: 2 USDC at 0.02, over any market's minimum (1 USDC)


def two_books(sb: Any) -> list[tuple[str, str]]:
    """(market id, outcome-a token) of two markets whose books the house quotes."""
    found = []
    for market_id, state in sb.engine.markets.items():
        book = sb.engine.orderbook(state.fx.token_id_a)
        if state.active and book is not None and book.bids and book.asks:
            found.append((str(market_id), state.fx.token_id_a))
    assert len(found) >= 2
    return found[:2]


async def next_item(stream: Any, wanted: Callable[[Any], bool], seen: list[Any]) -> Any:
    """The stream's next item that ``wanted`` picks; every item read is kept in ``seen``."""
    deadline = time.monotonic() + 10
    while True:
        item = await asyncio.wait_for(stream.__anext__(), deadline - time.monotonic())
        seen.append(item)
        if wanted(item):
            return item


async def test_an_unsubscribed_topic_is_not_heard_nor_subscribed_again(sandbox: Any) -> None:
    (m1, t1), (m2, t2) = two_books(sandbox)
    me = full_scope_users(sandbox)[0]
    async with AsyncClient(**client_options(sandbox, me)) as client:
        stream = client.stream([book_topic(t1), book_topic(t2)], backoff=0.01, backoff_cap=0.05)
        async with stream:
            await stream.unsubscribe([book_topic(t1), "market:never:book"])
            await stream.unsubscribe(book_topic(t1))  # again: nothing left to drop
            assert stream.topics == [book_topic(t2)]
            seen: list[Any] = []
            gone = await next_item(stream, lambda i: i.type == "unsubscribed", seen)
            assert gone.topic is None
            seen.clear()
            # a new bid on each book, the dropped one first: its update would come first
            for market in (m1, m2):
                await client.place_raw_order(market, "a", "BUY", Decimal("0.02"), SIZE)
            await next_item(stream, lambda i: i.topic == book_topic(t2) and i.type == "data", seen)
            assert [i for i in seen if getattr(i, "topic", None) == book_topic(t1)] == []
            assert sandbox.drop_streams() == 1
            again = await next_item(stream, lambda i: isinstance(i, Reconnected), seen)
            assert again.topics == [book_topic(t2)]


def test_the_sync_stream_drops_topics_too(sandbox: Any) -> None:
    (_, t1), (_, t2) = two_books(sandbox)
    me = full_scope_users(sandbox)[0]
    with (
        Client(**client_options(sandbox, me)) as client,
        client.stream([book_topic(t1), book_topic(t2)], backoff=0.01) as stream,
    ):
        stream.unsubscribe(book_topic(t1))
        assert stream.topics == [book_topic(t2)]
        assert sandbox.drop_streams() == 1
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            item = stream.get(timeout=0.5)
            if isinstance(item, Reconnected):
                assert item.topics == [book_topic(t2)]
                break
        else:
            raise AssertionError("no reconnect within 10 s")


def test_an_error_message_keeps_the_servers_words() -> None:
    frame = b'{"type": "error", "error": "unknown token", "topic": "market:x:book"}'
    message = parse_message(frame)
    assert message == StreamMessage(type="error", topic="market:x:book", error="unknown token")
    assert parse_message(b'{"type": "error", "error": 5}').error is None  # words, or none
    assert parse_message(b'{"type": "data", "topic": "t", "data": {}}').error is None
