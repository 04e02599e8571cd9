"""Resource shapes of the API text, built from engine state (called with the engine lock held).

Money leaves as exact ``Decimal`` (JSON numbers via msgspec's
``decimal_format="number"``); orderbook levels carry strings; timestamps are
ISO 8601 UTC with milliseconds.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any

from clobkit._spec import SIDES

from .fixtures import EventFixture, Team
from .state import ASK, BID, BUY, dec, own_levels

if TYPE_CHECKING:
    from .state import Account, MarketState, Order, Position
    from .state import EngineState as Engine

_CENT = Decimal("0.01")
_MICRO = Decimal("0.000001")

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


def price(cents: int) -> Decimal:
    return Decimal(cents).scaleb(-2)


def odds(p: Decimal) -> Decimal:
    """Decimal odds of a price (1 / p), to 0.01."""
    if p <= 0:
        return Decimal(0)
    return (Decimal(1) / p).quantize(_CENT, rounding=ROUND_HALF_EVEN)


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def plain(d: Decimal) -> Decimal:
    """``d`` without trailing zeros and without an exponent (100, not 1E+2)."""
    d = d.normalize()
    exponent = d.as_tuple().exponent
    return d.quantize(Decimal(1)) if isinstance(exponent, int) and exponent > 0 else d


def _ratio(num: int, den: int) -> Decimal:
    if den == 0:
        return Decimal(0)
    return plain((Decimal(num) / Decimal(den)).quantize(_MICRO, rounding=ROUND_HALF_EVEN))


def pagination(page: int, per_page: int, total: int) -> dict[str, int]:
    return {
        "current_page": page,
        "total_pages": -(-total // per_page),
        "total_count": total,
        "per_page": per_page,
    }


# -- teams -------------------------------------------------------------------


def team_full(t: Team) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "short_name": t.short_name,
        "name_zh": t.name_zh,
        "short_name_zh": t.short_name_zh,
        "abbreviation": t.abbreviation,
        "logo": t.logo,
        "recent_form": None,
    }


def team_position(t: Team) -> dict[str, Any]:
    return {
        "name": t.name,
        "short_name": t.short_name,
        "logo": t.logo,
        "abbreviation": t.abbreviation,
        "name_zh": t.name_zh,
        "short_name_zh": t.short_name_zh,
    }


def team_brief(t: Team) -> dict[str, Any]:
    return {"name": t.name, "logo": t.logo}


# -- books ---------------------------------------------------------------------


def _book_side(market: MarketState, outcome: str, own_side: int) -> list[dict[str, str]]:
    return [
        {"price": f"0.{p:02d}", "size": str(dec(n * p // 100))}
        for p, n in own_levels(market, outcome, own_side)
    ]


def orderbook(market: MarketState, outcome: str, now: int) -> dict[str, Any]:
    token = market.token(outcome)
    bids = _book_side(market, outcome, BID)
    asks = _book_side(market, outcome, ASK)
    digest = hashlib.sha256(repr((token, bids, asks)).encode()).hexdigest()
    return {
        "asset_id": token,
        "bids": bids,
        "asks": asks,
        "hash": digest,
        "min_order_size": dec(market.fx.min_order_size_units),
        "timestamp": iso(now),
        "updated_at_ms": market.book_ms,
    }


def price_of(market: MarketState, outcome: str) -> Decimal:
    a = market.price_a_cents()
    return price(a if outcome == "a" else 100 - a)


def price_payload(market: MarketState, outcome: str, now: int) -> dict[str, Any]:
    """The ``market:<token_id>:price`` payload: price, best bid/ask, last trade."""
    bid, ask = market.own_best(outcome)
    last = market.last_trade
    if last is not None and outcome == "b":
        last = 100 - last
    return {
        "asset_id": market.token(outcome),
        "market_id": market.id,
        "price": price_of(market, outcome),
        "best_bid": None if bid is None else price(bid),
        "best_ask": None if ask is None else price(ask),
        "last_trade_price": None if last is None else price(last),
        "timestamp": iso(now),
    }


def liquidity(market: MarketState) -> Decimal:
    units = sum(n * p // 100 for p, n in market.level_sizes(BID))
    units += sum(n * p // 100 for p, n in market.level_sizes(ASK))
    return dec(units)


# -- markets -------------------------------------------------------------------------


def _market_common(market: MarketState) -> dict[str, Any]:
    fx = market.fx
    pa = price_of(market, "a")
    return {
        "id": fx.id,
        "external_id": fx.external_id,
        "token_id_a": fx.token_id_a,
        "token_id_b": fx.token_id_b,
        "question": fx.question,
        "outcome_a": fx.outcome_a,
        "outcome_b": fx.outcome_b,
        "price_a": pa,
        "price_b": Decimal(1) - pa,
        "volume": dec(fx.volume_units + market.traded_units),
        "liquidity": liquidity(market),
        "status": fx.status,
    }


def search_item(market: MarketState) -> dict[str, Any]:
    fx = market.fx
    out = _market_common(market)
    out.update(
        description=fx.description,
        category=fx.category,
        subcategory=fx.subcategory,
        end_date=iso(fx.end_date_ms),
        neg_risk=fx.neg_risk,
        is_featured=fx.is_featured,
        created_at=iso(fx.created_ms),
        updated_at=iso(max(fx.updated_ms, market.updated_ms)),
    )
    return out


def market_detail(engine: Engine, market: MarketState) -> dict[str, Any]:
    fx = market.fx
    out = _market_common(market)
    out.update(
        condition_id=fx.condition_id,
        event_id=fx.event_id,
        category=fx.category,
        game_start_time=iso(fx.game_start_ms),
        market_type=fx.market_type,
        group_item_title=fx.group_item_title,
        neg_risk=fx.neg_risk,
        is_featured=fx.is_featured,
        created_at=iso(fx.created_ms),
        updated_at=iso(max(fx.updated_ms, market.updated_ms)),
    )
    return out


def event_market(engine: Engine, market: MarketState) -> dict[str, Any]:
    fx = market.fx
    out = _market_common(market)
    out.update(
        condition_id=fx.condition_id,
        odds_a=odds(out["price_a"]),
        odds_b=odds(out["price_b"]),
        game_start_time=iso(fx.game_start_ms),
        market_type=fx.market_type,
        group_item_title=fx.group_item_title,
    )
    return out


def search_markets(engine: Engine, q: str, limit: int) -> dict[str, Any]:
    terms = q.lower().split()
    found = []
    for market in engine.markets.values():
        text = f"{market.fx.question} {market.event.title}".lower()
        if all(t in text for t in terms):
            found.append(market)
    found.sort(key=lambda m: (not m.active, -(m.fx.volume_units + m.traded_units), m.id))
    items = [search_item(m) for m in found[:limit]]
    return {"markets": items, "count": len(items)}


# -- events ----------------------------------------------------------------------------


def _event_volume(engine: Engine, event: EventFixture) -> int:
    return event.volume_units + sum(engine.markets[m].traded_units for m in event.market_ids)


def _event_traders(engine: Engine, event: EventFixture) -> int:
    traders: set[str] = set()
    for m in event.market_ids:
        traders |= engine.markets[m].traders
    return event.trader_count + len(traders)


def _event_common(engine: Engine, event: EventFixture) -> dict[str, Any]:
    return {
        "id": event.id,
        "external_id": event.external_id,
        "slug": event.slug,
        "title": event.title,
        "description": event.description,
        "category": event.league.category,
        "subcategory": event.league.subcategory,
        "league_id": event.league.id,
        "series_id": event.league.series_id,
        "start_date": iso(event.start_date_ms),
        "end_date": iso(event.end_date_ms),
        "volume": dec(_event_volume(engine, event)),
        "trader_count": _event_traders(engine, event),
        "live": event.live,
        "ended": event.ended,
        "is_featured": event.is_featured,
        "is_future": event.is_future,
        "team_match_status": event.team_match_status,
        "home_team_id": event.home_team.id,
        "away_team_id": event.away_team.id,
        "home_team": team_full(event.home_team),
        "away_team": team_full(event.away_team),
        "created_at": iso(event.created_ms),
        "updated_at": iso(event.updated_ms),
    }


def _enriched(engine: Engine, market_id: str, outcome: str) -> dict[str, Any]:
    market = engine.markets[market_id]
    p = price_of(market, outcome)
    return {
        "id": market_id,
        "token_id": market.token(outcome),
        "token_id_a": market.fx.token_id_a,
        "token_id_b": market.fx.token_id_b,
        "outcome": outcome,
        "price": p,
        "odds": odds(p),
    }


def event_list_item(engine: Engine, event: EventFixture) -> dict[str, Any]:
    out = _event_common(engine, event)
    out["enriched_markets"] = {
        "home_win": _enriched(engine, *event.home_win),
        "away_win": _enriched(engine, *event.away_win),
        "game_start_time": iso(event.start_time_ms),
    }
    return out


def event_detail(engine: Engine, event: EventFixture) -> dict[str, Any]:
    out = _event_common(engine, event)
    out["start_time"] = iso(event.start_time_ms)
    out["game_id"] = event.game_id
    out["markets"] = [event_market(engine, engine.markets[m]) for m in event.market_ids]
    return out


def _sort_key(engine: Engine, event: EventFixture, field: str) -> Any:
    if field == "volume":
        return _event_volume(engine, event)
    if field == "trader_count":
        return _event_traders(engine, event)
    if field == "title":
        return event.title.lower()
    return {
        "created_at": event.created_ms,
        "updated_at": event.updated_ms,
        "start_date": event.start_date_ms,
        "start_time": event.start_time_ms,
        "end_date": event.end_date_ms,
    }[field]


def list_events(
    engine: Engine,
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
    limit: int,
    offset: int,
) -> dict[str, Any]:
    def keep(e: EventFixture) -> bool:
        if league is not None and e.league.id != league:
            return False
        if sport is not None and e.league.sport != sport:
            return False
        if category is not None and e.league.category != category:
            return False
        if subcategory is not None and e.league.subcategory != subcategory:
            return False
        if live is not None and e.live != live:
            return False
        if status == "ended":
            if not e.ended:
                return False
        elif (status == "active" or not ended) and e.ended:
            return False
        if is_featured is not None and e.is_featured != is_featured:
            return False
        return not (is_future is not None and e.is_future != is_future)

    events = [e for e in engine.events.values() if keep(e)]
    events.sort(key=lambda e: e.id)
    field = sort_by or "start_time"
    events.sort(key=lambda e: _sort_key(engine, e, field), reverse=SORT_FIELDS[field])
    chunk = events[offset : offset + limit]
    return {
        "events": [event_list_item(engine, e) for e in chunk],
        "total_count": len(events),
        "page": offset // limit + 1,
        "page_size": limit,
    }


# -- orders ------------------------------------------------------------------------------


def order_record(engine: Engine, o: Order) -> dict[str, Any]:
    buy = o.side == BUY
    clob_price = Decimal(o.price_text)
    return {
        "id": o.id,
        "user_id": o.user_id,
        "market_id": o.market.id,
        "outcome": o.outcome,
        "token_id": o.token_id,
        "amount": dec(o.maker_amount if buy else o.taker_amount),
        "making_amount": dec(o.maker_amount),
        "taking_amount": dec(o.taker_amount),
        "odds": odds(clob_price),
        "potential_profit": dec(max(o.size - o.maker_amount, 0)) if buy else Decimal(0),
        "status": o.status,
        "side": SIDES[o.side],
        "order_type": o.order_type,
        "order_source": o.source,
        "order_source_id": o.source_id,
        "clob_order_id": o.clob_order_id,
        "original_size": dec(o.size),
        "size_matched": dec(o.matched),
        "clob_price": clob_price,
        "limit_price": clob_price,
        "avg_fill_price": _ratio(o.usdc, o.matched) if o.matched else None,
        "expiration": o.expiration,
        "tx_hashes": list(o.tx_hashes),
        "settlement_status": o.settlement_status,
        "settlement_amount": dec(o.settlement_units),
        "settled_at": iso(o.settled_ms),
        "submitted_at": iso(o.submitted_ms),
        "matched_at": iso(o.matched_ms),
        "created_at": iso(o.created_ms),
        "updated_at": iso(o.updated_ms),
    }


def _display_outcome(market: MarketState, outcome: str) -> str:
    return market.fx.outcome_a if outcome == "a" else market.fx.outcome_b


def portfolio_order(o: Order) -> dict[str, Any]:
    market = o.market
    event = market.event
    return {
        "id": o.id,
        "market_id": market.id,
        "event_id": event.id,
        "event_slug": event.slug,
        "market_name": market.fx.question,
        "home_team": team_brief(event.home_team),
        "away_team": team_brief(event.away_team),
        "outcome": _display_outcome(market, o.outcome),
        "side": SIDES[o.side],
        "making_amount": dec(o.maker_amount),
        "taking_amount": dec(o.taker_amount),
        "status": o.status,
        "tx_hashes": list(o.tx_hashes),
        "is_bonus": o.is_bonus,
        "created_at": iso(o.created_ms),
    }


# -- positions and balances ------------------------------------------------------------------


def position_record(engine: Engine, account: Account, pos: Position, now: int) -> dict[str, Any]:
    market = pos.market
    event = market.event
    bid, ask = market.own_best(pos.outcome)
    market_price = price_of(market, pos.outcome)
    mark = price(bid) if bid is not None else market_price
    shares = dec(pos.shares)
    cost = dec(pos.cost)
    value = (shares * mark).quantize(_MICRO)
    pnl = value - cost
    confirming = any(
        o.market is market
        and o.outcome == pos.outcome
        and o.status in ("pending", "signing", "submitted")
        for o in engine.open_orders.values()
        if o.user_id == account.user_id
    )
    available = pos.shares - pos.reserved
    avg_cost = _ratio(pos.cost, pos.shares)
    return {
        "id": pos.id,
        "market_id": market.id,
        "event_id": event.id,
        "market_name": market.fx.question,
        "market_type": market.fx.market_type,
        "group_item_title": market.fx.group_item_title,
        "event_title": event.title,
        "event_slug": event.slug,
        "category": market.fx.category,
        "token_id": pos.token_id,
        "outcome": _display_outcome(market, pos.outcome),
        "raw_outcome": pos.outcome,
        "outcome_a": market.fx.outcome_a,
        "outcome_b": market.fx.outcome_b,
        "shares": shares,
        "available_shares": dec(available),
        "reserved_shares": dec(pos.reserved),
        "avg_cost": avg_cost,
        "bet_amount": cost,
        "expected_win_amount": shares,
        "initial_win_rate": avg_cost,
        "current_win_rate": market_price,
        "current_value": plain(value),
        "pnl": plain(pnl),
        "pnl_percent": (pnl * 100 / cost).quantize(_CENT) if cost else Decimal(0),
        "best_bid": price(bid) if bid is not None else Decimal(0),
        "best_ask": price(ask) if ask is not None else Decimal(0),
        "home_team": team_position(event.home_team),
        "away_team": team_position(event.away_team),
        "ended": event.ended,
        "can_cashout": available > 0 and market.active and bid is not None,
        "confirming": confirming,
        "is_bonus": pos.is_bonus,
        "is_future": event.is_future,
        "market_status": market.fx.status,
        "updated_at": iso(pos.updated_ms or now),
    }


def balance_record(account: Account) -> dict[str, Decimal]:
    return {
        "cash": dec(account.cash),
        "cash_reserved": dec(account.cash_reserved),
        "bonus": dec(account.bonus),
        "bonus_reserved": dec(account.bonus_reserved),
        "payouts": dec(account.payouts),
        "deposits": dec(account.deposits),
    }
