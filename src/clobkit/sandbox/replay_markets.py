"""The recorded markets in a sandbox: a replay (``replay.py``) serves each market of a
recording's ``markets.json`` that the sandbox lacks with its event, league and teams as
recorded (the sandbox's defaults for what was not), and no house liquidity.

A recorded market is checked as the API's before it is served (``canonical``): its id
a UUID, its tokens the API's token ids (decimal integers of 256 bits, written without
leading zeros, two different ones), its minimum size and fee within the exchange's
ranges, its event's times within what a date can show: a market served is one every
route answers for as for the sandbox's own.
"""

from __future__ import annotations

import uuid

from ..core.checks import bounded, bounded_int
from ..core.parse import parse_uint256
from ..core.spec import MAX_FEE_RATE_BPS, OUTCOME_A, OUTCOME_B, SINGLE_ORDER_MAX
from ..errors import ValidationError
from ..order_id import keccak256
from ..record import RecordedEvent, RecordedMarket
from .engine import Engine
from .fixtures import EventFixture, League, MarketFixture, Team
from .state import UNIT, MarketState

__all__ = ["MAX_TIME_MS", "canonical", "check_events", "serve_markets"]

#: The latest time (ms since the epoch) a served date may show: 9999-12-31T23:59:59.999Z.
MAX_TIME_MS = 253_402_300_799_999


def canonical(m: RecordedMarket) -> RecordedMarket:
    """``m`` checked as the API's market (module doc), its market id as the sandbox
    spells UUIDs."""
    try:
        m = m._replace(market_id=str(uuid.UUID(m.market_id)))
    except (ValueError, TypeError, AttributeError):
        raise ValidationError(
            "market_id", m.market_id, "a recorded market id must be a UUID"
        ) from None
    for field in ("token_id_a", "token_id_b"):
        token = getattr(m, field)
        if str(parse_uint256(token, field)) != token:  # "007" would name token 7
            raise ValidationError(field, token, "must be a token id written without leading zeros")
    if m.token_id_a == m.token_id_b:
        raise ValidationError("token_id_b", m.token_id_b, "must differ from token_id_a")
    _terms(m)  # before any file is read
    return m


def check_events(events: list[RecordedEvent]) -> None:
    """Each recorded event's times within what a served date can show (``MAX_TIME_MS``)."""
    for e in events:
        for field in ("start_time_ms", "end_date_ms"):
            value = getattr(e, field)
            if value is not None:
                bounded_int(value, field, 0, MAX_TIME_MS, unit="ms since the epoch")


def serve_markets(
    engine: Engine, markets: list[RecordedMarket], events: list[RecordedEvent], now: int
) -> list[str]:
    """Add to ``engine`` the recorded markets it lacks, each with its event (the recorded
    one, the engine's own of that id, or a plain one), no house liquidity; the ids added.
    A recorded market the engine has must have the same tokens. Call under the lock."""
    recorded_events = {e.event_id: e for e in events}
    new: dict[str, tuple[RecordedMarket, int, int]] = {}
    tokens: set[str] = set()
    for m in markets:  # all checked before any is added: a refusal changes nothing
        known = engine.markets.get(m.market_id)
        if known is not None or m.market_id in new:
            had = known.fx if known is not None else new[m.market_id][0]
            if (had.token_id_a, had.token_id_b) != (m.token_id_a, m.token_id_b):
                raise ValidationError(
                    "recording", m.market_id, "a market of the sandbox with other tokens"
                )
            continue
        for token in (m.token_id_a, m.token_id_b):
            if token in engine.tokens or token in tokens:
                raise ValidationError("token_id", token, "already a token of another market")
            tokens.add(token)
        new[m.market_id] = (m, *_terms(m))
    added = []
    for m, min_size, fee in new.values():
        event = _event(engine, m, recorded_events.get(m.event_id or ""), now)
        fx = _market_fixture(m, event, now, min_size, fee)
        state = MarketState(fx, event)
        engine.markets[fx.id] = state
        engine.tokens[fx.token_id_a] = (state, OUTCOME_A)
        engine.tokens[fx.token_id_b] = (state, OUTCOME_B)
        event.market_ids.append(fx.id)
        added.append(fx.id)
    return added


