"""The sync ``Client`` and ``SyncStream`` as threaded programs use them: one client
shared by worker threads, ``close()`` from another thread, a stream iterated in one
thread and closed from another or dropped unclosed, Ctrl-C in a request, a fork.

Against real parts on loopback (the sandbox, or a raw socket server where the test
needs an answer held back). Time bounds are hang guards only: nothing here asserts
how fast anything is.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

from clobkit import Client, errors
from clobkit.client import SyncStream, orders_topic
from clobkit.models import Order

from .conftest import (
    KEY,
    MARKET_ID,
    SECRET,
    TOKEN_A,
    TOKEN_B,
    WALLET,
    client_options,
    closed_port,
    full_scope_users,
)
from .helpers import market_with_book, resting_buy_price

# these tests send themselves SIGINT
pytestmark = pytest.mark.usefixtures("default_ctrl_c")

GUARD = 30.0  # s: a hang guard, never a speed bound
FOREVER = 600.0  # s: a client timeout no test waits out


def eventually(check: Callable[[], bool], timeout: float = GUARD) -> None:
    """Wait until ``check()`` is true (a hang guard: ``timeout`` is never a speed bound)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        time.sleep(0.01)


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run ``call`` in a daemon thread; the list gets its result or exception."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def stream_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "clobkit-stream" and t.is_alive()}


class LoopbackServer:
    """A keep-alive HTTP/1.1 server: ``respond(method, path, n)`` gives the body of the
    ``n``-th answer (JSON), or ``None`` to hold it until ``release`` is set
    (``held`` says a request is being held)."""

    def __init__(self, respond: Callable[[str, str, int], str | None]) -> None:
        self.respond = respond
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held = threading.Event()
        self.release = threading.Event()
        self.count = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target = lines[0].split(" ")[:2]
                length = next(
                    (
                        int(v)
                        for k, _, v in (x.partition(":") for x in lines[1:])
                        if k.lower() == "content-length"
                    ),
                    0,
                )
                while len(data) < length:
                    data += conn.recv(65536)
                data = data[length:]
                with self.lock:
                    self.count += 1
                    n = self.count
                body = self.respond(method, target.partition("?")[0], n)
                if body is None:
                    self.held.set()
                    self.release.wait(GUARD * 2)
                    body = self.respond("GET", "/late", n) or "{}"
                conn.sendall(
                    (
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n{body}"
                    ).encode()
                )

    def close(self) -> None:
        self.release.set()
        self.sock.close()


def _numbered(method: str, path: str, n: int) -> str | None:
    """Answer ``n`` is the order ``o<n>``; the first is held."""
    if n == 1 and path != "/late":
        return None
    return json.dumps({"success": True, "data": {"id": f"o{n}", "status": "live"}})


@pytest.fixture
def own_sandbox(serve: Callable[..., Any]) -> Iterator[Any]:
    """A sandbox of the test's own: its orders and rate limit shared with no other test."""
    with serve() as sb:
        yield sb


@pytest.fixture
def trading(own_sandbox: Any) -> Iterator[tuple[Any, Any, Client, Any, Decimal]]:
    """(sandbox, user, client, a market with a book, a price that rests on it)."""
    me = full_scope_users(own_sandbox)[0]
    client = Client(**client_options(own_sandbox, me))
    market = market_with_book(client)
    assert market.token_id_a is not None
    price = resting_buy_price(client.get_orderbook(market.token_id_a))
    yield own_sandbox, me, client, market, price
    client.close()


# ---------------------------------------------------------------------------
# One client, many threads


def test_eight_threads_share_one_client(trading: Any) -> None:
    """Placing, reading and cancelling from 8 threads at once while the caches are
    cleared: every answer is the thread's own, no nonce is refused as reused."""
    _, _, client, market, price = trading
    failures: list[BaseException] = []
    placed: list[str] = []

    def work(worker: int) -> None:
        for round_ in range(6):
            if round_ % 3 == worker % 3:
                client.clear_caches()  # the raw-order flow fills them again, racing
            size = 5 + worker
            order = client.place_raw_order(market.id, "a", "BUY", price, size)
            assert client.get_order(order.order_id).id == order.order_id
            assert client.get_market(market.id).id == market.id
            assert client.get_fee_rate(order.token_id) == order.fee_rate_bps
            assert client.cancel_order(order.order_id).order_id == order.order_id
            placed.append(order.order_id)

    def guarded(worker: int) -> None:
        try:
            work(worker)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(w,), daemon=True) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD * 4)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert failures == []
    assert len(set(placed)) == 8 * 6
    assert client.open_orders() == []  # every order was cancelled, none left behind


