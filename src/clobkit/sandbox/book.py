"""The order book and matching: admission, the processing steps, crossing, resting, finishing.

An order enters through ``_admit`` (limits, balance and risk via the ledger,
then reserve and record), steps pending -> signing -> submitted -> live,
crosses the book price level by price level (``_plan`` / ``_fill``, the money
booked by the ledger), then rests or finishes. One book per market, in the
price space of outcome a (see ``engine.py``).
"""

from __future__ import annotations

import heapq
import uuid

from ..core.spec import (
    CANCELLED,
    CODE_DUPLICATE,
    CODE_NOT_CANCELLABLE,
    ERROR_BALANCE,
    ERROR_ORDER_NOT_FOUND,
    LIVE,
    MATCHED,
    OUTCOME_A,
    PENDING,
    SIGNING,
    SINGLE_ORDER_MAX,
    SUBMITTED,
    OrderStatus,
)
from ..order_id import keccak256
from .errors import Rejected, bad_body, risk
from .ledger import Ledger
from .parse import OrderSpec, units_text
from .state import BID, BUY, FOK, UNIT, Account, Order, leave, rest_at, uuid_key

__all__ = ["Book"]

#: An accepted order's processing steps, one status to the next.
_NEXT_STEP: dict[OrderStatus, OrderStatus] = {PENDING: SIGNING, SIGNING: SUBMITTED, SUBMITTED: LIVE}


