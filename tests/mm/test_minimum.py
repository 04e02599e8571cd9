"""The market's minimum order known before anything is sent (issue 46, finding 3): a quoter
that entered while its outcome had no book learns ``min_order_size`` from a REST read
of the book once one exists, and refuses a quote under it locally, naming the market,
the outcome and the minimum. On a desk whose book topics are off (the backtest's) too."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.errors import QuoteRefused
from clobkit.mm import Desk, Quote, Quoter

from .conftest import Counted, eventually

pytestmark = pytest.mark.parametrize("version", [1], ids=["V1"])


def bookless(sb: Any) -> Any:
    """An active market with no book (no house liquidity; a 5 USDC minimum)."""
    return next(m for m in sb.engine.markets.values() if m.active and not m.fx.house_liquidity)


def make_a_book(sb: Any, market: Any) -> None:
    """Another user rests a bid: the market has a book from now on."""
    trader = sb.users[0]
    body = {
        "market_id": market.id,
        "token_option": "yes",
        "side": "BUY",
        "order_type": "GTC",
        "amount": 10,
        "limit_price": "0.02",
    }
    sb.engine.place_order(trader.user_id, body)


async def test_a_desk_without_book_topics_learns_it_once_the_book_exists(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    """The backtest's desk: books read by the strategy, none heard by the quoters."""
    market = bookless(sb)
    async with Desk(client, user_id=user.user_id, books=False) as desk:
        a, b = desk.quoter(market.id, "a"), desk.quoter(market.id, "b")
        await desk.open()
        assert a.min_order_size is None  # no book when it entered, none heard since
        make_a_book(sb, market)
        counted = Counted(sb)
        with pytest.raises(QuoteRefused) as info:
            await desk.requote({a: [Quote("BUY", "0.10", 40)]})  # 4 USDC
        refusal = str(info.value)
        assert market.id in refusal
        assert "(outcome a): 5 USDC" in refusal
        assert a.min_order_size == Decimal(5)
        with pytest.raises(QuoteRefused, match=r"outcome b\): 5 USDC"):
            await b.requote([Quote("BUY", "0.50", 8)])  # a lone requote reads it too
        assert counted.count("POST", "/api/ext/v1/orders/raw") == 0  # nothing sent
        reports = await desk.requote({a: [Quote("BUY", "0.10", 50)]})  # 5 USDC
        assert len(reports[a].placed) == 1


async def test_a_quoter_hears_the_minimum_on_its_book_topic(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    market = bookless(sb)
    async with Quoter(client, market.id, "a", user_id=user.user_id) as q:
        await eventually(lambda: q.min_order_size == Decimal(5))  # the topic's snapshot
        with pytest.raises(QuoteRefused, match=r"outcome a\): 5 USDC"):
            await q.requote([Quote("BUY", "0.10", 40)])


async def test_with_no_book_at_all_the_minimum_stays_unknown_and_the_service_judges(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    market = bookless(sb)
    async with Desk(client, user_id=user.user_id, books=False) as desk:
        q = desk.quoter(market.id, "a")
        reports = await desk.requote({q: [Quote("BUY", "0.10", 50)]})
        assert q.min_order_size is None  # the read found no book
        assert len(reports[q].placed) == 1  # 5 USDC: the service took it
