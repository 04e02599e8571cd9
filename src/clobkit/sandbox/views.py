"""The HTTP layer's renderer: the engine's typed answers into the API text's JSON shapes.

Snapshots (``records``) render anywhere; live records (markets, events,
positions) only under ``Engine.reading()``. Money leaves as exact ``Decimal``
(JSON numbers via msgspec's ``decimal_format="number"``); orderbook levels
carry strings; timestamps are ISO 8601 UTC with milliseconds. The engine
never imports this module.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from .. import WalletInfo
from ..core.spec import OUTCOME_A, PENDING, SIGNING, SUBMITTED, UNIT_QUANTUM
from .fixtures import EventFixture, Team
from .queries import event_traders, event_volume
from .records import (
    Balances,
    Cancelled,
    Level,
    OrderBook,
    OrderRecord,
    Page,
    Placed,
    PriceSnapshot,
    Settlement,
    Totals,
    plain,
    price,
    ratio,
)
from .snapshots import price_of
from .state import ASK, BID, dec

if TYPE_CHECKING:
    from .state import EngineState as Engine
    from .state import MarketState, Position

_CENT = Decimal("0.01")


def odds(p: Decimal) -> Decimal:
    """Decimal odds of a price (1 / p), to 0.01."""
    if p <= 0:
        return Decimal(0)
    return (Decimal(1) / p).quantize(_CENT, rounding=ROUND_HALF_EVEN)


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


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


def _levels(levels: tuple[Level, ...]) -> list[dict[str, str]]:
    return [{"price": str(lv.price), "size": str(lv.size)} for lv in levels]


def orderbook(book: OrderBook) -> dict[str, Any]:
    """The Orderbook resource (its hash covers the token and both sides' levels)."""
    bids = _levels(book.bids)
    asks = _levels(book.asks)
    digest = hashlib.sha256(repr((book.asset_id, bids, asks)).encode()).hexdigest()
    return {
        "asset_id": book.asset_id,
        "bids": bids,
        "asks": asks,
        "hash": digest,
        "min_order_size": book.min_order_size,
        "timestamp": iso(book.at_ms),
        "updated_at_ms": book.updated_at_ms,
    }


def price_payload(snap: PriceSnapshot) -> dict[str, Any]:
    """The ``market:<token_id>:price`` payload: price, best bid/ask, last trade."""
    return {
        "asset_id": snap.asset_id,
        "market_id": snap.market_id,
        "price": snap.price,
        "best_bid": snap.best_bid,
        "best_ask": snap.best_ask,
        "last_trade_price": snap.last_trade_price,
        "timestamp": iso(snap.at_ms),
    }


def liquidity(market: MarketState) -> Decimal:
    units = sum(n * p // 100 for p, n in market.level_sizes(BID))
    units += sum(n * p // 100 for p, n in market.level_sizes(ASK))
    return dec(units)


# -- markets -------------------------------------------------------------------------


def _market_common(market: MarketState) -> dict[str, Any]:
    fx = market.fx
    pa = price_of(market, OUTCOME_A)
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


def market_list(markets: list[MarketState]) -> dict[str, Any]:
    """GET /markets: the search hits."""
    items = [search_item(m) for m in markets]
    return {"markets": items, "count": len(items)}


def event_markets(engine: Engine, markets: list[MarketState]) -> dict[str, Any]:
    """GET /events/:id/markets."""
    items = [event_market(engine, m) for m in markets]
    return {"markets": items, "count": len(items)}


# -- events ----------------------------------------------------------------------------


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
        "volume": dec(event_volume(engine, event)),
        "trader_count": event_traders(engine, event),
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


def event_page(engine: Engine, page: Page[EventFixture]) -> dict[str, Any]:
    """GET /events."""
    return {
        "events": [event_list_item(engine, e) for e in page.items],
        "total_count": page.total_count,
        "page": page.page,
        "page_size": page.page_size,
    }


# -- orders ------------------------------------------------------------------------------


def order_record(r: OrderRecord) -> dict[str, Any]:
    """The Order resource (GET /orders/:id, listings, the user's order topic)."""
    return {
        "id": r.id,
        "user_id": r.user_id,
        "market_id": r.market_id,
        "outcome": r.outcome,
        "token_id": r.token_id,
        "amount": r.amount,
        "making_amount": r.making_amount,
        "taking_amount": r.taking_amount,
        "odds": odds(r.clob_price),
        "potential_profit": r.potential_profit,
        "status": r.status,
        "side": r.side,
        "order_type": r.order_type,
        "order_source": r.order_source,
        "order_source_id": r.order_source_id,
        "clob_order_id": r.clob_order_id,
        "original_size": r.original_size,
        "size_matched": r.size_matched,
        "clob_price": r.clob_price,
        "limit_price": r.clob_price,
        "avg_fill_price": r.avg_fill_price,
        "expiration": r.expiration,
        "tx_hashes": list(r.tx_hashes),
        "settlement_status": r.settlement_status,
        "settlement_amount": r.settlement_amount,
        "settled_at": iso(r.settled_ms),
        "submitted_at": iso(r.submitted_ms),
        "matched_at": iso(r.matched_ms),
        "created_at": iso(r.created_ms),
        "updated_at": iso(r.updated_ms),
    }


def order_page(page: Page[OrderRecord]) -> dict[str, Any]:
    """GET /orders."""
    return {
        "orders": [order_record(r) for r in page.items],
        "total_count": page.total_count,
        "page": page.page,
        "page_size": page.page_size,
    }


def _display_outcome(market: MarketState, outcome: str) -> str:
    return market.fx.outcome_a if outcome == OUTCOME_A else market.fx.outcome_b


def portfolio_order(engine: Engine, o: OrderRecord) -> dict[str, Any]:
    market = engine.markets[o.market_id]
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
        "side": o.side,
        "making_amount": o.making_amount,
        "taking_amount": o.taking_amount,
        "status": o.status,
        "tx_hashes": list(o.tx_hashes),
        "is_bonus": o.is_bonus,
        "created_at": iso(o.created_ms),
    }


def portfolio_page(engine: Engine, page: Page[OrderRecord]) -> dict[str, Any]:
    """GET /portfolio/orders."""
    return {
        "orders": [portfolio_order(engine, o) for o in page.items],
        "pagination": pagination(page.page, page.page_size, page.total_count),
    }


# -- positions and balances ------------------------------------------------------------------


def position_record(engine: Engine, pos: Position, now: int) -> dict[str, Any]:
    """One Position resource (a live record: call under ``Engine.reading()``)."""
    market = pos.market
    event = market.event
    bid, ask = market.own_best(pos.outcome)
    market_price = price_of(market, pos.outcome)
    mark = price(bid) if bid is not None else market_price
    shares = dec(pos.shares)
    cost = dec(pos.cost)
    value = (shares * mark).quantize(UNIT_QUANTUM)
    pnl = value - cost
    confirming = any(
        o.market is market
        and o.outcome == pos.outcome
        and o.status in (PENDING, SIGNING, SUBMITTED)
        for o in engine.open_orders.values()
        if o.user_id == pos.user_id
    )
    available = pos.shares - pos.reserved
    avg_cost = ratio(pos.cost, pos.shares)
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


def position_page(engine: Engine, page: Page[Position]) -> dict[str, Any]:
    """GET /portfolio/positions (call under ``Engine.reading()``)."""
    return {
        "positions": [position_record(engine, p, page.at_ms) for p in page.items],
        "pagination": pagination(page.page, page.page_size, page.total_count),
    }


def fields(
    value: Balances | Totals | Placed | Cancelled | Settlement | WalletInfo,
) -> dict[str, Any]:
    """A flat record's fields, in its declared order, which is the API's order of them
    (``Balances`` and ``Totals`` for the admin, ``Placed`` for POST /orders and /orders/raw,
    ``Cancelled`` for DELETE /orders/:id, ``Settlement`` for a settle, ``WalletInfo``
    for GET /wallet)."""
    return msgspec.structs.asdict(value)
