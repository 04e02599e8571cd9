"""The uvicorn internals ``sandbox/_http.py`` builds on (its ``H11Protocol`` subclass:
a deadline on receiving each request, JSON for a bad one, one write per answer).

uvicorn offers no public hook for either (an ASGI middleware sees a request only once
its head is whole), so pyproject.toml bounds uvicorn to the releases checked, and
these tests fail on a release that moves what the subclass overrides or reads:
then the bound is not lifted until ``_http.py`` is checked against it.
"""

from __future__ import annotations

import inspect
import re
import socket
from pathlib import Path

import h11
import pytest

from ..conftest import import_extra

uvicorn = import_extra("uvicorn", "sandbox")
sandbox = import_extra("clobkit.sandbox", "sandbox")
from uvicorn.protocols.http.h11_impl import H11Protocol  # noqa: E402

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

#: what GuardedH11Protocol overrides, with the parameters it passes on
OVERRIDDEN = {
    "__init__": ["self", "config", "server_state", "app_state", "_loop"],
    "connection_made": ["self", "transport"],
    "data_received": ["self", "data"],
    "connection_lost": ["self", "exc"],
    "on_response_complete": ["self"],
    "send_400_response": ["self", "msg"],
}


def _bound() -> tuple[tuple[int, ...], tuple[int, ...]]:
    # (tomllib is 3.11+, clobkit supports 3.10: the sandbox extra's line itself)
    line = next(x for x in PYPROJECT.read_text().splitlines() if x.startswith("sandbox = "))
    spec = re.search(r'"(uvicorn[^"]*)"', line)
    assert spec is not None, line
    low = re.search(r">=([\d.]+)", spec.group(1))
    high = re.search(r"<([\d.]+)", spec.group(1))
    assert low is not None, line
    assert high is not None, f"uvicorn has no upper bound: {line}"
    return _version(low.group(1)), _version(high.group(1))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def test_the_installed_uvicorn_is_within_the_checked_bound() -> None:
    low, high = _bound()
    assert low <= _version(uvicorn.__version__) < high


def test_what_the_subclass_overrides_is_still_there() -> None:
    for name, parameters in OVERRIDDEN.items():
        method = getattr(H11Protocol, name)
        assert list(inspect.signature(method).parameters) == parameters, name


def test_what_the_subclass_reads_is_still_set() -> None:
    """The attributes ``GuardedH11Protocol`` reads: ``loop``, ``transport`` and the h11
    connection ``conn`` (its ``their_state`` and ``trailing_data``), set as uvicorn
    makes and opens a protocol."""
    source = inspect.getsource(H11Protocol)
    for assignment in ("self.loop =", "self.conn = h11.Connection(", "self.transport ="):
        assert assignment in source, assignment
    connection = h11.Connection(h11.SERVER)
    assert connection.their_state is h11.IDLE
    assert connection.trailing_data == (b"", False)


def test_the_guard_works_on_a_running_sandbox() -> None:
    """End to end: a request h11 cannot parse gets the JSON envelope's 400, and a head
    that never ends is cut off at ``request_timeout_seconds``."""
    config = {"limits": {"request_timeout_seconds": 0.3}}
    with sandbox.serve_in_thread(config) as sb:
        with socket.create_connection((sb.host, sb.port), timeout=10) as conn:
            conn.sendall(b"GET /\xff HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = _read_all(conn)
        assert answer.startswith(b"HTTP/1.1 400")
        assert b'"success":false' in answer
        with socket.create_connection((sb.host, sb.port), timeout=10) as conn:
            conn.sendall(b"GET /api/ext/v1/wallet HTTP/1.1\r\nHost: x\r\n")  # no end
            assert _read_all(conn) == b""  # closed without an answer


def _read_all(conn: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
    except TimeoutError:  # pragma: no cover - the guard failed: the test says so
        pytest.fail("the sandbox held the connection open")
    return data
