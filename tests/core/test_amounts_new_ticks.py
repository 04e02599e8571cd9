"""Tick sizes 0.005 and 0.0025 (the exchange's since 2026-07-01), both twins.

py-clob-client-v2's ROUNDING_CONFIG rounds them like 0.001 and 0.0001 (price
3 or 4 decimals, size 2, amount 5 or 6); only the grid is coarser. The Decimal
oracle of those decimals is held against every price of the grid.
"""

from __future__ import annotations

from decimal import Decimal
from types import ModuleType

import pytest

from clobkit.errors import AmountError

from .oracle import decimal_limit_amounts, decimal_market_amounts

# new tick -> (grid step as a Decimal, the tick whose rounding it shares)
NEW = {"0.005": (Decimal("0.005"), "0.001"), "0.0025": (Decimal("0.0025"), "0.0001")}
SIZES = ["0.01", "0.29", "1", "7.77", "16.90", "250.05"]


def _grid(tick: str) -> list[str]:
    step = NEW[tick][0]
    return [str(step * k) for k in range(1, int(1 / step))]


@pytest.mark.parametrize("tick", list(NEW))
@pytest.mark.parametrize("side", ["BUY", "SELL"])
def test_every_grid_price_against_decimal(core: ModuleType, tick: str, side: str) -> None:
    same = NEW[tick][1]
    bad = []
    for price in _grid(tick):
        for size in SIZES:
            got = core.limit_amounts(side, price, size, tick)
            if got != decimal_limit_amounts(side, price, size, same):
                bad.append(("limit", price, size, got))
            got = core.market_amounts(side, price, size, tick)
            if got != decimal_market_amounts(side, price, size, same):
                bad.append(("market", price, size, got))
    assert bad == []


@pytest.mark.parametrize(
    ("tick", "price"),
    [("0.005", "0.551"), ("0.005", "0.001"), ("0.0025", "0.001"), ("0.0025", "0.5001")],
)
def test_off_grid_prices_are_refused(core: ModuleType, tick: str, price: str) -> None:
    with pytest.raises(AmountError, match=f"not on the tick grid {tick}"):
        core.limit_amounts("BUY", price, 10, tick)


@pytest.mark.parametrize(
    ("tick", "price", "rounded"),
    [
        ("0.005", "0.5525", "0.55"),  # exactly half a step: to the even step (110)
        ("0.005", "0.5575", "0.56"),  # half a step: 111.5 -> 112
        ("0.005", "0.5526", "0.555"),
        ("0.0025", "0.50125", "0.5"),  # half: 200.5 -> 200
        ("0.0025", "0.50375", "0.505"),  # half: 201.5 -> 202
    ],
)
def test_round_price_is_half_even_on_the_grid(
    core: ModuleType, tick: str, price: str, rounded: str
) -> None:
    got = core.limit_amounts("BUY", price, 10, tick, round_price=True)
    assert got == core.limit_amounts("BUY", rounded, 10, tick)


@pytest.mark.parametrize(
    ("tick", "low", "high"), [("0.005", "0.005", "0.995"), ("0.0025", "0.0025", "0.9975")]
)
def test_range_is_one_tick_to_one_minus_a_tick(
    core: ModuleType, tick: str, low: str, high: str
) -> None:
    core.limit_amounts("BUY", low, 10, tick)
    core.limit_amounts("BUY", high, 10, tick)
    for price in ("0", "1", str(Decimal(high) + Decimal(tick))):
        with pytest.raises(AmountError, match=rf"must lie in \[{low}, {high}\]"):
            core.limit_amounts("BUY", price, 10, tick, round_price=True)


def _outcome(twin: ModuleType, price: str, tick: str) -> str:
    try:
        return str(twin.limit_amounts("SELL", price, "3.3", tick, round_price=True))
    except AmountError as exc:
        return str(exc)


def test_twins_agree_on_the_new_ticks(both: tuple[ModuleType, ...]) -> None:
    for tick in NEW:
        for price in [*_grid(tick)[::7], "0.5526", "0.0001", "0.9999", "1e-999999999"]:
            results = {_outcome(twin, price, tick) for twin in both}
            assert len(results) == 1, (tick, price, results)