def test_close_from_another_thread_ends_a_request_in_flight(raw_server: Any) -> None:
    """A request waiting on a server that never answers ends when another thread
    closes the client (it waited out its whole timeout before); later calls are
    refused without a connection."""
    asked = threading.Event()

    def never_answer(conn: socket.socket, stop: threading.Event) -> None:
        asked.set()
        stop.wait(GUARD * 2)

    server = raw_server(never_answer)
    client = Client(server.url, KEY, SECRET, timeout=FOREVER, total_timeout=FOREVER)
    thread, outcome = in_thread(client.get_wallet)
    assert asked.wait(GUARD)
    client.close()
    thread.join(GUARD)
    assert not thread.is_alive(), "the request outlived close()"
    assert isinstance(outcome[0], errors.TransportError)
    assert "closed" in str(outcome[0])
    with pytest.raises(errors.TransportError, match="the Client is closed"):
        client.get_wallet()
    with pytest.raises(errors.TransportError, match="the Client is closed"):
        client.stream("t")
    assert server.accepted == 1


def test_a_raw_order_cut_off_by_close_carries_the_order() -> None:
    """``close()`` while ``place_raw_order``'s POST waits for its answer: the outcome is
    unknown, so the error carries the order, for ``resolve_raw_order`` on a new client."""

    def respond(method: str, path: str, n: int) -> str | None:
        if method == "POST":
            return None  # held: never answered
        if path.endswith("/wallet"):
            return json.dumps({"success": True, "data": WALLET})
        if path.endswith("/fee-rate"):
            return json.dumps({"base_fee": 0})
        market = {"id": MARKET_ID, "token_id_a": TOKEN_A, "token_id_b": TOKEN_B}
        return json.dumps({"success": True, "data": {"market": {**market, "neg_risk": False}}})

    server = LoopbackServer(respond)
    client = Client(server.url, KEY, SECRET, timeout=FOREVER, total_timeout=FOREVER)
    try:
        thread, outcome = in_thread(
            lambda: client.place_raw_order(MARKET_ID, "a", "BUY", "0.5", 10)
        )
        assert server.held.wait(GUARD)
        client.close()
        thread.join(GUARD)
        assert not thread.is_alive(), "the POST outlived close()"
        error = outcome[0]
        assert isinstance(error, errors.TransportError)
        assert error.order is not None
        assert error.order.market_id == MARKET_ID
        assert error.order.client_order_id
    finally:
        server.close()


