"""Amounts: both twins against the Decimal oracle of the rounding rules."""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clobkit import Amounts
from clobkit.errors import (
    AmountError,
    InsufficientLiquidity,
    OrderFieldError,
)

from .oracle import ROUND, decimal_limit_amounts, decimal_market_amounts

TICKS = list(ROUND)


def _grid(tick: str) -> list[str]:
    d = ROUND[tick][0]
    return [str(Decimal(i).scaleb(-d)) for i in range(1, 10**d)]


SIZES = [str(Decimal(i).scaleb(-2)) for i in range(1, 1001)]  # 0.01 .. 10.00: every cent ten times
# (the benchmark's amounts grid, clobkit bench, goes to 30.00 against the peer)


def outcome(amounts: Callable[..., Any], *args: object) -> object:
    """The amounts, or "refused" (the oracle's ValueError, the core's AmountError)."""
    try:
        return tuple(amounts(*args))
    except ValueError as exc:  # AmountError is a ValueError
        return "refused" if "more than 2 decimals" in str(exc) else exc


@pytest.mark.slow
@pytest.mark.parametrize("side", ["BUY", "SELL"])
def test_whole_tick_001_grid_limit_and_market(core: ModuleType, side: str) -> None:
    """Every price 0.01..0.99 x every size 0.01..10.00, limit and market, against Decimal."""
    bad = []
    for price in _grid("0.01"):
        for size in SIZES:
            got = core.limit_amounts(side, price, size)
            if got != decimal_limit_amounts(side, price, size):
                bad.append(("limit", price, size, got))
            got = core.market_amounts(side, price, size)
            if got != decimal_market_amounts(side, price, size):
                bad.append(("market", price, size, got))
    assert bad == []


@pytest.mark.slow
@pytest.mark.parametrize("tick", ["0.1", "0.001", "0.0001"])
def test_sampled_grids_of_other_ticks(core: ModuleType, tick: str) -> None:
    rng = random.Random(f"grid-{tick}")
    prices = _grid(tick)
    bad = []
    for _ in range(20_000):
        side = rng.choice(["BUY", "SELL"])
        price = rng.choice(prices)
        size = str(Decimal(rng.randrange(1, 10**7)).scaleb(-rng.choice([0, 1, 2, 3, 4])))
        if outcome(core.limit_amounts, side, price, size, tick) != outcome(
            decimal_limit_amounts, side, price, size, tick
        ):
            bad.append(("limit", side, price, size))
        if outcome(core.market_amounts, side, price, size, tick) != outcome(
            decimal_market_amounts, side, price, size, tick
        ):
            bad.append(("market", side, price, size))
    assert bad == []


@given(
    side=st.sampled_from(["BUY", "SELL"]),
    tick=st.sampled_from(TICKS),
    ticks=st.integers(1, 9999),
    size=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("1e12"), places=6),
)
def test_hypothesis_against_decimal(
    core: ModuleType, side: str, tick: str, ticks: int, size: Decimal
) -> None:
    d = ROUND[tick][0]
    ticks = ticks % (10**d - 1) + 1
    price = str(Decimal(ticks).scaleb(-d))
    for kind in (str, Decimal, float):
        arg = kind(size) if kind is not float else float(str(size))
        if kind is float and Decimal(repr(arg)) != size:
            continue  # a float that does not read back as the same decimal is another input
        assert outcome(core.limit_amounts, side, price, arg, tick) == outcome(
            decimal_limit_amounts, side, price, str(size), tick
        )
        assert outcome(core.market_amounts, side, price, arg, tick) == outcome(
            decimal_market_amounts, side, price, str(size), tick
        )


@pytest.mark.parametrize("size", ["0.29", "0.57", "1.13", "2.01", "16.90"])
def test_float_cent_regression(core: ModuleType, size: str) -> None:
    """py-clob-client floors these sizes a cent low (0.29 * 100 = 28.99...): clobkit keeps them."""
    cents = int(Decimal(size) * 100)
    for price in ("0.01", "0.37", "0.5", "0.99"):
        for value in (float(size), size, Decimal(size)):
            buy = core.limit_amounts("BUY", price, value)
            assert buy.taker_amount == cents * 10_000
            assert buy.maker_amount == cents * int(Decimal(price) * 100) * 100
            sell = core.limit_amounts("SELL", float(price), value)
            assert sell.maker_amount == cents * 10_000


