"""Sandboxes whose maker's wallet names a given signer (the KMS key's or a local
key's address): the raw-order flow and the market maker signing through it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..conftest import import_extra
from ..mm.conftest import eventually as eventually  # waits on a condition, then fails
from ..mm.conftest import pick_market as pick_market  # a market with a two-sided book

RAW = ("POST", "/api/ext/v1/orders/raw")


@contextmanager
def sandbox_for(signer_address: str, version: int, **extra: Any) -> Iterator[Any]:
    """A sandbox of exchange ``version`` whose ``maker`` user's wallet signer is
    ``signer_address``; no rate or risk limits (the tests place many orders)."""
    sandbox = import_extra("clobkit.sandbox", "sandbox")
    from clobkit.sandbox.config import DEFAULT_USERS

    users = [dataclasses.replace(u, signer=signer_address) for u in DEFAULT_USERS]
    config = {"users": users, "rate_limit_per_minute": None, "risk": None}
    with sandbox.serve_in_thread({**config, "exchange_version": version, **extra}) as sb:
        yield sb


def options(sb: Any, **overrides: Any) -> dict[str, Any]:
    maker = sb.users[1]
    return {
        "base_url": sb.base_url,
        "api_key": maker.api_key,
        "api_secret": maker.api_secret,
        "clob_url": sb.clob_url,
        "ws_url": sb.ws_url,
        "backoff": 0.005,
        "backoff_cap": 0.05,
        **overrides,
    }
