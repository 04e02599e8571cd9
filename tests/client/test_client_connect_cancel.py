"""The async client's connections (``_http11.Connections``) at the moment a new one
finishes opening: a cancel arriving then, and a server that closes it at once.

Over real loopback sockets. The moment is pinned with asyncio's own hook, the
loop's task factory: the task that opens the connection is seen as it is made, and
the caller is cancelled from its done callback (after the connection is made, before
the caller resumes), with no race against a clock. Time bounds are hang guards only.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any

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


def _is_connect(coro: Any) -> bool:
    return getattr(coro, "__qualname__", "") == "Connections._connect"


def on_connect_task(
    hook: Callable[[asyncio.Task[Any]], None],
    wrap: Callable[[Coroutine[Any, Any, Any]], Coroutine[Any, Any, Any]] | None = None,
) -> None:
    """Call ``hook(task)`` as each task opening a connection is made (its coroutine
    first wrapped by ``wrap``, if given): asyncio's task factory, on this loop."""
    loop = asyncio.get_running_loop()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        connect = _is_connect(coro)
        if connect and wrap is not None:
            coro = wrap(coro)
        task = asyncio.Task(coro, loop=loop, **kwargs)
        if connect:
            hook(task)
        return task

    loop.set_task_factory(factory)


@pytest.fixture
async def plain_tasks() -> Any:
    yield
    asyncio.get_running_loop().set_task_factory(None)


@pytest.mark.usefixtures("plain_tasks")
async def test_a_cancel_as_the_connection_opens_leaves_no_socket_open(
    listener: Callable[..., Listener],
) -> None:
    """Cancelled after the new connection is made and before the exchange resumes
    (the connecting task is done, its result not yet taken): the connection is
    closed, not left open outside the pool until ``close()``."""
    server = listener()
    client = AsyncClient(server.url, KEY, SECRET, timeout=GUARD, max_retries=0)
    pool = client._direct
    assert pool is not None
    call: list[asyncio.Task[Any]] = []
    made: list[asyncio.Task[Any]] = []

    def cancel_the_call_when_made(task: asyncio.Task[Any]) -> None:
        made.append(task)
        # done callbacks run in the order added: this one runs before asyncio.wait's
        # own, so the caller is cancelled while the connection is already made
        task.add_done_callback(lambda _: call[0].cancel())

    on_connect_task(cancel_the_call_when_made)
    try:
        call.append(asyncio.ensure_future(client.get_order("o1")))
        with pytest.raises(asyncio.CancelledError):
            await call[0]
        assert len(made) == 1
        assert made[0].done()
        assert not made[0].cancelled()  # the connection was made
        assert made[0].exception() is None
        await eventually(lambda: server.accepted == 1)  # seen by the server (its thread)
        # the pool keeps no connection, and the server sees its socket closed
        await eventually(lambda: not pool._open)
        await eventually(lambda: server.open == 0)
        assert made[0].result().closed
    finally:
        await client.close()


@pytest.mark.usefixtures("plain_tasks")
async def test_a_connection_closed_before_its_request_is_a_disconnect(
    listener: Callable[..., Listener],
) -> None:
    """The server closes a new connection at once and the close is read before the
    exchange resumes (a busy loop): the request fails at once as a server that
    disconnected, not silently written to a closed socket and waited out."""
    server = listener(hang_up=True)
    client = AsyncClient(server.url, KEY, SECRET, timeout=GUARD, max_retries=0)
    pool = client._direct
    assert pool is not None

    async def late(coro: Coroutine[Any, Any, Any]) -> Any:
        connection = await coro
        # the loop reads the server's close while the exchange has not resumed yet
        await eventually(lambda: server.hung_up.is_set() and connection.closed)
        return connection

    on_connect_task(lambda task: None, late)
    try:
        with pytest.raises(errors.TransportError) as info:
            await client.get_order("o1")
        assert not isinstance(info.value, errors.TimeoutError)
        assert "disconnected" in str(info.value).lower()
        await eventually(lambda: not pool._open)
    finally:
        await client.close()
