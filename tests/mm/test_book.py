"""The book mirror with payloads that are not all levels (an audit's findings).

Before the fix a size-0 bid at 0.97 was the best bid (and the mid 0.745, so a
quoter quoting around it would buy through the ask); a level priced "abc" or
without a price made every read raise; and a raised ``min_order_size`` was
never taken.

And its freshness: before, the mirror kept no time, so a strategy could not tell a
book of a minute ago (its stream down, its topic quiet) from the market's.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.client import book_topic
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


def test_the_mirror_records_when_it_took_a_book_and_its_age_grows() -> None:
    book = BookMirror("t")
    assert (book.received_at, book.age, book.stale) == (None, None, True)  # no book yet
    book.apply("not a book")
    assert book.received_at is None  # what is not a book is not taken
    before = time.monotonic()
    book.apply({"bids": [BID], "asks": [ASK]})
    after = time.monotonic()
    assert book.received_at is not None
    assert before <= book.received_at <= after  # time.monotonic() seconds
    first = book.age
    assert first is not None
    assert first >= 0
    second = book.age
    assert second is not None
    assert second >= first  # older with every read while no book comes
    taken = book.received_at
    book.apply({"bids": [BID], "asks": [ASK]})
    assert book.received_at >= taken
    third = book.age
    assert third is not None
    assert third <= (time.monotonic() - taken)


async def test_the_mirror_is_stale_unless_a_live_feed_keeps_it_current() -> None:
    book = BookMirror("t")
    book.apply({"bids": [BID], "asks": [ASK]})
    assert book.stale  # nothing feeds it: the book it holds may be old
    async with AsyncClient("http://127.0.0.1:9", "key", "secret") as client:
        stream = client.stream([book_topic("t")])
        book.feed = stream
        assert stream.down_since is None
        assert not stream.closed
        assert not book.stale
        book.mark_stale()  # its feed lost messages (a reconnect)
        assert book.stale
        book.apply("not a book")
        assert book.stale  # only a book makes it fresh again
        book.apply({"bids": [BID], "asks": [ASK]})
        assert not book.stale
        await stream.close()
        assert book.stale  # a closed feed keeps nothing current
