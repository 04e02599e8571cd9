"""The clients' decoding of answers (``client/_decode.py``): an odd or hostile server's
answers that escaped as other exceptions (an audit's findings).

Each failed before its fix, on both clients: a non-JSON answer whose charset
names a codec that is not a text encoding ("hex", "zlib") raised httpx's
AssertionError or TypeError while the error's message was made; and a
timestamp of 400 digits, of 5,000 digit characters or "²" raised
OverflowError or ValueError from the tolerant decoder (in a stream frame it
killed the stream).
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit import AsyncClient, Client, errors
from clobkit.client._errors import RETRY_AFTER_CAP, retry_after_seconds
from clobkit.client._stream import parse_message
from clobkit.models import Order, RawOrderResult

from ..conftest import examples
from .conftest import MARKET_ID, FakeApi, RawServer, fail, ok


def _answer(status: int, body: bytes, content_type: str) -> Callable[..., None]:
    def reply(conn: socket.socket, stop: threading.Event) -> None:
        head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
        head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        conn.sendall(head.encode() + body)

    return reply


async def _both(url: str, call: Callable[[Any], Any]) -> list[tuple[str, str]]:
    """What ``call`` gives on each client: ("ok", repr) or (error class, message)."""
    options: dict[str, Any] = {"base_url": url, "api_key": "k", "api_secret": "s"}
    options |= {"max_retries": 0}
    out = []
    with Client(**options) as sync:
        try:
            out.append(("ok", repr(call(sync))))
        except errors.ClobkitError as exc:
            out.append((type(exc).__name__, str(exc)))
    async with AsyncClient(**options) as client:
        try:
            out.append(("ok", repr(await call(client))))
        except errors.ClobkitError as exc:
            out.append((type(exc).__name__, str(exc)))
    return out


@pytest.mark.parametrize(
    ("status", "charset", "said"),
    [
        (500, "hex", "500: oops"),
        (502, "rot13", "502: oops"),
        (200, "zlib", "200: response is not JSON: 'oops'"),
        (200, "base64", "200: response is not JSON: 'oops'"),
    ],
)
async def test_a_charset_that_is_no_text_encoding_still_gives_the_error(
    raw_server: Callable[..., RawServer], status: int, charset: str, said: str
) -> None:
    server = raw_server(_answer(status, b"oops", f"text/plain; charset={charset}"))
    got = await _both(server.url, lambda c: c.get_wallet())
    assert got == [("ServerError", said)] * 2


ODD_TIMES = ["1" + "0" * 400, '"' + "9" * 5000 + '"', '"\u00b2"']


@pytest.mark.parametrize("stamp", ODD_TIMES, ids=["400 digits", "5000 digit chars", "superscript"])
async def test_an_odd_timestamp_is_read_tolerantly(
    raw_server: Callable[..., RawServer], stamp: str
) -> None:
    body = f'{{"success": true, "data": {{"order": {{"id": "o1", "created_at": {stamp}}}}}}}'
    server = raw_server(_answer(200, body.encode(), "application/json"))
    got = await _both(server.url, lambda c: c.get_order("o1"))
    assert [kind for kind, _ in got] == ["ok", "ok"]
    assert got[0] == got[1]
    frame = '{"type": "order", "topic": "user:u1:orders", "data": '
    frame += f'{{"id": "o1", "status": "live", "created_at": {stamp}}}}}'
    message = parse_message(frame.encode())  # "never raises"
    assert message.order is not None
    assert message.order.id == "o1"


async def test_a_stream_closed_before_it_subscribed_fails_its_start() -> None:
    # the server takes every handshake, then closes before answering the subscription:
    # start() waited for ever, reconnecting (the first connection's failure must say)
    from websockets.asyncio.server import ServerConnection, serve

    async def close_at_once(connection: ServerConnection) -> None:
        await connection.close(1011)

    async with serve(close_at_once, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        client = AsyncClient("http://127.0.0.1:9", "k", "s", ws_url=f"ws://127.0.0.1:{port}/")
        async with client:
            stream = client.stream(["user:u1:orders"], open_timeout=2, ack_timeout=1)
            with pytest.raises(errors.TransportError, match="closed before it subscribed"):
                await asyncio.wait_for(stream.start(), 30)


async def test_a_stream_follows_no_redirect(raw_server: Callable[..., RawServer]) -> None:
    # websockets follows a redirect to another origin with the signed X-API-* headers
    # (it drops only Authorization and cookies): the handshake must be refused instead
    elsewhere = socket.create_server(("127.0.0.2", 0))
    elsewhere.settimeout(0.5)
    target = f"ws://127.0.0.2:{elsewhere.getsockname()[1]}/collect"

    def redirect(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {target}\r\n\r\n".encode())

    server = raw_server(redirect)
    try:
        client = AsyncClient(server.url, "my-api-key", "s", ws_url=server.url.replace("http", "ws"))
        async with client:
            with pytest.raises(errors.TransportError, match="HTTP 302"):
                await asyncio.wait_for(client.stream(["user:u1:orders"]).start(), 30)
        with pytest.raises(TimeoutError):  # nobody came
            elsewhere.accept()
    finally:
        elsewhere.close()


WALLET = (
    b'{"success": true, "data": {"maker": "0x1111111111111111111111111111111111111111",'
    b' "signer": "0x2222222222222222222222222222222222222222", "chain_id": 137,'
    b' "signature_type": 2}}'
)


def _http(status: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def _keep_alive(conn: socket.socket, stop: threading.Event) -> None:
    """The first request: the wallet, with a whole '201 placed' answer nobody asked
    for in the same write; every later one: 500, the order refused. All on the one
    connection (the first request's head read already)."""
    placed = b'{"success": true, "data": {"order_id": "STALE", "notification_id": "n"}}'
    conn.sendall(_http("200 OK", WALLET) + _http("201 Created", placed))
    data = b""
    while not stop.is_set():
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, data = data.split(b"\r\n\r\n", 1)
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n")
             if line.lower().startswith(b"content-length:")),
            0,
        )  # fmt: skip
        while len(data) < length:
            data += conn.recv(65536)
        data = data[length:]
        conn.sendall(_http("500 X", b'{"success": false, "error": "internal error"}'))


