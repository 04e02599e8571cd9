"""The engine directly (no HTTP): matching, lifecycle, money, risk, settlement, raw orders."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from clobkit import OrderHasher, market_amounts
from clobkit.sandbox import Cancelled, Engine, OrderRecord, Rejected, views
from clobkit.sandbox.engine import EngineEvent

from .conftest import (
    MAKER,
    READER,
    TRADER,
    Clock,
    book_market,
    bookless_market,
    make_engine,
    resolved_market,
)

D = Decimal


def place(engine: Engine, user: str = TRADER, **body: Any) -> OrderRecord:
    order_id = engine.place_order(user, body).order_id
    return engine.order(order_id)


def positions(engine: Engine, user: str = TRADER) -> list[dict[str, Any]]:
    """The user's positions as the API renders them (views, under the engine's lock)."""
    page = engine.positions(user)
    with engine.reading():
        rendered: list[dict[str, Any]] = views.position_page(engine, page)["positions"]
    return rendered


def ok(engine: Engine) -> None:
    assert engine.check_invariants() == []


def rejected(fn: Any, *args: Any, **kw: Any) -> Rejected:
    with pytest.raises(Rejected) as info:
        fn(*args, **kw)
    return info.value


# -- books and the house ------------------------------------------------------------------------


def test_fresh_engine_has_two_sided_house_books_and_holds_its_invariants(engine: Engine) -> None:
    ok(engine)
    m = book_market(engine)
    book = engine.orderbook(m.fx.token_id_a)
    assert book is not None
    assert len(book.bids) == 5
    assert len(book.asks) == 5
    bids = [D(lv.price) for lv in book.bids]
    asks = [D(lv.price) for lv in book.asks]
    assert bids == sorted(bids, reverse=True)
    assert asks == sorted(asks)
    assert bids[0] < asks[0]
    # token b's book mirrors token a's: its best bid is 1 - a's best ask
    book_b = engine.orderbook(m.fx.token_id_b)
    assert book_b is not None
    assert D(book_b.bids[0].price) == 1 - asks[0]
    assert D(book_b.asks[0].price) == 1 - bids[0]
    # some markets have no book at all
    assert engine.orderbook(bookless_market(engine).fx.token_id_a) is None
    assert engine.orderbook(resolved_market(engine).fx.token_id_a) is None
    assert engine.orderbook("12345") is None


def test_level_size_is_usdc_at_that_price(engine: Engine) -> None:
    m = book_market(engine)
    book = engine.orderbook(m.fx.token_id_a)
    assert book is not None
    for side, levels in ((0, m.level_sizes(0)), (1, m.level_sizes(1))):
        shown = book.bids if side == 0 else book.asks
        for (p, shares), level in zip(sorted(levels, reverse=side == 0), shown, strict=True):
            assert D(level.price) == D(p) / 100
            assert D(level.size) == D(shares * p // 100) / 10**6


# -- FOK ----------------------------------------------------------------------------------------


def test_fok_buy_spends_its_amount_at_the_best_ask(engine: Engine) -> None:
    m = book_market(engine)
    best_ask = D(m.best_ask() or 0) / 100
    o = place(engine, market_id=m.id, outcome="a", amount=100)
    assert o.status == "matched"
    assert o.size_matched == o.original_size > 0
    assert o.avg_fill_price == best_ask == o.clob_price
    assert o.amount == o.making_amount == 100
    assert o.size_matched >= o.taking_amount
    assert len(o.tx_hashes) == 1
    assert o.matched_ms is not None
    bal = engine.balances(TRADER)
    assert D(9900) <= bal.cash <= D("9900.000001")  # at most one unit of dust refunded
    shares, reserved = engine.shares(TRADER, m.fx.token_id_a)
    assert shares == o.size_matched
    assert reserved == 0
    ok(engine)


def test_fok_buy_walks_the_book_and_signs_at_the_worst_price(engine: Engine) -> None:
    m = book_market(engine)
    book = engine.orderbook(m.fx.token_id_a)
    assert book is not None
    first = D(book.asks[0].size)
    amount = int(first) + 50
    o = place(engine, market_id=m.id, outcome="a", amount=amount)
    assert o.status == "matched"
    assert o.clob_price == D(book.asks[1].price)
    assert o.avg_fill_price is not None
    assert D(book.asks[0].price) < o.avg_fill_price < D(book.asks[1].price)
    # the signed amounts are the core's market_amounts at the worst price
    amounts = market_amounts("BUY", o.clob_price, amount)
    assert o.making_amount * 10**6 == amounts.maker_amount
    assert o.taking_amount * 10**6 == amounts.taker_amount
    ok(engine)


def test_fok_too_big_for_the_book_is_killed_entirely(engine: Engine) -> None:
    m = book_market(engine)
    engine.deposit(TRADER, 40_000)
    before = engine.balances(TRADER)
    o = place(engine, market_id=m.id, outcome="a", amount=45_000)
    assert o.status == "cancelled"
    assert o.size_matched == 0
    assert o.tx_hashes == ()
    assert engine.balances(TRADER) == before
    assert engine.shares(TRADER, m.fx.token_id_a) == (D(0), D(0))
    ok(engine)


def test_fok_on_a_market_without_book_is_killed(engine: Engine) -> None:
    m = bookless_market(engine)
    o = place(engine, market_id=m.id, outcome="b", amount=10)
    assert o.status == "cancelled"
    assert o.size_matched == 0
    assert engine.balances(TRADER).cash == 10_000


def test_fok_limit_price_caps_the_walk(engine: Engine) -> None:
    m = book_market(engine)
    book = engine.orderbook(m.fx.token_id_a)
    assert book is not None
    best = D(book.asks[0].price)
    o = place(
        engine,
        market_id=m.id,
        outcome="a",
        amount=int(D(book.asks[0].size)) + 50,
        limit_price=best,
    )
    assert o.status == "cancelled"
    assert o.clob_price == best
    o = place(engine, market_id=m.id, outcome="a", amount=20, limit_price=best)
    assert o.status == "matched"


def test_fok_sell_closes_a_position(engine: Engine) -> None:
    m = book_market(engine)
    bought = place(engine, market_id=m.id, outcome="b", amount=200)
    shares = bought.size_matched
    best_bid = D(m.own_best("b")[0] or 0) / 100
    sold = place(engine, market_id=m.id, side="SELL", outcome="b", shares=str(shares))
    assert sold.status == "matched"
    assert sold.avg_fill_price == best_bid
    left, _ = engine.shares(TRADER, m.fx.token_id_b)
    assert 0 <= left < D("0.01")  # SELL shares are floored to 2 decimals
    assert engine.balances(TRADER).cash < 10_000  # paid the spread
    ok(engine)


def test_sell_fok_may_name_the_token_by_token_option(engine: Engine) -> None:
    m = book_market(engine)
    place(engine, market_id=m.id, outcome="a", amount=50)
    o = place(engine, market_id=m.id, side="SELL", token_option="yes", shares=10)
    assert o.status == "matched"
    assert o.outcome == "a"


# -- limit orders -------------------------------------------------------------------------------


def test_gtc_buy_rests_and_reserves_exactly(engine: Engine) -> None:
    m = book_market(engine)
    price = D(m.best_bid() or 0) / 100 - D("0.01")
    o = place(
        engine, market_id=m.id, order_type="GTC", token_option="yes", limit_price=price, amount=61
    )
    assert o.status == "live"
    assert o.size_matched == 0
    shares = o.original_size
    assert shares == (D(61) / price).quantize(D("0.01"), rounding="ROUND_DOWN")
    assert o.amount == shares * price
    bal = engine.balances(TRADER)
    assert bal.cash_reserved == shares * price
    assert bal.cash == 10_000 - shares * price
    book = engine.orderbook(m.fx.token_id_a)
    assert book is not None
    level = next(lv for lv in book.bids if D(lv.price) == price)
    house = sum(n for p, n in m.level_sizes(0) if p == int(price * 100))  # includes our order
    assert D(level.size) == D(house * int(price * 100) // 100) / 10**6
    ok(engine)


def test_marketable_limit_crosses_at_the_resting_price_and_refunds_the_improvement(
    engine: Engine,
) -> None:
    m = book_market(engine)
    ask = m.best_ask() or 0
    limit = D(ask + 2) / 100
    o = place(
        engine, market_id=m.id, order_type="GTC", token_option="yes", limit_price=limit, amount=20
    )
    assert o.status == "matched"
    assert o.avg_fill_price == D(ask) / 100
    paid = 10_000 - engine.balances(TRADER).cash
    assert paid == o.original_size * D(ask) / 100  # not at the limit price
    assert engine.balances(TRADER).cash_reserved == 0
    ok(engine)


def test_partial_fills_grow_size_matched_then_match(engine: Engine) -> None:
    m = book_market(engine)
    price = D(m.best_bid() or 0) / 100
    o = place(
        engine, market_id=m.id, order_type="GTC", token_option="yes", limit_price=price, amount=30
    )
    size = o.original_size
    filled = engine.house_fill(o.id, "10")
    assert filled.status == "live"
    assert filled.size_matched == 10
    assert engine.shares(TRADER, m.fx.token_id_a)[0] == 10
    assert engine.balances(TRADER).cash_reserved == (size - 10) * price
    filled = engine.house_fill(o.id, size)  # more than is left: fills the rest
    assert filled.status == "matched"
    assert filled.size_matched == size
    assert engine.balances(TRADER).cash_reserved == 0
    assert engine.balances(TRADER).cash == 10_000 - size * price
    assert len(filled.tx_hashes) == 2
    ok(engine)
    with pytest.raises(Rejected):
        engine.house_fill(o.id, 1)


def test_house_fills_resting_sells_and_outcome_b_orders(engine: Engine) -> None:
    m = book_market(engine)
    place(engine, market_id=m.id, outcome="b", amount=100)
    ask_b = m.own_best("b")[1] or 0
    sell = place(
        engine,
        market_id=m.id,
        order_type="GTC",
        side="SELL",
        token_option="no",
        limit_price=D(ask_b + 3) / 100,
        shares=20,
    )
    assert sell.status == "live"
    bid_b = m.own_best("b")[0] or 0
    buy = place(
        engine,
        market_id=m.id,
        order_type="GTC",
        token_option="no",
        limit_price=D(bid_b - 1) / 100,
        amount=10,
    )
    for o in (sell, buy):
        assert engine.house_fill(o.id, 5).size_matched == 5
    ok(engine)


def test_limit_sell_rests_and_reserves_shares(engine: Engine) -> None:
    m = book_market(engine)
    bought = place(engine, market_id=m.id, outcome="a", amount=100)
    ask = m.best_ask() or 0
    o = place(
        engine,
        market_id=m.id,
        order_type="GTC",
        side="SELL",
        token_option="yes",
        limit_price=D(ask + 5) / 100,
        shares=50,
    )
    assert o.status == "live"
    assert o.original_size == 50
    shares, reserved = engine.shares(TRADER, m.fx.token_id_a)
    assert shares == bought.size_matched
    assert reserved == 50
    with pytest.raises(Rejected) as info:  # only the unreserved shares can be sold
        place(engine, market_id=m.id, side="SELL", outcome="a", shares=str(shares - 49))
    assert info.value.status == 400
    assert info.value.error == "insufficient balance"
    ok(engine)


def test_users_trade_with_each_other_transfer_mint_and_merge(engine: Engine) -> None:
    m = book_market(engine)
    mid = m.mid or 0
    # mint: a BUY of a at the mid rests; a BUY of b at 1 - mid crosses it
    bid = place(
        engine,
        MAKER,
        market_id=m.id,
        order_type="GTC",
        token_option="yes",
        limit_price=D(mid) / 100,
        amount=50,
    )
    assert bid.status == "live"
    taker = place(
        engine,
        TRADER,
        market_id=m.id,
        order_type="GTC",
        token_option="no",
        limit_price=D(100 - mid) / 100,
        amount=10,
    )
    assert taker.status == "matched"
    n = taker.size_matched
    assert engine.order(bid.id).size_matched == n
    assert m.collateral == int(n * 10**6)
    ok(engine)
    # transfer: the maker sells a to a trader's resting bid
    resting = place(
        engine,
        TRADER,
        market_id=m.id,
        order_type="GTC",
        token_option="yes",
        limit_price=D(mid) / 100,
        amount=20,
    )
    assert resting.status == "live"
    engine.cancel_order(MAKER, bid.id)
    before = engine.balances(MAKER).cash
    sold = place(engine, MAKER, market_id=m.id, side="SELL", outcome="a", shares=5)
    assert sold.status == "matched"
    assert sold.avg_fill_price == D(mid) / 100
    assert engine.balances(MAKER).cash == before + 5 * D(mid) / 100
    ok(engine)
    # merge: the trader (holding b) sells b while the maker's SELL of a rests at the mid
    engine.cancel_order(TRADER, resting.id)
    ask = place(
        engine,
        MAKER,
        market_id=m.id,
        order_type="GTC",
        side="SELL",
        token_option="yes",
        limit_price=D(mid) / 100,
        shares=3,
    )
    assert ask.status == "live"
    collateral = m.collateral
    merged = place(
        engine,
        TRADER,
        market_id=m.id,
        order_type="GTC",
        side="SELL",
        token_option="no",
        limit_price=D(100 - mid) / 100,
        shares=3,
    )
    assert merged.status == "matched"
    assert m.collateral == collateral - 3 * 10**6
    ok(engine)


# -- expiry and cancel --------------------------------------------------------------------------


def test_gtd_expires_automatically(engine: Engine, clock: Clock) -> None:
    m = book_market(engine)
    expiration = int(clock.t) + 10
    o = place(
        engine,
        market_id=m.id,
        order_type="GTD",
        token_option="yes",
        limit_price=D(m.best_bid() or 0) / 100,
        amount=25,
        expiration=expiration,
    )
    assert o.status == "live"
    assert o.expiration == expiration
    clock.advance(9)
    engine.tick()
    assert engine.order(o.id).status == "live"
    clock.advance(1)
    engine.tick()
    assert engine.order(o.id).status == "cancelled"
    after = engine.balances(TRADER)
    assert (after.cash, after.cash_reserved) == (D(10_000), D(0))
    ok(engine)


def test_gtd_needs_a_future_expiration(engine: Engine, clock: Clock) -> None:
    m = book_market(engine)
    base = {
        "market_id": m.id,
        "order_type": "GTD",
        "token_option": "yes",
        "limit_price": "0.2",
        "amount": 5,
    }
    for exp in (None, int(clock.t), int(clock.t) - 5, "soon", True):
        err = rejected(engine.place_order, TRADER, base | {"expiration": exp})
        assert err.status == 400
        assert err.error == "invalid request body"


def test_cancel_rules(engine: Engine) -> None:
    m = book_market(engine)
    price = D(m.best_bid() or 0) / 100 - D("0.02")
    o = place(
        engine, market_id=m.id, order_type="GTC", token_option="yes", limit_price=price, amount=40
    )
    assert engine.cancel_order(TRADER, o.id) == Cancelled(o.id, "cancelled")
    assert engine.balances(TRADER).cash == 10_000
    assert engine.balances(TRADER).cash_reserved == 0
    again = rejected(engine.cancel_order, TRADER, o.id)
    assert again.status == 400
    assert again.code == "ORDER_NOT_CANCELLABLE"
    fok = place(engine, market_id=m.id, outcome="a", amount=5)
    err = rejected(engine.cancel_order, TRADER, fok.id)
    assert err.status == 400
    assert "FOK" in (err.detail or "")
    live = place(
        engine, market_id=m.id, order_type="GTC", token_option="yes", limit_price=price, amount=5
    )
    other = rejected(engine.cancel_order, MAKER, live.id)
    assert (other.status, other.error) == (404, "order not found")
    unknown = rejected(engine.cancel_order, TRADER, "00000000-0000-0000-0000-000000000000")
    assert (unknown.status, unknown.error) == (404, "order not found")
    ok(engine)


# -- balance, limits, risk ----------------------------------------------------------------------


def test_insufficient_balance(engine: Engine) -> None:
    m = book_market(engine)
    err = rejected(
        engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": 10_001}
    )
    assert (err.status, err.error) == (400, "insufficient balance")
    err = rejected(engine.place_order, READER, {"market_id": m.id, "outcome": "a", "amount": 5})
    assert (err.status, err.error) == (400, "insufficient balance")
    err = rejected(
        engine.place_order,
        TRADER,
        {"market_id": m.id, "side": "SELL", "outcome": "a", "shares": 10},
    )
    assert (err.status, err.error) == (400, "insufficient balance")
    ok(engine)


def test_min_order_size(engine: Engine) -> None:
    m = book_market(engine)
    err = rejected(
        engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": "0.99"}
    )
    assert err.status == 400
    assert "min_order_size" in (err.detail or "")


def test_single_order_maximum_applies_to_everyone() -> None:
    engine = make_engine({"risk": None})
    engine.deposit(TRADER, 100_000)
    m = book_market(engine)
    err = rejected(
        engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": "50000.01"}
    )
    assert (err.status, err.code) == (500, "ORDER_FAILED_PLACE_BET")
    place(
        engine, market_id=m.id, outcome="a", amount=50_000
    )  # accepted (and killed: the book is thinner)


def test_per_minute_frequency_limit(clock: Clock) -> None:
    engine = make_engine({"risk": {"per_minute": 3}}, clock)
    m = book_market(engine)
    for _ in range(3):
        place(engine, market_id=m.id, outcome="a", amount=2)
    err = rejected(engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": 2})
    assert (err.status, err.code) == (500, "ORDER_FAILED_PLACE_BET")
    place(engine, MAKER, market_id=m.id, outcome="a", amount=2)  # per user
    clock.advance(60)
    place(engine, market_id=m.id, outcome="a", amount=2)


def test_daily_and_monthly_limits(clock: Clock) -> None:
    clock.t = 1_801_958_400.0  # 2027-02-07T00:00:00Z: one more day stays in February
    engine = make_engine({"risk": {"daily": "10", "monthly": "15", "per_minute": None}}, clock)
    m = book_market(engine)
    place(engine, market_id=m.id, outcome="a", amount=6)
    err = rejected(engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": 5})
    assert err.code == "ORDER_FAILED_PLACE_BET"
    assert "daily" in (err.detail or "")
    place(engine, market_id=m.id, outcome="a", amount=4)
    clock.advance(86_400)
    err = rejected(engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": 6})
    assert err.code == "ORDER_FAILED_PLACE_BET"
    assert "monthly" in (err.detail or "")
    place(engine, market_id=m.id, outcome="a", amount=5)
    clock.t = 1_803_859_200.0  # 2027-03-01: a new month
    place(engine, market_id=m.id, outcome="a", amount=10)


def test_per_order_risk_limit_exempts_bonus_funded_orders(clock: Clock) -> None:
    users = [
        {
            "user_id": TRADER,
            "api_key": "k1",
            "api_secret": "s1",
            "balance": "1000",
            "bonus_balance": "100",
        },
    ]
    engine = make_engine({"users": users, "risk": {"per_order": "50", "per_minute": 2}}, clock)
    m = book_market(engine)
    bonus = place(engine, market_id=m.id, outcome="a", amount=60)  # bonus covers it: exempt
    assert bonus.status == "matched"
    assert engine.balances(TRADER).bonus <= D("40.000001")  # one unit of dust at most
    err = rejected(engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": 60})
    assert (err.status, err.code) == (500, "ORDER_FAILED_PLACE_BET")  # cash-funded: limited
    place(engine, market_id=m.id, outcome="a", amount=45)
    place(engine, market_id=m.id, outcome="a", amount=45)
    err = rejected(engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": 45})
    assert "minute" in (err.detail or "")
    place(engine, market_id=m.id, outcome="a", amount=30)  # bonus again: exempt from frequency too
    assert positions(engine)[0]["is_bonus"] is True
    portfolio = engine.portfolio_orders(TRADER).items
    assert [o.is_bonus for o in portfolio] == [True, False, False, True]
    ok(engine)


# -- positions, settlement ----------------------------------------------------------------------


def test_position_fields_follow_fills(engine: Engine) -> None:
    m = book_market(engine)
    first = place(engine, market_id=m.id, outcome="a", amount=100)
    second = place(engine, market_id=m.id, outcome="a", amount=50)
    pos = positions(engine)[0]
    shares = first.size_matched + second.size_matched
    cost = 10_000 - engine.balances(TRADER).cash
    assert pos["shares"] == shares
    assert pos["bet_amount"] == cost
    assert pos["avg_cost"] == (cost / shares).quantize(D("0.000001"))
    bid = D(m.own_best("a")[0] or 0) / 100
    assert pos["best_bid"] == bid
    assert pos["best_ask"] == D(m.own_best("a")[1] or 0) / 100
    assert pos["current_value"] == (shares * bid).quantize(D("0.000001"))
    assert pos["pnl"] == pos["current_value"] - cost
    assert pos["expected_win_amount"] == shares
    assert pos["raw_outcome"] == "a"
    assert pos["outcome"] == m.fx.outcome_a
    assert pos["can_cashout"] is True
    assert pos["market_status"] == "active"
    sold = place(engine, market_id=m.id, side="SELL", outcome="a", shares=10)
    pos = positions(engine)[0]
    assert pos["shares"] == shares - sold.size_matched
    assert pos["avg_cost"] == (cost / shares).quantize(D("0.000001"))  # selling keeps the average


def test_settlement_pays_winners_and_marks_orders(engine: Engine) -> None:
    m = book_market(engine)
    win = place(engine, market_id=m.id, outcome="a", amount=100)
    lose = place(engine, MAKER, market_id=m.id, outcome="b", amount=100)
    resting = place(
        engine,
        MAKER,
        market_id=m.id,
        order_type="GTC",
        token_option="yes",
        limit_price="0.05",
        amount=10,
    )
    cash_trader = engine.balances(TRADER).cash
    result = engine.settle(m.id, "a")
    assert result.winner == "a"
    assert result.payouts == win.size_matched
    assert engine.balances(TRADER).cash == cash_trader + win.size_matched
    assert engine.balances(TRADER).payouts == win.size_matched
    assert D(9900) <= engine.balances(MAKER).cash <= D("9900.000001")  # the stake is lost
    w, lo = engine.order(win.id), engine.order(lose.id)
    assert (w.status, w.settlement_status, w.settlement_amount) == (
        "won",
        "won",
        win.size_matched,
    )
    assert (lo.status, lo.settlement_status, lo.settlement_amount) == ("lost", "lost", D(0))
    assert w.settled_ms is not None
    assert engine.order(resting.id).status == "cancelled"
    assert positions(engine) == []
    assert engine.orderbook(m.fx.token_id_a) is None
    assert m.collateral == 0
    err = rejected(engine.settle, m.id, "b")
    assert err.status == 400
    err = rejected(engine.place_order, TRADER, {"market_id": m.id, "outcome": "a", "amount": 5})
    assert err.status == 400
    assert err.code == "MARKET_NOT_ACTIVE"
    assert engine.market(m.id).fx.status == "resolved"
    ok(engine)


def test_event_ends_when_all_its_markets_settle(engine: Engine) -> None:
    event = next(e for e in engine.events.values() if len(e.market_ids) == 3 and not e.ended)
    for i, market_id in enumerate(event.market_ids):
        assert engine.event(event.id).ended is False
        engine.settle(market_id, "a" if i == 0 else "b")
    with engine.reading():
        detail = views.event_detail(engine, engine.event(event.id))
    assert detail["ended"] is True
    assert detail["live"] is False
    ok(engine)


# -- take profit / stop loss --------------------------------------------------------------------


def test_take_profit_and_stop_loss_exit_automatically(engine: Engine) -> None:
    m = book_market(engine)
    mid = m.mid or 0
    tp = place(engine, market_id=m.id, outcome="a", amount=50, take_profit_price=D(mid + 4) / 100)
    sl = place(
        engine, MAKER, market_id=m.id, outcome="a", amount=50, stop_loss_price=D(mid - 5) / 100
    )
    engine.set_price(m.id, D(mid + 5) / 100)  # best bid = mid + 4: take profit fires
    exits = [o for o in engine.list_orders(TRADER).items if o.order_source == "take_profit"]
    assert len(exits) == 1
    assert exits[0].order_source_id == tp.id
    assert exits[0].side == "SELL"
    assert exits[0].status == "matched"
    assert exits[0].size_matched == tp.size_matched
    assert engine.shares(TRADER, m.fx.token_id_a) == (D(0), D(0))
    assert engine.balances(TRADER).cash > 10_000  # profit taken
    assert not [o for o in engine.list_orders(MAKER).items if o.order_source != "manual"]
    engine.set_price(m.id, D(mid - 4) / 100)  # best bid = mid - 5: stop loss fires
    exits = [o for o in engine.list_orders(MAKER).items if o.order_source == "stop_loss"]
    assert len(exits) == 1
    assert exits[0].order_source_id == sl.id
    assert engine.balances(MAKER).cash < 10_000
    engine.set_price(m.id, D(mid + 6) / 100)  # fired once only
    assert len(engine.list_orders(TRADER).items) == 2
    ok(engine)


def test_take_profit_and_stop_loss_are_validated(engine: Engine) -> None:
    m = book_market(engine)
    base = {"market_id": m.id, "outcome": "a", "amount": 5}
    for extra in (
        {"take_profit_price": 1},
        {"stop_loss_price": "0.001"},
        {"take_profit_price": "0.3", "stop_loss_price": "0.4"},
    ):
        assert rejected(engine.place_order, TRADER, base | extra).status == 400


# -- lifecycle and events -----------------------------------------------------------------------


def test_every_order_walks_pending_signing_submitted_live(engine: Engine) -> None:
    seen: list[EngineEvent] = []
    engine.add_listener(seen.extend)
    engine.watch_user(TRADER, +1)
    m = book_market(engine)
    fok = place(engine, market_id=m.id, outcome="a", amount=10)
    statuses = [e.data.status for e in seen if e.kind == "order" and e.data and e.data.id == fok.id]
    assert statuses[:4] == ["pending", "signing", "submitted", "live"]
    assert statuses[-1] == "matched"
    assert {e.key for e in seen if e.kind == "book"} >= {m.id}
    seen.clear()
    killed = place(engine, market_id=bookless_market(engine).id, outcome="a", amount=10)
    statuses = [
        e.data.status for e in seen if e.kind == "order" and e.data and e.data.id == killed.id
    ]
    assert statuses == ["pending", "signing", "submitted", "live", "cancelled"]
    seen.clear()
    engine.watch_user(TRADER, -1)
    place(engine, market_id=m.id, outcome="a", amount=10)
    assert not [e for e in seen if e.kind == "order"]  # nobody watches: no records built


def test_processing_delay_shows_every_status(clock: Clock) -> None:
    engine = make_engine({"processing_delay_ms": 100}, clock)
    m = book_market(engine)
    o = place(engine, market_id=m.id, outcome="a", amount=10)
    statuses = [o.status]
    for _ in range(4):
        clock.advance(0.1)
        engine.tick()
        statuses.append(engine.order(o.id).status)
    assert statuses == ["pending", "signing", "submitted", "matched", "matched"]
    assert engine.list_orders(TRADER, status="matched").total_count == 1
    limit = place(
        engine, market_id=m.id, order_type="GTC", token_option="yes", limit_price="0.05", amount=5
    )
    assert engine.list_orders(TRADER, status="pending").total_count == 1
    err = rejected(engine.cancel_order, TRADER, limit.id)
    assert err.status == 400
    assert positions(engine)[0]["confirming"] is True
    clock.advance(0.3)
    engine.tick()
    assert positions(engine)[0]["confirming"] is False
    assert engine.list_orders(TRADER, status="live").total_count == 1
    ok(engine)


# -- raw orders ---------------------------------------------------------------------------------


def raw_body(engine: Engine, m: Any, **kw: Any) -> dict[str, Any]:
    ask = m.best_ask() or 0
    body = {
        "market_id": m.id,
        "outcome": "a",
        "token_id": m.fx.token_id_a,
        "maker_amount": str(10 * ask * 10_000),  # 10 shares at the best ask
        "taker_amount": str(10 * 10**6),
        "side": 0,
        "fee_rate_bps": m.fx.fee_rate_bps,
        "order_type": "FOK",
        "salt": "12345",
    }
    body.update(kw)
    return body


def test_raw_order_id_matches_a_client_precomputed_one(engine: Engine) -> None:
    for neg_risk in (False, True):
        m = book_market(engine, neg_risk=neg_risk)
        body = raw_body(engine, m, salt=str(1000 + neg_risk), nonce="7")
        expected = OrderHasher(engine.wallet(TRADER)).order_id(
            token_id=body["token_id"],
            maker_amount=body["maker_amount"],
            taker_amount=body["taker_amount"],
            side=0,
            salt=body["salt"],
            fee_rate_bps=body["fee_rate_bps"],
            nonce=7,
            neg_risk=neg_risk,
        )
        result = engine.place_raw_order(TRADER, body)
        assert result.notification_id == ""
        o = engine.order(result.order_id)
        assert o.clob_order_id == expected
        assert o.status == "matched"
        assert o.size_matched == 10
        assert o.order_source == "raw"
    ok(engine)


def test_post_orders_clob_id_is_the_hash_of_its_amounts(engine: Engine) -> None:
    m = book_market(engine)
    o = place(
        engine, market_id=m.id, order_type="GTC", token_option="no", limit_price="0.1", amount=5
    )
    order = next(x for x in engine.orders.values() if x.id == o.id)
    expected = OrderHasher(engine.wallet(TRADER)).order_id(
        token_id=m.fx.token_id_b,
        maker_amount=order.maker_amount,
        taker_amount=order.taker_amount,
        side=0,
        salt=order.salt,
        fee_rate_bps=m.fx.fee_rate_bps,
        neg_risk=m.fx.neg_risk,
    )
    assert o.clob_order_id == expected


def test_raw_client_order_id_is_idempotent(engine: Engine) -> None:
    m = book_market(engine)
    body = raw_body(
        engine,
        m,
        client_order_id="bot-1",
        order_type="GTC",
        salt="1",
        maker_amount="1000000",
        taker_amount="10000000",
    )  # 10 shares at 0.10: rests
    first = engine.place_raw_order(TRADER, body)
    again = engine.place_raw_order(TRADER, body | {"salt": "2"})
    assert first == again
    assert len(engine.list_orders(TRADER).items) == 1
    assert engine.balances(TRADER).cash_reserved == 1
    assert engine.order(first.order_id).order_source_id == "bot-1"
    # another user may use the same key
    other = engine.place_raw_order(MAKER, body)
    assert other.order_id != first.order_id
    err = rejected(engine.place_raw_order, TRADER, body | {"client_order_id": "x" * 65})
    assert err.status == 400
    ok(engine)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"salt": str(10**12 + 1)}, "ORDER_INVALID_SALT"),
        ({"salt": "-1"}, "ORDER_INVALID_SALT"),
        ({"salt": "1.5"}, "ORDER_INVALID_SALT"),
        ({"maker_amount": "-5"}, "ORDER_INVALID_MAKER_AMOUNT"),
        ({"maker_amount": "1e6"}, "ORDER_INVALID_MAKER_AMOUNT"),
        ({"maker_amount": 1000000}, "ORDER_INVALID_MAKER_AMOUNT"),
        ({"maker_amount": "0"}, "ORDER_INVALID_PRICE"),  # a well-formed amount: the ratio rule
        ({"taker_amount": "0"}, "ORDER_INVALID_PRICE"),
        ({"maker_amount": str(2**256)}, "ORDER_INVALID_MAKER_AMOUNT"),
        ({"taker_amount": "abc"}, "ORDER_INVALID_TAKER_AMOUNT"),
        ({"taker_amount": ""}, "ORDER_INVALID_TAKER_AMOUNT"),
        ({"taker_amount": None}, "ORDER_INVALID_TAKER_AMOUNT"),
        ({"maker_amount": "10000000", "taker_amount": "10000000"}, "ORDER_INVALID_PRICE"),
        ({"maker_amount": "20000000", "taker_amount": "10000000"}, "ORDER_INVALID_PRICE"),
        ({"maker_amount": "1", "taker_amount": "1000"}, "ORDER_INVALID_PRICE"),  # rounds to 0.00
        ({"fee_rate_bps": 999}, "ORDER_INVALID_FEE_RATE"),
        ({"token_id": "123"}, "ORDER_INVALID_TOKEN"),
        ({"outcome": "b"}, "ORDER_INVALID_TOKEN"),
        ({"side": 2}, None),
        ({"side": "BUY"}, None),
        ({"order_type": "IOC"}, None),
        ({"nonce": "x"}, None),
        ({"expiration": "100"}, None),  # expiration only for GTD
    ],
)
def test_raw_order_rules(engine: Engine, change: dict[str, Any], code: str | None) -> None:
    m = book_market(engine)
    err = rejected(engine.place_raw_order, TRADER, raw_body(engine, m, **change))
    assert err.status == 400
    assert err.code == code
    assert err.error == "invalid request body"


def test_raw_sell_implied_price_is_taker_over_maker(engine: Engine) -> None:
    m = book_market(engine)
    place(engine, market_id=m.id, outcome="a", amount=100)
    bid = m.best_bid() or 0
    body = raw_body(
        engine, m, side=1, maker_amount=str(10 * 10**6), taker_amount=str(10 * bid * 10_000)
    )
    o = engine.order(engine.place_raw_order(TRADER, body).order_id)
    assert o.status == "matched"
    assert o.avg_fill_price == D(bid) / 100
    assert o.clob_price == D(bid) / 100


def test_raw_off_grid_price_rests_on_the_grid_against_the_order(engine: Engine) -> None:
    m = book_market(engine)
    # BUY 3 shares paying 0.3337 USDC each: rests at 0.33, pays 0.99 per 3 shares, refunds the rest
    body = raw_body(
        engine, m, order_type="GTC", maker_amount="1001100", taker_amount="3000000", salt="9"
    )
    o = engine.order(engine.place_raw_order(TRADER, body).order_id)
    assert o.status == "live"
    assert o.clob_price == D("0.3337")
    assert any(p == 33 for p, _ in m.level_sizes(0))
    filled = engine.house_fill(o.id, 3)
    assert filled.status == "matched"
    assert filled.avg_fill_price == D("0.33")
    assert engine.balances(TRADER).cash == 10_000 - D("0.99")
    ok(engine)


def test_duplicate_raw_order_is_refused(engine: Engine) -> None:
    m = book_market(engine)
    body = raw_body(engine, m, order_type="GTC", maker_amount="1000000", taker_amount="10000000")
    engine.place_raw_order(TRADER, body)
    err = rejected(engine.place_raw_order, TRADER, body)
    assert (err.status, err.code) == (400, "ORDER_DUPLICATE")


def test_raw_gtd_expires(engine: Engine, clock: Clock) -> None:
    m = book_market(engine)
    body = raw_body(
        engine,
        m,
        order_type="GTD",
        expiration=str(int(clock.t) + 5),
        maker_amount="1000000",
        taker_amount="10000000",
    )
    o = engine.place_raw_order(TRADER, body)
    clock.advance(5)
    engine.tick()
    assert engine.order(o.order_id).status == "cancelled"
    ok(engine)


# -- request validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"market_id": "not-a-uuid"},
        {"market_id": 5},
        {"outcome": "c"},
        {"outcome": None},
        {"amount": -1},
        {"amount": 0},
        {"amount": "lots"},
        {"amount": True},
        {"amount": None},
        {"side": "buy"},
        {"order_type": "IOC"},
        {"order_type": "GTC"},  # no limit_price / token_option
        {"order_type": "GTC", "token_option": "yes"},  # no limit_price
        {"order_type": "GTC", "limit_price": "0.5"},  # no token_option
        {"order_type": "GTC", "token_option": "maybe", "limit_price": "0.5"},
        {"order_type": "GTC", "token_option": "yes", "limit_price": "0.505"},
        {"order_type": "GTC", "token_option": "yes", "limit_price": 1},
        {"order_type": "GTC", "token_option": "yes", "limit_price": "0"},
        {"order_type": "GTC", "token_option": "no", "outcome": "a", "limit_price": "0.5"},
        {"side": "SELL", "amount": None},  # no shares
        {"amount": "0.001"},
    ],
)
def test_bad_order_bodies_are_400(engine: Engine, change: dict[str, Any]) -> None:
    m = book_market(engine)
    body = {"market_id": m.id, "outcome": "a", "amount": 10} | change
    body = {k: v for k, v in body.items() if v is not None}
    err = rejected(engine.place_order, TRADER, body)
    assert (err.status, err.error) == (400, "invalid request body")
    ok(engine)


def test_unknown_market_is_404(engine: Engine) -> None:
    err = rejected(
        engine.place_order,
        TRADER,
        {"market_id": "00000000-0000-0000-0000-000000000000", "outcome": "a", "amount": 5},
    )
    assert (err.status, err.error) == (404, "Market not found")


def test_two_engines_share_nothing() -> None:
    a, b = make_engine(), make_engine()
    m = book_market(a)
    place(a, market_id=m.id, outcome="a", amount=10)
    assert b.balances(TRADER).cash == 10_000
    assert b.list_orders(TRADER).total_count == 0
    assert a.wallet(TRADER) == b.wallet(TRADER)  # deterministic per user
    assert a.wallet(TRADER).maker != a.wallet(MAKER).maker
    assert [e.id for e in a.events.values()] == [e.id for e in b.events.values()]
