"""Fixtures of the record / replay / backtest tests: real sandboxes on loopback, real files."""

from __future__ import annotations

import asyncio
import importlib.util
import random
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from clobkit import AsyncClient

from ..conftest import import_extra

if TYPE_CHECKING:
    from clobkit.sandbox import Sandbox

import_extra("pyarrow", "data")
sandbox_module = import_extra("clobkit.sandbox", "sandbox")

from clobkit.record import GAP, Recorder, iter_rows, resolve_markets  # noqa: E402

VERSIONS = (1, 2, 3)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def config(version: int = 1) -> dict[str, Any]:
    """No limits, and the house's prices still: the tests move them (``move_prices``)
    and compare what was recorded with what they moved."""
    return {
        "exchange_version": version,
        "rate_limit_per_minute": None,
        "risk": {"per_minute": None, "daily": None, "monthly": None},
        "walk": None,
    }


def moving_market(sb: Sandbox) -> str:
    """A market with the house's liquidity (its book moves with set_price)."""
    return moving_markets(sb, 1)[0]


def moving_markets(sb: Sandbox, n: int) -> list[str]:
    """``n`` markets with the house's liquidity, in id order."""
    found = sorted(m.id for m in sb.engine.markets.values() if m.mid is not None and m.active)
    assert len(found) >= n
    return found[:n]


def client(sb: Any, user: int = 2, **options: Any) -> AsyncClient:
    """A client of ``sb``'s user ``user``; ``options`` go to ``AsyncClient``."""
    u = sb.users[user]
    return AsyncClient(
        sb.base_url, u.api_key, u.api_secret, clob_url=sb.clob_url, ws_url=sb.ws_url, **options
    )


async def record_while(
    sb: Any,
    directory: Path,
    market_ids: list[str],
    during: Callable[[], Awaitable[None]],
    **options: Any,
) -> Recorder:
    """Record ``market_ids`` of ``sb`` while ``during()`` runs, then cancel the recorder."""
    async with client(sb) as c:
        markets = await resolve_markets(c, market_ids=market_ids)
        recorder = Recorder(c, directory, markets, **options)
        task = asyncio.create_task(recorder.run())
        for _ in range(400):  # markets.json is written once subscribed and snapshot read
            if (directory / "markets.json").exists() or task.done():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # the first file (the snapshot) written
        await during()
        await settled(recorder)  # the last messages arrive
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return recorder


async def settled(recorder: Recorder, still: float = 0.3, limit: float = 30.0) -> None:
    """Wait until the recorder's stream has read and the recorder taken nothing new for
    ``still`` seconds (longer on a busy machine, where messages come late)."""
    deadline = time.monotonic() + limit
    seen = None
    while time.monotonic() < deadline:
        now = (sum(s.frames for s in recorder.streams), recorder.stats.updates)
        if now == seen:
            return
        seen = now
        await asyncio.sleep(still)


async def move_prices(sb: Any, market_id: str, n: int = 25, seed: int = 1) -> None:
    rng = random.Random(seed)
    for _ in range(n):
        await asyncio.to_thread(sb.set_price, market_id, str(rng.randint(25, 75) / 100))
        await asyncio.sleep(0.02)


def books(directory: Path, token: str | None = None) -> list[tuple[Any, Any]]:
    """The recorded sequence of books (consecutive equal ones once), level by level."""
    out: list[tuple[Any, Any]] = []
    for r in iter_rows(directory):
        if r.kind == GAP or (token is not None and r.token_id != token):
            continue
        book = (tuple(r.bids), tuple(r.asks))
        if not out or out[-1] != book:
            out.append(book)
    return out


def example(name: str) -> ModuleType:
    """examples/NAME.py loaded as the module NAME, registered in sys.modules as an import
    would (a dataclass of it looks its module up there: unregistered, backtest_report
    loaded only if backtest.py had imported it first in the same process)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