def test_an_answer_nobody_asked_for_is_never_the_next_requests(
    raw_server: Callable[..., RawServer],
) -> None:
    # the sync client's pool kept the extra answer in its parser and read it as the
    # POST's: a refused order was reported placed, with the stale id
    server = raw_server(_keep_alive)
    options: dict[str, Any] = {"base_url": server.url, "api_key": "k", "api_secret": "s"}
    with Client(**options, max_retries=0) as client:
        client.get_wallet()
        with pytest.raises(errors.ClobkitError) as info:
            client.place_order("11111111-2222-4333-8444-555555555555", outcome="a", amount="5")
        assert "STALE" not in str(info.value)


def _same_page(request: httpx.Request) -> httpx.Response:
    """Every GET /orders a full page of the same orders, whatever page it asks for."""
    size = int(request.url.params.get("page_size", 20))
    orders = [{"id": f"o{i}", "status": "live"} for i in range(size)]
    return ok({"orders": orders, "total_count": 10**12, "page": 1, "page_size": size})


async def test_a_server_that_ignores_the_page_asked_for_ends_the_walk(
    fake: FakeApi, mock_client: Client, mock_aclient: AsyncClient
) -> None:
    # open_orders() (the market maker's resync) read the same page for ever, holding
    # every copy: a page repeating the one before it ends the walk with a ServerError
    fake.on("GET", "/api/ext/v1/orders", _same_page)
    with pytest.raises(errors.ServerError, match="repeats the page before it"):
        mock_client.open_orders()
    with pytest.raises(errors.ServerError, match="repeats the page before it"):
        await mock_aclient.open_orders()
    assert fake.count("GET", "/api/ext/v1/orders") <= 2 * 2 * 4  # two pages a status, a client


@pytest.mark.parametrize("status", [408, 413, 499])
async def test_a_gateways_4xx_to_a_resent_raw_order_leaves_it_unknown(
    fake: FakeApi, mock_client: Client, mock_aclient: AsyncClient, status: int
) -> None:
    # resolve_raw_order read any 4xx as the service's refusal ("never placed"): a
    # gateway's 408 or 499 says nothing of the first send, and the caller, told None,
    # would place the order again
    html = {"Content-Type": "text/html"}
    fake.on(  # a new answer each time: one client's transport cannot read another's
        "POST",
        "/api/ext/v1/orders/raw",
        lambda request: httpx.Response(status, text="<html>gateway</html>", headers=html),
    )
    sent = RawOrderResult(
        order_id="",
        clob_order_id="",
        client_order_id="k-1",
        token_id="1",
        side=0,
        maker_amount=5_000_000,
        taker_amount=10_000_000,
        salt=1,
        fee_rate_bps=0,
        market_id="11111111-2222-4333-8444-555555555555",
        outcome="a",
    )
    # (an order naming no send time may have a copy leaving now: the gateway's answer
    # is a refusal before the key was read, so the outcome stays unknown either way)
    with pytest.raises(errors.OutcomeUnknown) as info:
        mock_client.resolve_raw_order(sent)
    with pytest.raises(errors.OutcomeUnknown) as ainfo:
        await mock_aclient.resolve_raw_order(sent)
    for error in (info.value, ainfo.value):
        assert isinstance(error.refusal, errors.InvalidRequest)
        assert error.refusal.status == status
        assert error.order is not None
        assert msgspec.structs.replace(error.order, sent_at=0.0) == sent


