"""Helpers shared by the integration tests: finding markets in the sandbox's fixtures."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from clobkit import errors
from clobkit.models import Event, Market, Orderbook


def upcoming_events(api: Any, league: str) -> list[Event]:
    events = [e for e in api.iter_events(league=league, limit=50) if not e.is_future]
    return [e for e in events if not e.ended and not e.live] or [e for e in events if not e.ended]


def market_with_book(api: Any, league: str = "nba") -> Market:
    """A market of ``league`` whose outcome-a token has a live order book (detail shape)."""
    for event in upcoming_events(api, league):
        for market in api.get_event_markets(event.id):
            try:
                book = api.get_orderbook(market.token_id_a)
            except errors.OrderBookNotFound:
                continue
            if book.bids and book.asks:
                return api.get_market(market.id)  # type: ignore[no-any-return]
    raise AssertionError(f"no {league} market with a two-sided book")


def resting_buy_price(book: Orderbook) -> Decimal:
    """A BUY price well below the best bid: it rests on the book."""
    assert book.best_bid is not None
    return max(Decimal("0.01"), book.best_bid - Decimal("0.10")).quantize(Decimal("0.01"))
