"""The async client's direct path (``_pool.Pools.exchange``: httpcore's pool with
httpcore's request and response, no httpx model per request) fails and answers
exactly as httpx's own client path does.

Each case runs one ``AsyncClient`` on the direct path and one given httpx's
transport (requests then go through ``httpx.AsyncClient``, the path a proxy or a
user transport takes), against the same real server, and compares what they
raise or return: timeouts, dropped connections, truncated and oversized bodies,
an encoded body, 4xx/5xx envelopes from the sandbox.
"""

from __future__ import annotations

import gzip
import json
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from clobkit import AsyncClient, errors
from clobkit.client._config import ClientConfig
from clobkit.client._core import ClientCore
from clobkit.client._http11 import Connections
from clobkit.client._ops import SAFE, Call

from .conftest import KEY, SECRET, RawServer, client_options, full_scope_users
from .test_client_hardening import _options, huge_chunked_body

TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"


def _clients(url: str, **overrides: Any) -> tuple[AsyncClient, AsyncClient]:
    """(direct path, httpx's client path) for ``url``."""
    options = _options(url, **{"timeout": 0.5, **overrides})
    direct = AsyncClient(**options)
    # the test must fail should the direct path ever be left unused
    assert direct._direct is not None
    assert isinstance(direct._direct, Connections)
    through_httpx = AsyncClient(**options, transport=httpx.AsyncHTTPTransport())
    assert through_httpx._direct is None
    return direct, through_httpx


async def _outcome(client: AsyncClient, call: Callable[[AsyncClient], Any]) -> tuple[str, Any]:
    """What ``call(client)`` gives: ("ok", value) or (error class, its text and status)."""
    try:
        async with client:
            return "ok", await call(client)
    except errors.ClobkitError as exc:
        return type(exc).__name__, (str(exc), getattr(exc, "status", None))


async def _same(url: str, call: Callable[[AsyncClient], Any], **overrides: Any) -> tuple[str, Any]:
    direct, through_httpx = _clients(url, **overrides)
    got = await _outcome(direct, call)
    assert got == await _outcome(through_httpx, call)
    return got


