"""The house's moving price (walk.py): a seeded random walk within a band, off on request,
and a book that stays two-sided whatever users rest (a level the price moved through
trades with the users resting there, at their prices)."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from clobkit import Client
from clobkit.sandbox import Engine, SandboxConfig, WalkConfig, serve_in_thread
from clobkit.sandbox.config import ConfigError

from .conftest import TRADER, Clock, book_market

D = Decimal
EVERY_STEP = {"every_seconds": 1.0, "chance": 1.0, "band_cents": 3}


def walked(config: Any, steps: int) -> list[dict[str, Decimal]]:
    engine = Engine(config, clock=Clock())
    return [engine.walk() for _ in range(steps)]


def test_the_walk_is_on_by_default_and_seeded() -> None:
    assert SandboxConfig().walk == WalkConfig()
    one = walked(None, 20)
    assert one == walked(None, 20)  # the same seed: the same prices, step by step
    assert one != walked({"seed": 1}, 20)
    assert one != walked({"walk": {"seed": 5}}, 20)
    assert sum(len(step) for step in one) > 0
    assert all(m.walk() == {} for m in [Engine({"walk": None}, clock=Clock())])


def test_the_walk_keeps_each_price_within_its_band_and_the_grid() -> None:
    engine = Engine({"walk": EVERY_STEP}, clock=Clock())
    opened = {m.id: m.fx.price_a_cents for m in engine.markets.values() if m.mid is not None}
    seen: dict[str, set[int]] = {market_id: set() for market_id in opened}
    jumps = 0
    for _ in range(200):
        before = {m.id: m.mid for m in engine.markets.values()}
        for market_id, mid in engine.walk().items():
            cents = int(mid * 100)
            jumps += abs(cents - (before[market_id] or 0)) > 1
            seen[market_id].add(cents)
            assert abs(cents - opened[market_id]) <= 3
            assert 2 <= cents <= 98
    assert all(len(prices) > 1 for market_id, prices in seen.items() if 5 < opened[market_id] < 95)
    assert jumps > 0  # news: 2 to 4 cents at once, through a quote before it can move
    assert engine.check_invariants() == []
    for market in engine.markets.values():  # every walking book two-sided around its mid
        if market.mid is not None:
            assert market.best_bid() == market.mid - 1
            assert market.best_ask() == market.mid + 1


@pytest.mark.parametrize(
    ("walk", "problem"),
    [
        ({"every_seconds": 0}, "walk.every_seconds"),
        ({"every_seconds": float("nan")}, "walk.every_seconds"),
        ({"chance": 1.5}, "walk.chance"),
        ({"chance": True}, "walk.chance"),
        ({"jump_chance": -0.1}, "walk.jump_chance"),
        ({"band_cents": 50}, "walk.band_cents"),
        ({"band_cents": 2.0}, "walk.band_cents"),
        ({"seed": "7"}, "walk.seed"),
        ({"steps": 3}, "unknown walk keys: ['steps']"),
        ([1], "walk must be an object or null"),
    ],
)
def test_a_bad_walk_is_refused_by_name(walk: Any, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        SandboxConfig.from_dict({"walk": walk})


def test_a_price_moving_through_a_users_bid_fills_it_and_the_book_stays_two_sided() -> None:
    engine = Engine({"walk": None}, clock=Clock())
    market = book_market(engine)
    mid = market.mid
    assert mid is not None
    price = D(mid - 2) / 100
    placed = engine.place_order(
        TRADER,
        {
            "market_id": market.id,
            "token_option": "yes",
            "side": "BUY",
            "order_type": "GTC",
            "amount": 10,
            "limit_price": str(price),
        },
    )
    assert engine.order(placed.order_id).status == "live"
    engine.set_price(market.id, D(mid - 5) / 100)  # the house's asks now start at mid - 4
    filled = engine.order(placed.order_id)
    assert filled.status == "matched"  # the market moved through the bid: taken in full
    assert filled.avg_fill_price == price  # at the bid's own price
    book = engine.orderbook(market.fx.token_id_a)
    assert book is not None
    assert D(book.bids[0].price) == D(mid - 6) / 100
    assert D(book.asks[0].price) == D(mid - 4) / 100  # the ask side is whole
    assert len(book.asks) == 5
    assert engine.check_invariants() == []


def test_a_serving_sandboxs_book_moves_by_itself() -> None:
    """A client that only reads sees the house's price move (every 50 ms here)."""
    walk = {"every_seconds": 0.05, "chance": 1.0}
    with serve_in_thread({"walk": walk}) as sb:
        trader = sb.users[0]
        with Client(sb.base_url, trader.api_key, trader.api_secret) as client:
            market = book_market(sb.engine)
            token = market.fx.token_id_a
            first = client.get_orderbook(token).best_bid
            deadline = time.monotonic() + 30
            while client.get_orderbook(token).best_bid == first:
                assert time.monotonic() < deadline, "the book never moved"
                time.sleep(0.05)
        assert sb.engine.check_invariants() == []
