"""The server's plain-request path (``_fasthttp``) over raw sockets: framing and connections.

A whole plain HTTP/1.1 request is answered without h11; these pin what must
not change when a request takes that path or falls back to h11: pipelined
requests (one read holding two goes to h11) answered in order on a
connection that carries on, a body that arrives in a later read, a request
or an answer that closes the connection, and the shapes only h11 reads.
"""

from __future__ import annotations

import socket
import time
from decimal import Decimal
from typing import Any

from clobkit.sandbox import Sandbox
from clobkit.sandbox._fasthttp import INCOMPLETE, plain_request

from .conftest import TRADER
from .signed import PREFIX

HEAD = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n"


def read_answers(s: socket.socket, count: int) -> list[tuple[bytes, bytes]]:
    """``count`` answers (head, body) read off ``s`` by their Content-Length."""
    data = b""
    answers = []
    while len(answers) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = data[:end]
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            if len(data) >= end + 4 + length:
                answers.append((head, data[end + 4 : end + 4 + length]))
                data = data[end + 4 + length :]
                continue
        chunk = s.recv(65536)
        assert chunk, "the server closed the connection early"
        data += chunk
    return answers


def closed(s: socket.socket) -> bool:
    s.settimeout(5)
    return s.recv(1) == b""


def test_pipelined_requests_are_answered_in_order(sb: Sandbox) -> None:
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(HEAD % b"/fee-rate?token_id=1" + HEAD % (PREFIX + "/wallet").encode())
        first, second = read_answers(s, 2)
        assert first[0].startswith(b"HTTP/1.1 404 ")
        assert b"no market" in first[1]
        assert second[0].startswith(b"HTTP/1.1 401 ")
        assert b"unauthorized" in second[1]
        s.sendall(HEAD % b"/fee-rate?token_id=1")  # the connection carries on
        assert read_answers(s, 1)[0][0].startswith(b"HTTP/1.1 404 ")


def test_a_body_in_a_later_read_is_waited_for(sb: Sandbox) -> None:
    body = b'{"amount": "2.5"}'
    head = (
        b"POST /admin/users/%s/deposit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (TRADER.encode(), len(body))
    )
    before = sb.engine.balances(TRADER).cash
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(head + body[:5])
        time.sleep(0.05)
        s.sendall(body[5:])
        (answer,) = read_answers(s, 1)
    assert answer[0].startswith(b"HTTP/1.1 200 ")
    assert sb.engine.balances(TRADER).cash == before + Decimal("2.5")


def test_connection_close_asked_by_the_client(sb: Sandbox) -> None:
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(b"GET /fee-rate?token_id=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        (answer,) = read_answers(s, 1)
        assert b"\r\nconnection: close" in answer[0].lower()
        assert closed(s)


def test_an_answer_that_closes_closes_the_connection(fresh: Any) -> None:
    sb: Sandbox = fresh({"limits": {"max_body_bytes": 100}})
    body = b"x" * 200
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(
            b"POST %s/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n%s"
            % (PREFIX.encode(), body)
        )
        (answer,) = read_answers(s, 1)
        assert answer[0].startswith(b"HTTP/1.1 413 ")
        assert b"\r\nconnection: close" in answer[0]
        assert closed(s)


def test_a_chunked_body_still_reaches_the_route(sb: Sandbox) -> None:
    body = b'{"amount": "1"}'
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(
            b"POST /admin/users/%s/deposit HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"%x\r\n%s\r\n0\r\n\r\n" % (TRADER.encode(), len(body), body)
        )
        (answer,) = read_answers(s, 1)
    assert answer[0].startswith(b"HTTP/1.1 200 ")


def test_what_the_plain_reader_takes_and_leaves() -> None:
    get = b"GET /x?y=1 HTTP/1.1\r\nHost: h\r\nX-A:  v w \r\n\r\n"
    assert plain_request(get, 1000) == ("GET", b"/x?y=1", [(b"host", b"h"), (b"x-a", b"v w")], b"")
    post = b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n"
    assert plain_request(post + b"ab", 1000) == INCOMPLETE
    assert plain_request(post + b"abcd", 1000) is not None
    left_to_h11 = [
        post + b"abcde",  # a pipelined byte
        get.replace(b"Host: h\r\n", b""),  # no Host
        get.replace(b"Host: h", b"Host: h\r\nHost: i"),  # two
        get.replace(b"HTTP/1.1", b"HTTP/1.0"),
        get.replace(b"GET", b"HEAD"),
        get.replace(b"/x", b"/\xc3\xa9"),  # a non-ASCII target
        get.replace(b"X-A:  v w ", b"X-A: \tv"),  # a tab
        get.replace(b"X-A:  v w ", b"X-A: caf\xc3\xa9"),  # obs-text
        get.replace(b"X-A:  v w ", b"Bad Name: v"),
        get.replace(b"X-A:  v w ", b"Connection: close"),
        get.replace(b"X-A:  v w ", b"Transfer-Encoding: chunked"),
        get.replace(b"X-A:  v w ", b"Expect: 100-continue"),
        get.replace(b"X-A:  v w ", b"Upgrade: websocket"),
        post.replace(b"4", b"4\r\nContent-Length: 4") + b"abcd",
        post.replace(b"4", b"-4"),
        post.replace(b"4", b"999999") + b"abcd",  # longer than the plain path reads
        get[:-2],  # the head has not ended
        get,  # but longer than h11's head limit:
    ]
    for data in left_to_h11[:-1]:
        assert plain_request(data, 1000) is None, data
    assert plain_request(left_to_h11[-1], 10) is None