def test_py_clob_client_really_loses_those_cents() -> None:
    """The regression above is real: the float peer floors 0.29 to 0.28."""
    builder = pytest.importorskip("py_clob_client.order_builder.builder")
    b = builder.OrderBuilder.__new__(builder.OrderBuilder)
    _, _maker, taker = b.get_order_amounts("BUY", 0.29, 0.5, builder.ROUNDING_CONFIG["0.01"])
    assert taker == 280_000  # one cent of size lost


def test_examples(core: ModuleType) -> None:
    assert core.limit_amounts("BUY", "0.55", "16.9") == Amounts(9_295_000, 16_900_000)
    assert core.limit_amounts(1, 0.55, 16.9) == Amounts(16_900_000, 9_295_000)
    assert core.limit_amounts("BUY", "0.555", "3", "0.001") == Amounts(1_665_000, 3_000_000)
    assert core.market_amounts("BUY", "0.3", "10") == Amounts(10_000_000, 33_333_300)
    assert core.market_amounts("SELL", "0.3", "10") == Amounts(10_000_000, 3_000_000)
    assert core.market_amounts("BUY", "0.0007", "1", "0.0001") == Amounts(1_000_000, 1_428_571_428)
    assert core.limit_amounts("BUY", "0.5", "1.010000") == Amounts(505_000, 1_010_000)
    assert isinstance(core.limit_amounts("BUY", "0.5", "1"), Amounts)


@pytest.mark.parametrize("size", ["40.555", 40.555, Decimal("40.555"), "1.019999", "0.001"])
def test_a_size_or_amount_with_more_than_2_decimals_is_refused(
    core: ModuleType, size: object
) -> None:
    """As an off-grid price is: flooring 40.555 to 40.55 would trade less than asked."""
    for fn, field in ((core.limit_amounts, "size"), (core.market_amounts, "amount")):
        for side in ("BUY", "SELL"):
            with pytest.raises(AmountError, match="has more than 2 decimals") as info:
                fn(side, "0.5", size)
            assert info.value.field == field
            assert info.value.value == size
    with pytest.raises(AmountError, match=r"rounded down it is 40\.55"):
        core.limit_amounts("BUY", "0.5", "40.555")


def test_round_price(core: ModuleType) -> None:
    assert core.limit_amounts("BUY", "0.555", "1", round_price=True) == core.limit_amounts(
        "BUY", "0.56", "1"
    )
    assert core.limit_amounts("BUY", "0.545", "1", round_price=True) == core.limit_amounts(
        "BUY", "0.54", "1"
    )
    assert core.limit_amounts("BUY", 0.125, "1", round_price=True) == core.limit_amounts(
        "BUY", "0.12", "1"
    )
    with pytest.raises(AmountError, match="price"):
        core.limit_amounts("BUY", "0.004", "1", round_price=True)  # rounds to 0, off the range
    with pytest.raises(AmountError, match="price"):
        core.limit_amounts("BUY", "0.996", "1", round_price=True)  # rounds to 1.00


