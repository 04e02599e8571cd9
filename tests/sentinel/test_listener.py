"""The sentinel's ear: a heartbeat is heard only when signed with the shared token, on
time, well formed and not a replay; everything else is refused with its reason
counted; a flood of connections is bounded (503 past ``CONNECTIONS_MAX``) and never
crashes it, in a thread as in its own process."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import msgspec
import pytest

from clobkit.errors import ValidationError
from clobkit.sentinel import Heartbeat, read_token
from clobkit.sentinel.listener import CONNECTIONS_MAX, split_listen
from clobkit.sentinel.wire import BODY_MAX, HEALTH_PATH, SKEW_SECONDS, TOKEN_MIN

from ..conftest import loopback_http
from .conftest import TOKEN, beat, new_session, post, wait_until


def test_a_signed_heartbeat_is_heard_and_answered_with_the_timeout(listener: Any) -> None:
    url, heard, guard = listener
    sent = beat(state="halted", reason="halt() called", open_orders=7)
    answer = post(url, sent)
    assert answer.status_code == 200
    assert answer.json() == {"ok": True, "timeout": 1.0}
    assert heard.beats == [sent]
    assert guard.accepted == 1
    assert guard.refused == {}


@pytest.mark.parametrize(
    "how",
    ["another token", "no signature", "signature of another body", "not hex", "no timestamp"],
)
def test_a_heartbeat_not_signed_with_the_token_is_refused(listener: Any, how: str) -> None:
    url, heard, guard = listener
    sent = beat()
    body = msgspec.json.encode(sent)
    kwargs: Any = {
        "another token": {"token": "another-token-of-thirty-two-char"},
        "no signature": {"signature": ""},
        "signature of another body": {"signature": post_signature(b"{}")},
        "not hex": {"signature": "zz" * 32},
        "no timestamp": {"headers": {"X-Sentinel-Timestamp": ""}},
    }[how]
    answer = post(url, body, **kwargs)
    assert answer.status_code == 401
    assert answer.json()["ok"] is False
    assert heard.beats == []
    assert guard.refused == {"token": 1}


def post_signature(body: bytes) -> str:
    from clobkit.sentinel import sign

    return sign(TOKEN.encode(), time.time_ns() // 1_000_000, body)


def test_a_stale_or_future_timestamp_is_refused(listener: Any) -> None:
    url, heard, guard = listener
    now = time.time_ns() // 1_000_000
    skew = int(SKEW_SECONDS * 1000) + 1_000
    for stamp in (now - skew, now + skew):
        assert post(url, beat(), stamp=stamp).status_code == 401
    assert heard.beats == []
    assert guard.refused == {"stale": 2}


def test_a_replayed_heartbeat_is_refused(listener: Any) -> None:
    url, heard, guard = listener
    first = beat(seq=5)
    assert post(url, first).status_code == 200
    again = post(url, first)  # the very same bytes, captured and sent again
    older = post(url, beat(session=first.session, seq=4))
    assert (again.status_code, older.status_code) == (409, 409)
    assert post(url, beat(session=first.session, seq=6)).status_code == 200
    assert [b.seq for b in heard.beats] == [5, 6]
    assert guard.refused == {"replayed": 2}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[]",
        b'{"session": "abcdefgh"}',
        b'{"session": "abcdefgh", "seq": 1, "desk": "d", "state": "dancing"}',
        b'{"session": "a b", "seq": 1, "desk": "d", "state": "quoting"}',
        b'{"session": "abcdefgh", "seq": 0, "desk": "d", "state": "quoting"}',
        b'{"session": "abcdefgh", "seq": 1, "desk": "", "state": "quoting"}',
        b'{"session": "abcdefgh", "seq": 1, "desk": "d\\n", "state": "quoting"}',
        b'{"session": "abcdefgh", "seq": "1", "desk": "d", "state": "quoting"}',
        b'{"session": "abcdefgh", "seq": 1, "desk": "d", "state": "quoting", "x": 1}',
        b'{"session": "abcdefgh", "seq": 1, "desk": "d", "state": "quoting", "open_orders": -1}',
        b'{"session": "abcdefgh", "seq": 99999999999999999999, "desk": "d", "state": "quoting"}',
        b"\xff\xfe{}",
        b"[" * 5000,
    ],
)
def test_a_malformed_heartbeat_is_refused(listener: Any, body: bytes) -> None:
    url, heard, guard = listener
    answer = post(url, body)  # well signed: only its contents are wrong
    assert answer.status_code == (413 if len(body) > BODY_MAX else 400)
    assert answer.json()["ok"] is False
    assert heard.beats == []
    assert sum(guard.refused.values()) == 1


def test_a_body_over_the_bound_is_refused_unread(listener: Any) -> None:
    url, heard, _ = listener
    with socket.create_connection(split_listen(url[7:]), timeout=10) as sock:
        sock.sendall(
            b"POST /heartbeat HTTP/1.1\r\nHost: s\r\nContent-Length: 1000000000000\r\n\r\n"
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 413 ")  # by its length, nothing read
    chunks = httpx.post(
        url + "/heartbeat",
        content=iter([b"x" * 4000] * 10),  # chunked: no length to refuse it by
        headers={"X-Sentinel-Timestamp": "1", "X-Sentinel-Signature": "00"},
        timeout=10,
    )
    assert chunks.status_code == 413
    assert heard.beats == []


def test_other_paths_and_methods_are_refused(listener: Any) -> None:
    url, heard, _ = listener
    assert httpx.get(url + "/heartbeat", timeout=10).status_code == 405
    assert httpx.post(url + "/nowhere", content=b"{}", timeout=10).status_code == 404
    health = httpx.get(url + HEALTH_PATH, timeout=10)
    assert health.status_code == 200
    assert health.json()["ok"] is True
    assert TOKEN not in health.text
    assert heard.beats == []


def flood(url: str, idle: int, garbage: int) -> list[socket.socket]:
    """``idle`` connections that send nothing and ``garbage`` that send bytes no HTTP
    parser reads: all held open."""
    host, port = split_listen(url.removeprefix("http://"))
    held = []
    for i in range(idle + garbage):
        sock = socket.create_connection((host, port), timeout=10)
        if i >= idle:
            sock.sendall(b"\x00\xff garbage \r\n\r\n" * 4)
        held.append(sock)
    return held


def test_a_flood_of_connections_is_bounded_and_heartbeats_come_back(listener: Any) -> None:
    url, heard, _ = listener
    held = flood(url, idle=CONNECTIONS_MAX + 8, garbage=8)
    answers = []
    try:
        with loopback_http(timeout=10) as http:

            def one() -> None:
                try:
                    answers.append(post(url, beat(), http=http).status_code)
                except httpx.HTTPError:
                    answers.append(0)  # refused at the door: no answer at all

            threads = [threading.Thread(target=one) for _ in range(20)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
        assert len(answers) == 20
        assert set(answers) <= {200, 503, 0}
        assert 503 in answers or 0 in answers  # bounded: the flood is refused service
    finally:
        for sock in held:
            sock.close()
    wait_until(lambda: post(url, beat()).status_code == 200)  # back once the flood ends
    assert heard.beats


@pytest.mark.slow
def test_the_listener_process_survives_a_flood_that_uses_up_its_files(token: str) -> None:
    """Past its file descriptors, the process refuses connections and lives on; each
    heartbeat it accepts is one JSON line on its stdout; it leaves when its stdin
    closes (the watching process is gone)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "clobkit.sentinel.listener", *LISTEN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=lambda: _files(256),
    )
    assert proc.stdout is not None
    assert proc.stdin is not None
    try:
        url = proc.stdout.readline().decode().split()[-1]
        held = []
        try:
            for _ in range(400):  # past its 256 files
                try:
                    held.append(socket.create_connection(split_listen(url[7:]), timeout=2))
                except OSError:
                    break
            assert proc.poll() is None
        finally:
            for sock in held:
                sock.close()
        session, numbers = new_session(), iter(range(1, 1 << 30))

        def accepted() -> bool:
            try:
                return post(url, beat(session=session, seq=next(numbers))).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(accepted)
        heard = msgspec.json.decode(proc.stdout.readline(), type=Heartbeat)
        assert heard.session == session
        proc.stdin.close()
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


LISTEN = ("--listen", "127.0.0.1:0", "--timeout", "1.0")


def _files(n: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


@pytest.mark.parametrize("bad", [None, "", "short", " " * 40])
def test_a_missing_or_short_token_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch, bad: str | None
) -> None:
    if bad is None:
        monkeypatch.delenv("CLOBKIT_SENTINEL_TOKEN")
    else:
        monkeypatch.setenv("CLOBKIT_SENTINEL_TOKEN", bad)
    with pytest.raises(ValidationError) as caught:
        read_token()
    assert caught.value.field == "token"
    assert str(TOKEN_MIN) in str(caught.value)
    if bad:
        assert bad.strip() not in str(caught.value) or not bad.strip()


@pytest.mark.parametrize("listen", ["8765", ":8765", "host:", "host:port", "host:70000", ""])
def test_a_bad_listen_address_is_refused(listen: str) -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        split_listen(listen)
    assert split_listen("[::1]:0") == ("::1", 0)