def _event(
    engine: Engine, m: RecordedMarket, recorded: RecordedEvent | None, now: int
) -> EventFixture:
    """The event to serve ``m`` under: the engine's of that id, else a new one from what
    was recorded of it (a plain event named after the market where nothing was)."""
    event_id = m.event_id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"clobkit-replay:{m.market_id}"))
    found = engine.events.get(event_id)
    if found is not None:
        return found
    r = recorded or RecordedEvent(event_id)
    start = r.start_time_ms if r.start_time_ms is not None else now
    event = EventFixture(
        id=event_id,
        external_id="",
        slug=r.slug or event_id,
        title=r.title or m.question or m.market_id,
        description="",
        league=_league(engine, r),
        start_date_ms=min(start, now),
        start_time_ms=start,
        end_date_ms=r.end_date_ms if r.end_date_ms is not None else start + 3 * 3_600_000,
        volume_units=0,
        trader_count=0,
        live=False,
        ended=False,
        is_featured=False,
        is_future=bool(r.is_future),
        team_match_status="auto_matched",
        home_team=_team(r.home_team, m.outcome_a or "Home"),
        away_team=_team(r.away_team, m.outcome_b or "Away"),
        game_id=0,
        created_ms=now,
        updated_ms=now,
        home_win=(m.market_id, OUTCOME_A),  # the enriched markets: this market's outcomes
        away_win=(m.market_id, OUTCOME_B),
    )
    engine.events[event.id] = event
    engine.events_by_slug.setdefault(event.slug, event)
    return event


def _league(engine: Engine, r: RecordedEvent) -> League:
    """The sandbox's league of that id, or a new one (listed with the sandbox's)."""
    league_id = r.league_id or "recorded"
    for league in engine.leagues:
        if league.id == league_id:
            return league
    league = League(
        id=league_id,
        name=league_id.upper(),
        sport=r.subcategory or "",
        category=r.category or "sports",
        subcategory=r.subcategory or "",
        series_id=r.series_id or "",
        three_way=False,
        teams=(),
    )
    engine.leagues = (*engine.leagues, league)
    return league


def _team(sent: dict[str, object] | None, name: str) -> Team:
    """A team as the service sent it (``name`` where it sent none)."""
    t = sent or {}

    def text(key: str, default: str = "") -> str:
        value = t.get(key)
        return value if isinstance(value, str) else default

    team_id = t.get("id")
    return Team(
        id=team_id if isinstance(team_id, int) and not isinstance(team_id, bool) else 0,
        name=text("name", name),
        short_name=text("short_name", name),
        name_zh=text("name_zh"),
        short_name_zh=text("short_name_zh"),
        abbreviation=text("abbreviation"),
        logo=text("logo"),
    )


def _terms(m: RecordedMarket) -> tuple[int, int]:
    """A recorded market's minimum order size (units) and fee rate (bps), checked."""
    min_size = UNIT
    if m.min_order_size is not None:
        size = bounded(
            m.min_order_size, "min_order_size", 0, SINGLE_ORDER_MAX, text=True, unit="USDC"
        )
        min_size = max(int(size * UNIT), 1)
    fee = m.fee_rate_bps or 0
    if not 0 <= fee <= MAX_FEE_RATE_BPS:  # served by /fee-rate: no client would take it
        raise ValidationError("fee_rate_bps", fee, f"must lie in [0, {MAX_FEE_RATE_BPS}]")
    return min_size, fee


def _market_fixture(
    m: RecordedMarket, event: EventFixture, now: int, min_size: int, fee: int
) -> MarketFixture:
    """A recorded market as the sandbox serves it: no house liquidity (the recording's
    books are its liquidity), the sandbox's defaults for what was not recorded."""
    condition = m.condition_id or (
        "0x" + keccak256(f"clobkit-replay:condition:{m.market_id}".encode()).hex()
    )
    return MarketFixture(
        id=m.market_id,
        external_id="",
        condition_id=condition,
        token_id_a=m.token_id_a,
        token_id_b=m.token_id_b,
        event_id=event.id,
        question=m.question or event.title,
        description="",
        category=event.league.category,
        subcategory=event.league.subcategory,
        outcome_a=m.outcome_a or "Yes",
        outcome_b=m.outcome_b or "No",
        price_a_cents=50,
        volume_units=0,
        end_date_ms=event.end_date_ms,
        game_start_ms=event.start_time_ms,
        status="active",
        winner=None,
        market_type=m.market_type or "moneyline",
        group_item_title=m.group_item_title or "",
        neg_risk=bool(m.neg_risk),
        is_featured=False,
        created_ms=now,
        updated_ms=now,
        house_liquidity=False,
        house_level_units=0,
        min_order_size_units=min_size,
        fee_rate_bps=fee,
        kind="recorded",
    )
