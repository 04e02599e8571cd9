"""Eight concurrent clients place and cancel orders for half a minute on loopback.

Meanwhile a checker thread verifies the engine's invariants and lets the house
fill resting orders straight through the engine (so the lock is contended from
several threads), and a WebSocket subscriber follows one user's order topic.
At the end no order is lost: every 201 is listed by GET /orders, every 200
cancel reads back as cancelled, no order is stuck before live, the last
WebSocket update of each followed order equals its final state, and the money
invariants hold. ``CLOBKIT_SOAK_SECONDS`` shortens or lengthens the 30 s (a soak
of an hour: ``CLOBKIT_SOAK_SECONDS=3600 pytest -m slow tests/sandbox/test_concurrency.py``).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from websockets.sync.client import connect

from clobkit import RequestSigner
from clobkit.sandbox import Sandbox, serve_in_thread

from .signed import PREFIX, SignedClient, dumps, loads

SECONDS = float(os.environ.get("CLOBKIT_SOAK_SECONDS", "30"))
CLIENTS = 8
USERS = [
    {
        "user_id": f"00000000-0000-4000-8000-0000000002{i:02d}",
        "api_key": f"soak-{i}",
        "api_secret": f"soak-secret-{i}",
        "balance": "1000000",
    }
    for i in range(CLIENTS)
]
CONFIG = {
    "users": USERS,
    "rate_limit_per_minute": None,
    "risk": {"per_minute": None, "daily": None, "monthly": None},
}


class Worker(threading.Thread):
    def __init__(self, sb: Sandbox, index: int, markets: list[Any], stop: threading.Event) -> None:
        super().__init__(name=f"soak-client-{index}", daemon=True)
        self.sb, self.index, self.markets, self.stop = sb, index, markets, stop
        self.rng = random.Random(index)
        self.placed: list[str] = []
        self.live: list[str] = []
        self.cancelled: list[str] = []
        self.statuses: Counter[int] = Counter()
        self.errors: list[str] = []

    def run(self) -> None:
        try:
            with SignedClient(self.sb.base_url, self.sb.users[self.index]) as c:
                while not self.stop.is_set():
                    self.step(c)
        except Exception as exc:  # surfaced by the test
            self.errors.append(repr(exc))

    def step(self, c: SignedClient) -> None:
        m = self.rng.choice(self.markets)
        roll = self.rng.random()
        mid = m.mid or 50
        if roll < 0.45:
            cents = max(1, min(99, mid + self.rng.randint(-4, 3)))
            option = self.rng.choice(["yes", "no"])
            if option == "no":
                cents = 100 - cents
            body = {
                "market_id": m.id,
                "order_type": "GTC",
                "token_option": option,
                "limit_price": str(Decimal(cents) / 100),
                "amount": self.rng.randint(2, 40),
            }
            self.place(c, body, resting=True)
        elif roll < 0.60:
            body = {
                "market_id": m.id,
                "outcome": self.rng.choice("ab"),
                "amount": self.rng.randint(1, 30),
            }
            self.place(c, body, resting=False)
        elif roll < 0.70:
            body = {
                "market_id": m.id,
                "side": "SELL",
                "outcome": self.rng.choice("ab"),
                "shares": self.rng.randint(2, 10),
            }
            self.place(c, body, resting=False)
        elif self.live:
            order_id = self.live.pop(self.rng.randrange(len(self.live)))
            r = c.delete(f"/orders/{order_id}")
            self.statuses[r.status_code] += 1
            if r.status_code == 200:
                self.cancelled.append(order_id)
            elif r.status_code != 400:  # 400: it matched (or expired) first
                self.errors.append(f"cancel {order_id}: {r.status_code} {r.text}")
        else:
            r = c.get("/orders", page_size=5)
            self.statuses[r.status_code] += 1

    def place(self, c: SignedClient, body: dict[str, Any], *, resting: bool) -> None:
        r = c.post("/orders", body)
        self.statuses[r.status_code] += 1
        if r.status_code == 201:
            order_id = loads(r.content)["data"]["order_id"]
            self.placed.append(order_id)
            if resting:
                self.live.append(order_id)
        elif r.status_code != 400:  # 400: insufficient shares to sell
            self.errors.append(f"place: {r.status_code} {r.text}")


class Checker(threading.Thread):
    def __init__(self, sb: Sandbox, stop: threading.Event) -> None:
        super().__init__(name="soak-checker", daemon=True)
        self.sb, self.stop = sb, stop
        self.checks = 0
        self.house_fills = 0
        self.violations: list[str] = []
        self.rng = random.Random(99)

    def run(self) -> None:
        engine = self.sb.engine
        while not self.stop.wait(0.05):
            found = engine.check_invariants()
            self.checks += 1
            if found:
                self.violations.extend(found)
                return
            with engine._lock:  # pick a resting user order
                resting = [o.id for o in engine.open_orders.values() if o.resting and not o.house]
            if resting:
                try:
                    engine.house_fill(self.rng.choice(resting), self.rng.randint(1, 20))
                    self.house_fills += 1
                except Exception:  # it matched or was cancelled meanwhile
                    pass


class Follower(threading.Thread):
    """Follows user 0's order topic over the WebSocket."""

    def __init__(self, sb: Sandbox, stop: threading.Event) -> None:
        super().__init__(name="soak-ws", daemon=True)
        self.sb, self.stop = sb, stop
        self.last: dict[str, dict[str, Any]] = {}
        self.messages = 0
        self.ready = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        user = self.sb.users[0]
        headers = RequestSigner(user.api_key, user.api_secret).headers("GET", PREFIX + "/ws")
        try:
            with connect(
                self.sb.ws_url, additional_headers=headers, open_timeout=5, max_size=None
            ) as ws:
                ws.send(dumps({"action": "subscribe", "topics": [f"user:{user.user_id}:orders"]}))
                while True:
                    try:
                        message = loads(ws.recv(timeout=2))
                    except TimeoutError:
                        if self.stop.is_set():
                            return
                        continue
                    if message["type"] == "subscribed":
                        self.ready.set()
                    elif message["type"] == "data":
                        self.messages += 1
                        self.last[message["data"]["id"]] = message["data"]
        except Exception as exc:
            self.errors.append(repr(exc))
            self.ready.set()


