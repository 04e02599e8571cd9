"""What docs/logging.md says about clobkit's logs, checked against a sandbox on loopback."""

from __future__ import annotations

import logging
import re

import pytest

from clobkit import Client

from .conftest import import_extra

sandbox = import_extra("clobkit.sandbox", "sandbox")


def test_the_client_logs_each_request_at_debug_and_the_sandbox_no_access_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with sandbox.serve_in_thread() as sb:
        user = sb.users[0]
        with (
            Client(sb.base_url, user.api_key, user.api_secret) as client,
            caplog.at_level(logging.DEBUG),  # every logger, uvicorn's included
        ):
            client.get_wallet()
            client.list_events(league="nba", limit=1)
    lines = [r.getMessage() for r in caplog.records if r.name == "clobkit.client"]
    assert any(re.fullmatch(r"GET /api/ext/v1/wallet -> 200 in [\d.]+ ms", m) for m in lines)
    assert any(m.startswith("GET /api/ext/v1/events?league=nba&limit=1") for m in lines)
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "clobkit.client")
    assert not [r for r in caplog.records if r.name.startswith("uvicorn.access")]
    assert not [r for r in caplog.records if user.api_secret in r.getMessage()]


def test_no_request_line_below_debug(caplog: pytest.LogCaptureFixture) -> None:
    """At INFO (docs/logging.md: quiet in production) a successful request logs nothing."""
    with sandbox.serve_in_thread() as sb:
        user = sb.users[0]
        with (
            Client(sb.base_url, user.api_key, user.api_secret) as client,
            caplog.at_level(logging.INFO, logger="clobkit"),
        ):
            client.get_wallet()
    assert not [r for r in caplog.records if r.name.startswith("clobkit")]
