"""The ledger: balances, positions, risk limits, the money side of fills, settlement and deposits.

Every USDC and share movement of a user or the house happens here; the book
(``book.py``) decides what fills, this module books it. Integers in 6-decimal
units throughout.
"""

from __future__ import annotations

import time

from ..core.spec import LOST, MATCHED, OUTCOME_A, OUTCOME_B, WON
from .errors import bad_body, risk
from .parse import decimal, scaled
from .state import BUY, UNIT, Account, EngineState, MarketState, Order

__all__ = ["RISK_MINUTE_MS", "Ledger"]

RISK_MINUTE_MS = 60_000  # the window of the per-minute order limit


def _utc_keys(ms: int) -> tuple[int, int]:
    t = time.gmtime(ms // 1000)
    return t.tm_year * 10000 + t.tm_mon * 100 + t.tm_mday, t.tm_year * 100 + t.tm_mon


class Ledger(EngineState):
    """Money and positions on top of the state; the book builds on it."""

    def _check_risk(self, account: Account, value: int, now: int) -> None:
        rc = self.config.risk
        if rc.per_order is not None and value > int(rc.per_order * UNIT):
            raise risk(f"order value exceeds the per-order limit of {rc.per_order} USDC")
        if rc.per_minute is not None:
            while account.minute and account.minute[0] <= now - RISK_MINUTE_MS:
                account.minute.popleft()
            if len(account.minute) >= rc.per_minute:
                raise risk(f"more than {rc.per_minute} orders in one minute")
        day, month = _utc_keys(now)
        day_units = account.day_units if account.day_key == day else 0
        month_units = account.month_units if account.month_key == month else 0
        if rc.daily is not None and day_units + value > int(rc.daily * UNIT):
            raise risk(f"the daily limit of {rc.daily} USDC would be exceeded")
        if rc.monthly is not None and month_units + value > int(rc.monthly * UNIT):
            raise risk(f"the monthly limit of {rc.monthly} USDC would be exceeded")

    def _record_risk(self, account: Account, value: int, now: int) -> None:
        account.minute.append(now)
        day, month = _utc_keys(now)
        if account.day_key != day:
            account.day_key, account.day_units = day, 0
        if account.month_key != month:
            account.month_key, account.month_units = month, 0
        account.day_units += value
        account.month_units += value

    # -- lifecycle -------------------------------------------------------------

    def _buy_fill(self, order: Order, n: int, pay: int, now: int) -> None:
        order.matched += n
        order.usdc += pay
        token = order.token_id
        if order.house:
            self.house_usdc -= pay
            self.house_shares[token] = self.house_shares.get(token, 0) + n
            return
        account = self.accounts[order.user_id]
        if order.funding == "bonus":
            account.bonus_reserved -= pay
        else:
            account.cash_reserved -= pay
        pos = self._position(account, order.market, order.outcome)
        if pos.shares == 0:
            pos.is_bonus = order.is_bonus
        pos.shares += n
        pos.cost += pay
        pos.updated_ms = now

    def _sell_fill(self, order: Order, n: int, receive: int, now: int) -> None:
        order.matched += n
        order.usdc += receive
        account = self.accounts[order.user_id]
        pos = self._position(account, order.market, order.outcome)
        removed = pos.cost * n // pos.shares
        pos.cost -= removed
        pos.realized += receive - removed
        pos.shares -= n
        pos.reserved -= n
        pos.updated_ms = now
        account.cash += receive

    def _pay_out(self, market: MarketState, winner: str, now: int) -> tuple[int, int]:
        """Settle a resolved market's money: 1 USDC per winning share, won/lost on its orders.

        Its open orders are already cancelled. Answers (USDC units paid to users,
        orders settled).
        """
        self._changed_users.update(self.accounts)
        win_token = market.token(winner)
        lose_token = market.token(OUTCOME_B if winner == OUTCOME_A else OUTCOME_A)
        paid = 0
        for account in self.accounts.values():
            for token in (win_token, lose_token):
                pos = account.positions.get(token)
                if pos is None or pos.shares == 0:
                    continue
                if token == win_token:
                    account.cash += pos.shares
                    account.payouts += pos.shares
                    market.collateral -= pos.shares
                    paid += pos.shares
                    pos.realized += pos.shares - pos.cost
                else:
                    pos.realized -= pos.cost
                pos.shares = pos.reserved = pos.cost = 0
                pos.updated_ms = now
        house_win = self.house_shares.pop(win_token, 0)
        self.house_shares.pop(lose_token, None)
        self.house_usdc += house_win
        market.collateral -= house_win
        settled = 0
        for order in self.orders.values():
            if order.market is not market or order.house or order.matched == 0:
                continue
            wins = (order.outcome == winner) == (order.side == BUY)
            order.settlement_status = WON if wins else LOST
            order.settlement_units = order.matched if order.side == BUY and wins else 0
            order.settled_ms = now
            order.updated_ms = now
            if order.status == MATCHED:
                order.status = WON if wins else LOST
            settled += 1
            self._emit_order(order)
        self._armed = {k: o for k, o in self._armed.items() if o.market is not market}
        return paid, settled

    def _credit(self, account: Account, amount: object, *, bonus: bool) -> None:
        """Credit ``amount`` USDC to a user's cash (or bonus); counted as a deposit."""
        number = decimal({"amount": amount}, "amount")
        if number is None:
            raise bad_body("amount is required")
        exact = scaled(number, UNIT)
        if exact != exact.to_integral_value():
            raise bad_body(f"amount has more than 6 decimals: {amount}")
        units = int(exact)
        if units <= 0:
            raise bad_body("amount must be positive")
        if bonus:
            account.bonus += units
        else:
            account.cash += units
        account.deposits += units
        self.deposits += units
        self._changed_users.add(account.user_id)