def _answer(status: int, body: bytes, *headers: str) -> Callable[..., None]:
    def reply(conn: socket.socket, stop: threading.Event) -> None:
        head = [f"HTTP/1.1 {status} X", "Content-Type: application/json", *headers]
        if not any(h.lower().startswith("content-length") for h in headers):
            head.append(f"Content-Length: {len(body)}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    return reply


def _silent(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait(5)  # reads the request, never answers


def _drop(conn: socket.socket, stop: threading.Event) -> None:
    """Closes the connection without a word, as a crashed server does."""


def _reset(conn: socket.socket, stop: threading.Event) -> None:
    """Resets the connection (linger 0), as a server killed mid-request does."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _truncated(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b'{"success": true')


def _fee(client: AsyncClient) -> Any:
    return client.get_fee_rate(TOKEN)


async def test_a_silent_server_is_the_same_timeout(raw_server: Callable[..., RawServer]) -> None:
    kind, (text, _) = await _same(raw_server(_silent).url, _fee, timeout=0.3)
    assert kind == "TimeoutError"
    assert "no complete answer within 0.3 s" in text


async def test_a_dropped_connection_is_the_same_transport_error(
    raw_server: Callable[..., RawServer],
) -> None:
    kind, (text, _) = await _same(raw_server(_drop).url, _fee)
    assert kind == "TransportError"
    assert "RemoteProtocolError" in text
    assert "/fee-rate" in text


async def test_a_reset_connection_is_the_same_transport_error(
    raw_server: Callable[..., RawServer],
) -> None:
    kind, (text, _) = await _same(raw_server(_reset).url, _fee)
    assert kind == "TransportError"
    assert "ReadError" in text


async def test_a_truncated_body_is_the_same_transport_error(
    raw_server: Callable[..., RawServer],
) -> None:
    kind, (text, _) = await _same(raw_server(_truncated).url, _fee)
    assert kind == "TransportError"
    assert "RemoteProtocolError" in text


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "chunked"])
async def test_a_body_over_the_limit_is_the_same_server_error(
    raw_server: Callable[..., RawServer], declared: bool
) -> None:
    reply = _answer(200, b"[" * 5000) if declared else huge_chunked_body
    kind, (text, _) = await _same(raw_server(reply).url, _fee, max_response_bytes=1000)
    assert kind == "ServerError"
    assert "larger than 1000 bytes (max_response_bytes)" in text


async def test_an_encoded_body_is_decoded(raw_server: Callable[..., RawServer]) -> None:
    body = gzip.compress(json.dumps({"base_fee": 7}).encode())
    reply = _answer(200, body, "Content-Encoding: gzip")
    assert await _same(raw_server(reply).url, _fee) == ("ok", 7)


async def test_a_chunked_body_is_read(raw_server: Callable[..., RawServer]) -> None:
    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        conn.sendall(b'6\r\n{"base\r\n' + b'9\r\n_fee": 3}\r\n0\r\n\r\n')

    assert await _same(raw_server(reply).url, _fee) == ("ok", 3)


@pytest.mark.parametrize(
    ("status", "kind"), [(503, "ServerError"), (429, "RateLimited"), (400, "InvalidRequest")]
)
async def test_an_error_envelope_is_the_same_api_error(
    raw_server: Callable[..., RawServer], status: int, kind: str
) -> None:
    body = json.dumps({"success": False, "error": "busy", "code": "X"}).encode()
    reply = _answer(status, body, "Retry-After: 1")
    got_kind, (text, got_status) = await _same(raw_server(reply).url, _fee)
    assert (got_kind, got_status) == (kind, status)
    assert "busy" in text


async def test_sandbox_answers_are_the_same(sandbox: Any) -> None:
    user = full_scope_users(sandbox)[0]
    options = client_options(sandbox, user, max_retries=0)
    seen = []
    for client in _clients(options.pop("base_url"), **options):
        async with client:
            wallet = await client.get_wallet()
            with pytest.raises(errors.NotFound) as missing:
                await client.get_order("00000000-0000-4000-8000-000000000000")
            with pytest.raises(errors.NotFound) as gone:
                await client.cancel_order("no-such-order/../x y")  # a percent-encoded path
            seen.append((wallet, str(missing.value), str(gone.value), gone.value.status))
    assert seen[0] == seen[1]
    assert seen[0][3] == 404


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/orders/raw", None),
        ("/orders/" + "a%2Fb%20c", None),  # a segment as _validate._segment quotes it
        ("/orders", {"status": "live", "page": 2}),
    ],
)
def test_outgoing_is_the_request_httpx_would_send(path: str, params: Any) -> None:
    config, signer = ClientConfig.resolve("http://127.0.0.1:9/api/v1", KEY, SECRET)
    core = ClientCore(config, signer)
    core.wall_clock = lambda: 1_700_000_000.0
    call = Call("POST" if params is None else "GET", path, params, b'{"a":1}', None, SAFE)
    outgoing = core.build_outgoing(call)
    request = outgoing.httpx_request()
    # what the direct path sends is byte for byte what httpx's request holds
    assert outgoing.target == request.url.raw_path
    assert outgoing.origin == (request.url.raw_scheme, request.url.raw_host, request.url.port)
    assert [(k.encode(), v.encode()) for k, v in outgoing.headers] == request.headers.raw
    assert outgoing.body == request.content
    # signed over that path: the signature checks against it, independently recomputed
    sent = dict(outgoing.headers)
    again = core.signer.headers(
        call.method,
        request.url.raw_path.decode("ascii"),
        call.body,
        timestamp_ms=int(sent["X-API-TIMESTAMP"]),
        nonce=sent["X-API-NONCE"],
    )
    assert again["X-API-SIGNATURE"] == sent["X-API-SIGNATURE"]
    # ``build`` (the sync client's request) is the same but for a fresh nonce
    built = core.build(call)
    assert built.url == request.url
    assert [k for k, _ in built.headers.raw] == [k for k, _ in request.headers.raw]
