"""Fixtures of the sandbox tests: running sandboxes on loopback, signed clients, a fake clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clobkit.sandbox import Engine, Sandbox, SandboxConfig, serve_in_thread
from clobkit.sandbox.engine import MarketState

from .signed import SignedClient

TRADER = "00000000-0000-4000-8000-000000000001"
MAKER = "00000000-0000-4000-8000-000000000002"
READER = "00000000-0000-4000-8000-000000000003"


class Clock:
    """A settable clock for engine tests (seconds since the epoch)."""

    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def engine(clock: Clock) -> Engine:
    return Engine(None, clock=clock)


def make_engine(config: Any = None, clock: Clock | None = None) -> Engine:
    return Engine(config, clock=clock or Clock())


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    """A default sandbox shared by a test module (tests must not depend on its order state),
    its prices still: reads compared across calls would differ by the walk's steps."""
    with serve_in_thread({"walk": None}) as sandbox:
        yield sandbox


@pytest.fixture
def fresh() -> Iterator[Callable[..., Sandbox]]:
    """Start sandboxes with a given config; all are stopped at the end of the test."""
    started: list[Sandbox] = []

    def start(config: Any = None, **kw: Any) -> Sandbox:
        sandbox = Sandbox(config, **kw).start()
        started.append(sandbox)
        return sandbox

    yield start
    for sandbox in started:
        sandbox.stop()


@pytest.fixture
def client(sb: Sandbox) -> Iterator[SignedClient]:
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        yield c


def book_market(engine: Engine, *, neg_risk: bool | None = None, skip: int = 0) -> MarketState:
    """An active market with house liquidity (and min_order_size 1)."""
    found = [
        m
        for m in engine.markets.values()
        if m.active
        and m.mid is not None
        and m.fx.min_order_size_units == 1_000_000
        and (neg_risk is None or m.fx.neg_risk == neg_risk)
    ]
    return found[skip]


def bookless_market(engine: Engine) -> MarketState:
    """An active market without any book."""
    return next(m for m in engine.markets.values() if m.active and not m.fx.house_liquidity)


def resolved_market(engine: Engine) -> MarketState:
    return next(m for m in engine.markets.values() if not m.active)


def config_with(**kw: Any) -> SandboxConfig:
    return SandboxConfig.from_dict(kw)
