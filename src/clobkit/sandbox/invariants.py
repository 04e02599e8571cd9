"""The sandbox's invariants: every rule its state must satisfy, checked from scratch.

``violations`` recomputes every reservation, the money total and each
market's supply and book from the records and describes each mismatch; the
engine's ``check_invariants`` calls it under the lock (tests, admin).
"""

from __future__ import annotations

from typing import NamedTuple

from ..core.spec import LIVE, MATCHED
from .state import ASK, BID, BUY, FOK, Account, EngineState, MarketState

__all__ = ["violations"]


def violations(state: EngineState) -> list[str]:
    """Every violated invariant of ``state``, described (empty when all hold)."""
    errors: list[str] = []
    reserved = _open_reservations(state, errors)
    supply: dict[str, int] = {}
    users_total = sum(
        _account_violations(account, reserved, supply, errors)
        for account in state.accounts.values()
    )
    for token, n in state.house_shares.items():
        if n < 0:
            errors.append(f"house holds {n} of {token[:12]}")
        supply[token] = supply.get(token, 0) + n
    collateral = 0
    for market in state.markets.values():
        collateral += market.collateral
        errors.extend(_market_violations(state, market, supply))
    errors.extend(_order_violations(state))
    total = users_total + state.house_usdc + collateral
    if total != state.deposits:
        errors.append(
            f"money: users {users_total} + house {state.house_usdc} + collateral {collateral}"
            f" = {total} != deposits {state.deposits}"
        )
    return errors


class _Reserved(NamedTuple):
    """What the open user orders hold: USDC per user (cash, bonus), shares per (user, token)."""

    cash: dict[str, int]
    bonus: dict[str, int]
    shares: dict[tuple[str, str], int]


def _open_reservations(state: EngineState, errors: list[str]) -> _Reserved:
    """The reservations the open user orders account for (an overspent BUY is an error)."""
    reserved = _Reserved({}, {}, {})
    for order in state.open_orders.values():
        if order.house:
            continue
        if order.side == BUY:
            bucket = reserved.bonus if order.funding == "bonus" else reserved.cash
            bucket[order.user_id] = bucket.get(order.user_id, 0) + order.reserved - order.usdc
            if order.usdc > order.reserved:
                errors.append(f"order {order.id}: spent {order.usdc} > reserved {order.reserved}")
        else:
            key = (order.user_id, order.token_id)
            reserved.shares[key] = reserved.shares.get(key, 0) + order.size - order.matched
    return reserved


def _account_violations(
    account: Account, reserved: _Reserved, supply: dict[str, int], errors: list[str]
) -> int:
    """Check one account's balances and positions against its orders; add its shares to
    ``supply``; its USDC total (units)."""
    uid = account.user_id
    buckets = {
        "cash": account.cash,
        "cash_reserved": account.cash_reserved,
        "bonus": account.bonus,
        "bonus_reserved": account.bonus_reserved,
    }
    errors.extend(f"user {uid}: {k} is negative ({v})" for k, v in buckets.items() if v < 0)
    want_cash, want_bonus = reserved.cash.get(uid, 0), reserved.bonus.get(uid, 0)
    if account.cash_reserved != want_cash:
        errors.append(f"user {uid}: cash_reserved {account.cash_reserved} != {want_cash}")
    if account.bonus_reserved != want_bonus:
        errors.append(f"user {uid}: bonus_reserved {account.bonus_reserved} != {want_bonus}")
    for token, pos in account.positions.items():
        where = f"user {uid} token {token[:12]}"
        if pos.shares < 0 or pos.reserved < 0 or pos.reserved > pos.shares or pos.cost < 0:
            errors.append(f"{where}: shares {pos.shares} reserved {pos.reserved} cost {pos.cost}")
        want = reserved.shares.get((uid, token), 0)
        if pos.reserved != want:
            errors.append(f"{where}: reserved {pos.reserved} != open SELL orders {want}")
        supply[token] = supply.get(token, 0) + pos.shares
    return sum(buckets.values())


def _order_violations(state: EngineState) -> list[str]:
    """Live limit orders off the book; fills beyond an order's size (or short of a matched one)."""
    errors = [
        f"order {o.id}: live limit order not on the book"
        for o in state.open_orders.values()
        if o.status == LIVE and o.order_type != FOK and not o.resting
    ]
    errors.extend(
        f"order {o.id}: size_matched {o.matched} vs size {o.size} ({o.status})"
        for o in state.orders.values()
        if o.matched > o.size or (o.status == MATCHED and o.matched != o.size)
    )
    return errors


def _market_violations(
    state: EngineState, market: MarketState, supply: dict[str, int]
) -> list[str]:
    errors = []
    sa, sb = supply.get(market.fx.token_id_a, 0), supply.get(market.fx.token_id_b, 0)
    if not sa == sb == market.collateral:
        errors.append(f"market {market.id}: supply a {sa}, b {sb}, collateral {market.collateral}")
    for side, book in ((BID, market.bids), (ASK, market.asks)):
        for price, level in enumerate(book):
            if not level:
                continue
            errors.extend(
                f"market {market.id}: bad resting order {o.id} ({o.status})"
                for o in level
                if not (
                    o.status == LIVE
                    and o.resting
                    and o.open_shares > 0
                    and o.a_side == side
                    and o.a_price == price
                    and o.id in state.open_orders
                )
            )
    bid, ask = market.best_bid(), market.best_ask()
    if bid is not None and ask is not None and bid >= ask:
        errors.append(f"market {market.id}: crossed book {bid} >= {ask}")
    if not market.active and (bid is not None or ask is not None):
        errors.append(f"market {market.id}: resolved but has a book")
    return errors
