"""A ``Quoter``'s orders, tracked from before their POST until they are done: the
records of the service (stream or REST) matched to them, fills counted, orders found
on the service adopted (docs/market-making.md)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from decimal import Decimal
from typing import NamedTuple

from .._core import from_units, to_units
from .._spec import LIVE, SIDES, UNIT, UNIT_QUANTUM
from ..client import PreparedRawOrder
from ..models import FINAL_STATUSES, OPEN_STATUSES, Order
from .ladder import Level

__all__ = ["Fill", "Tracking"]

# finished orders remembered, so that late stream messages still count their fills: the
# last 10,000 at most, and past the last 1,000 only those finished within
# ``keep_done_seconds`` (a record of 1.6 KB each: 10,000 for each of 600 quoters of a
# desk would be 9.4 GB, where a late message comes within seconds)
_KEEP_DONE = 10_000
_KEEP_DONE_ANYWAY = 1_000
_KEEP_UNCLAIMED = 1_000  # records of unknown orders held while places are in flight

# states of a tracked order
PLACING = "placing"  # POST in flight
PLACE_UNKNOWN = "place_unknown"  # POST failed without a definite answer
OPEN = "open"  # on the service (pending .. live)
CANCELLING = "cancelling"  # DELETE in flight
CANCEL_UNKNOWN = "cancel_unknown"  # DELETE failed, or the order was not cancellable yet
DONE = "done"  # matched, cancelled, won or lost; or never placed


class Fill(NamedTuple):
    """Shares of one of the quoter's orders that traded (``price`` USDC per share)."""

    order_id: str
    side: str
    price: Decimal
    shares: Decimal


class _Tracked:
    """One order of the quoter, from before its POST until it is done."""

    __slots__ = (
        "clob_order_id",
        "cost",
        "done_at",
        "key",
        "matched",
        "order",
        "order_id",
        "prepared",
        "price",
        "sent_at",
        "shares",
        "side",
        "state",
    )

    def __init__(
        self,
        key: str,
        clob_order_id: str,
        side: int,
        price: int,
        shares: int,
        state: str,
        prepared: PreparedRawOrder | None = None,
    ) -> None:
        #: the client_order_id it was sent with; ``id:<order_id>`` for an adopted order
        self.key = key
        self.clob_order_id = clob_order_id  # "" until known (V2/V3: from the service)
        self.order_id: str | None = None
        self.side = side
        self.price = price  # units of USDC per share
        self.shares = shares  # units
        self.matched = 0  # units
        self.cost = Decimal(0)  # USDC the matched shares traded for
        self.state = state
        self.order: Order | None = None
        self.prepared = prepared
        self.sent_at = time.time()
        self.done_at = 0.0  # time.monotonic() when it finished

    def __repr__(self) -> str:
        return (
            f"_Tracked({SIDES[self.side]} {from_units(self.price)} x {from_units(self.shares)}"
            f" matched {from_units(self.matched)}, {self.state}, id={self.order_id})"
        )


