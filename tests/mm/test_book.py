"""The book mirror with payloads that are not all levels (an audit's findings).

Before the fix a size-0 bid at 0.97 was the best bid (and the mid 0.745, so a
quoter quoting around it would buy through the ask); a level priced "abc" or
without a price made every read raise; and a raised ``min_order_size`` was
never taken.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from clobkit.mm import BookMirror

ASK = {"price": "0.52", "size": "10"}
BID = {"price": "0.48", "size": "10"}


@pytest.mark.parametrize(
    "odd",
    [
        {"price": "0.97", "size": "0"},
        {"price": "0.97", "size": "-5"},
        {"price": "0.97", "size": "NaN"},
        {"price": "abc", "size": "10"},
        {"size": "10"},
        {"price": None, "size": "10"},
        {"price": "1.5", "size": "10"},
        {"price": "0", "size": "10"},
        {"price": True, "size": "10"},
        ["0.97", "10"],
        None,
    ],
)
def test_what_is_not_a_level_is_left_out_of_every_read(odd: Any) -> None:
    book = BookMirror("t")
    book.apply({"bids": [odd, BID], "asks": [odd, ASK]})
    assert book.best_bid == Decimal("0.48")
    assert book.best_ask == Decimal("0.52")
    assert book.mid == Decimal("0.50")
    assert [(lv.price, lv.size) for lv in book.bids] == [(Decimal("0.48"), Decimal("10"))]
    assert [(lv.price, lv.size) for lv in book.asks] == [(Decimal("0.52"), Decimal("10"))]


def test_a_book_of_nothing_but_odd_levels_is_empty() -> None:
    book = BookMirror("t")
    book.apply({"bids": [{"price": "0.5", "size": "0"}], "asks": [{"price": "x", "size": "1"}]})
    assert (book.best_bid, book.best_ask, book.mid, book.bids, book.asks) == (
        None,
        None,
        None,
        [],
        [],
    )


def test_the_latest_min_order_size_holds() -> None:
    book = BookMirror("t")
    book.apply({"bids": [BID], "asks": [ASK], "min_order_size": "1"})
    assert book.min_order_size == Decimal("1")
    book.apply({"bids": [BID], "asks": [ASK], "min_order_size": 5})
    assert book.min_order_size == Decimal("5")
    for odd in ("NaN", "abc", -1, None):  # not a size: the last one stays
        book.apply({"bids": [BID], "asks": [ASK], "min_order_size": odd})
        assert book.min_order_size == Decimal("5")