@pytest.mark.slow
def test_eight_clients_for_half_a_minute_lose_nothing() -> None:
    with serve_in_thread(CONFIG) as sb:
        engine = sb.engine
        markets = [m for m in engine.markets.values() if m.active and m.mid is not None][:3]
        bare = next(
            m
            for m in engine.markets.values()
            if m.active and m.mid is None and m.fx.min_order_size_units == 10**6
        )
        markets.append(bare)
        stop = threading.Event()
        follower = Follower(sb, stop)
        follower.start()
        assert follower.ready.wait(10)
        workers = [Worker(sb, i, markets, stop) for i in range(CLIENTS)]
        checker = Checker(sb, stop)
        started = time.monotonic()
        for t in [*workers, checker]:
            t.start()
        time.sleep(SECONDS)
        stop.set()
        for t in [*workers, checker]:
            t.join(30)
        elapsed = time.monotonic() - started
        engine.tick()
        time.sleep(0.5)  # let the last WebSocket messages arrive
        follower.join(10)

        assert not [e for w in workers for e in w.errors]
        assert checker.violations == []
        assert engine.check_invariants() == []

        # no order lost: every 201 is listed, nothing else is, nothing is stuck before live
        final: dict[str, dict[str, Any]] = {}
        for w in workers:
            with SignedClient(sb.base_url, sb.users[w.index]) as c:
                page, listed = 1, []
                while True:
                    data = c.data("GET", "/orders", page=page, page_size=100)
                    listed += data["orders"]
                    if page * 100 >= data["total_count"]:
                        break
                    page += 1
                assert len(listed) == data["total_count"] == len(w.placed)
                assert {o["id"] for o in listed} == set(w.placed)
                for o in listed:
                    final[o["id"]] = o
                    assert o["status"] in ("live", "matched", "cancelled"), o
                    assert o["size_matched"] <= o["original_size"]
                for order_id in w.cancelled:
                    assert final[order_id]["status"] == "cancelled"
        # the WebSocket saw every order of user 0 and its final state
        assert not follower.errors
        for order_id in workers[0].placed:
            seen = follower.last[order_id]
            assert (seen["status"], seen["size_matched"]) == (
                final[order_id]["status"],
                final[order_id]["size_matched"],
            )
        totals = engine.totals()
        assert totals.users + totals.house + totals.collateral == totals.deposits

        placed = sum(len(w.placed) for w in workers)
        cancelled = sum(len(w.cancelled) for w in workers)
        requests = sum(sum(w.statuses.values()) for w in workers)
        statuses = sum((w.statuses for w in workers), Counter())
        print(
            f"\nsoak: {CLIENTS} clients, {elapsed:.1f} s, {requests} requests "
            f"({requests / elapsed:.0f}/s), "
            f"statuses {dict(statuses)}; orders placed {placed}, cancelled {cancelled}, "
            f"fills {engine.stats['fills']}, FOK kills {engine.stats['kills']}, "
            f"house fills by the checker {checker.house_fills}, "
            f"invariant checks {checker.checks + 1}, "
            f"WebSocket messages {follower.messages}"
        )
        assert placed > 100 * SECONDS / 60
        assert cancelled > 10 * SECONDS / 60
