"""Fixtures of the market-making tests: a real sandbox on loopback, an AsyncClient,
a market with a two-sided book, and a check of the quoter's view against the service."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient

from ..conftest import import_extra

sandbox_module = import_extra("clobkit.sandbox", "sandbox")

MAKER = 1  # index of the default "maker" user


def options(sb: Any, user: Any, **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "base_url": sb.base_url,
        "api_key": user.api_key,
        "api_secret": user.api_secret,
        "clob_url": sb.clob_url,
        "ws_url": sb.ws_url,
        "backoff": 0.005,
        "backoff_cap": 0.05,
        "timeout": 10.0,
    }
    values.update(overrides)
    return values


class Counted:
    """What the sandbox received (``Sandbox.requests``), counted from now: by method and
    path, DELETEs under ``/orders/:id``."""

    def __init__(self, sb: Any) -> None:
        self.requests = sb.requests
        self.requests.reset()

    @property
    def sent(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for (method, path), n in self.requests.sent.items():
            key = (method, "/orders/:id" if method == "DELETE" else path)
            out[key] = out.get(key, 0) + n
        return out

    def count(self, method: str, path: str) -> int:
        return self.sent.get((method, path), 0)


def pick_market(sb: Any) -> str:
    """A market whose outcome-a token has a two-sided house book (read from the engine)."""
    for market_id, state in sb.engine.markets.items():
        book = sb.engine.orderbook(state.fx.token_id_a)
        if state.active and book is not None and book.bids and book.asks:
            return str(market_id)
    raise AssertionError("no market with a two-sided book")


#: The exchange versions every market-making test runs on: V1 precomputes order ids,
#: V2 and V3 sign the service's timestamp (ids known only from the service).
VERSIONS = [pytest.param(v, id=f"V{v}") for v in (1, 2, 3)]


def config(version: int, **extra: Any) -> dict[str, Any]:
    """A sandbox configuration of the tests: no rate limit, no risk limits."""
    return {"rate_limit_per_minute": None, "risk": None, "exchange_version": version, **extra}


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def sb(version: int) -> Iterator[Any]:
    """A fresh sandbox per test and exchange version (faults off; tests switch them on)."""
    with sandbox_module.serve_in_thread(config(version)) as sandbox:
        yield sandbox


@pytest.fixture
def user(sb: Any) -> Any:
    return sb.users[MAKER]


@pytest.fixture
def market_id(sb: Any) -> str:
    return pick_market(sb)


@pytest.fixture
async def client(sb: Any, user: Any) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(**options(sb, user)) as c:
        yield c


def service_view(sb: Any, user: Any, market_id: str, outcome: str = "a") -> list[tuple[Any, ...]]:
    """The user's open orders on the market and outcome, as the engine has them."""
    records = sb.engine.list_orders(user.user_id, page_size=10_000).items
    rows = [
        (
            r.id,
            r.clob_order_id,
            r.side,
            r.clob_price,
            r.original_size - r.size_matched,
        )
        for r in records
        if r.market_id == market_id
        and r.outcome == outcome
        and r.status in ("pending", "signing", "submitted", "live")
    ]
    return sorted(rows)


def quoter_view(q: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (o.id, o.clob_order_id, o.side, o.limit_price, o.original_size - o.size_matched)
        for o in q.open_orders
    )


def held(sb: Any, user: Any, q: Any) -> Decimal:
    return Decimal(sb.engine.shares(user.user_id, q.token_id)[0])


async def eventually(check: Any, timeout: float = 5.0, show: Any = None) -> None:
    """Wait until ``check()`` is true (stream messages are processed meanwhile); past
    ``timeout`` (s), fail with what ``show()`` says of the state, when given."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            said = "" if show is None else f": {show()}"
            assert check(), f"the condition did not become true in {timeout:g} s{said}"
        await asyncio.sleep(0.01)


def assert_same(sb: Any, user: Any, q: Any) -> None:
    """The quoter's view equals the service's: orders, position; and money is conserved."""
    assert quoter_view(q) == service_view(sb, user, q.market_id, q.outcome)
    assert q.position == held(sb, user, q)
    assert sb.engine.check_invariants() == []
