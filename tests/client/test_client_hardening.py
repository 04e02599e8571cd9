"""Hostile servers: trickled answers, huge or deeply nested bodies, refusals with a detail."""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clobkit import AsyncClient, Client, errors
from clobkit.client import _decode as shapes
from clobkit.client._config import ClientConfig
from clobkit.client._core import ClientCore
from clobkit.client._ops import Call

from .conftest import KEY, SECRET, RawServer, client_options, full_scope_users


def trickle_body(conn: socket.socket, stop: threading.Event) -> None:
    """Headers at once, then one body byte every 0.25 s (at most 30 s in all)."""
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 120\r\n\r\n"
    )
    for _ in range(120):
        if stop.wait(0.25):
            return
        conn.sendall(b" ")


def trickle_headers(conn: socket.socket, stop: threading.Event) -> None:
    """The status line and headers one byte every 0.25 s (at most 30 s in all)."""
    for byte in b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * 200:
        if stop.wait(0.25):
            return
        conn.sendall(bytes([byte]))


def nested_body(conn: socket.socket, stop: threading.Event) -> None:
    body = b'{"success": true, "data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    conn.sendall(head.encode() + b"\r\n\r\n" + body)


def huge_chunked_body(conn: socket.socket, stop: threading.Event) -> None:
    """An endless chunked body (no Content-Length to refuse up front)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    conn.sendall(b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"[" * 65536
    for _ in range(2000):  # 128 MiB at most
        if stop.is_set():
            return
        conn.sendall(b"10000\r\n" + chunk + b"\r\n")


def _options(url: str, **overrides: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "base_url": url,
        "api_key": KEY,
        "api_secret": SECRET,
        "backoff": 0.01,
        "backoff_cap": 0.05,
        "timeout": 1.0,
        "max_retries": 0,
    }
    options.update(overrides)
    return options


# ---------------------------------------------------------------------------
# Timeouts bound the whole attempt, and retries the whole call


@pytest.mark.slow
@pytest.mark.parametrize("reply", [trickle_body, trickle_headers], ids=["body", "headers"])
def test_sync_timeout_bounds_a_trickling_answer(
    raw_server: Callable[..., RawServer], reply: Any
) -> None:
    server = raw_server(reply)
    with Client(**_options(server.url)) as client:
        started = time.monotonic()
        with pytest.raises(errors.TimeoutError):
            client.get_wallet()
        took = time.monotonic() - started
    assert took < 10 * client.config.timeout  # per-read timeouts alone: 30 s


@pytest.mark.slow
@pytest.mark.parametrize("reply", [trickle_body, trickle_headers], ids=["body", "headers"])
async def test_async_timeout_bounds_a_trickling_answer(
    raw_server: Callable[..., RawServer], reply: Any
) -> None:
    server = raw_server(reply)
    async with AsyncClient(**_options(server.url)) as client:
        started = time.monotonic()
        with pytest.raises(errors.TimeoutError):
            await client.get_wallet()
        took = time.monotonic() - started
    assert took < 10 * client.config.timeout


@pytest.mark.slow
def test_retries_stay_within_the_total_budget(raw_server: Callable[..., RawServer]) -> None:
    server = raw_server(trickle_body)
    options = _options(server.url, max_retries=50, total_timeout=2.5)
    with Client(**options) as client:
        started = time.monotonic()
        with pytest.raises(errors.TimeoutError):
            client.get_wallet()
        took = time.monotonic() - started
    assert took < 10 * 2.5  # 51 attempts of 1 s each without the budget
    assert 2 <= server.accepted <= 4  # retried, but only while the budget lasted


def test_total_timeout_default_and_validation() -> None:
    config, _ = ClientConfig.resolve("http://x.test", KEY, SECRET, timeout=2.0, max_retries=3)
    assert config.call_budget == 4 * 2.0 + config.max_retry_after
    for bad in (0, -1.0, "5", True):
        with pytest.raises(errors.ValidationError, match="total_timeout"):
            ClientConfig.resolve("http://x.test", KEY, SECRET, total_timeout=bad)
    for bad_limit in (0, -5, 1.5, None):
        with pytest.raises(errors.ValidationError, match="max_response_bytes"):
            ClientConfig.resolve("http://x.test", KEY, SECRET, max_response_bytes=bad_limit)


@pytest.mark.parametrize(
    "name",
    ["timeout", "backoff", "backoff_cap", "max_retry_after", "fee_rate_ttl", "total_timeout"],
)
def test_an_infinite_delay_is_refused(name: str) -> None:
    # backoff and backoff_cap of inf slept for ever before a retry: a hang, not a setting
    for bad in (math.inf, 10**400, math.nan):
        options: dict[str, Any] = {name: bad}
        with pytest.raises(errors.ValidationError, match=f"{name}: must be a .*finite"):
            ClientConfig.resolve("http://x.test", KEY, SECRET, **options)


# ---------------------------------------------------------------------------
# Nested and oversized bodies


def test_deeply_nested_response_is_a_server_error(raw_server: Callable[..., RawServer]) -> None:
    server = raw_server(nested_body)
    with Client(**_options(server.url)) as client:
        with pytest.raises(errors.ServerError, match="nested too deeply"):
            client.get_wallet()
        with pytest.raises(errors.ServerError, match="nested too deeply"):
            client.list_events()


def test_nested_error_envelope_is_an_api_error() -> None:
    core = ClientCore(*ClientConfig.resolve("http://x.test", KEY, SECRET))
    call = Call("GET", "/api/ext/v1/wallet", None, b"", shapes.WALLET, 1)
    body = b'{"success": false, "error": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    request = httpx.Request("GET", "http://x.test/api/ext/v1/wallet")
    with pytest.raises(errors.ClobkitError):
        core.parse(call, httpx.Response(400, content=body, request=request))


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_oversized_response_is_refused(
    raw_server: Callable[..., RawServer], flavour: str
) -> None:
    server = raw_server(huge_chunked_body)
    options = _options(server.url, timeout=30.0, max_response_bytes=1_000_000)
    error = await _wallet_error(flavour, options)
    assert isinstance(error, errors.ServerError)
    assert "larger than 1000000 bytes (max_response_bytes)" in str(error)


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_declared_oversized_response_is_refused_unread(
    raw_server: Callable[..., RawServer], flavour: str
) -> None:
    def declared(conn: socket.socket, stop: threading.Event) -> None:
        """A head declaring 5000 bytes, then silence: only a refusal unread ends it."""
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n[")
        stop.wait(10)

    options = _options(raw_server(declared).url, max_response_bytes=4096, timeout=10.0)
    error = await _wallet_error(flavour, options)
    assert isinstance(error, errors.ServerError)
    assert "larger than 4096 bytes (max_response_bytes)" in str(error)


async def _wallet_error(flavour: str, options: dict[str, Any]) -> errors.ClobkitError:
    """What ``get_wallet`` raised on a client of ``flavour``."""
    if flavour == "sync":
        with Client(**options) as client, pytest.raises(errors.ClobkitError) as info:
            client.get_wallet()
        return info.value
    async with AsyncClient(**options) as aclient:
        with pytest.raises(errors.ClobkitError) as ainfo:
            await aclient.get_wallet()
    return ainfo.value


# ---------------------------------------------------------------------------
# The server's detail is kept


def test_api_error_keeps_the_detail(sandbox: Any) -> None:
    user = full_scope_users(sandbox)[0]
    options = client_options(sandbox, user, api_secret=user.api_secret + "x", max_retries=0)
    with Client(**options) as client, pytest.raises(errors.AuthenticationError) as info:
        client.get_wallet()
    assert info.value.detail == "signature mismatch"
    assert "signature mismatch" in str(info.value)


def test_a_message_that_ends_with_its_detail_says_it_once() -> None:
    """A risk refusal's envelope is ``failed to place bet: <detail>`` with the detail
    beside it: the text repeated it (``...: more than 300 orders in one minute: more
    than 300 orders in one minute``)."""
    detail = "more than 300 orders in one minute"
    error = errors.RiskControlError(
        "failed to place bet: " + detail, status=500, code="ORDER_FAILED_PLACE_BET", detail=detail
    )
    assert str(error) == f"500 ORDER_FAILED_PLACE_BET: failed to place bet: {detail}"
    other = errors.InvalidRequest("invalid request body", status=400, detail="limit too big")
    assert str(other) == "400: invalid request body: limit too big"


def test_detail_survives_pickling() -> None:
    import pickle

    for error in (
        errors.InvalidRequest("invalid request body", status=400, detail="limit too big"),
        errors.RateLimited("slow down", retry_after=2.0, detail="60 per minute"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert copy.detail == error.detail
        assert str(copy) == str(error)


@pytest.mark.parametrize(
    ("body", "deep"),
    [
        (b"[" * 256 + b"]" * 256, False),
        (b"[" * 257 + b"]" * 257, True),
        (b"{" + b'"a":{' * 300 + b"}" * 301, True),
        (b"[" * 100_000, True),  # never closed
        (b'["' + b"[" * 5000 + b'"]', False),  # brackets inside a string
        (b"[" + b'"]",[' * 3000 + b"]" * 3000, True),  # closers inside strings
        (b"[" + b'"\\n",[' * 3000 + b"]" * 3000, True),  # an escape before a quote
        (b"[" + b'"\\\\",[' * 3000 + b"]" * 3000, True),  # an escaped backslash
        (b'["' + b'\\"[' * 600 + b'"]', False),  # escaped quotes keep the string open
    ],
)
def test_json_depth_check(body: bytes, deep: bool) -> None:
    from clobkit.core.jsondepth import json_too_deep

    assert json_too_deep(body) is deep


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


# strings full of what the check must not count: brackets, quotes, backslashes
_TEXT = st.text(alphabet='[]{}"\\a', max_size=4)
_JSON = st.recursive(
    st.none() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=60,
)


@given(_JSON, st.integers(0, 14), st.integers(0, 40))
def test_json_depth_check_is_exact_on_json(value: object, limit: int, wrap: int) -> None:
    # wrapped in up to 40 more arrays: past the check's few passes, into its linear one
    import json

    from clobkit.core.jsondepth import json_too_deep

    body = ("[" * wrap + json.dumps(value) + "]" * wrap).encode()
    assert json_too_deep(body, limit) is (wrap + _depth(value) > limit)


@pytest.mark.slow
def test_nesting_is_refused_even_under_a_raised_recursion_limit() -> None:
    # eth-account raises the limit to 100,000, where msgspec itself would
    # recurse until the C stack overflows: a crash is contained in a subprocess
    import subprocess
    import sys

    code = (
        "import sys, httpx\n"
        "sys.setrecursionlimit(100_000)\n"
        "from clobkit.client._config import ClientConfig\n"
        "from clobkit.client._core import ClientCore\n"
        "from clobkit.client._decode import ALL_SHAPES\n"
        "from clobkit.client._ops import Call\n"
        "from clobkit.client._stream import parse_message\n"
        "from clobkit.errors import ServerError\n"
        "core = ClientCore(*ClientConfig.resolve('http://x.test', 'k', 's'))\n"
        "deep = b'[' * 200_000 + b']' * 200_000\n"
        "request = httpx.Request('GET', 'http://x.test/')\n"
        "for shape in [*ALL_SHAPES, None]:\n"
        "    call = Call('GET', '/x', None, b'', shape, 1)\n"
        "    try:\n"
        "        core.parse(call, httpx.Response(200, content=deep, request=request))\n"
        "    except ServerError:\n"
        "        pass\n"
        "assert parse_message(deep).type == 'invalid'\n"
        "print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "refused"
