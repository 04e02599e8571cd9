"""How many finished orders the execution cache remembers (for the fills of late
stream messages).

Before, every quoter kept its last 10,000 finished orders, about 1.6 KB each: a desk of
600 busy quoters grew to 9.4 GB. Now past the last 1,000 of an outcome only those
finished within ``keep_done_seconds`` are kept (10,000 at most), and a late message of
a remembered one still counts its fill.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from clobkit.mm import Event, ExecutionCache, State, TrackedOrder
from clobkit.models import Order

UNIT = 1_000_000
OWNER = ("m", "a")


@dataclasses.dataclass
class Finisher:
    cache: ExecutionCache
    made: int = 0

    def finish(self, n: int) -> None:
        """``n`` open orders, each then finished (as a cancel's answer does)."""
        for _ in range(n):
            k = self.made
            self.made += 1
            t = TrackedOrder(f"key{k}", OWNER, 0, 100_000, 10 * UNIT, State.OPEN, f"0x{k:064x}")
            t.order_id = f"id{k}"
            self.cache.add(t)
            self.cache.fire(t, Event.CANCEL)
            self.cache.fire(t, Event.CANCELLED)


def known(cache: ExecutionCache, order_id: str, clob: str = "") -> bool:
    return cache.find(Order(id=order_id, clob_order_id=clob or None)) is not None


def test_finished_orders_are_kept_by_age_past_the_last_thousand() -> None:
    cache = ExecutionCache()
    orders = Finisher(cache)
    orders.finish(1_500)
    assert len(cache.outcome(OWNER).done) == 1_500  # all finished just now
    cache.keep_done_seconds = 0.0  # every one is old now
    orders.finish(1)
    assert len(cache.outcome(OWNER).done) == 1_000
    assert not known(cache, "id0")  # forgotten whole: no index keeps it
    assert not known(cache, "nope", f"0x{0:064x}")
    assert known(cache, "id1499")
    assert cache.refused == 0


def test_at_most_ten_thousand_however_recent() -> None:
    cache = ExecutionCache()
    Finisher(cache).finish(10_500)
    assert len(cache.outcome(OWNER).done) == 10_000
    assert sum(known(cache, f"id{k}") for k in range(10_500)) == 10_000


def test_a_late_message_of_a_remembered_order_counts_its_fill() -> None:
    cache = ExecutionCache()
    Finisher(cache).finish(3)
    late = Order(id="id1", status="cancelled", size_matched=Decimal(4), limit_price=Decimal("0.1"))
    t = cache.find(late)
    assert t is not None
    assert t.state is State.DONE
    cache.apply(t, late)
    holding = cache.holding(OWNER)
    assert holding.count == 1
    assert holding.position == 4 * UNIT
