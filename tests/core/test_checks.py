"""``clobkit.core.checks.bounded``: the one reader of a number a user or a file gives within
a range (a replay's times, speed and steps; a recording's prices, sizes and times).
Out of range, off its decimals or no number at all is a one-line ``ValidationError``
naming the field, before anything is computed from the value (issue #42)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.core.checks import MAX_NUMBER_TEXT, bounded, bounded_int
from clobkit.errors import ValidationError

from ..conftest import examples

CENT = (Decimal("0.01"), Decimal("0.99"))


@pytest.mark.parametrize(
    ("text", "cents"),
    [("0.47", 47), ("0.470", 47), (".47", 47), ("4.7e-1", 47), (" 0.01 ", 1), ("0.99", 99)],
)
def test_a_price_on_the_grid_reads_as_its_cents(text: str, cents: int) -> None:
    assert bounded(text, "price", *CENT, places=2, text=True) * 100 == cents


@pytest.mark.parametrize(
    "text",
    [
        "0.475",  # off the grid
        "0",
        "1",
        "-0.47",
        "1e999999999",  # past every range: refused, never scaled
        "-1e999999999",
        "1e-999999999",
        "NaN",
        "sNaN",
        "Infinity",
        "\u0660.\u0664\u0667",  # other scripts' digits (Decimal and str.isdigit take them)
        "0.4_7",
        "0x1f",
        "",
        "0." + "4" * MAX_NUMBER_TEXT,  # past the longest text read
    ],
)
def test_a_price_off_the_grid_or_no_number_is_named(text: str) -> None:
    with pytest.raises(ValidationError) as info:
        bounded(text, "bids[0].price", *CENT, places=2, text=True)
    said = str(info.value)
    assert said.startswith("bids[0].price: must be a number in [0.01, 0.99] with at most 2")
    assert "\n" not in said


@pytest.mark.parametrize("value", [True, None, [1], "1", float("nan"), float("inf"), 10**400])
def test_only_numbers_are_read_without_text(value: object) -> None:
    with pytest.raises(ValidationError, match=r"^ms: must be a whole number in \[0, 10\]"):
        bounded_int(value, "ms", 0, 10)


def test_a_whole_number_takes_no_fraction() -> None:
    assert bounded_int(5, "ms", 0, 10) == 5
    assert bounded_int(5.0, "ms", 0, 10) == 5
    assert bounded_int("1e1", "ms", 0, 10, text=True) == 10
    with pytest.raises(ValidationError, match="whole number"):
        bounded_int(Decimal("1.50"), "ms", 0, 10)


@given(st.decimals(allow_nan=True, allow_infinity=True), st.integers(0, 8))
@settings(max_examples=examples(200), deadline=None)
def test_the_reader_agrees_with_decimal(value: Decimal, places: int) -> None:
    """Decimal itself is the oracle: in range with at most ``places`` decimals, or refused."""
    low, high = Decimal(-(10**6)), Decimal(10**6)
    in_range = value.is_finite() and low <= value <= high
    fits = in_range and value == value.quantize(Decimal(1).scaleb(-places))
    for given_as in (value, str(value)):
        if fits and (isinstance(given_as, Decimal) or len(given_as) <= MAX_NUMBER_TEXT):
            assert bounded(given_as, "x", low, high, places=places, text=True) == value
        else:
            with pytest.raises(ValidationError):
                bounded(given_as, "x", low, high, places=places, text=True)
