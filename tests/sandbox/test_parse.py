"""The sandbox's reading of values (``sandbox/parse.py`` and its routes): odd but
well-formed values it answered with a 500, or took off the grid.

Each test here failed before its fix: amounts between 10**26 and 10**40 and a
GTD expiration past uint256 raised inside the engine ("internal error"), a query integer
with two minus signs passed the digit check and failed in ``int`` (500), a
price or deposit of more than 28 digits was rounded onto the grid by
``Decimal``'s default context and accepted, a WebSocket handshake on any
other path got Starlette's bare 403 instead of the envelope, and a state
file that could not be written (locked by another process) made every
answer a plain-text 500.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import clobkit
from clobkit import RequestSigner
from clobkit.core.spec import RISK_CODE
from clobkit.sandbox import Sandbox, load_config

from ..conftest import loopback_http
from .conftest import TRADER, book_market
from .signed import PREFIX, SignedClient, loads


def envelope(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.content[:300])
    body: dict[str, Any] = loads(r.content)
    assert body["success"] is False, body
    return body


@pytest.fixture
def admin_http(sb: Sandbox) -> Iterator[httpx.Client]:
    with loopback_http(base_url=sb.base_url) as http:
        yield http


@pytest.mark.parametrize("amount", ['"1e26"', '"1e30"', "1e39", '"123456789012345678901234567.5"'])
@pytest.mark.parametrize(("side", "order_type"), [("BUY", "FOK"), ("BUY", "GTC"), ("SELL", "GTC")])
def test_huge_amounts_are_refused_not_crashed(
    sb: Sandbox, client: SignedClient, amount: str, side: str, order_type: str
) -> None:
    m = book_market(sb.engine)
    field = "amount" if side == "BUY" else "shares"
    limit = ', "limit_price": "0.50"' if order_type == "GTC" else ""
    raw = (
        f'{{"market_id": "{m.id}", "outcome": "a", "side": "{side}", '
        f'"order_type": "{order_type}", "{field}": {amount}{limit}}}'
    ).encode()
    before = sb.engine.totals()
    r = client.request("POST", "/orders", raw=raw)
    body = loads(r.content)
    # refused as a bad body, or by the risk limits (a 500 the API text gives that code)
    assert 400 <= r.status_code < 500 or body.get("code") == RISK_CODE, (r.status_code, body)
    assert body["success"] is False
    assert sb.engine.totals() == before


def test_a_gtd_expiration_past_uint256_is_400(sb: Sandbox, client: SignedClient) -> None:
    m = book_market(sb.engine)
    for expiration, status in ((1 << 256, 400), (10**100, 400)):
        order = {
            "market_id": m.id,
            "outcome": "a",
            "order_type": "GTD",
            "token_option": "yes",
            "amount": 2,
            "limit_price": "0.02",
            "expiration": expiration,
        }
        body = envelope(client.request("POST", "/orders", raw=json.dumps(order).encode()), status)
        assert "expiration" in body["detail"]


@pytest.mark.parametrize("value", ["--5", "---1", "--0", "-", "5-", "-%2B5"])
@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/orders", "page"),
        ("/orders", "page_size"),
        ("/events", "limit"),
        ("/events", "offset"),
        ("/markets?q=x", "limit"),
        ("/portfolio/positions", "per_page"),
        ("/portfolio/orders", "page"),
    ],
)
def test_query_integers_with_odd_signs_are_400(
    client: SignedClient, path: str, name: str, value: str
) -> None:
    sep = "&" if "?" in path else "?"
    envelope(client.request("GET", f"{path}{sep}{name}={value}"), 400)


@pytest.mark.parametrize(
    "price", ["0.98999999999999999999999999999", "0.5000000000000000000000000000001"]
)
def test_a_price_off_the_grid_by_a_hair_is_refused(
    sb: Sandbox, client: SignedClient, price: str
) -> None:
    m = book_market(sb.engine)
    order = {"market_id": m.id, "outcome": "a", "order_type": "GTC", "token_option": "yes"}
    raw = json.dumps({**order, "amount": 2, "limit_price": price}).encode()
    body = envelope(client.request("POST", "/orders", raw=raw), 400)
    assert "0.01" in body["detail"]


def test_a_long_deposit_with_a_seventh_decimal_is_refused(
    sb: Sandbox, admin_http: httpx.Client
) -> None:
    before = sb.engine.balances(TRADER)
    r = admin_http.post(
        f"/admin/users/{TRADER}/deposit", json={"amount": "1234567890123456789012.1234567"}
    )
    assert "6 decimals" in envelope(r, 400)["detail"]
    assert sb.engine.balances(TRADER) == before


@pytest.mark.parametrize(
    "path", [PREFIX + "/events", "/nowhere", "/admin/invariants", PREFIX + "/ws/x"]
)
def test_a_websocket_handshake_elsewhere_is_404_in_the_envelope(sb: Sandbox, path: str) -> None:
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split()[1] == b"404", head
    assert b"application/json" in head.lower()
    assert json.loads(body) == {"success": False, "error": "not found"}


# a sandbox on a state file that stops growing once it has started: RLIMIT_FSIZE
# makes the next write past the file's size fail, as a full disk would
_FULL_DISK = """
import os, resource, signal, sys
from clobkit.sandbox import Sandbox, load_config

path = sys.argv[1]
sb = Sandbox(state=path).start()
size = max(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
print(sb.port, flush=True)
sys.stdin.read()
"""


def test_a_state_file_that_cannot_be_written_answers_in_the_envelope(tmp_path: Path) -> None:
    # the nonce of a request cannot be committed, so its answer must not leave:
    # a 500 in the envelope goes instead, and so for every request after it
    path = tmp_path / "state.db"
    env = {**os.environ, "PYTHONPATH": str(Path(clobkit.__file__).parents[1])}
    child = subprocess.Popen(
        [sys.executable, "-c", _FULL_DISK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        user = next(u for u in load_config(None).users if u.user_id == TRADER)
        signer = RequestSigner(user.api_key, user.api_secret)
        statuses = []
        with loopback_http(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(200):
                headers = signer.headers("GET", PREFIX + "/wallet")
                r = http.get(PREFIX + "/wallet", headers=headers)
                assert r.headers["content-type"].startswith("application/json"), r.content
                statuses.append(r.status_code)
                if r.status_code == 500:
                    assert loads(r.content) == {"success": False, "error": "internal error"}
                    if statuses.count(500) == 3:
                        break
        assert statuses.count(500) == 3, statuses
        assert set(statuses[statuses.index(500) :]) == {500}  # the file is broken for good
    finally:
        child.kill()
        child.wait()
