"""Snapshots of the engine's state as ``records``: an order, a token's book, a token's
prices, each taken with the engine lock held (later changes do not reach them).

This is the one part that reads the engine's own records (``state``) to build the
typed answers; ``records`` holds only the answers' shapes, so ``state`` can name
them (an order event carries an ``OrderRecord``) without a circle.
"""

from __future__ import annotations

from decimal import Decimal

from ..core.spec import OUTCOME_A, OUTCOME_B, SIDES
from .records import Level, OrderBook, OrderRecord, PriceSnapshot, price, ratio
from .state import ASK, BID, BUY, MarketState, Order, dec, own_levels

__all__ = ["book_snapshot", "order_record", "price_of", "price_snapshot"]


def order_record(o: Order) -> OrderRecord:
    """A snapshot of an order (call with the engine lock held)."""
    buy = o.side == BUY
    return OrderRecord(
        id=o.id,
        user_id=o.user_id,
        market_id=o.market.id,
        outcome=o.outcome,
        token_id=o.token_id,
        side=SIDES[o.side],
        order_type=o.order_type,
        status=o.status,
        order_source=o.source,
        order_source_id=o.source_id,
        clob_order_id=o.clob_order_id,
        making_amount=dec(o.maker_amount),
        taking_amount=dec(o.taker_amount),
        potential_profit=dec(max(o.size - o.maker_amount, 0)) if buy else Decimal(0),
        original_size=dec(o.size),
        size_matched=dec(o.matched),
        clob_price=Decimal(o.price_text),
        avg_fill_price=ratio(o.usdc, o.matched) if o.matched else None,
        expiration=o.expiration,
        tx_hashes=tuple(o.tx_hashes),
        settlement_status=o.settlement_status,
        settlement_amount=dec(o.settlement_units),
        settled_ms=o.settled_ms,
        submitted_ms=o.submitted_ms,
        matched_ms=o.matched_ms,
        created_ms=o.created_ms,
        updated_ms=o.updated_ms,
        is_bonus=o.is_bonus,
    )


def _levels(market: MarketState, outcome: str, own_side: int) -> tuple[Level, ...]:
    return tuple(
        Level(price(p), dec(n * p // 100)) for p, n in own_levels(market, outcome, own_side)
    )


def book_snapshot(market: MarketState, outcome: str, now: int) -> OrderBook:
    """A snapshot of one outcome token's book (call with the engine lock held)."""
    return OrderBook(
        asset_id=market.token(outcome),
        bids=_levels(market, outcome, BID),
        asks=_levels(market, outcome, ASK),
        min_order_size=dec(market.fx.min_order_size_units),
        at_ms=now,
        updated_at_ms=market.book_ms,
    )


def price_of(market: MarketState, outcome: str) -> Decimal:
    """The displayed price of an outcome (USDC a share)."""
    a = market.price_a_cents()
    return price(a if outcome == OUTCOME_A else 100 - a)


def price_snapshot(market: MarketState, outcome: str, now: int) -> PriceSnapshot:
    """A snapshot of one outcome token's prices (call with the engine lock held)."""
    bid, ask = market.own_best(outcome)
    last = market.last_trade
    if last is not None and outcome == OUTCOME_B:
        last = 100 - last
    return PriceSnapshot(
        asset_id=market.token(outcome),
        market_id=market.id,
        price=price_of(market, outcome),
        best_bid=None if bid is None else price(bid),
        best_ask=None if ask is None else price(ask),
        last_trade_price=None if last is None else price(last),
        at_ms=now,
    )
