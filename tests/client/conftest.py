"""Fixtures of the client tests.

Unit tests drive the sans-I/O core directly. Every other test runs a client's own
transport (aiohttp for ``AsyncClient``, httpcore for ``Client``) over real HTTP on
loopback: against the sandbox (``clobkit.sandbox.serve_in_thread``), or against
``FakeApi``, a scripted server answering each route as a test says (an answer, a
dropped or reset connection, silence), or a ``RawServer`` writing bytes by hand.
The ``api`` fixture is parametrised over ``sync`` and ``async``: the async flavour
runs each ``AsyncClient`` coroutine on a private event loop, so one test body
checks both clients against the same server.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from clobkit import AsyncClient, Client

from ..conftest import import_extra

SECRET = "unit-test-secret-do-not-leak"
KEY = "unit-test-key"
WALLET = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}
MARKET_ID = "11111111-2222-4333-8444-555555555555"
TOKEN_A = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
TOKEN_B = "52114319501245915516055106046884209969926127482827954674443846427813813222426"


def ok(data: Any, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json={"success": True, "data": data})


def fail(status: int, error: str, code: str | None = None, **headers: str) -> httpx.Response:
    body: dict[str, Any] = {"success": False, "error": error}
    if code is not None:
        body["code"] = code
    return httpx.Response(status, json=body, headers=headers)


class Action(str):
    """What ``FakeApi`` does instead of answering."""


#: close the connection without a word, as a crashed server does
DROP = Action("drop")
#: reset the connection (linger 0), as a server killed mid-request does
RESET = Action("reset")
#: never answer (until the server stops): the client's timeout ends the attempt
HANG = Action("hang")


class FakeApi:
    """A scripted API server on loopback that records every request (``httpx.Request``
    as it arrived) and answers each route as ``on`` says, else as the service would
    for the fixtures' wallet and market; ``url`` is its base URL."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.routes: dict[tuple[str, str], list[Any]] = {}
        self.neg_risk = False
        self._lock = threading.Lock()
        self.stopped = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.api = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # a short poll: shutdown() waits for the loop to see it
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def on(self, method: str, path: str, *responses: Any) -> None:
        """Answer ``method path`` with ``responses`` in turn (the last one repeats).

        A response may be an ``httpx.Response`` (sent as it is), an ``Action``
        (``DROP``, ``RESET``, ``HANG``), or a callable taking the request and
        returning either.
        """
        self.routes[(method, path)] = list(responses)

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and r.url.path == path)

    def __call__(self, request: httpx.Request) -> httpx.Response | Action:
        with self._lock:
            self.requests.append(request)
            key = (request.method, request.url.path)
            queue = self.routes.get(key)
            if queue is None:
                return self.default(request)
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if callable(answer) and not isinstance(answer, (httpx.Response, Action)):
            answer = answer(request)
        assert isinstance(answer, (httpx.Response, Action)), answer
        return answer

    def default(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/api/ext/v1/wallet":
            return ok(WALLET)
        if path == f"/api/ext/v1/markets/{MARKET_ID}":
            return ok(
                {
                    "market": {
                        "id": MARKET_ID,
                        "token_id_a": TOKEN_A,
                        "token_id_b": TOKEN_B,
                        "neg_risk": self.neg_risk,
                        "question": "Who wins?",
                    }
                }
            )
        if path == "/fee-rate":
            return httpx.Response(200, json={"base_fee": 0})
        if path == "/api/ext/v1/orders/raw":
            body = json.loads(request.content)
            return ok({"order_id": "raw-" + body["client_order_id"], "notification_id": ""}, 201)
        if path == "/api/ext/v1/orders" and request.method == "POST":
            return ok({"order_id": "o-1", "notification_id": "n-1"}, 201)
        return fail(404, "not routed in FakeApi")

    def close(self) -> None:
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a burst of connections is queued, not refused


class _Handler(BaseHTTPRequestHandler):
    """One connection of ``FakeApi``: HTTP/1.1, kept alive, each request answered as
    the script says."""

    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        api: FakeApi = self.server.api  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        url = f"http://{self.headers.get('Host', 'fake')}{self.path}"
        request = httpx.Request(self.command, url, headers=self.headers.items(), content=body)
        answer = api(request)
        if isinstance(answer, Action):
            self._act(answer, api)
            return
        head = [f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}".encode()]
        head += [k + b": " + v for k, v in answer.headers.raw]
        self.wfile.write(b"\r\n".join(head) + b"\r\n\r\n" + answer.content)

    def _act(self, action: Action, api: FakeApi) -> None:
        self.close_connection = True
        if action == HANG:
            api.stopped.wait(30)
        elif action == RESET:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # quiet: a test reads fake.requests


@pytest.fixture
def fake() -> Iterator[FakeApi]:
    api = FakeApi()
    yield api
    api.close()


def _options(url: str, **overrides: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "base_url": url,
        "api_key": KEY,
        "api_secret": SECRET,
        "clob_url": url,
        "backoff": 0.001,
        "backoff_cap": 0.01,
        "timeout": 5.0,
    }
    options.update(overrides)
    return options


@pytest.fixture
def mock_client(fake: FakeApi) -> Iterator[Client]:
    with Client(**_options(fake.url)) as client:
        yield client


@pytest.fixture
def make_mock_client(fake: FakeApi) -> Iterator[Callable[..., Client]]:
    made: list[Client] = []

    def make(**overrides: Any) -> Client:
        client = Client(**_options(fake.url, **overrides))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
async def mock_aclient(fake: FakeApi) -> Any:
    async with AsyncClient(**_options(fake.url)) as client:
        yield client


# ---------------------------------------------------------------------------
# The sandbox


@pytest.fixture(scope="session")
def serve() -> Callable[..., Any]:
    """``clobkit.sandbox.serve_in_thread`` (skips only without the sandbox extra)."""
    return import_extra("clobkit.sandbox", "sandbox").serve_in_thread  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def sandbox(serve: Callable[..., Any]) -> Iterator[Any]:
    """One default sandbox shared by the read-mostly integration tests."""
    with serve() as sb:
        yield sb


def full_scope_users(sb: Any) -> list[Any]:
    full = {"markets:read", "orders:read", "orders:write", "portfolio:read"}
    return [u for u in sb.users if full <= set(u.scopes)]


def client_options(sb: Any, user: Any, **overrides: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "base_url": sb.base_url,
        "api_key": user.api_key,
        "api_secret": user.api_secret,
        "clob_url": sb.clob_url,
        "ws_url": sb.ws_url,
        "backoff": 0.01,
        "backoff_cap": 0.1,
        "timeout": 10.0,
    }
    options.update(overrides)
    return options


class SyncFacade:
    """Calls an ``AsyncClient`` like a ``Client``: each coroutine runs on a private loop."""

    def __init__(self, client: AsyncClient, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop
        self.flavour = "async"

    @property
    def raw(self) -> AsyncClient:
        return self._client

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            result = target(*args, **kwargs)
            if inspect.isawaitable(result):
                return self._loop.run_until_complete(result)
            if hasattr(result, "__anext__"):
                return iter(self._loop.run_until_complete(_collect(result)))
            return result

        return call


async def _collect(iterator: Any) -> list[Any]:
    return [item async for item in iterator]


@pytest.fixture
def make_api(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``make_api(sb, user, flavour, **options)``: a client (sync, or async behind a facade)."""
    closers: list[Callable[[], None]] = []

    def make(sb: Any, user: Any, flavour: str, **overrides: Any) -> Any:
        options = client_options(sb, user, **overrides)
        if flavour == "sync":
            client = Client(**options)
            client.flavour = "sync"  # type: ignore[attr-defined]
            closers.append(client.close)
            return client
        loop = asyncio.new_event_loop()

        async def build() -> AsyncClient:
            return AsyncClient(**options)

        aclient = loop.run_until_complete(build())

        def close() -> None:
            loop.run_until_complete(aclient.close())
            loop.close()

        closers.append(close)
        return SyncFacade(aclient, loop)

    yield make
    for close in reversed(closers):
        close()


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def api(sandbox: Any, make_api: Callable[..., Any], flavour: str) -> Any:
    """A full-scope client of the shared sandbox, in both flavours."""
    return make_api(sandbox, full_scope_users(sandbox)[0], flavour)


# ---------------------------------------------------------------------------
# Network helpers for the integration tests


class TcpProxy:
    """A loopback TCP proxy that can drop every connection and refuse new ones.

    ``kill()`` aborts the live connections (the client sees a reset, not a
    close handshake); while ``blocked`` new connections are closed at once.
    """

    def __init__(self, upstream_port: int) -> None:
        import socket

        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.blocked = False
        self.accepted = 0
        self._sockets: list[Any] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        import socket

        while not self._stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.blocked or self._stopped:
                _abort(client)
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                _abort(client)
                continue
            with self._lock:
                self.accepted += 1
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: Any, dst: Any) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _abort(dst)

    def kill(self) -> None:
        """Reset every live connection."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _abort(sock)

    def close(self) -> None:
        self._stopped = True
        self.kill()
        self.listener.close()


def _abort(sock: Any) -> None:
    import socket
    import struct

    # shutdown() wakes a thread blocked in recv() on the socket (close() alone
    # does not); linger 0 turns the close into a reset rather than a FIN.
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


@pytest.fixture
def tcp_proxy() -> Iterator[Callable[[int], TcpProxy]]:
    made: list[TcpProxy] = []

    def make(port: int) -> TcpProxy:
        proxy = TcpProxy(port)
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.close()


@pytest.fixture
def black_hole() -> Iterator[str]:
    """``http://127.0.0.1:PORT``: accepts connections and never answers."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    held: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------------------
# A raw loopback server that answers every request with ``reply(conn, stop)``


class RawServer:
    """Accepts connections on a free loopback port; ``reply`` writes each answer, once
    the request's head is read (``read_request``) or as soon as the connection is
    accepted (``read_request=False``: ``reply`` then owns the whole connection)."""

    def __init__(
        self, reply: Callable[[socket.socket, threading.Event], None], read_request: bool = True
    ) -> None:
        self.read_request = read_request
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.reply = reply
        self.threads: list[threading.Thread] = []
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            t = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while self.read_request and b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                self.reply(conn, self.stop)
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for t in self.threads:
            t.join(5)
        self.sock.close()


@pytest.fixture
def raw_server() -> Iterator[Callable[..., RawServer]]:
    made: list[RawServer] = []

    def make(
        reply: Callable[[socket.socket, threading.Event], None], read_request: bool = True
    ) -> RawServer:
        server = RawServer(reply, read_request)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()