def test_huge_values_are_exact(core: ModuleType) -> None:
    big = "1" + "0" * 60
    got = core.limit_amounts("SELL", "0.5", big)
    assert got == Amounts(10**66, 10**66 // 2)
    with pytest.raises(AmountError, match="size"):
        core.limit_amounts("SELL", "0.5", "1" + "0" * 75)  # units past uint256


BAD_PRICES = [
    "0.555",
    "0",
    "1",
    "0.00",
    "1.00",
    "-0.5",
    "abc",
    "",
    " 0.5",
    "0.5 ",
    "1_0",
    "NaN",
    "inf",
    float("nan"),
    float("inf"),
    None,
    True,
    False,
    [0.5],
    Decimal("NaN"),
    Decimal("-0.5"),
    0.001,
    "0x1",
    "٠.٥",
]


@pytest.mark.parametrize("price", BAD_PRICES, ids=repr)
def test_bad_price(core: ModuleType, price: object) -> None:
    with pytest.raises(AmountError) as info:
        core.limit_amounts("BUY", price, "1")
    assert info.value.field == "price"
    assert "price" in str(info.value)


BAD_SIZES = [
    "0",
    "0.00",
    "-1",
    "0.001",
    "0.009",
    -5,
    0,
    0.0,
    "abc",
    None,
    True,
    float("nan"),
    float("-inf"),
    Decimal("sNaN"),
    "1e400",
    "1" * 200,
]


@pytest.mark.parametrize("size", BAD_SIZES, ids=repr)
def test_bad_size(core: ModuleType, size: object) -> None:
    with pytest.raises(AmountError) as info:
        core.limit_amounts("BUY", "0.5", size)
    assert info.value.field == "size"
    with pytest.raises(AmountError) as info:
        core.market_amounts("SELL", "0.5", size)
    assert info.value.field == "amount"


@pytest.mark.parametrize("tick", ["0.02", "0.05", "1", "0.00001", 0.015, None, "", "0.010"[:3]])
def test_bad_tick(core: ModuleType, tick: object) -> None:
    with pytest.raises(AmountError) as info:
        core.limit_amounts("BUY", "0.5", "1", tick)
    assert info.value.field == "tick_size"


def test_tick_spellings(core: ModuleType) -> None:
    for tick in ("0.01", Decimal("0.01"), 0.01, "0.010", "1e-2"):
        assert core.limit_amounts("BUY", "0.5", "1", tick) == Amounts(500_000, 1_000_000)


@pytest.mark.parametrize("side", ["buy", "Buy", 2, -1, True, None, "B", 0.0])
def test_bad_side(core: ModuleType, side: object) -> None:
    with pytest.raises(OrderFieldError) as info:
        core.limit_amounts(side, "0.5", "1")
    assert info.value.field == "side"


def test_to_units(core: ModuleType) -> None:
    assert core.to_units("12.34") == 12_340_000
    assert core.to_units(Decimal("0.000001")) == 1
    assert core.to_units(0.29) == 290_000
    assert core.to_units(7) == 7_000_000
    assert core.to_units("0") == 0
    assert core.to_units("1.2300000000") == 1_230_000
    assert core.to_units(str(Decimal(f"{2**256 - 1}e-6"))) == 2**256 - 1
    for bad in ("0.0000001", "-1", None, True, float("nan"), "1e-7", str(2**256), "x"):
        with pytest.raises(AmountError) as info:
            core.to_units(bad)
        assert info.value.field == "value"
    with pytest.raises(AmountError, match="maker_amount"):
        core.to_units("0.1234567", "maker_amount")


def test_from_units(core: ModuleType) -> None:
    assert core.from_units(12_340_000) == Decimal("12.34")
    assert str(core.from_units(12_340_000)) == "12.34"
    assert str(core.from_units(1_000_000)) == "1"
    assert str(core.from_units(5)) == "0.000005"
    assert str(core.from_units(0)) == "0"
    assert core.from_units(2**256 - 1) == Decimal(f"{2**256 - 1}e-6")
    assert core.from_units("290000") == Decimal("0.29")
    assert core.from_units(-1) == Decimal("-0.000001")
    for bad in (1.5, None, True, "1.5", "", "abc", Decimal(1)):
        with pytest.raises(AmountError):
            core.from_units(bad)


@given(st.integers(0, 2**256 - 1))
def test_units_round_trip(core: ModuleType, units: int) -> None:
    assert core.to_units(core.from_units(units)) == units
    assert core.to_units(str(core.from_units(units))) == units


ASKS = [
    {"price": "0.52", "size": "100"},
    {"price": "0.50", "size": "10"},
    {"price": "0.55", "size": "1000"},
]
BIDS = [
    {"price": "0.45", "size": "45"},
    {"price": "0.48", "size": "24"},
    {"price": "0.40", "size": "400"},
]


def test_market_price_buy_walks_asks_from_the_best(core: ModuleType) -> None:
    assert core.market_price(ASKS, "BUY", 10) == Decimal("0.50")
    assert core.market_price(ASKS, "BUY", "10.01") == Decimal("0.52")
    assert core.market_price(ASKS, "BUY", 110) == Decimal("0.52")
    assert core.market_price(ASKS, "BUY", 1110) == Decimal("0.55")
    with pytest.raises(InsufficientLiquidity) as info:
        core.market_price(ASKS, "BUY", "1110.01")
    assert info.value.field == "amount"
    assert core.market_price(ASKS, "BUY", 5000, "FAK") == Decimal("0.55")


def test_market_price_sell_counts_shares(core: ModuleType) -> None:
    # 24 USDC at 0.48 is 50 shares; 45 USDC at 0.45 is 100 more
    assert core.market_price(BIDS, "SELL", 50) == Decimal("0.48")
    assert core.market_price(BIDS, "SELL", 51) == Decimal("0.45")
    assert core.market_price(BIDS, "SELL", 150) == Decimal("0.45")
    assert core.market_price(BIDS, "SELL", 151) == Decimal("0.4")
    assert core.market_price([("0.48", "24")], "SELL", 50) == Decimal("0.48")
    with pytest.raises(InsufficientLiquidity):
        core.market_price(BIDS, "SELL", 1151)
    with pytest.raises(InsufficientLiquidity):
        core.market_price([], "SELL", 1, "GTC")


def test_market_price_bad_input(core: ModuleType) -> None:
    with pytest.raises(AmountError, match=r"levels\[1\].price"):
        core.market_price([("0.5", "1"), ("x", "1")], "BUY", 1)
    with pytest.raises(AmountError, match="amount"):
        core.market_price(ASKS, "BUY", 0)
    with pytest.raises(AmountError, match="order_type"):
        core.market_price(ASKS, "BUY", 1, "IOC")


@given(
    st.sampled_from([0, 1]),
    st.integers(-(10**6), 10**13) | st.sampled_from([0, 1, 10**6]),
    st.integers(-(10**6), 10**13) | st.sampled_from([0, 1, 10**6]),
)
def test_the_ratio_rule_has_one_home_against_decimal(side: int, maker: int, taker: int) -> None:
    """``implied`` (which the client's ``check_raw_amounts`` and the sandbox's raw-order
    parser both call) against the rule read with ``Decimal``: the implied price, USDC per
    share, strictly between 0 and 1."""
    from clobkit.amounts import check_raw_amounts, implied

    usdc, shares = (maker, taker) if side == 0 else (taker, maker)
    keeps = usdc > 0 and shares > 0 and 0 < Decimal(usdc) / Decimal(shares) < 1
    assert (implied(side, maker, taker) is not None) == keeps
    if keeps:
        assert implied(side, maker, taker) == (usdc, shares)
    if not keeps:
        with pytest.raises(AmountError):
            check_raw_amounts(side, maker, taker)


LEVELS = [("0.5", "100")]


@pytest.mark.parametrize(
    ("levels", "amount", "field"),
    [
        (LEVELS, "1e-999999999", "amount"),
        ([("0.5", "1e-999999999")], "1", "levels[0].size"),
        ([("1e-999999999", "100")], "1", "levels[0].price"),
        (LEVELS, "1e-81", "amount"),
    ],
)
def test_market_price_refuses_vanishing_values(
    core: ModuleType, levels: Any, amount: str, field: str
) -> None:
    with pytest.raises(AmountError, match="is too small") as info:
        core.market_price(levels, "BUY", amount)
    assert info.value.field == field


def test_market_price_still_takes_small_values(core: ModuleType) -> None:
    assert str(core.market_price(LEVELS, "BUY", "1e-80")) == "0.5"


@pytest.mark.parametrize("value", [np.float64(0.5), np.float64(1) / 2])
def test_a_numpy_float_is_read_as_a_float(core: ModuleType, value: Any) -> None:
    assert core.limit_amounts("BUY", value, 10) == core.limit_amounts("BUY", 0.5, 10)
    assert core.market_price(LEVELS, "BUY", value) == core.market_price(LEVELS, "BUY", 0.5)