@pytest.mark.parametrize("listening", [False, True], ids=["polling", "stream"])
def test_close_ends_a_wait_for_order(
    trading: Any, listening: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """``wait_for_order`` in one thread, ``close()`` in another: the wait, sleeping
    between polls or listening on the stream, ends with ``TransportError`` (it slept
    or listened on, and at its timeout said the order timed out)."""
    _, me, client, market, price = trading
    order = client.place_raw_order(market.id, "a", "BUY", price, 5)
    client.wait_for_order(order.order_id, "live", timeout=GUARD)
    stream = client.stream(orders_topic(me.user_id))  # held: a dropped one is closed
    if listening:
        stream.start()
    caplog.set_level(logging.DEBUG, logger="clobkit.client")
    caplog.clear()
    thread, outcome = in_thread(
        lambda: client.wait_for_order(order.order_id, timeout=FOREVER, poll_interval=FOREVER)
    )
    reads = 2 if listening else 1  # with a stream the order is read again before listening
    eventually(lambda: sum(order.order_id in r.getMessage() for r in caplog.records) >= reads)
    client.close()
    thread.join(GUARD)
    assert not thread.is_alive(), "the wait outlived close()"
    assert isinstance(outcome[0], errors.TransportError)
    assert not isinstance(outcome[0], errors.TimeoutError)


@pytest.mark.parametrize("listening", [False, True], ids=["polling", "stream"])
def test_wait_for_order_sees_a_cancel_from_another_thread(trading: Any, listening: bool) -> None:
    _, me, client, market, price = trading
    order = client.place_raw_order(market.id, "a", "BUY", price, 5)
    client.wait_for_order(order.order_id, "live", timeout=GUARD)
    stream = client.stream(orders_topic(me.user_id))  # held: a dropped one is closed
    if listening:
        stream.start()
    thread, outcome = in_thread(lambda: client.wait_for_order(order.order_id, timeout=GUARD))
    client.cancel_order(order.order_id)
    thread.join(GUARD * 2)
    assert isinstance(outcome[0], Order)
    assert outcome[0].status == "cancelled"


def test_close_while_another_thread_makes_streams() -> None:
    """``client.stream()`` in one thread, ``close()`` again and again in another: close()
    read the client's set of streams while it changed ("RuntimeError: Set changed size
    during iteration"). Every stream made before close() is closed by it; later ones
    are refused."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for _ in range(3):
            client = Client("http://127.0.0.1:9", KEY, SECRET)
            kept: list[SyncStream] = []
            done = threading.Event()

            def make(
                client: Client = client, kept: list[SyncStream] = kept, done: threading.Event = done
            ) -> None:
                with contextlib.suppress(errors.TransportError):
                    for _ in range(3000):
                        kept.append(client.stream("t"))
                        if len(kept) > 200:
                            del kept[:100]  # collected: the set shrinks too
                done.set()

            maker, outcome = in_thread(make)
            while not done.is_set():
                client.close()
            maker.join(GUARD)
            assert outcome == [None]
            assert all(stream.closed for stream in kept)
    finally:
        sys.setswitchinterval(switch)


# ---------------------------------------------------------------------------
# Ctrl-C in a request


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_ctrl_c_in_a_request_leaves_no_half_read_connection() -> None:
    """KeyboardInterrupt while the answer is awaited: the connection is dropped, so
    the next request never reads the stale answer arriving on it."""
    server = LoopbackServer(_numbered)
    client = Client(server.url, KEY, SECRET, timeout=GUARD, max_retries=0)
    # KeyboardInterrupt reaches the main thread only: pytest runs tests there
    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident

    def interrupt() -> None:
        if server.held.wait(GUARD):
            assert main is not None
            signal.pthread_kill(main, signal.SIGINT)  # the main thread, in its read

    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            client.get_order("first")
        server.release.set()  # the stale answer o1 goes out now
        assert [client.get_order(f"next{i}").id for i in range(3)] == ["o2", "o3", "o4"]
    finally:
        client.close()
        server.close()


# ---------------------------------------------------------------------------
# SyncStream


@pytest.fixture
def stream_client(sandbox: Any) -> Iterator[tuple[Client, str]]:
    me = full_scope_users(sandbox)[0]
    with Client(**client_options(sandbox, me)) as client:
        yield client, orders_topic(me.user_id)


def test_close_from_another_thread_ends_the_iteration(stream_client: Any) -> None:
    client, topic = stream_client
    before = stream_threads()
    stream = client.stream(topic)
    stream.start()
    thread, outcome = in_thread(lambda: list(stream))
    eventually(lambda: bool(stream_threads() - before))
    stream.close()
    thread.join(GUARD)
    assert not thread.is_alive(), "the iteration outlived close()"
    assert isinstance(outcome[0], list)
    eventually(lambda: not (stream_threads() - before))


def test_close_racing_start_leaves_no_thread(stream_client: Any) -> None:
    """``start()`` in one thread, ``close()`` at once in another: close() joined a
    thread not yet started (RuntimeError), or ran before the thread had its loop and
    the stream connected anyway, its thread running for ever."""
    client, topic = stream_client
    before = stream_threads()
    for _ in range(60):
        stream = client.stream(topic)
        starter, outcome = in_thread(stream.start)
        stream.close()  # never raises, whatever start() has done so far
        starter.join(GUARD)
        assert outcome == [None] or isinstance(outcome[0], errors.TransportError)
        assert stream.closed
    eventually(lambda: not (stream_threads() - before))


def test_threads_starting_one_stream_at_once_share_one_thread() -> None:
    """Eight threads call ``start()`` on one stream at once: each could see no thread yet
    and make one, so two loops ran the one stream and a ``start()`` raised
    ``RuntimeError`` (a future attached to a different loop). Now every ``start()``
    meets the one thread's outcome: here the refused connection's."""
    ws_url = f"ws://127.0.0.1:{closed_port()}/ws"
    client = Client("http://127.0.0.1:9", KEY, SECRET, ws_url=ws_url)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for _ in range(100):  # 100 rounds of 8 spinning threads: 57 s of a busy CI worker at 200
            stream = client.stream("t")
            go = threading.Event()

            def start(stream: SyncStream = stream, go: threading.Event = go) -> None:
                while not go.is_set():  # spin, so all of them start at the same moment
                    pass
                stream.start()

            starters = [in_thread(start) for _ in range(8)]
            go.set()
            for starter, _ in starters:
                starter.join(GUARD)
            errors_met = {type(outcome[0]) for _, outcome in starters}
            assert errors_met == {errors.TransportError}
    finally:
        sys.setswitchinterval(switch)
        client.close()


def test_a_dropped_stream_ends_its_thread(stream_client: Any) -> None:
    """A started stream dropped without ``close()``: its thread held it, so it was never
    collected and ran (connected, reading) until the client closed."""
    client, topic = stream_client
    before = stream_threads()
    stream = client.stream(topic)
    stream.start()
    assert len(stream_threads() - before) == 1
    del stream
    gc.collect()
    eventually(lambda: not (stream_threads() - before))


def test_a_closed_stream_ends_iteration_and_refuses_use(stream_client: Any) -> None:
    """Closed before it started, or after: iteration ends (the unstarted one raised),
    ``start()`` and ``subscribe()`` raise ``TransportError`` (``subscribe`` raised
    ``RuntimeError: Event loop is closed``)."""
    client, topic = stream_client
    unstarted = client.stream(topic)
    unstarted.close()
    started = client.stream(topic)
    started.start()
    started.close()
    for stream in (unstarted, started):
        assert list(stream) == []
        with pytest.raises(StopIteration):
            stream.get(0)
    for stream in (unstarted, started):
        with pytest.raises(errors.TransportError, match="closed"):
            stream.start()
        with pytest.raises(errors.TransportError, match="closed"):
            stream.subscribe("market:1:book")
        with pytest.raises(StopIteration):
            next(stream)


def test_a_failing_listener_leaves_the_stream_and_other_listeners(
    stream_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, topic = stream_client
    seen: list[Any] = []

    def broken(item: Any) -> None:
        raise ValueError("a listener's bug")

    with client.stream(topic) as stream:
        stream.add_listener(broken)
        stream.add_listener(seen.append)
        stream.subscribe("market:1:book")
        eventually(lambda: len(seen) >= 1)
        assert not stream.closed
    assert "stream listener failed" in caplog.text


def test_many_streams_at_once(stream_client: Any) -> None:
    client, topic = stream_client
    before = stream_threads()
    streams = [client.stream(topic) for _ in range(12)]
    starters = [in_thread(s.start) for s in streams]
    for thread, outcome in starters:
        thread.join(GUARD)
        assert outcome == [None]
    assert len(stream_threads() - before) == 12
    closers = [in_thread(s.close)[0] for s in streams]
    for closer in closers:
        closer.join(GUARD)
    assert all(s.closed for s in streams)
    eventually(lambda: not (stream_threads() - before))


# ---------------------------------------------------------------------------
# fork


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_refuses_the_parents_client(sandbox: Any) -> None:
    """After ``os.fork()`` the child shared the parent's kept-alive connections, and the
    two read each other's answers. The child's calls are refused, its streams too,
    naming the fork; the parent's client goes on."""
    me = full_scope_users(sandbox)[0]
    with Client(**client_options(sandbox, me)) as client:
        wallet = client.get_wallet(refresh=True)  # a connection kept in the pool
        stream = client.stream(orders_topic(me.user_id))
        stream.start()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            os.close(read)
            os.write(write, json.dumps(_child_report(client, stream)).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            report = json.loads(pipe.read())
        os.waitpid(pid, 0)
        assert report["call"][0] == "TransportError"
        assert "fork" in report["call"][1]
        assert f"made in process {os.getpid()};" in report["call"][1]
        assert report["stream"][0] == "TransportError"
        assert "fork" in report["stream"][1]
        assert report["close"] == "ok"
        assert client.get_wallet(refresh=True) == wallet
        assert stream.get(timeout=GUARD) is not None  # the parent's stream runs on
        stream.close()


def _child_report(client: Client, stream: SyncStream) -> dict[str, Any]:
    def outcome(call: Callable[[], Any]) -> list[str]:
        try:
            call()
        except Exception as exc:
            return [type(exc).__name__, str(exc)]
        return ["ok", ""]

    report: dict[str, Any] = {
        "call": outcome(lambda: client.get_wallet(refresh=True)),
        "stream": outcome(lambda: stream.get(timeout=0.01)),
    }
    try:
        stream.close()
        client.close()
        report["close"] = "ok"
    except Exception as exc:
        report["close"] = repr(exc)
    return report