@pytest.mark.parametrize("client", [Client, AsyncClient])
@pytest.mark.parametrize("field", ["base_url", "clob_url", "ws_url"])
def test_a_port_past_65535_is_refused_by_name(client: Any, field: str) -> None:
    # the async client's own connect raised OverflowError ("port must be 0-65535");
    # the URL is now refused when the client is made, naming it
    urls = {"base_url": "http://127.0.0.1:9", "clob_url": None, "ws_url": None}
    urls[field] = ("ws" if field == "ws_url" else "http") + "://127.0.0.1:70000"
    with pytest.raises(errors.ValidationError) as info:
        client(api_key="k", api_secret="s", **urls)
    assert info.value.field == field


def test_a_wait_whose_reads_keep_failing_times_out_at_its_deadline(
    fake: FakeApi, make_mock_client: Callable[..., Client]
) -> None:
    # each re-read had a whole call's budget and retries of its own: a wait of 1 s ran
    # 6 to 7 s against a busy gateway, and raised its ServerError, not TimeoutError
    live = {"order": {"id": "o1", "status": "live"}}
    busy = {"success": False, "error": "busy"}
    fake.on(
        "GET", "/api/ext/v1/orders/o1", lambda r: ok(live), lambda r: httpx.Response(503, json=busy)
    )
    client = make_mock_client(max_retries=1000, backoff=0.01, backoff_cap=0.01)
    with pytest.raises(errors.TimeoutError, match="did not reach"):
        client.wait_for_order("o1", timeout=0.3, poll_interval=0.05)


@pytest.mark.parametrize("flag", ["null", '"no"', "[false]", "{}", '"error"'])
def test_an_envelope_whose_success_is_not_true_is_no_success(
    fake: FakeApi, mock_client: Client, flag: str
) -> None:
    # only a literal false was read as failure: {"success": null, "error": "insufficient
    # balance", "data": {...}} placed an order that the server had refused
    body = f'{{"success": {flag}, "error": "insufficient balance", "data": {{"order_id": "o-1"}}}}'
    fake.on("POST", "/api/ext/v1/orders", lambda r: httpx.Response(200, content=body.encode()))
    with pytest.raises(errors.ApiError, match="insufficient balance"):
        mock_client.place_order("11111111-2222-4333-8444-555555555555", outcome="a", amount="5")


@pytest.mark.parametrize("odd", ["NaN", "sNaN", "-NaN"])
def test_a_book_price_that_is_no_number_is_left_out_of_the_best(
    fake: FakeApi, mock_client: Client, odd: str
) -> None:
    # best_bid / best_ask raised decimal.InvalidOperation comparing it
    book = {
        "bids": [{"price": odd, "size": "5"}, {"price": "0.40", "size": "5"}],
        "asks": [{"price": odd, "size": "5"}, {"price": "0.60", "size": "5"}],
    }
    fake.on("GET", "/api/ext/v1/orderbooks/t1", lambda r: ok(book))
    got = mock_client.get_orderbook("t1")
    assert (str(got.best_bid), str(got.best_ask)) == ("0.40", "0.60")


