"""Signed-request authentication over HTTP: signing string, query forms, skew, nonces, secrets."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from clobkit import RequestSigner, signature
from clobkit.sandbox import Sandbox, UserConfig

from ..conftest import loopback_http
from .conftest import TRADER
from .signed import PREFIX, SignedClient, loads


def status(r: httpx.Response) -> int:
    return r.status_code


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_query_string_signed_either_way_unless_strict(fresh: Any) -> None:
    lenient: Sandbox = fresh()
    strict: Sandbox = fresh(strict_query_signing=True)
    for sb, bare_ok in ((lenient, True), (strict, False)):
        user = sb.user(TRADER)
        with (
            SignedClient(sb.base_url, user) as with_query,
            SignedClient(sb.base_url, user, sign_query=False) as bare,
        ):
            assert status(with_query.get("/events", league="nba", limit=2)) == 200
            assert status(bare.get("/events", league="nba", limit=2)) == (200 if bare_ok else 401)
            assert status(bare.get("/events")) == 200  # no query: the forms coincide


def test_signing_string_is_exactly_the_api_text(sb: Sandbox) -> None:
    """Hand-built headers (not RequestSigner) over method, path, timestamp, nonce and body hash."""
    user = sb.user(TRADER)
    body = b'{"market_id": "00000000-0000-0000-0000-000000000000", "outcome": "a", "amount": 1}'
    ts, nonce = str(now_ms()), "0123456789abcdef0123456789abcdef"
    sig = signature(user.api_secret, "POST", PREFIX + "/orders", ts, nonce, body)
    headers = {
        "X-API-KEY": user.api_key,
        "X-API-TIMESTAMP": ts,
        "X-API-NONCE": nonce,
        "X-API-SIGNATURE": sig,
        "Content-Type": "application/json",
    }
    with loopback_http(base_url=sb.base_url) as http:
        r = http.post(PREFIX + "/orders", content=body, headers=headers)
        assert r.status_code == 404
        assert loads(r.content)["error"] == "Market not found"
        headers["X-API-NONCE"] = "f" * 32
        r = http.post(PREFIX + "/orders", content=body + b" ", headers=headers)  # body differs
        assert r.status_code == 401
        headers["X-API-NONCE"] = "e" * 32
        r = http.request("PUT", PREFIX + "/orders", content=body, headers=headers)
        assert r.status_code == 405


@pytest.mark.parametrize(
    ("offset_s", "ok"), [(-29, True), (29, True), (-31, False), (31, False), (-3600, False)]
)
def test_timestamp_skew_window(client: SignedClient, offset_s: int, ok: bool) -> None:
    r = client.request("GET", "/wallet", timestamp_ms=now_ms() + offset_s * 1000)
    assert r.status_code == (200 if ok else 401)
    if not ok:
        assert "window" in loads(r.content)["detail"]


def test_skew_window_is_configurable(fresh: Any) -> None:
    sb: Sandbox = fresh({"skew_seconds": 5})
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        assert c.request("GET", "/wallet", timestamp_ms=now_ms() - 4000).status_code == 200
        assert c.request("GET", "/wallet", timestamp_ms=now_ms() - 6000).status_code == 401


def test_repeated_nonce_is_refused(client: SignedClient, sb: Sandbox) -> None:
    headers = client.signer.headers("GET", PREFIX + "/wallet")
    with loopback_http(base_url=sb.base_url) as http:
        assert http.get(PREFIX + "/wallet", headers=headers).status_code == 200
        replay = http.get(PREFIX + "/wallet", headers=headers)
        assert replay.status_code == 401
        assert loads(replay.content)["detail"] == "nonce already used"
        # the same nonce with a fresh timestamp (a new signature) is still a replay
        again = client.signer.headers("GET", PREFIX + "/wallet", nonce=headers["X-API-NONCE"])
        assert http.get(PREFIX + "/wallet", headers=again).status_code == 401
        # a nonce is per key
        other = RequestSigner(sb.users[1].api_key, sb.users[1].api_secret)
        theirs = other.headers("GET", PREFIX + "/wallet", nonce=headers["X-API-NONCE"])
        assert http.get(PREFIX + "/wallet", headers=theirs).status_code == 200


def test_failed_signature_does_not_burn_the_nonce(client: SignedClient, sb: Sandbox) -> None:
    headers = client.signer.headers("GET", PREFIX + "/wallet")
    with loopback_http(base_url=sb.base_url) as http:
        bad = dict(headers, **{"X-API-SIGNATURE": "0" * 64})
        assert http.get(PREFIX + "/wallet", headers=bad).status_code == 401
        assert http.get(PREFIX + "/wallet", headers=headers).status_code == 200


@pytest.mark.parametrize("drop", ["X-API-KEY", "X-API-TIMESTAMP", "X-API-NONCE", "X-API-SIGNATURE"])
def test_each_header_is_required(client: SignedClient, sb: Sandbox, drop: str) -> None:
    headers = client.signer.headers("GET", PREFIX + "/wallet")
    del headers[drop]
    with loopback_http(base_url=sb.base_url) as http:
        r = http.get(PREFIX + "/wallet", headers=headers)
    assert r.status_code == 401
    assert loads(r.content)["error"] == "unauthorized"
    assert drop in loads(r.content)["detail"]


@pytest.mark.parametrize(
    "ts",
    ["soon", "1.5e12", "-5", str(now_ms() // 1000)],
    ids=["word", "float", "negative", "seconds"],
)
def test_malformed_or_second_resolution_timestamp(sb: Sandbox, ts: str) -> None:
    user = sb.user(TRADER)
    nonce = "ab" * 16
    sig = signature(user.api_secret, "GET", PREFIX + "/wallet", ts if ts.isdigit() else "0", nonce)
    headers = {
        "X-API-KEY": user.api_key,
        "X-API-TIMESTAMP": ts,
        "X-API-NONCE": nonce,
        "X-API-SIGNATURE": sig,
    }
    with loopback_http(base_url=sb.base_url) as http:
        assert http.get(PREFIX + "/wallet", headers=headers).status_code == 401


def test_secret_utf8_bytes_are_the_hmac_key(fresh: Any) -> None:
    user = UserConfig(user_id=TRADER, api_key="unicode-key", api_secret="sécret-ü-密钥")
    sb: Sandbox = fresh({"users": [user]})
    with SignedClient(sb.base_url, user) as c:
        assert c.get("/wallet").status_code == 200


def test_percent_encoded_query_is_signed_as_sent(client: SignedClient) -> None:
    r = client.get("/markets", q="Man City")  # urlencode sends q=Man+City
    assert r.status_code == 200
    assert loads(r.content)["data"]["count"] >= 1
