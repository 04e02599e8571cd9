"""Fixtures of the sentinel tests: its listener served on loopback (in a thread, or as
the process ``clobkit sentinel`` starts), signed heartbeats, a sandbox and a client of
the account the sentinel watches."""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import msgspec
import pytest

from clobkit.core.spec import ENV_SENTINEL_TOKEN

from ..conftest import import_extra

import_extra("starlette", "sentinel")
import_extra("uvicorn", "sentinel")

import uvicorn  # noqa: E402 - after the extra's check

from clobkit.sentinel import Heartbeat, sign  # noqa: E402
from clobkit.sentinel.listener import listener_app, listener_config  # noqa: E402
from clobkit.sentinel.wire import PATH, SIGNATURE_HEADER, TIMESTAMP_HEADER  # noqa: E402

TOKEN = "a-test-token-of-thirty-two-chars"


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    """``CLOBKIT_SENTINEL_TOKEN`` set for the test (and the processes it starts)."""
    monkeypatch.setenv(ENV_SENTINEL_TOKEN, TOKEN)
    return TOKEN


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """``app`` on a free loopback port with the listener's settings: its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(listener_config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "the listener did not start"
        assert time.monotonic() < deadline, "the listener did not start in time"
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


class Heard:
    """The listener's ``hear``: every heartbeat it accepted."""

    def __init__(self) -> None:
        self.beats: list[Heartbeat] = []

    def __call__(self, beat: Heartbeat) -> None:
        self.beats.append(beat)


@pytest.fixture
def listener() -> Iterator[tuple[str, Heard, Any]]:
    """(URL, what it heard, its guard) of a listener served in a thread, timeout 1 s."""
    heard = Heard()
    app = listener_app(TOKEN.encode(), heard, 1.0)
    with serve(app) as url:
        yield url, heard, app.state.guard


_sessions = iter(range(1, 1 << 30))


def beat(**fields: Any) -> Heartbeat:
    values: dict[str, Any] = {
        "session": f"s{next(_sessions):08d}",
        "seq": 1,
        "desk": "test-desk",
        "state": "quoting",
    }
    values.update(fields)
    return Heartbeat(**values)


def post(
    url: str,
    body: bytes | Heartbeat,
    *,
    token: str = TOKEN,
    stamp: int | None = None,
    signature: str | None = None,
    headers: dict[str, str] | None = None,
    http: httpx.Client | None = None,
) -> httpx.Response:
    """A heartbeat POSTed to ``url`` (through ``http`` when given), signed with
    ``token`` unless told otherwise."""
    raw = body if isinstance(body, bytes) else msgspec.json.encode(body)
    stamp = time.time_ns() // 1_000_000 if stamp is None else stamp
    sent = {
        TIMESTAMP_HEADER: str(stamp),
        SIGNATURE_HEADER: sign(token.encode(), stamp, raw) if signature is None else signature,
    }
    sent.update(headers or {})
    if http is not None:
        return http.post(url + PATH, content=raw, headers=sent)
    return httpx.post(url + PATH, content=raw, headers=sent, timeout=10)


def new_session() -> str:
    return secrets.token_hex(8)


def wait_until(check: Callable[[], object], timeout: float = 30.0) -> None:
    """Wait until ``check()`` is true (a liveness bound, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        time.sleep(0.01)
