"""The read side's selection: which events match the filters and in what order, market search.

Functions of the engine state, called with its lock held; they pick records,
the views render them.
"""

from __future__ import annotations

from typing import Any

from .fixtures import EventFixture
from .state import EngineState, MarketState

__all__ = ["SORT_FIELDS", "event_traders", "event_volume", "search", "select_events"]

SORT_FIELDS: dict[str, bool] = {  # field -> descending
    "volume": True,
    "trader_count": True,
    "created_at": True,
    "updated_at": True,
    "start_date": False,
    "start_time": False,
    "end_date": False,
    "title": False,
}


def event_volume(engine: EngineState, event: EventFixture) -> int:
    """An event's volume in units: its fixture's plus what its markets traded here."""
    return event.volume_units + sum(engine.markets[m].traded_units for m in event.market_ids)


def event_traders(engine: EngineState, event: EventFixture) -> int:
    """An event's trader count: its fixture's plus the distinct users who traded here."""
    traders: set[str] = set()
    for m in event.market_ids:
        traders |= engine.markets[m].traders
    return event.trader_count + len(traders)


def _sort_key(engine: EngineState, event: EventFixture, field: str) -> Any:
    if field == "volume":
        return event_volume(engine, event)
    if field == "trader_count":
        return event_traders(engine, event)
    if field == "title":
        return event.title.lower()
    return {
        "created_at": event.created_ms,
        "updated_at": event.updated_ms,
        "start_date": event.start_date_ms,
        "start_time": event.start_time_ms,
        "end_date": event.end_date_ms,
    }[field]


def select_events(
    engine: EngineState,
    *,
    league: str | None,
    sport: str | None,
    category: str | None,
    subcategory: str | None,
    live: bool | None,
    ended: bool | None,
    is_featured: bool | None,
    is_future: bool | None,
    status: str | None,
    sort_by: str | None,
) -> list[EventFixture]:
    """Every event that passes the filters, in the order of ``sort_by`` (default start_time)."""

    def keep(e: EventFixture) -> bool:
        wanted = (
            (league, e.league.id),
            (sport, e.league.sport),
            (category, e.league.category),
            (subcategory, e.league.subcategory),
            (live, e.live),
            (is_featured, e.is_featured),
            (is_future, e.is_future),
        )
        if any(want is not None and got != want for want, got in wanted):
            return False
        if status == "ended":
            return e.ended
        return not ((status == "active" or not ended) and e.ended)

    events = [e for e in engine.events.values() if keep(e)]
    events.sort(key=lambda e: e.id)
    field = sort_by or "start_time"
    events.sort(key=lambda e: _sort_key(engine, e, field), reverse=SORT_FIELDS[field])
    return events


def search(engine: EngineState, q: str, limit: int) -> list[MarketState]:
    """Markets whose question or event title holds every word of ``q``; active and busiest first."""
    terms = q.lower().split()
    found = []
    for market in engine.markets.values():
        text = f"{market.fx.question} {market.event.title}".lower()
        if all(t in text for t in terms):
            found.append(market)
    found.sort(key=lambda m: (not m.active, -(m.fx.volume_units + m.traded_units), m.id))
    return found[:limit]
