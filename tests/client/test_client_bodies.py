"""Answer bodies on both clients (issue #21): each content coding, stacked and unknown
codings refused, bombs held under twice ``max_response_bytes``, a body at the limit
and one byte over, chunk-size lines without end, answers split at every byte, a
server closing mid-body, keep-alive after each kind of error, proxies from the
environment.

The server is a real asyncio server on loopback (in a thread) playing a script:
one answer per request, on kept-alive connections unless an answer closes it.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import math
import socket
import ssl
import threading
import time
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clobkit import AsyncClient, Client, errors
from clobkit.client import _decode as shapes
from clobkit.client._config import ClientConfig
from clobkit.client._core import ClientCore
from clobkit.client._ops import Call

from .conftest import KEY, SECRET, RawServer, client_options, full_scope_users

TOKEN = "7"
FLAVOURS = ["sync", "async"]
Writer = Callable[[asyncio.StreamWriter], Awaitable[bool]]  # True: close after


def fee_body(fee: int = 7, pad: int = 0) -> bytes:
    return json.dumps({"base_fee": fee, "pad": "x" * pad}).encode()


def answer(body: bytes, *headers: str, length: bool = True) -> bytes:
    head = ["HTTP/1.1 200 OK", "Content-Type: application/json", *headers]
    if length:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(body: bytes, size: int = 7, *headers: str) -> bytes:
    parts = [
        b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size])
        for i in range(0, len(body), size)
    ]
    return answer(
        b"".join(parts) + b"0\r\n\r\n", "Transfer-Encoding: chunked", *headers, length=False
    )


def gzip_of_zeros(size: int) -> bytes:
    """A gzip member of ``size`` zero bytes, made without holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1 << 20)
    out = [packer.compress(block) for _ in range(size >> 20)]
    return b"".join([*out, packer.flush()])


def _stop(
    loop: asyncio.AbstractEventLoop, server: asyncio.Server, thread: threading.Thread
) -> None:
    """Close ``server``, end its connections' tasks, stop its loop and thread."""

    async def stop() -> None:
        server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


class Script:
    """An HTTP/1.1 server answering request ``k`` with ``answers[k]`` (bytes, or a
    coroutine function given the writer that returns True to close); over TLS
    when given an ``ssl`` context."""

    def __init__(self, answers: list[bytes | Writer], tls: ssl.SSLContext | None = None) -> None:
        self.answers = list(answers)
        self.accepted = 0
        self.requests: list[bytes] = []
        self.scheme = "https" if tls is not None else "http"
        self.loop = asyncio.new_event_loop()
        server = self.loop.run_until_complete(
            asyncio.start_server(self.handle, "127.0.0.1", 0, ssl=tls)
        )
        self.server = server
        self.port = server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            while self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                step = self.answers.pop(0)
                if isinstance(step, bytes):
                    writer.write(step)
                    await writer.drain()
                elif await step(writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        _stop(self.loop, self.server, self.thread)


@pytest.fixture
def script() -> Iterator[Callable[..., Script]]:
    made: list[Script] = []

    def make(answers: list[bytes | Writer], tls: ssl.SSLContext | None = None) -> Script:
        made.append(Script(answers, tls))
        return made[-1]

    yield make
    for server in made:
        server.close()


def outcomes(flavour: str, url: str, calls: int = 1, **options: Any) -> list[tuple[str, Any]]:
    """What ``calls`` fee-rate queries in a row on one client give: ("ok", fee) or
    (error class, text)."""
    settings = {"max_retries": 0, "timeout": 5.0, **options}

    def one(call: Callable[[], Any]) -> tuple[str, Any]:
        try:
            return "ok", call()
        except errors.ClobkitError as exc:
            return type(exc).__name__, str(exc)

    if flavour == "sync":
        with Client(url, KEY, SECRET, **settings) as client:
            return [one(lambda: client.get_fee_rate(TOKEN, refresh=True)) for _ in range(calls)]

    async def one_async(client: AsyncClient) -> tuple[str, Any]:
        try:
            return "ok", await client.get_fee_rate(TOKEN, refresh=True)
        except errors.ClobkitError as exc:
            return type(exc).__name__, str(exc)

    async def run() -> list[tuple[str, Any]]:
        async with AsyncClient(url, KEY, SECRET, **settings) as client:
            return [await one_async(client) for _ in range(calls)]

    return asyncio.run(run())


# ---------------------------------------------------------------------------
# Codings


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda b: zlib.compress(b)[2:-4]),  # raw deflate, as some servers send
        ("identity", lambda b: b),
    ],
    ids=["gzip", "x-gzip", "deflate", "raw-deflate", "identity"],
)
def test_each_coding_is_read(script: Any, flavour: str, coding: str, encode: Any) -> None:
    body = encode(fee_body(3, pad=300))
    server = script(
        [
            answer(body, f"Content-Encoding: {coding}"),
            chunked(body, 5, f"Content-Encoding: {coding}"),
        ]
    )
    assert outcomes(flavour, server.url, 2) == [("ok", 3), ("ok", 3)]
    assert server.accepted == 1  # kept alive


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    ("headers", "text"),
    [
        (["Content-Encoding: gzip, gzip"], "stacked content codings"),
        (["Content-Encoding: gzip", "Content-Encoding: deflate"], "stacked content codings"),
        (["Content-Encoding: br"], "unknown content coding"),
        (["Content-Encoding: compress"], "unknown content coding"),
    ],
)
def test_stacked_and_unknown_codings_are_refused(
    script: Any, flavour: str, headers: list[str], text: str
) -> None:
    # 980 bytes of gzip(gzip(512 MiB)) would be the attack; refused before any inflating
    body = gzip.compress(gzip.compress(bytes(1 << 20)))
    server = script([answer(body, *headers), answer(fee_body(4))])
    got = outcomes(flavour, server.url, 2)
    assert got[0][0] == "ServerError"
    assert text in got[0][1]
    assert got[1] == ("ok", 4)  # the client goes on (on a new connection)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_body_that_does_not_inflate_is_a_transport_error(script: Any, flavour: str) -> None:
    server = script([answer(b"not gzip at all", "Content-Encoding: gzip"), answer(fee_body(5))])
    got = outcomes(flavour, server.url, 2)
    assert got[0][0] == "TransportError"
    assert ": body does not decode (" in got[0][1]
    assert got[1] == ("ok", 5)


