"""Both clients fail and answer alike: ``Client`` (httpcore) and ``AsyncClient``
(aiohttp) against the same real server give the same ``clobkit.errors`` class, the same
words before any detail of the library's and the same status, for timeouts, dropped
and reset connections, truncated and oversized bodies, an encoded body, 4xx/5xx
envelopes from the sandbox (each transport's exception table, ``_session.FAILURES``
and ``_transport.FAILURES``, maps onto ``_wire.Failure``).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from clobkit import AsyncClient, Client, errors
from clobkit.client._config import ClientConfig
from clobkit.client._core import ClientCore
from clobkit.client._ops import SAFE, Call

from .conftest import KEY, SECRET, RawServer, client_options, full_scope_users
from .test_client_bodies import _options, huge_chunked_body

TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"


def _outcome_sync(options: dict[str, Any], call: Callable[[Any], Any]) -> tuple[str, Any]:
    try:
        with Client(**options) as client:
            return "ok", call(client)
    except errors.ClobkitError as exc:
        return type(exc).__name__, (str(exc).split(" (")[0], getattr(exc, "status", None))


async def _outcome_async(options: dict[str, Any], call: Callable[[Any], Any]) -> tuple[str, Any]:
    try:
        async with AsyncClient(**options) as client:
            return "ok", await call(client)
    except errors.ClobkitError as exc:
        return type(exc).__name__, (str(exc).split(" (")[0], getattr(exc, "status", None))


async def _same(url: str, call: Callable[[Any], Any], **overrides: Any) -> tuple[str, Any]:
    """What ``call`` gives on each client, the same on both: ("ok", value) or (error
    class, (its text up to the library's detail, its status))."""
    options = _options(url, **{"timeout": 0.5, **overrides})
    sync = await asyncio.to_thread(_outcome_sync, options, lambda c: call(c))
    got = await _outcome_async(options, call)
    assert got == sync
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
    assert text.endswith("/fee-rate: server disconnected without sending an answer")


async def test_a_reset_connection_is_the_same_transport_error(
    raw_server: Callable[..., RawServer],
) -> None:
    kind, (text, _) = await _same(raw_server(_reset).url, _fee)
    assert kind == "TransportError"
    assert text.endswith(": connection lost")


async def test_a_truncated_body_is_the_same_transport_error(
    raw_server: Callable[..., RawServer],
) -> None:
    kind, (text, _) = await _same(raw_server(_truncated).url, _fee)
    assert kind == "TransportError"
    assert text.endswith(": answer cut short")


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "chunked"])
async def test_a_body_over_the_limit_is_the_same_server_error(
    raw_server: Callable[..., RawServer], declared: bool
) -> None:
    reply = _answer(200, b"[" * 5000) if declared else huge_chunked_body
    kind, (text, _) = await _same(raw_server(reply).url, _fee, max_response_bytes=1000)
    assert kind == "ServerError"
    assert text.endswith("is larger than 1000 bytes")  # (max_response_bytes) follows


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

    def sync() -> tuple[Any, ...]:
        with Client(**options) as client:
            wallet = client.get_wallet()
            with pytest.raises(errors.NotFound) as missing:
                client.get_order("00000000-0000-4000-8000-000000000000")
            with pytest.raises(errors.NotFound) as gone:
                client.cancel_order("no-such-order/../x y")  # a percent-encoded path
        return wallet, str(missing.value), str(gone.value), gone.value.status

    async with AsyncClient(**options) as client:
        wallet = await client.get_wallet()
        with pytest.raises(errors.NotFound) as missing:
            await client.get_order("00000000-0000-4000-8000-000000000000")
        with pytest.raises(errors.NotFound) as gone:
            await client.cancel_order("no-such-order/../x y")
    seen = (wallet, str(missing.value), str(gone.value), gone.value.status)
    assert seen == await asyncio.to_thread(sync)
    assert seen[3] == 404


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/orders/raw", None),
        ("/orders/" + "a%2Fb%20c", None),  # a segment as _validate._segment quotes it
        ("/orders", {"status": "live", "page": 2, "q": "a b/c&d=é"}),
    ],
)
def test_outgoing_is_the_request_httpx_would_build(path: str, params: Any) -> None:
    """httpx as an independent oracle of the URL: the target sent is the one httpx
    builds from the same path and parameters, and the signature checks against it."""
    config, signer = ClientConfig.resolve("http://127.0.0.1:9/api/v1", KEY, SECRET)
    core = ClientCore(config, signer)
    call = Call("POST" if params is None else "GET", path, params, b'{"a":1}', None, SAFE)
    outgoing = core.build_outgoing(call)
    oracle = httpx.URL("http://127.0.0.1:9/api/v1" + path, params=params)
    assert outgoing.target.encode("ascii") == oracle.raw_path
    assert outgoing.url == str(oracle)
    assert outgoing.header("Host") == "127.0.0.1:9"
    assert outgoing.header("Content-Length") == "7"
    assert outgoing.body == b'{"a":1}'
    sent = dict(outgoing.headers)
    again = core.signer.headers(
        call.method,
        oracle.raw_path.decode("ascii"),
        call.body,
        timestamp_ms=int(sent["X-API-TIMESTAMP"]),
        nonce=sent["X-API-NONCE"],
    )
    assert again["X-API-SIGNATURE"] == sent["X-API-SIGNATURE"]
