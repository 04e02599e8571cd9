"""How many finished orders a quoter remembers (for the fills of late stream messages).

Before, every quoter kept its last 10,000 finished orders, about 1.6 KB each: a desk of
600 busy quoters grew to 9.4 GB. Now past the last 1,000 only those finished within
``keep_done_seconds`` are kept (10,000 at most), and a late message of a remembered
one still counts its fill.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from clobkit import AsyncClient
from clobkit.mm import Quoter
from clobkit.mm.tracking import DONE, OPEN, _Tracked
from clobkit.models import Order

UNIT = 1_000_000


@dataclasses.dataclass
class Finisher:
    q: Quoter
    made: int = 0

    def finish(self, n: int) -> None:
        """``n`` open orders of the quoter, each then finished (as a cancel's answer does)."""
        for _ in range(n):
            k = self.made
            self.made += 1
            t = _Tracked(f"key{k}", f"0x{k:064x}", 0, 100_000, 10 * UNIT, OPEN)
            t.order_id = f"id{k}"
            self.q._by_id[t.order_id] = t
            self.q._by_clob[t.clob_order_id] = t
            self.q._live[t.key] = t
            self.q._finish(t)


def quoter() -> Quoter:
    return Quoter(AsyncClient("http://127.0.0.1:9", "key", "secret"), "m", "a")


def test_finished_orders_are_kept_by_age_past_the_last_thousand() -> None:
    q = quoter()
    orders = Finisher(q)
    orders.finish(1_500)
    assert len(q._done) == 1_500  # all finished just now
    q.keep_done_seconds = 0.0  # every one is old now
    orders.finish(1)
    assert len(q._done) == 1_000
    assert "id0" not in q._by_id  # forgotten whole: no index keeps it
    assert f"0x{0:064x}" not in q._by_clob
    assert "id1499" in q._by_id


def test_at_most_ten_thousand_however_recent() -> None:
    q = quoter()
    Finisher(q).finish(10_500)
    assert len(q._done) == 10_000
    assert len(q._by_id) == 10_000


def test_a_late_message_of_a_remembered_order_counts_its_fill() -> None:
    q = quoter()
    Finisher(q).finish(3)
    t = q._by_id["id1"]
    assert t.state == DONE
    late = Order(id="id1", status="cancelled", size_matched=Decimal(4), limit_price=Decimal("0.1"))
    q._apply(t, late)
    assert q.fill_count == 1
    assert q.position == Decimal(4)
