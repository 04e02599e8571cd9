"""``clobkit cancel-all`` against a sandbox on loopback, and ``clobkit sentinel``'s
refusals of what it cannot start with (the sentinel running is tests/sentinel's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clobkit.sandbox import Sandbox

from .conftest import Result

TRADER = "00000000-0000-4000-8000-000000000001"
OPEN = ("pending", "signing", "submitted", "live")


def markets(sb: Sandbox, n: int) -> list[str]:
    found = [str(m) for m, s in sb.engine.markets.items() if s.active and s.mid is not None]
    return found[:n]


def place(sb: Sandbox, market_id: str, n: int) -> list[str]:
    body = {
        "market_id": market_id,
        "side": "BUY",
        "order_type": "GTC",
        "token_option": "yes",
        "limit_price": 0.02,
        "amount": 5,
    }
    return [sb.engine.place_order(TRADER, body).order_id for _ in range(n)]


def resting(sb: Sandbox, market_id: str | None = None) -> list[str]:
    rows = sb.engine.list_orders(TRADER, page_size=100_000).items
    return [
        r.id for r in rows if r.status in OPEN and (market_id is None or r.market_id == market_id)
    ]


@pytest.fixture(autouse=True)
def nothing_resting(sandbox: Sandbox) -> None:
    for order_id in resting(sandbox):
        sandbox.engine.cancel_order(TRADER, order_id)
    sandbox.faults.configure(None)


def test_cancel_all_cancels_and_prints_the_counts(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox
) -> None:
    place(sandbox, markets(sandbox, 1)[0], 3)
    result = cli("cancel-all")
    assert result.code == 0, result.err
    assert result.out.startswith("cancelled 3, already gone 0, still resting 0 (")
    assert resting(sandbox) == []


def test_dry_run_lists_and_cancels_nothing(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox
) -> None:
    first, second = markets(sandbox, 2)
    ids = place(sandbox, first, 2) + place(sandbox, second, 1)
    result = cli("cancel-all", "--dry-run", "--market", first)
    assert result.code == 0, result.err
    lines = result.out.strip().splitlines()
    assert lines[-1] == "would cancel 2 open orders"
    assert sorted(line.split()[0] for line in lines[:-1]) == sorted(ids[:2])
    assert sorted(resting(sandbox)) == sorted(ids)


def test_one_market_only(cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox) -> None:
    first, second = markets(sandbox, 2)
    place(sandbox, first, 2)
    kept = place(sandbox, second, 1)
    result = cli("cancel-all", "--market", first)
    assert result.code == 0, result.err
    assert result.out.startswith("cancelled 2,")
    assert resting(sandbox) == kept


def test_exits_non_zero_when_something_still_rests(
    cli: Callable[..., Result], env: dict[str, str], sandbox: Sandbox
) -> None:
    ids = place(sandbox, markets(sandbox, 1)[0], 2)
    sandbox.faults.configure({"routes": {"DELETE /orders/{id}": {"error_rate": 1.0}}})
    result = cli("cancel-all", "--timeout", "0.3")
    assert result.code == 1
    assert result.out.startswith("cancelled 0, already gone 0, still resting 2 (")
    assert "2 orders still rest: " in result.err
    assert all(order_id in result.err for order_id in ids)
    assert result.err.count("\n") == 1  # one line, no traceback


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("cancel-all", "--timeout", "0"), "--timeout"),
        (("cancel-all", "--timeout", "nan"), "--timeout"),
        (("cancel-all", "--dry-run", "--market", " "), "--market"),
    ],
)
def test_cancel_all_refuses_bad_flags(
    cli: Callable[..., Result], env: dict[str, str], argv: Any, words: str
) -> None:
    result = cli(*argv)
    assert result.code == 2
    assert words in result.err


def test_cancel_all_needs_a_connection(cli: Callable[..., Result]) -> None:
    result = cli("cancel-all")
    assert result.code == 2
    assert "CLOBKIT_BASE_URL" in result.err


@pytest.mark.parametrize(
    ("argv", "token", "words"),
    [
        (("sentinel",), None, "CLOBKIT_SENTINEL_TOKEN"),
        (("sentinel",), "short", "16 characters"),
        (("sentinel", "--listen", "8765"), "t" * 32, "HOST:PORT"),
        (("sentinel", "--heartbeat-timeout", "0"), "t" * 32, "--heartbeat-timeout"),
        (("sentinel", "--linger", "-1"), "t" * 32, "--linger"),
        (("sentinel",), "t" * 32, "CLOBKIT_BASE_URL"),
    ],
)
def test_sentinel_refuses_what_it_cannot_start_with(
    cli: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    argv: Any,
    token: str | None,
    words: str,
) -> None:
    monkeypatch.delenv("CLOBKIT_SENTINEL_TOKEN", raising=False)
    if token is not None:
        monkeypatch.setenv("CLOBKIT_SENTINEL_TOKEN", token)
    result = cli(*argv)
    assert result.code == 2
    assert words in result.err
    assert result.err.count("\n") == 1
    if token is not None:
        assert token not in result.err
