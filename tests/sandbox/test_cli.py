"""``python -m clobkit.sandbox``, configuration files, and two sandboxes in one process."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clobkit.sandbox import SandboxConfig, serve_in_thread
from clobkit.sandbox.config import ConfigError, load_config

from ..conftest import loopback_http
from .conftest import TRADER, book_market
from .signed import SignedClient


def run_cli(*args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "clobkit.sandbox", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    match = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+)\n", first)
    assert match, (first, proc.stderr.read() if proc.stderr else "")
    lines = [proc.stdout.readline() for _ in range(3)]
    return proc, match.group(1), lines


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0
    assert proc.stdout is not None
    out = proc.stdout.read()  # through the same buffer the first lines were read from
    proc.stdout.close()
    if proc.stderr is not None:
        proc.stderr.close()
    return out


def test_cli_serves_and_prints_the_default_keys() -> None:
    proc, url, _ = run_cli()
    try:
        with loopback_http(base_url=url) as http:
            assert http.get("/fee-rate", params={"token_id": "1"}).status_code == 404
            assert http.get("/api/ext/v1/events").status_code == 401
    finally:
        out = stop(proc)
    assert "sandbox-trader-key" in out
    assert "sandbox-trader-secret" in out
    assert "sandbox-reader-key" in out


def test_cli_with_config_file_and_strict_signing(tmp_path: Path) -> None:
    config = {
        "users": [
            {
                "user_id": TRADER,
                "api_key": "file-key",
                "api_secret": "file-secret",
                "scopes": ["markets:read"],
                "balance": "5",
                "ip_whitelist": None,
            }
        ],
        "rate_limit_per_minute": 100,
        "risk": {"per_minute": 10},
    }
    path = tmp_path / "sandbox.json"
    path.write_text(json.dumps(config))
    proc, url, _ = run_cli("--config", str(path), "--strict-query-signing")
    try:
        user = SandboxConfig.from_dict(config).users[0]
        with SignedClient(url, user) as c, SignedClient(url, user, sign_query=False) as bare:
            assert c.get("/events", limit=1).status_code == 200
            assert bare.get("/events", limit=1).status_code == 401
            assert c.get("/wallet").status_code == 403
    finally:
        out = stop(proc)
    assert "sandbox-trader-key" not in out


def test_cli_refuses_a_bad_config(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"users": [{"user_id": "nope"}]}')
    result = subprocess.run(
        [sys.executable, "-m", "clobkit.sandbox", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "error" in result.stderr


@pytest.mark.parametrize(
    "config",
    [
        {"users": []},
        {"users": [{"user_id": TRADER, "api_key": "a", "api_secret": "b", "scopes": ["admin"]}]},
        {"users": [{"user_id": TRADER, "api_key": "a", "api_secret": "b", "balance": "-1"}]},
        {
            "users": [
                {"user_id": TRADER, "api_key": "a", "api_secret": "b", "ip_whitelist": ["nowhere"]}
            ]
        },
        {"users": [{"user_id": TRADER, "api_key": "a", "api_secret": "b"}] * 2},
        {"risk": {"weekly": 5}},
        {"rate_limit_per_minute": -1},
        {"colour": "blue"},
        # each of these escaped as TypeError, AttributeError or InvalidOperation (a
        # traceback from clobkit sandbox --config), or hung building fixtures
        {"users": [5]},
        {"users": [{"user_id": TRADER, "api_key": "a", "api_secret": "b", "scopes": None}]},
        {"users": [{"user_id": TRADER, "api_key": "a", "api_secret": "b", "scopes": 5}]},
        {"users": [{"user_id": TRADER, "api_key": "a", "api_secret": "b", "ip_whitelist": 5}]},
        {"users": [{"user_id": TRADER, "api_key": "a", "api_secret": "b", "balance": "1e30"}]},
        {"risk": 5},
        {"forwarded_allow_ips": 5},
        {"seed": "abc"},
        {"seed": None},
        {"seed": 1.5},
        {"skew_seconds": float("nan")},
        {"skew_seconds": float("inf")},
        {"extra_games": 1_000_000_000},
    ],
)
def test_bad_configs_are_refused(config: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        SandboxConfig.from_dict(config)


def test_two_sandboxes_in_one_process_share_nothing() -> None:
    with serve_in_thread() as one, serve_in_thread() as two:
        assert one.base_url != two.base_url
        assert one.ws_url.startswith("ws://127.0.0.1:")
        assert one.ws_url.endswith("/api/ext/v1/ws")
        assert one.clob_url == one.base_url
        m = book_market(one.engine)
        with (
            SignedClient(one.base_url, one.user(TRADER)) as a,
            SignedClient(two.base_url, two.user(TRADER)) as b,
        ):
            a.place({"market_id": m.id, "outcome": "a", "amount": 10})
            assert a.data("GET", "/orders")["total_count"] == 1
            assert b.data("GET", "/orders")["total_count"] == 0
            # a nonce used on one sandbox is fresh on the other
            headers = a.signer.headers("GET", "/api/ext/v1/wallet")
            assert a.http.get("/api/ext/v1/wallet", headers=headers).status_code == 200
            assert b.http.get("/api/ext/v1/wallet", headers=headers).status_code == 200


def test_config_as_dict_dataclass_or_file(tmp_path: Path) -> None:
    data = {"users": [{"user_id": TRADER, "api_key": "k", "api_secret": "s", "balance": 7}]}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    for source in (data, SandboxConfig.from_dict(data), str(path)):
        with serve_in_thread(source) as sb:
            assert [u.api_key for u in sb.users] == ["k"]
            assert sb.engine.balances(TRADER).cash == 7


@pytest.mark.parametrize("text", [b"\xff\xfe{}", b'{"seed": ' + b"9" * 5000 + b"}"])
def test_a_config_file_that_is_no_json_is_refused(tmp_path: Path, text: bytes) -> None:
    # not UTF-8 (UnicodeDecodeError), or an integer past Python's digit limit (ValueError)
    path = tmp_path / "sandbox.json"
    path.write_bytes(text)
    with pytest.raises(ConfigError, match="is not valid JSON"):
        load_config(str(path))