class Book(Ledger):
    """Matching and the order lifecycle, on top of the ledger; the house builds on it."""

    @staticmethod
    def _clob_order_id(account: Account, spec: OrderSpec, now: int) -> str:
        """The exchange order hash the service stores for an order admitted at ``now`` (ms).

        V1 hashes what the request carried, so a client can precompute it; V2
        and V3 sign the service's own timestamp instead of fee, nonce and
        expiration, so only the service knows the id.
        """
        hasher = account.hasher
        order: dict[str, object] = {
            "token_id": int(spec.market.token(spec.outcome)),
            "maker_amount": spec.maker_amount,
            "taker_amount": spec.taker_amount,
            "side": spec.side,
            "salt": spec.salt,
            "neg_risk": spec.market.fx.neg_risk,
        }
        if hasher.version == 1:
            order.update(
                fee_rate_bps=spec.fee_rate_bps, nonce=spec.nonce, expiration=spec.expiration
            )
        else:
            order["timestamp"] = now
        return hasher.order_id(**order)

    def _admit(self, account: Account, spec: OrderSpec, now: int, *, system: bool = False) -> Order:
        """Limits, balance and risk; then reserve, record and process the order.

        ``system``: an order of the sandbox itself (a take-profit or stop-loss exit),
        free of the size limits and the risk checks.
        """
        if not system:
            self._check_size(spec)
        funding = self._funding(account, spec)
        is_bonus = funding == "bonus"
        if not system and not is_bonus:
            self._check_risk(account, spec.value, now)
        self._check_cover(account, spec, funding)
        clob_order_id = self._clob_order_id(account, spec, now)
        if clob_order_id in self.clob_ids:
            raise bad_body(
                f"an order with clob_order_id {clob_order_id} already exists", CODE_DUPLICATE
            )
        # accepted: reserve and record
        if not system and not is_bonus:
            self._record_risk(account, spec.value, now)
        reserved = self._reserve(account, spec, is_bonus)
        order = self._new_order(account, spec, now, funding, reserved)
        order.clob_order_id = clob_order_id
        self._record(account, order)
        self._start(order, now)
        return order

    @staticmethod
    def _check_size(spec: OrderSpec) -> None:
        """The market's minimum order value and the single-order maximum (USDC units)."""
        minimum = spec.market.fx.min_order_size_units
        if spec.value < minimum:
            raise bad_body(
                f"order value {units_text(spec.value)} USDC is below the market's min_order_size "
                f"{units_text(minimum)}"
            )
        if spec.value > int(SINGLE_ORDER_MAX) * UNIT:
            raise risk(f"order value exceeds the single-order maximum of {SINGLE_ORDER_MAX} USDC")

    @staticmethod
    def _funding(account: Account, spec: OrderSpec) -> str:
        """What pays for a BUY: "bonus" when the bonus covers it, else "cash", else ""."""
        if spec.side != BUY:
            return ""
        if account.bonus >= spec.maker_amount:
            return "bonus"
        if account.cash >= spec.maker_amount:
            return "cash"
        return ""

    @staticmethod
    def _check_cover(account: Account, spec: OrderSpec, funding: str) -> None:
        """A BUY is funded; a SELL has the shares available."""
        if spec.side == BUY:
            if not funding:
                raise Rejected(
                    400, ERROR_BALANCE, detail="the USDC balance does not cover the order"
                )
            return
        pos = account.positions.get(spec.market.token(spec.outcome))
        if pos is None or pos.shares - pos.reserved < spec.maker_amount:
            raise Rejected(400, ERROR_BALANCE, detail="not enough available shares to sell")

    def _reserve(self, account: Account, spec: OrderSpec, is_bonus: bool) -> int:
        """Reserve what the order may spend (a BUY's USDC, a SELL's shares); the amount."""
        if spec.side == BUY:
            if is_bonus:
                account.bonus -= spec.maker_amount
                account.bonus_reserved += spec.maker_amount
            else:
                account.cash -= spec.maker_amount
                account.cash_reserved += spec.maker_amount
        else:
            pos = self._position(account, spec.market, spec.outcome)
            pos.reserved += spec.maker_amount
        return spec.maker_amount

    def _new_order(
        self, account: Account, spec: OrderSpec, now: int, funding: str, reserved: int
    ) -> Order:
        """The order of an accepted spec, with the next sequence number."""
        return Order(
            id=str(uuid.uuid4()),
            user_id=account.user_id,
            market=spec.market,
            outcome=spec.outcome,
            side=spec.side,
            order_type=spec.order_type,
            limit_cents=spec.limit_cents,
            size=spec.size,
            maker_amount=spec.maker_amount,
            taker_amount=spec.taker_amount,
            amount_based=spec.amount_based,
            reserved=reserved,
            funding=funding,
            seq=self._next_seq(),
            price_text=spec.price_text,
            source=spec.source,
            source_id=spec.source_id,
            salt=spec.salt,
            nonce=spec.nonce,
            fee_rate_bps=spec.fee_rate_bps,
            expiration=spec.expiration,
            notification_id=spec.notification_id,
            client_order_id=spec.client_order_id,
            is_bonus=funding == "bonus",
            take_profit=spec.take_profit,
            stop_loss=spec.stop_loss,
            created_ms=now,
            updated_ms=now,
        )

    def _record(self, account: Account, order: Order) -> None:
        """Index a new order: by id, clob id, client id, exits and expiry."""
        self.clob_ids.add(order.clob_order_id)
        self.orders[order.id] = order
        self.open_orders[order.id] = order
        account.orders.append(order)
        if order.client_order_id is not None:
            account.client_ids[order.client_order_id] = order
        if order.side == BUY and (order.take_profit is not None or order.stop_loss is not None):
            self._armed[order.id] = order
        if order.expiration:
            heapq.heappush(self._expiries, (order.expiration * 1000, order.seq, order))
        self.stats["orders"] += 1
        self._emit_order(order)

    def _start(self, order: Order, now: int) -> None:
        """Process a new order to live now, or schedule its first step after the delay."""
        delay = self.config.processing_delay_ms
        if delay == 0:
            while order.is_open and order.status != LIVE:
                self._step(order, now)
        else:
            order.next_step_ms = now + delay
            heapq.heappush(self._due, (order.next_step_ms, order.seq, order))

    def _tick(self, now: int) -> None:
        """Run the processing steps and GTD expirations that fell due by ``now`` (ms)."""
        while self._due and self._due[0][0] <= now:
            due, _, order = heapq.heappop(self._due)
            if order.is_open and order.status != LIVE:
                self._step(order, due)  # steps that fell due while nobody looked catch up
        while self._expiries and self._expiries[0][0] <= now:
            _, _, order = heapq.heappop(self._expiries)
            if order.is_open:
                self._finish(order, CANCELLED, now, reason="expired")
                self.stats["expiries"] += 1

    # -- lifecycle -------------------------------------------------------------

    def _step(self, order: Order, now: int) -> None:
        """One processing step: pending -> signing -> submitted -> live (then execute)."""
        if order.expiration and now >= order.expiration * 1000:
            self._finish(order, CANCELLED, now, reason="expired")
            self.stats["expiries"] += 1
            return
        if not order.market.active:
            self._finish(order, CANCELLED, now, reason="market closed")
            return
        nxt = _NEXT_STEP[order.status]
        order.status = nxt
        order.updated_ms = now
        if nxt == SUBMITTED:
            order.submitted_ms = now
        self._emit_order(order)
        if nxt == LIVE:
            self._execute(order, now)
        elif self.config.processing_delay_ms:
            order.next_step_ms = now + self.config.processing_delay_ms
            heapq.heappush(self._due, (order.next_step_ms, order.seq, order))

    def _plan(self, order: Order) -> tuple[list[tuple[Order, int, int]], bool]:
        """Fills (maker, shares, A-price) an incoming order would make, and whether it completes."""
        market = order.market
        limit = order.a_price
        if order.a_side == BID:
            prices: range = range(1, limit + 1)
            book = market.asks
        else:
            prices = range(99, limit - 1, -1)
            book = market.bids
        plan: list[tuple[Order, int, int]] = []
        shares_left = order.open_shares
        usdc_left = order.reserved - order.usdc
        done = False
        for p in prices:
            level = book[p]
            if not level:
                continue
            own = p if order.outcome == OUTCOME_A else 100 - p
            for maker in level:
                if order.amount_based:
                    # the most shares whose exact cost fits what is left; once the
                    # amount (not the maker) limits a fill, the order is spent
                    # (at most 1 unit of dust remains, refunded)
                    cap = usdc_left * 100 // own
                    if cap == 0:
                        done = True
                        break
                    n = min(maker.open_shares, cap)
                    usdc_left -= n * own // 100
                    plan.append((maker, n, p))
                    if n == cap:
                        done = True
                        break
                    continue
                else:
                    n = min(maker.open_shares, shares_left)
                    shares_left -= n
                plan.append((maker, n, p))
                if not order.amount_based and shares_left == 0:
                    done = True
                    break
            if done:
                break
        complete = (done or usdc_left == 0) if order.amount_based else shares_left == 0
        return plan, complete

    def _execute(self, order: Order, now: int) -> None:
        """The order is live: take what crosses; FOK fills entirely or is killed, limits rest."""
        plan, complete = self._plan(order)
        if order.order_type == FOK and not complete:
            self.stats["kills"] += 1
            self._finish(order, CANCELLED, now, reason="killed")
            return
        for maker, n, p in plan:
            self._fill(order, maker, n, p, now)
        if order.amount_based:
            order.size = order.matched
            self._finish(order, MATCHED, now)
        elif order.open_shares == 0:
            self._finish(order, MATCHED, now)
        else:
            self._rest(order, now)

    def _rest(self, order: Order, now: int) -> None:
        rest_at(
            order.market.bids if order.a_side == BID else order.market.asks, order.a_price, order
        )
        order.resting = True
        self._changed_orders[order.id] = order
        self._touch(order.market, now)

    def _unrest(self, order: Order) -> None:
        if order.resting:
            leave(
                order.market.bids if order.a_side == BID else order.market.asks,
                order.a_price,
                order,
            )
            order.resting = False
            self._changed_orders[order.id] = order
            self._changed_markets.add(order.market.id)

    def _fill(self, taker: Order, maker: Order, n: int, price: int, now: int) -> None:
        """n shares at A-price ``price`` between an incoming order and a resting one."""
        market = taker.market
        bid, ask = (taker, maker) if taker.a_side == BID else (maker, taker)
        a_val = n * price // 100
        b_val = n * (100 - price) // 100
        if bid.outcome == OUTCOME_A:  # BUY a
            self._buy_fill(bid, n, a_val, now)
            if ask.outcome == OUTCOME_A:  # SELL a: transfer
                self._sell_fill(ask, n, a_val, now)
            else:  # BUY b: mint n sets
                self._buy_fill(ask, n, b_val, now)
                market.collateral += n
                self.house_usdc -= n - a_val - b_val
        elif ask.outcome == OUTCOME_A:  # SELL b vs SELL a: merge n sets
            self._sell_fill(bid, n, b_val, now)
            self._sell_fill(ask, n, a_val, now)
            market.collateral -= n
            self.house_usdc += n - a_val - b_val
        else:  # SELL b vs BUY b: transfer
            self._buy_fill(ask, n, b_val, now)
            self._sell_fill(bid, n, b_val, now)
        market.last_trade = price
        market.traded_units += a_val if taker.outcome == OUTCOME_A else b_val
        market.updated_ms = now
        for o in (taker, maker):
            if not o.house:
                market.traders.add(o.user_id)
        self._fill_seq += 1
        self.stats["fills"] += 1
        tx = "0x" + keccak256(f"{self.instance_id}:fill:{self._fill_seq}".encode()).hex()
        for o in (taker, maker):
            if not o.house:
                o.tx_hashes.append(tx)
                o.updated_ms = now
        self._touch(market, now)
        if maker.open_shares == 0:
            self._finish(maker, MATCHED, now)
        else:
            self._emit_order(maker)
        if not taker.amount_based and taker.open_shares == 0:
            return  # the caller finishes it
        self._emit_order(taker)

    def _finish(
        self, order: Order, status: OrderStatus, now: int, *, reason: str | None = None
    ) -> None:
        """Terminal transition (matched / cancelled): unrest, release what is left, publish."""
        self._changed_orders[order.id] = order
        self._unrest(order)
        order.status = status
        order.updated_ms = now
        self.open_orders.pop(order.id, None)
        if order.house:
            order.market.house_quotes.pop((order.a_side, order.a_price), None)
            order.market.book_ms = now
            return
        if status == MATCHED:
            order.matched_ms = now
        else:
            order.cancel_reason = reason
        account = self.accounts[order.user_id]
        if order.side == BUY:
            left = order.reserved - order.usdc
            if order.funding == "bonus":
                account.bonus_reserved -= left
                account.bonus += left
            else:
                account.cash_reserved -= left
                account.cash += left
        else:
            pos = self._position(account, order.market, order.outcome)
            pos.reserved -= order.size - order.matched
        if order.matched == 0:
            self._armed.pop(order.id, None)
        self._touch(order.market, now)
        self._emit_order(order)

    # -- cancel ------------------------------------------------------------------

    def _cancel(self, user_id: str, order_id: str, now: int) -> Order:
        """DELETE /orders/:id: only a live limit order of the caller."""
        order = self._own_order(user_id, order_id, code=None)
        if order.order_type == FOK:
            raise Rejected(
                400,
                "order cannot be cancelled",
                code=CODE_NOT_CANCELLABLE,
                detail="FOK orders cannot be cancelled",
            )
        if order.status != LIVE:
            raise Rejected(
                400,
                "order cannot be cancelled",
                code=CODE_NOT_CANCELLABLE,
                detail=f"only live orders can be cancelled (status {order.status})",
            )
        self._finish(order, CANCELLED, now, reason="user")
        self.stats["cancels"] += 1
        return order

    def _own_order(self, user_id: str, order_id: str, code: str | None) -> Order:
        self.account(user_id)
        order = self.orders.get(order_id) if isinstance(order_id, str) else None  # canonical
        if order is None:
            order = self.orders.get(uuid_key(order_id))
        if order is None or order.user_id != user_id:
            raise Rejected(404, ERROR_ORDER_NOT_FOUND, code=code)
        return order
