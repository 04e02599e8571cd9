"""``AsyncClient``'s connections while they open: a cancel arriving at any turn of the
event loop, and a server that closes a new connection at once.

Over real loopback sockets. The server never answers, so every request is pending
when its caller is cancelled; the cancel is swept over the loop's turns (0 to 40
after the call starts: while resolving, connecting, writing, waiting), with no race
against a clock. Time bounds are hang guards only.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable

import pytest

from clobkit import AsyncClient, errors

from .conftest import KEY, SECRET, RawServer
from .test_client_cancelled import GUARD, eventually


class Listener:
    """A loopback server (``raw_server``'s) that accepts and reads until the client
    closes; ``open`` counts the connections the client has not closed. ``hang_up``
    closes each connection as soon as it is accepted (``hung_up`` is set once it has)."""

    def __init__(self, raw_server: Callable[..., RawServer], hang_up: bool = False) -> None:
        self.hung_up = threading.Event()
        self.open = 0
        self._lock = threading.Lock()
        self.server = raw_server(self._hang_up if hang_up else self._read, read_request=False)
        self.url = self.server.url

    @property
    def accepted(self) -> int:
        return self.server.accepted

    def _hang_up(self, conn: socket.socket, stop: threading.Event) -> None:
        self.hung_up.set()  # the server closes conn on return

    def _read(self, conn: socket.socket, stop: threading.Event) -> None:
        conn.settimeout(None)  # open until the client closes it, however long that takes
        with self._lock:
            self.open += 1
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        with self._lock:
            self.open -= 1


@pytest.fixture
def listener(raw_server: Callable[..., RawServer]) -> Callable[..., Listener]:
    return lambda hang_up=False: Listener(raw_server, hang_up)


@pytest.mark.parametrize("turns", [0, 1, 2, 3, 5, 8, 12, 20, 40])
async def test_a_cancel_at_any_turn_leaves_no_socket_open(
    listener: Callable[..., Listener], turns: int
) -> None:
    """Cancelled after ``turns`` turns of the loop: whatever the connection had reached
    (opening, open, the request written), it is closed at once, not left open until
    ``close()`` (the server sees every socket it accepted closed again, the client
    still open), and the next call opens a new one."""
    server = listener()
    client = AsyncClient(server.url, KEY, SECRET, timeout=GUARD, max_retries=0)
    try:
        for _ in range(2):
            call = asyncio.ensure_future(client.get_order("o1"))
            for _ in range(turns):
                await asyncio.sleep(0)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await eventually(lambda: server.open == 0)
        assert server.accepted <= 2  # one connection a call at most, none kept
    finally:
        await client.close()


async def test_a_connection_closed_before_its_request_is_a_disconnect(
    listener: Callable[..., Listener],
) -> None:
    """The server closes each new connection at once: the request fails at once as a
    server that disconnected (never sent again by the transport on its own), not
    written to a closed socket and waited out."""
    server = listener(hang_up=True)
    client = AsyncClient(server.url, KEY, SECRET, timeout=GUARD, max_retries=0)
    try:
        with pytest.raises(errors.TransportError) as info:
            await client.get_order("o1")
        assert not isinstance(info.value, errors.TimeoutError)
        words = str(info.value)
        assert "disconnected" in words or "connection lost" in words
        assert server.accepted == 1  # sent once: the client's policy decides retries
    finally:
        await client.close()