def _trailers(conn: socket.socket, stop: threading.Event) -> None:
    """A tiny chunked body, then 2 MiB of trailer lines."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
    conn.sendall(head + b"\r\n2\r\n{}\r\n0\r\n")
    line = b"X-T: " + b"a" * 1000 + b"\r\n"
    try:
        for _ in range(2048):
            conn.sendall(line)
        conn.sendall(b"\r\n")
    except OSError:
        pass  # the client closed: as it should


async def test_trailers_past_the_head_limit_are_refused(
    raw_server: Callable[..., RawServer],
) -> None:
    # the async client kept every trailer line (300 MiB of them took 381 MiB of memory)
    got = await _both(raw_server(_trailers).url, lambda c: c.get_wallet())
    assert [kind for kind, _ in got] == ["TransportError", "TransportError"], got


@pytest.mark.parametrize("blank", ["", " ", "\t\n"])
def test_an_order_named_by_a_blank_id_is_no_answer(
    fake: FakeApi, mock_client: Client, blank: str
) -> None:
    # a placed order of id "" was returned: nothing could cancel, read or track it
    fake.on("POST", "/api/ext/v1/orders", ok({"order_id": blank}))
    with pytest.raises(errors.ServerError, match="order_id: must not be blank"):
        mock_client.place_order("11111111-2222-4333-8444-555555555555", outcome="a", amount="5")
    fake.on("GET", "/api/ext/v1/orders/o1", ok({"order": {"id": blank, "status": "live"}}))
    with pytest.raises(errors.ServerError, match="id: must not be blank"):
        mock_client.get_order("o1")
    listing = {"orders": [{"id": "o2"}, {"id": blank}], "total_count": 2}
    fake.on("GET", "/api/ext/v1/orders", ok(listing))
    with pytest.raises(errors.ServerError, match="id: must not be blank"):
        mock_client.list_orders()  # never a page with the order silently left out
    # a stream record of no order is kept as the frame, with no Order read from it
    frame = f'{{"topic": "user:u1:orders", "data": {{"id": "{blank}", "status": "live"}}}}'
    message = parse_message(frame.encode("unicode_escape"))
    assert message.topic == "user:u1:orders"
    assert message.order is None
    with pytest.raises(errors.ValidationError, match="id"):
        Order(id=blank)  # by hand: a ClobkitError, as any bad input


# ---------------------------------------------------------------------------
# Retry-After of any value (issue #41: a date of an absurd year raised OverflowError
# from both clients: the retries skipped, a raw order's error without its order)

ABSURD = [
    "Mon, 01 Jan 99999999999999999999 00:00:00 GMT",  # OverflowError in the date parser
    "Mon, 01 Jan 2026 00:00:00 +99999999999999999999",
    "Mon, 01 Jan 2026 99999999999999999999:00:00 GMT",
    "Fri, 31 Dec 9999 23:59:59 GMT",  # a real date, seven millennia away
    "1e400",  # infinite
    "9" * 5000,
    "nan",
    "-3",
    "soon",
]


@pytest.mark.parametrize("value", ABSURD)
async def test_any_retry_after_is_a_bounded_wait_or_none(
    fake: FakeApi, mock_client: Client, mock_aclient: AsyncClient, value: str
) -> None:
    fake.on("POST", "/api/ext/v1/orders/raw", fail(429, "slow down", **{"Retry-After": value}))
    fake.on("GET", "/api/ext/v1/orders/o1", fail(429, "slow down", **{"Retry-After": value}))
    errors_seen = []
    with pytest.raises(errors.RateLimited) as sync:
        mock_client.place_raw_order_amounts(MARKET_ID, "a", "BUY", 1_000_000, 2_000_000)
    errors_seen.append(sync.value)
    with pytest.raises(errors.RateLimited) as asynchronous:
        await mock_aclient.place_raw_order_amounts(MARKET_ID, "a", "BUY", 1_000_000, 2_000_000)
    errors_seen.append(asynchronous.value)
    with pytest.raises(errors.RateLimited) as read:
        await mock_aclient.get_order("o1")
    for error in errors_seen:
        assert error.order is not None  # the raw order, to resolve
    for error in [*errors_seen, read.value]:
        wait = error.retry_after
        assert wait is None or 0 <= wait <= RETRY_AFTER_CAP


@settings(max_examples=examples(300))
@given(st.text())
def test_retry_after_of_any_text_never_raises(value: str) -> None:
    wait = retry_after_seconds(value)
    assert wait is None or (0 <= wait <= RETRY_AFTER_CAP and math.isfinite(wait))


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_no_client_follows_a_redirect(
    raw_server: Callable[..., RawServer], status: int
) -> None:
    """A redirect would carry the signed X-API-* headers (and a raw order's body) to
    wherever it points: both clients refuse it as an answer and send nothing there."""
    elsewhere = raw_server(_answer(200, WALLET, "application/json"))

    def redirect(conn: socket.socket, stop: threading.Event) -> None:
        head = f"HTTP/1.1 {status} Moved\r\nLocation: {elsewhere.url}/api/ext/v1/wallet\r\n"
        conn.sendall((head + "Content-Length: 0\r\nConnection: close\r\n\r\n").encode())

    got = await _both(raw_server(redirect).url, lambda c: c.get_wallet())
    assert [kind for kind, _ in got] == ["ApiError", "ApiError"]
    assert all(f"{status}" in text for _, text in got)
    assert elsewhere.accepted == 0