# ---------------------------------------------------------------------------
# The limit counts decoded bytes, and a bomb is never inflated whole


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("form", ["length", "chunked", "gzip", "gzip-chunked", "deflate"])
def test_a_body_at_the_limit_and_one_byte_over(script: Any, flavour: str, form: str) -> None:
    body = fee_body(6, pad=1000)
    encode: dict[str, Callable[[bytes], bytes]] = {
        "length": answer,
        "chunked": lambda b: chunked(b, 100),
        "gzip": lambda b: answer(gzip.compress(b), "Content-Encoding: gzip"),
        "gzip-chunked": lambda b: chunked(gzip.compress(b), 9, "Content-Encoding: gzip"),
        "deflate": lambda b: answer(zlib.compress(b), "Content-Encoding: deflate"),
    }
    at = script([encode[form](body)])
    assert outcomes(flavour, at.url, max_response_bytes=len(body)) == [("ok", 6)]
    over = script([encode[form](body)])
    got = outcomes(flavour, over.url, max_response_bytes=len(body) - 1)
    assert got[0][0] == "ServerError"
    assert f"larger than {len(body) - 1} bytes (max_response_bytes)" in got[0][1]


LIMIT = 1 << 20


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("form", ["gzip", "deflate", "gzip-chunked", "chunked"])
def test_a_bomb_is_held_under_twice_the_limit(script: Any, flavour: str, form: str) -> None:
    """64 MiB of zeros behind 64 KiB of gzip (one chunk of it, for the chunked gzip),
    or 64 MiB of plain chunks: the client's allocations peak under 2 x the limit."""
    size = 64 << 20
    if form == "chunked":
        block = b"[" * 65536

        async def endless(writer: asyncio.StreamWriter) -> bool:
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in range(size // len(block)):
                writer.write(b"10000\r\n" + block + b"\r\n")
                await writer.drain()
            return True

        step: bytes | Writer = endless
    else:
        packed = gzip_of_zeros(size)
        if form == "deflate":
            packed = zlib.compress(bytes(size), 9)
        coding = "deflate" if form == "deflate" else "gzip"
        step = (
            chunked(packed, 65536, f"Content-Encoding: {coding}")
            if form == "gzip-chunked"
            else answer(packed, f"Content-Encoding: {coding}")
        )
    server = script([step])
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        got = outcomes(flavour, server.url, max_response_bytes=LIMIT, timeout=30.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got[0][0] == "ServerError"
    assert "max_response_bytes" in got[0][1]
    # what the server thread holds (the answer) was made before tracing started
    assert peak < 2 * LIMIT, peak


@pytest.mark.slow
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_gibibyte_bomb_is_held_under_twice_the_limit(script: Any, flavour: str) -> None:
    """1 GiB of zeros in about 1 MiB of gzip (deflate's ratio is at most about 1,000)."""
    server = script([answer(gzip_of_zeros(1 << 30), "Content-Encoding: gzip")])
    tracemalloc.start()
    try:
        got = outcomes(flavour, server.url, max_response_bytes=LIMIT, timeout=30.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got[0][0] == "ServerError"
    assert peak < 2 * LIMIT, peak


# ---------------------------------------------------------------------------
# Chunk-size lines, split answers, a close mid-body


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    "line", [b"0" * 200_000 + b"5", b"5;" + b"x" * 200_000, b"f" * 40], ids=["zeros", "ext", "huge"]
)
def test_a_chunk_size_line_without_end_is_bounded(script: Any, flavour: str, line: bytes) -> None:
    """A chunk-size line of 200 kB (leading zeros, an extension) or a size past 2**64:
    refused or read, never held whole and never a hang; the client goes on."""
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    server = script([head + line + b"\r\n" + b"12345\r\n0\r\n\r\n", answer(fee_body(8))])
    tracemalloc.start()
    try:
        got = outcomes(flavour, server.url, 2, max_response_bytes=LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if line.startswith(b"f"):
        assert got[0][0] == "TransportError"  # a size no body can have
    else:
        assert got[0][0] in ("TransportError", "ServerError")  # "12345" is no JSON
    assert got[1] == ("ok", 8)
    assert peak < 2 * LIMIT


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_answer_split_at_every_byte_is_read(script: Any, flavour: str) -> None:
    """Every split point of a chunked, gzipped answer, the two parts apart, on one
    kept-alive connection."""
    whole = chunked(gzip.compress(fee_body(9, pad=20)), 11, "Content-Encoding: gzip")

    def split(k: int) -> Writer:
        async def send(writer: asyncio.StreamWriter) -> bool:
            writer.write(whole[:k])
            await writer.drain()
            await asyncio.sleep(0.002)
            writer.write(whole[k:])
            return False

        return send

    server = script([split(k) for k in range(1, len(whole))])
    got = outcomes(flavour, server.url, len(whole) - 1)
    assert got == [("ok", 9)] * (len(whole) - 1)
    assert server.accepted == 1


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("form", ["length", "chunked", "gzip"])
def test_a_server_closing_mid_body(script: Any, flavour: str, form: str) -> None:
    body = fee_body(1, pad=500)
    full = {
        "length": answer(body),
        "chunked": chunked(body, 50),
        "gzip": answer(gzip.compress(body), "Content-Encoding: gzip"),
    }[form]

    async def cut(writer: asyncio.StreamWriter) -> bool:
        writer.write(full[: len(full) - 40])
        return True

    server = script([cut, answer(fee_body(2))])
    got = outcomes(flavour, server.url, 2)
    assert got[0][0] == "TransportError"
    assert ": answer cut short (" in got[0][1]
    assert got[1] == ("ok", 2)


# ---------------------------------------------------------------------------
# Keep-alive after each kind of error


def _silent(writer: asyncio.StreamWriter) -> Awaitable[bool]:
    async def wait() -> bool:
        await asyncio.sleep(1.0)
        return True

    return wait()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_keep_alive_after_each_kind_of_error(script: Any, flavour: str) -> None:
    """An answer refused for its size, coding or content, an error envelope and a
    timeout: the next request succeeds; only a connection whose state is known clean
    (a complete answer, refused or not) is used again."""
    envelope = b'{"success": false, "error": "busy"}'
    refusals: list[bytes | Writer] = [
        answer(envelope).replace(b"200 OK", b"503 Service Unavailable"),
        answer(fee_body(1)),
        answer(fee_body(pad=5000)),  # over the limit (declared): refused unread
        answer(fee_body(2)),
        chunked(fee_body(pad=5000), 100),  # over the limit while read
        answer(fee_body(3)),
        answer(b"x", "Content-Encoding: br"),
        answer(fee_body(4)),
        _silent,  # the attempt times out
        answer(fee_body(5)),
    ]
    server = script(refusals)
    got = outcomes(flavour, server.url, 10, max_response_bytes=1000, timeout=0.5)
    kinds = [kind for kind, _ in got[0::2]]
    assert kinds == ["ServerError"] * 4 + ["TimeoutError"], got
    assert "busy" in got[0][1]
    assert "max_response_bytes" in got[2][1]
    assert "max_response_bytes" in got[4][1]
    assert "unknown content coding" in got[6][1]
    assert got[1::2] == [("ok", 1), ("ok", 2), ("ok", 3), ("ok", 4), ("ok", 5)]
    # the connection is kept after the envelope; one whose answer was left unread
    # (too large, an unreadable coding, a timeout) is closed, never used again:
    # httpcore closes each; aiohttp keeps one whose refused answer had arrived whole
    # (its parser read the message to its end), closes the others (the timeout's)
    if flavour == "sync":
        assert server.accepted == 5
    else:
        assert 2 <= server.accepted <= 5


# ---------------------------------------------------------------------------
# Proxies from the environment


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


class ForwardProxy:
    """An HTTP proxy on loopback: absolute-form requests answered by itself (recorded,
    with their heads), CONNECT tunnelled to the target."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        self.heads: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self.handle, "127.0.0.1", 0)
        )
        self.port = self.server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                self.seen.append(head.split(b"\r\n", 1)[0])
                if head.startswith(b"CONNECT "):
                    await self.tunnel(head, reader, writer)
                    return
                body = fee_body(11)
                writer.write(answer(body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def tunnel(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def close(self) -> None:
        _stop(self.loop, self.server, self.thread)


@pytest.fixture
def forward_proxy() -> Iterator[ForwardProxy]:
    proxy = ForwardProxy()
    yield proxy
    proxy.close()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_proxies_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, forward_proxy: ForwardProxy, flavour: str
) -> None:
    clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", forward_proxy.url)
    # nothing listens at the target: only the proxy can answer
    got = outcomes(flavour, "http://api.example.test:9", 2)
    assert got == [("ok", 11), ("ok", 11)]
    line = b"GET http://api.example.test:9/fee-rate?token_id=7 HTTP/1.1"
    assert forward_proxy.seen == [line] * 2


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_no_proxy_names_the_hosts_that_go_direct(
    monkeypatch: pytest.MonkeyPatch, forward_proxy: ForwardProxy, script: Any, flavour: str
) -> None:
    clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", forward_proxy.url)
    monkeypatch.setenv("NO_PROXY", "example.invalid,127.0.0.1")
    server = script([answer(fee_body(3))])
    assert outcomes(flavour, server.url) == [("ok", 3)]
    assert forward_proxy.seen == []


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_explicit_proxy_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, forward_proxy: ForwardProxy, flavour: str
) -> None:
    clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "*")
    proxy = f"http://trader:p%40ss@127.0.0.1:{forward_proxy.port}"
    got = outcomes(flavour, "http://api.example.test:9", 1, proxy=proxy)
    assert got == [("ok", 11)]
    assert forward_proxy.seen == [b"GET http://api.example.test:9/fee-rate?token_id=7 HTTP/1.1"]
    credentials = base64.b64encode(b"trader:p@ss").decode()
    assert f"Proxy-Authorization: Basic {credentials}".lower().encode() in (
        forward_proxy.heads[0].lower()
    )


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_tls_through_a_proxy_tunnel(
    script: Any, monkeypatch: pytest.MonkeyPatch, forward_proxy: ForwardProxy, flavour: str
) -> None:
    clear_proxies(monkeypatch)
    server = script([answer(fee_body(13))] * 2, server_tls())
    got = outcomes(flavour, server.url, 2, proxy=forward_proxy.url, verify=str(CERT))
    assert got == [("ok", 13)] * 2
    assert forward_proxy.seen == [f"CONNECT 127.0.0.1:{server.port} HTTP/1.1".encode()]


class Trickler:
    """The status line and headers one byte every 0.1 s (20 s in all); ``done`` once
    it stopped, cut off or not."""

    def __init__(self) -> None:
        self.done = threading.Event()

    def __call__(self, conn: socket.socket, stop: threading.Event) -> None:
        try:
            for byte in b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * 200:
                if stop.wait(0.1):
                    return
                conn.sendall(bytes([byte]))
        except OSError:
            return
        finally:
            self.done.set()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_no_proxy_alone_leaves_the_deadline_in_place(
    monkeypatch: pytest.MonkeyPatch, raw_server: Callable[..., RawServer], flavour: str
) -> None:
    """With ``NO_PROXY`` alone set (as in many CI and Kubernetes environments) both
    clients went through httpx's client: the sync one then had per-read timeouts
    only, and an answer trickled a byte at a time outlasted its timeout. No proxy is
    named, so nothing changes: the attempt ends by its deadline, while the server is
    still trickling."""
    clear_proxies(monkeypatch)
    monkeypatch.setenv("NO_PROXY", "example.invalid")
    trickler = Trickler()
    server = raw_server(trickler)
    got = outcomes(flavour, server.url, timeout=0.5)
    assert got[0][0] == "TimeoutError"
    assert not trickler.done.is_set()  # cut off while the server still trickled


# ---------------------------------------------------------------------------
# TLS

CERTS = Path(__file__).parent / "data"
CERT, KEY_FILE = CERTS / "loopback-cert.pem", CERTS / "loopback-key.pem"


def server_tls(client_cert: bool = False) -> ssl.SSLContext:
    """The TLS of a loopback server (its certificate self-signed); with ``client_cert``
    it asks the client for a certificate of its own and checks it."""
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(CERT, KEY_FILE)
    if client_cert:
        tls.verify_mode = ssl.CERT_REQUIRED
        tls.load_verify_locations(CERT)
    return tls


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_tls_with_the_roots_from_the_environment(
    script: Any, monkeypatch: pytest.MonkeyPatch, flavour: str
) -> None:
    """https: the certificate checked against SSL_CERT_FILE (httpx's roots), kept alive;
    a server whose certificate the client does not trust is a TransportError."""
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(CERTS / "loopback-cert.pem", CERTS / "loopback-key.pem")
    untrusted = script([answer(fee_body(1))], tls)
    got = outcomes(flavour, untrusted.url)
    assert got[0][0] == "TransportError"
    assert "CERTIFICATE_VERIFY_FAILED" in got[0][1]
    monkeypatch.setenv("SSL_CERT_FILE", str(CERTS / "loopback-cert.pem"))
    server = script([answer(gzip.compress(fee_body(12)), "Content-Encoding: gzip")] * 3, tls)
    assert outcomes(flavour, server.url, 3) == [("ok", 12)] * 3
    assert server.accepted == 1


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_tls_options(script: Any, flavour: str) -> None:
    """``verify=`` a CA bundle, ``verify=False``, ``ssl=`` a context of one's own, and
    ``cert=`` a client certificate for a server that asks for one."""
    assert outcomes(flavour, script([answer(fee_body(1))], server_tls()).url, verify=str(CERT)) == [
        ("ok", 1)
    ]
    assert outcomes(flavour, script([answer(fee_body(2))], server_tls()).url, verify=False) == [
        ("ok", 2)
    ]
    own = ssl.create_default_context(cafile=str(CERT))
    assert outcomes(flavour, script([answer(fee_body(3))], server_tls()).url, ssl=own) == [
        ("ok", 3)
    ]
    mutual = script([answer(fee_body(4))], server_tls(client_cert=True))
    got = outcomes(flavour, mutual.url, verify=str(CERT), cert=(str(CERT), str(KEY_FILE)))
    assert got == [("ok", 4)]
    refused = script([answer(fee_body(5))], server_tls(client_cert=True))
    got = outcomes(flavour, refused.url, verify=str(CERT))  # no certificate of the client's
    assert got[0][0] == "TransportError"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"verify": "/no/such/bundle.pem"}, "verify"),
        ({"verify": 3}, "verify"),
        ({"cert": "/no/such/cert.pem"}, "cert"),
        ({"cert": ("a",)}, "cert"),
        ({"ssl": "tls"}, "ssl"),
        ({"ssl": ssl.create_default_context(), "verify": False}, "ssl"),
        ({"proxy": "socks5://127.0.0.1:1080"}, "proxy"),
        ({"proxy": "http://"}, "proxy"),
        ({"max_connections": 0}, "max_connections"),
        ({"max_connections": True}, "max_connections"),
    ],
)
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_bad_network_options_are_refused_by_name(
    flavour: str, options: dict[str, Any], field: str
) -> None:
    make = Client if flavour == "sync" else AsyncClient
    with pytest.raises(errors.ValidationError) as info:
        make("https://127.0.0.1:9", KEY, SECRET, **options)
    assert info.value.field == field
    with pytest.raises(TypeError, match="unexpected keyword argument 'transport'"):
        make("https://127.0.0.1:9", KEY, SECRET, transport=object())  # type: ignore[call-arg]


def test_an_answer_nobody_asked_for_closes_the_connection(script: Any) -> None:
    """Two answers to one request: the first is read, the connection is not used again.
    (The sync client, on httpcore and h11, reads the second as the next request's
    answer, as httpx does: h11 keeps bytes that follow an answer for the next one.)"""
    server = script([answer(fee_body(1)) + answer(fee_body(99)), answer(fee_body(2))])
    assert outcomes("async", server.url, 2) == [("ok", 1), ("ok", 2)]
    assert server.accepted == 2


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
