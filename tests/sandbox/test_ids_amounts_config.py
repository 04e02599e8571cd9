"""The sandbox: event ids spelled as the market and order
routes accept them, zero raw amounts under the ratio rule, the config's checks in
``clobkit.core.checks``' words, and the WebSocket topic cap in docs/sandbox.md."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from clobkit.core import checks as _checks
from clobkit.errors import ValidationError
from clobkit.sandbox import Sandbox
from clobkit.sandbox.config import ConfigError, LimitsConfig, SandboxConfig

from .conftest import TRADER, book_market
from .signed import SignedClient
from .test_errors import envelope, raw

DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"


def _spellings(canonical: str) -> list[str]:
    """Other ways of writing one UUID that ``uuid.UUID`` reads as the same."""
    hex32 = uuid.UUID(canonical).hex
    return [canonical.upper(), hex32, hex32.upper(), f"urn:uuid:{canonical}"]


# 1. GET /events/:id reads an id as the market and order routes do


def test_event_routes_read_an_id_written_otherwise(client: SignedClient, sb: Sandbox) -> None:
    event_id = next(iter(sb.engine.events))
    market_id = sb.engine.events[event_id].market_ids[0]
    markets = client.data("GET", f"/events/{event_id}/markets")["markets"]
    for spelling in _spellings(event_id):
        assert client.data("GET", f"/events/{spelling}")["event"]["id"] == event_id, spelling
        assert client.data("GET", f"/events/{spelling}/markets")["markets"] == markets, spelling
    for spelling in _spellings(market_id):  # the routes it now agrees with
        assert client.data("GET", f"/markets/{spelling}")["market"]["id"] == market_id


def test_event_routes_still_read_slugs_and_refuse_strangers(
    client: SignedClient, sb: Sandbox
) -> None:
    event = next(iter(sb.engine.events.values()))
    assert client.data("GET", f"/events/{event.slug}")["event"]["id"] == event.id
    for stranger in (str(uuid.UUID(int=5)), "not-an-event", event.slug.upper()):
        envelope(client.get(f"/events/{stranger}"), 404, "Event not found")
        envelope(client.get(f"/events/{stranger}/markets"), 404, "Event not found")


# 2. A zero raw amount breaks the ratio rule, not the amount rule (section 4.8)


@pytest.mark.parametrize(
    ("side", "maker", "taker"),
    [(0, "0", "10000000"), (0, "5000000", "0"), (1, "0", "5000000"), (1, "10000000", "0")],
)
def test_a_zero_raw_amount_is_refused_by_the_ratio_rule(
    client: SignedClient, sb: Sandbox, side: int, maker: str, taker: str
) -> None:
    m = book_market(sb.engine)
    r = client.post("/orders/raw", raw(m, side=side, maker_amount=maker, taker_amount=taker))
    body = envelope(r, 400, "invalid request body", "ORDER_INVALID_PRICE")
    assert "strictly between 0 and 1" in body["detail"], body
    usdc, shares = (maker, taker) if side == 0 else (taker, maker)
    assert f"got {usdc} / {shares}" in body["detail"], body


def test_zero_amounts_of_both_kinds_are_no_malformed_amounts(
    client: SignedClient, sb: Sandbox
) -> None:
    m = book_market(sb.engine)
    for change in ({"maker_amount": "0"}, {"taker_amount": "0"}, {"maker_amount": "000"}):
        r = client.post("/orders/raw", raw(m, **change))
        envelope(r, 400, "invalid request body", "ORDER_INVALID_PRICE")
    assert sb.engine.balances(TRADER).cash_reserved == 0  # nothing was placed


# 3. The config refuses what clobkit.core.checks refuses, in its words, naming key and value


def _refusal(check: Any, value: object, field: str) -> str:
    """What ``clobkit.core.checks`` says of ``value`` for ``field`` (key and value named)."""
    with pytest.raises(ValidationError) as caught:
        check(value, field)
    return str(caught.value)


def _config_refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        SandboxConfig.from_dict(data)
    return str(caught.value)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10", None])
@pytest.mark.parametrize("key", ["max_body_bytes", "ws_max_topics", "max_connections"])
def test_limit_counts_are_checked_as_clobkit_checks_them(key: str, value: object) -> None:
    said = _config_refusal({"limits": {key: value}})
    assert said == _refusal(_checks.positive_int, value, f"limits.{key}")


HUGE = pytest.param(10**400, id="huge")


@pytest.mark.parametrize("value", [0, -0.5, float("nan"), float("inf"), True, "5", None, HUGE])
@pytest.mark.parametrize("key", ["request_timeout_seconds", "keep_alive_seconds"])
def test_limit_seconds_are_checked_as_clobkit_checks_them(key: str, value: object) -> None:
    said = _config_refusal({"limits": {key: value}})
    assert said == _refusal(_checks.seconds, value, f"limits.{key}")


@pytest.mark.parametrize("key", ["request_timeout_seconds", "keep_alive_seconds"])
def test_limit_seconds_stay_within_a_day(key: str) -> None:
    assert getattr(SandboxConfig.from_dict({"limits": {key: 86_399.5}}).limits, key) == 86_399.5
    for value in (86_400, 1e9):
        with pytest.raises(ConfigError) as caught:
            SandboxConfig.from_dict({"limits": {key: value}})
        assert str(caught.value) == f"limits.{key}: must be under 86,400 seconds (got {value!r})"


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), True, "30", None])
def test_skew_seconds_is_checked_as_clobkit_checks_seconds(value: object) -> None:
    said = _config_refusal({"skew_seconds": value})
    assert said == _refusal(_checks.seconds, value, "skew_seconds")
    assert SandboxConfig.from_dict({"skew_seconds": 0.25}).skew_seconds == 0.25


# 4. docs/sandbox.md's WebSocket section states the topic cap


def test_the_websocket_section_states_the_topic_cap() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n### WebSocket\n", 1)[1]
    section = re.split(r"\n#{1,3} ", section, maxsplit=1)[0]
    said = " ".join(section.split())
    assert "`limits.ws_max_topics`" in said
    default = f"{LimitsConfig.ws_max_topics:,}"
    sentence = next(s for s in said.split(". ") if "ws_max_topics" in s)
    assert f"default {default}" in sentence, sentence
    for words in ("one message", "one connection", "`error`", "naming it"):
        assert words in sentence, sentence


def test_a_config_error_is_a_clobkit_error() -> None:
    from clobkit.errors import ClobkitError
    from clobkit.sandbox.config import ConfigError

    assert issubclass(ConfigError, ClobkitError)
    assert issubclass(ConfigError, ValueError)
