"""The sandbox's stream memory is bounded over all connections, not only per connection
(issue #42: about 12 MB per subscriber that never reads, up to 1,000 connections).
Past ``Hub.max_queued_bytes`` the subscribers with the most unread bytes are dropped
first (1008, slow consumer) and counted; the others are served on. Real connections on
loopback."""

from __future__ import annotations

import time
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from clobkit.sandbox import Sandbox
from clobkit.sandbox.ws import MAX_QUEUED_BYTES

from .conftest import MAKER, TRADER
from .signed import dumps
from .test_ws import channel, subscribe, until


def _read_until_closed(ws: ClientConnection) -> None:
    while True:
        ws.recv(timeout=10)


def _books(sb: Sandbox) -> list[str]:
    return [f"market:{m.fx.token_id_a}:book" for m in sb.engine.markets.values() if m.mid]


def test_the_slowest_subscriber_is_dropped_when_all_queues_pass_the_bound(fresh: Any) -> None:
    sb: Sandbox = fresh()  # each connection may queue 8 MiB (ws_max_queue_bytes)
    hub = sb.app.state.sandbox.hub
    assert hub.max_queued_bytes == MAX_QUEUED_BYTES
    hub.max_queued_bytes = 20_000  # all connections together
    books = _books(sb)
    with channel(sb, sb.user(TRADER)) as reader, channel(sb, sb.user(MAKER)) as flood:
        assert subscribe(reader, books[0])["type"] == "subscribed"
        until(reader, lambda m: m["type"] == "snapshot")
        # every book's snapshot at once: more than the bound, far less than 8 MiB
        flood.send(dumps({"action": "subscribe", "topics": books}))
        with pytest.raises(ConnectionClosed) as closed:
            _read_until_closed(flood)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1008
        assert hub.shed == 1
        assert 0 <= hub.queued.bytes <= hub.max_queued_bytes
        # the reader, with little unread, is served on
        market = next(m for m in sb.engine.markets.values() if books[0].split(":")[1] in
                      (m.fx.token_id_a, m.fx.token_id_b))  # fmt: skip
        sb.set_price(market.id, "0.31" if market.mid != 31 else "0.69")
        assert until(reader, lambda m: m["type"] == "data")["topic"] == books[0]
    deadline = time.monotonic() + 30  # (the server sees the two go on its own loop)
    while hub.connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not hub.connections
    assert hub.queued.bytes == 0  # both gone: nothing counted for them


def test_subscribers_within_the_bound_are_not_dropped(fresh: Any) -> None:
    sb: Sandbox = fresh()
    hub = sb.app.state.sandbox.hub
    books = _books(sb)
    with channel(sb, sb.user(TRADER)) as one, channel(sb, sb.user(MAKER)) as two:
        for ws in (one, two):
            assert subscribe(ws, *books)["type"] == "subscribed"
        for ws in (one, two):
            for _ in books:
                until(ws, lambda m: m["type"] == "snapshot")
    assert hub.shed == 0