class Tracking:
    """The bookkeeping of a ``Quoter``: its tracked orders by key, ``id`` and
    ``clob_order_id``, the records nobody claims yet, fills and position."""

    market_id: str
    outcome: str
    user_id: str | None

    def _init_tracking(self) -> None:
        #: Fills seen so far, oldest first (the last 10,000).
        self.fills: deque[Fill] = deque(maxlen=10_000)
        #: Fills seen so far (all of them; ``fills`` keeps the last 10,000).
        self.fill_count = 0
        self._position = 0  # share units held
        self._live: dict[str, _Tracked] = {}  # key -> order not done
        self._by_clob: dict[str, _Tracked] = {}
        self._by_id: dict[str, _Tracked] = {}
        self._by_client: dict[str, _Tracked] = {}  # client_order_id -> order sent
        # stream records of this outcome's orders that nothing claims yet, kept while a
        # place is in flight: its answer may name one of them (a service whose records
        # do not echo the client_order_id)
        self._unclaimed: dict[str, Order] = {}
        self._learnt = asyncio.Event()  # a clob_order_id became known
        self._done: deque[_Tracked] = deque()
        #: Seconds a finished order is remembered past the last 1,000 (for the fills of
        #: late stream messages; the last 10,000 at most).
        self.keep_done_seconds = 600.0

    @property
    def open_orders(self) -> list[Order]:
        """The quoter's live orders on the service (``Order`` with ``clob_order_id``)."""
        return [
            t.order
            for t in self._live.values()
            if t.state in (OPEN, CANCELLING, CANCEL_UNKNOWN) and t.order is not None
        ]

    @property
    def position(self) -> Decimal:
        """Shares of the outcome held: the holding read on enter plus the fills since."""
        return from_units(self._position)

    @property
    def pending(self) -> int:
        """Orders whose place or cancel is still unresolved (0 after a requote returns)."""
        return sum(1 for t in self._live.values() if t.state not in (OPEN,))

    def resting(self) -> list[Level]:
        """Every order of the quoter that may rest on the service (open, or with a
        place or cancel in flight) as a ``Level`` of its remaining shares."""
        return [
            Level(t.side, t.price, t.shares - t.matched, 0, 0)
            for t in self._live.values()
            if t.shares > t.matched
        ]

    def _match(self, order: Order) -> _Tracked | None:
        """The tracked order a record is about: by ``id``, then by the client's key
        the record echoes (``order_source_id``), then by ``clob_order_id``."""
        t = self._by_id.get(order.id)
        if t is None:
            source = order.order_source_id
            t = self._by_client.get(source) if source else None
            if t is None:
                clob = order.clob_order_id
                t = self._by_clob.get(clob) if clob else None
        return t

    def _in_flight(self) -> bool:
        """Whether a place of ours has no ``order_id`` yet (its record could come first)."""
        return any(
            t.order_id is None and (t.state in (PLACING, PLACE_UNKNOWN))
            for t in self._live.values()
        )

    def _unknown(self, order: Order) -> None:
        """A record of this market and outcome that no tracked order claims: held while
        a place is in flight (its answer may name it), else adopted when open."""
        if self._in_flight():
            held = self._unclaimed.get(order.id)
            if held is None or (order.size_matched or 0) >= (held.size_matched or 0):
                self._unclaimed[order.id] = order
                while len(self._unclaimed) > _KEEP_UNCLAIMED:
                    del self._unclaimed[next(iter(self._unclaimed))]
        elif order.status in OPEN_STATUSES:
            self._adopt(order)

    def _claim(self, t: _Tracked, order_id: str) -> None:
        """``t`` learnt its ``order_id``: index it, and take a record held for it."""
        t.order_id = order_id
        self._by_id[order_id] = t
        held = self._unclaimed.pop(order_id, None)
        if held is not None:
            self._apply(t, held)

    def _settle_unclaimed(self) -> None:
        """Once no place is in flight, held records belong to nobody of ours: adopt
        the open ones (orders placed elsewhere), drop the rest."""
        if not self._unclaimed or self._in_flight():
            return
        held, self._unclaimed = self._unclaimed, {}
        for order in held.values():
            if self._match(order) is None and order.status in OPEN_STATUSES:
                self._adopt(order)

    def _apply(self, t: _Tracked, order: Order) -> None:
        """Take an order record (stream or REST) into ``t``: ids, fills, status."""
        if t.order_id is None and order.id:
            self._claim(t, order.id)
        if not t.clob_order_id and order.clob_order_id:
            t.clob_order_id = order.clob_order_id
            self._by_clob[t.clob_order_id] = t
            self._learnt.set()
        matched = order.size_matched
        newer = True
        if matched is not None:
            units = int(matched * UNIT)
            if units > t.matched:
                delta = units - t.matched
                price = _fill_price(t, order, units, delta)
                t.matched = units
                self._position += delta if t.side == 0 else -delta
                self.fills.append(Fill(order.id, SIDES[t.side], price, from_units(delta)))
                self.fill_count += 1
            elif units < t.matched:
                newer = False  # an older record than one already seen
        status = order.status
        if t.state == DONE:
            if newer and status in FINAL_STATUSES:
                t.order = order
            return
        if newer:
            t.order = order
        if status in FINAL_STATUSES:
            self._finish(t)
        elif status in OPEN_STATUSES and (t.state in (PLACING, PLACE_UNKNOWN)):
            t.state = OPEN

    def _adopt(self, order: Order) -> _Tracked:
        """Track a live order found on the service (placed before, or elsewhere)."""
        side = 0 if order.side == "BUY" else 1
        price = order.limit_price if order.limit_price is not None else order.clob_price
        t = _Tracked(
            f"id:{order.id}",
            order.clob_order_id or "",
            side,
            to_units(price or 0, "price"),
            to_units(order.original_size or 0, "original_size"),
            OPEN,
        )
        t.order_id = order.id
        t.matched = to_units(order.size_matched or 0, "size_matched")
        t.cost = (order.avg_fill_price or from_units(t.price)) * from_units(t.matched)
        t.order = order
        self._by_id[order.id] = t
        if t.clob_order_id:
            self._by_clob[t.clob_order_id] = t
        self._live[t.key] = t
        if self.user_id is None and order.user_id:
            self.user_id = order.user_id
        return t

    def _finish(self, t: _Tracked) -> None:
        t.state = DONE
        t.prepared = None
        t.done_at = now = time.monotonic()
        self._live.pop(t.key, None)
        done = self._done
        done.append(t)
        oldest = now - self.keep_done_seconds
        while len(done) > _KEEP_DONE or (
            len(done) > _KEEP_DONE_ANYWAY and done[0].done_at < oldest
        ):
            self._unindex(done.popleft())

    def _unindex(self, t: _Tracked) -> None:
        if t.clob_order_id:
            self._by_clob.pop(t.clob_order_id, None)
        if t.order_id is not None:
            self._by_id.pop(t.order_id, None)
        self._by_client.pop(t.key, None)

    def _forget(self, t: _Tracked) -> None:
        """A place the service refused: the order never existed."""
        t.state = DONE
        self._live.pop(t.key, None)
        self._unindex(t)

    def _synthesised(self, t: _Tracked) -> Order:
        assert t.order_id is not None
        price = from_units(t.price)
        return Order(
            id=t.order_id,
            user_id=self.user_id,
            market_id=self.market_id,
            outcome=self.outcome,
            status=LIVE,
            side=SIDES[t.side],
            order_type="GTC",
            order_source_id=t.key,
            clob_order_id=t.clob_order_id or None,
            original_size=from_units(t.shares),
            size_matched=from_units(t.matched),
            clob_price=price,
            limit_price=price,
        )


def _with_status(order: Order, status: str) -> Order:
    import msgspec

    return msgspec.structs.replace(order, status=status)


def _fill_price(t: _Tracked, order: Order, units: int, delta: int) -> Decimal:
    """USDC per share of ``delta`` newly matched units of ``t`` (``units`` in all).

    From the record's ``avg_fill_price`` (over every matched share) when it gives
    one: a quote that crossed the book trades at the book's prices, not its own.
    Else the quote's price.
    """
    avg = order.avg_fill_price
    if avg is not None and avg.is_finite() and avg > 0:
        total = avg * from_units(units)
        price = ((total - t.cost) / from_units(delta)).quantize(UNIT_QUANTUM)
        if price > 0:
            t.cost = total
            return price
    price = from_units(t.price)
    t.cost += price * from_units(delta)
    return price
