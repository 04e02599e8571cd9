"""``clobkit demo``: embedded (in process and as a real process) and read-only remote."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from clobkit.sandbox import Sandbox

from .conftest import READER_KEY, READER_SECRET, TRADER_KEY, TRADER_SECRET, Result, one_line_error

STEPS = [
    "Start the sandbox",
    "Browse upcoming nba events",
    "Read the book of",
    "Compute the amounts: BUY",
    "Precompute the clob_order_id offline",
    "Place it: POST /orders/raw (GTC)",
    "The house fills 8 of the 20 shares",
    "Cancel the rest",
    "Positions",
]


def orders_of_trader(sandbox: Sandbox) -> int | None:
    from clobkit import Client

    with Client(sandbox.base_url, TRADER_KEY, TRADER_SECRET) as client:
        return client.list_orders().total_count


def check_embedded(out: str) -> None:
    titles = re.findall(r"^\d+\. (.*)$", out, re.MULTILINE)
    assert len(titles) == len(STEPS), titles
    for title, expected in zip(titles, STEPS, strict=True):
        assert title.startswith(expected), (title, expected)
    precomputed = re.search(r"^   clob_order_id (0x[0-9a-f]{64})$", out, re.MULTILINE)
    server = re.search(r"^   server's clob_order_id (0x[0-9a-f]{64})$", out, re.MULTILINE)
    assert precomputed
    assert server
    assert precomputed.group(1) == server.group(1)
    assert "equals the precomputed one: yes" in out
    assert "stream: pending -> signing -> submitted -> live" in out
    assert "size_matched 8 of 20" in out
    assert "cancelled; 12 unfilled shares released" in out
    assert re.search(r"8 shares\s+avg 0\.\d\d", out)
    assert "The precomputed clob_order_id matched the server's." in out


def test_demo_in_process(cli: Callable[..., Result]) -> None:
    started = time.monotonic()
    result = cli("demo")
    assert result.code == 0, result.err
    assert result.err == ""
    check_embedded(result.out)
    assert time.monotonic() - started < 10


def test_demo_as_a_real_process(proc: Callable[..., Result]) -> None:
    result = proc("demo")
    assert result.code == 0, result.err
    check_embedded(result.out)


def test_demo_other_league(cli: Callable[..., Result]) -> None:
    result = cli("demo", "--league", "lol")
    assert result.code == 0, result.err
    assert "Browse upcoming lol events" in result.out
    assert "equals the precomputed one: yes" in result.out


def test_demo_read_only_against_a_service(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox
) -> None:
    before = orders_of_trader(sandbox)
    result = cli("demo")
    assert result.code == 0, result.err
    out = result.out
    assert f"the read-only part against {env['CLOBKIT_BASE_URL']}" in out
    assert "Precompute the clob_order_id offline" in out
    assert "Place it" not in out
    assert "read-only: no order was placed" in out
    assert re.search(r"clob_order_id 0x[0-9a-f]{64}", out)
    assert orders_of_trader(sandbox) == before


def test_demo_flags_select_the_service(cli: Callable[..., Result], sandbox: Sandbox) -> None:
    result = cli(
        "demo", "--league", "nowhere", "--base-url", sandbox.base_url,
        "--api-key", READER_KEY, "--api-secret", READER_SECRET, "--clob-url", sandbox.clob_url,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "no nowhere events here; browsing every league" in result.out


def test_demo_remote_needs_credentials(cli: Callable[..., Result], sandbox: Sandbox) -> None:
    result = cli("demo", "--base-url", sandbox.base_url)
    assert result.code == 2
    assert "CLOBKIT_API_KEY" in one_line_error(result.err)


def test_demo_remote_bad_secret_is_one_line(cli: Callable[..., Result], sandbox: Sandbox) -> None:
    result = cli(
        "demo", "--base-url", sandbox.base_url, "--api-key", TRADER_KEY, "--api-secret", "nope"
    )
    assert result.code == 1
    assert "401" in one_line_error(result.err)
    assert TRADER_SECRET not in result.out + result.err


def test_demo_without_the_sandbox_extra_says_so(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "uvicorn", None)
    for name in [n for n in sys.modules if n.startswith("clobkit.sandbox")]:
        monkeypatch.delitem(sys.modules, name)
    import clobkit

    monkeypatch.delattr(clobkit, "sandbox", raising=False)
    result = cli("demo")
    assert result.code == 1
    from clobkit.core.extras import install_hint

    assert install_hint("sandbox") in one_line_error(result.err)
    assert "'starlette>=0.40'" in install_hint("sandbox")  # its packages, by name
