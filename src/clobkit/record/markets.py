"""What a recording says of its markets and events (``markets.json``), and how the
recorder finds them on the service (``clobkit.record`` re-exports all of it)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from ..errors import NotFound, OrderBookNotFound

if TYPE_CHECKING:
    from ..client import AsyncClient
    from ..models import Market

__all__ = ["RecordedEvent", "RecordedMarket", "resolve_events", "resolve_markets"]


class RecordedMarket(NamedTuple):
    """A market being recorded: its id, event, question and the two outcome tokens, and
    what a replay needs to serve it as the service did (``None``: not known; the replay
    then takes the sandbox's default). The API names no tick size: its grid is 0.01."""

    market_id: str
    event_id: str | None
    question: str | None
    token_id_a: str
    token_id_b: str
    outcome_a: str | None = None  # the outcomes' names
    outcome_b: str | None = None
    condition_id: str | None = None
    neg_risk: bool | None = None
    market_type: str | None = None
    group_item_title: str | None = None
    min_order_size: str | None = None  # USDC, as the first book read said
    fee_rate_bps: int | None = None  # the exchange's fee for its tokens


class RecordedEvent(NamedTuple):
    """The event of recorded markets, as the service described it (``get_event``)."""

    event_id: str
    title: str | None = None
    slug: str | None = None
    league_id: str | None = None
    series_id: str | None = None
    category: str | None = None
    subcategory: str | None = None
    start_time_ms: int | None = None  # kickoff, ms since the epoch
    end_date_ms: int | None = None
    is_future: bool | None = None
    home_team: dict[str, Any] | None = None  # the team as sent (id, name, abbreviation...)
    away_team: dict[str, Any] | None = None


async def resolve_markets(
    client: AsyncClient,
    *,
    market_ids: Iterable[str] = (),
    event_ids: Iterable[str] = (),
    leagues: Iterable[str] = (),
) -> list[RecordedMarket]:
    """The markets named by id, by event (all its markets) and by league (the markets of
    its events not ended that have a book: a futures market the service quotes nobody
    on would be an empty recording), each once, in that order."""
    found: dict[str, RecordedMarket] = {}

    def add(m: Market, event_id: str | None) -> None:
        if m.token_id_a and m.token_id_b and m.id not in found:
            found[m.id] = RecordedMarket(
                m.id,
                m.event_id or event_id,
                m.question,
                m.token_id_a,
                m.token_id_b,
                outcome_a=m.outcome_a,
                outcome_b=m.outcome_b,
                condition_id=m.condition_id,
                neg_risk=m.neg_risk,
                market_type=m.market_type,
                group_item_title=m.group_item_title,
            )

    for market_id in market_ids:
        add(await client.get_market(market_id), None)
    for event_id in event_ids:
        for m in await client.get_event_markets(event_id):
            add(m, event_id)
    for league in leagues:
        events = [e.id async for e in client.iter_events(league=league) if not e.ended]
        for event_id in events:
            markets = await client.get_event_markets(event_id)
            booked = await asyncio.gather(*(_has_book(client, m) for m in markets))
            for m, has_book in zip(markets, booked, strict=True):
                if has_book:
                    add(m, event_id)
    return list(found.values())


async def _has_book(client: AsyncClient, market: Market) -> bool:
    """Whether either outcome token of ``market`` has a book on the service."""
    for token in (market.token_id_a, market.token_id_b):
        if token:
            try:
                await client.get_orderbook(token)
            except OrderBookNotFound:
                continue
            return True
    return False


def _ms(stamp: datetime | None) -> int | None:
    return None if stamp is None else int(stamp.timestamp() * 1000)


def _team(team: Any) -> dict[str, Any] | None:
    return None if team is None else msgspec.to_builtins(team)


async def resolve_events(client: AsyncClient, event_ids: Iterable[str]) -> list[RecordedEvent]:
    """The events named, as the service describes them (one ``get_event`` each); an event
    it cannot find is left out (a replay then serves its markets under a plain event)."""
    events = []
    for event_id in dict.fromkeys(event_ids):
        try:
            e = await client.get_event(event_id)
        except NotFound:
            continue
        events.append(
            RecordedEvent(
                e.id,
                title=e.title,
                slug=e.slug,
                league_id=e.league_id,
                series_id=e.series_id,
                category=e.category,
                subcategory=e.subcategory,
                start_time_ms=_ms(e.start_time),
                end_date_ms=_ms(e.end_date),
                is_future=e.is_future,
                home_team=_team(e.home_team),
                away_team=_team(e.away_team),
            )
        )
    return events
