"""``--state FILE``: the sandbox's state survives a restart (SQLite file, real sandboxes).

Each test runs a sandbox on a state file in ``tmp_path``, changes its state
over HTTP (and the admin routes), stops it, starts a new one on the same file
and compares the API's answers before and after.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from clobkit import RequestSigner
from clobkit.core.spec import CANCELLED
from clobkit.sandbox import Engine, Rejected, Sandbox, serve_in_thread
from clobkit.sandbox.config import DEFAULT_USERS
from clobkit.sandbox.store import SCHEMA_VERSION, StateFileError, StateStore

from ..conftest import loopback_http
from .conftest import MAKER, TRADER, Clock, book_market
from .signed import PREFIX, SignedClient, dumps, loads
from .state_files import base_state, change

STILL: dict[str, Any] = {"walk": None}


def admin(sb: Sandbox, method: str, path: str, body: Any = None) -> Any:
    r = httpx.request(
        method,
        sb.base_url + "/admin" + path,
        content=None if body is None else dumps(body),
        headers={"Content-Type": "application/json"},
    )
    payload = loads(r.content)
    assert r.status_code == 200, payload
    return payload["data"]


def all_pages(c: SignedClient, path: str, key: str, size_name: str) -> list[Any]:
    out: list[Any] = []
    page = 1
    while True:
        data = c.data("GET", path, page=page, **{size_name: 100})
        out += data[key]
        if len(data[key]) < 100:
            return out
        page += 1


def snapshot(sb: Sandbox, market_ids: list[str]) -> dict[str, Any]:
    """What the API answers about every user's orders, balances, positions and the markets."""
    snap: dict[str, Any] = {}
    for uid in (TRADER, MAKER):
        with SignedClient(sb.base_url, sb.user(uid)) as c:
            orders = all_pages(c, "/orders", "orders", "page_size")
            snap[uid] = {
                "orders": orders,
                "details": [c.data("GET", f"/orders/{o['id']}") for o in orders],
                "positions": all_pages(c, "/portfolio/positions", "positions", "per_page"),
                "portfolio_orders": all_pages(c, "/portfolio/orders", "orders", "per_page"),
                "balances": admin(sb, "GET", f"/users/{uid}/balances"),
            }
    with SignedClient(sb.base_url, sb.user(TRADER)) as c:
        snap["markets"] = [c.data("GET", f"/markets/{m}") for m in market_ids]
        events = {sb.engine.markets[m].event.id for m in market_ids}
        snap["events"] = [c.data("GET", f"/events/{e}") for e in sorted(events)]
        books = []
        for mid in market_ids:
            fx = sb.engine.markets[mid].fx
            for token in (fx.token_id_a, fx.token_id_b):
                payload = loads(c.get(f"/orderbooks/{token}").content)
                payload.get("data", {}).pop("timestamp", None)  # the time of the answer
                books.append(payload)
        snap["books"] = books
    invariants = admin(sb, "GET", "/invariants")
    snap["violations"] = invariants["violations"]
    snap["totals"] = invariants["totals"]
    snap["stats"] = invariants["stats"]
    return snap


def scenario(sb: Sandbox) -> list[str]:
    """Orders of every kind and status, deposits (cash and bonus), a fill, a settlement."""
    engine = sb.engine
    m1, m2 = book_market(engine, skip=0), book_market(engine, skip=1)
    admin(sb, "POST", f"/users/{TRADER}/deposit", {"amount": "250.5", "bonus": False})
    admin(sb, "POST", f"/users/{MAKER}/deposit", {"amount": "40", "bonus": True})
    with (
        SignedClient(sb.base_url, sb.user(TRADER)) as t,
        SignedClient(sb.base_url, sb.user(MAKER)) as mk,
    ):
        # a FOK buy against the house, then a partial sell of it
        t.data("POST", "/orders", {"market_id": m1.id, "outcome": "a", "amount": 30}, expect=201)
        t.data(
            "POST",
            "/orders",
            {"market_id": m1.id, "side": "SELL", "outcome": "a", "shares": 10},
            expect=201,
        )
        # resting limit orders: one partly filled by the house, one cancelled, one left live
        low = Decimal(max(1, (m1.mid or 50) - 20)) / 100
        rest = []
        for amount in (12, 9, 7):
            body = {
                "market_id": m1.id,
                "order_type": "GTC",
                "token_option": "yes",
                "limit_price": str(low),
                "amount": amount,
                "take_profit_price": "0.98",
            }
            rest.append(t.data("POST", "/orders", body, expect=201)["order_id"])
        admin(sb, "POST", f"/orders/{rest[0]}/fill", {"shares": "5"})
        t.data("DELETE", f"/orders/{rest[1]}")
        # a raw order with a client_order_id, resting on the other outcome
        token_b = m1.fx.token_id_b
        raw = {
            "market_id": m1.id,
            "outcome": "b",
            "token_id": token_b,
            "maker_amount": "2000000",
            "taker_amount": "20000000",
            "side": 0,
            "fee_rate_bps": m1.fx.fee_rate_bps,
            "order_type": "GTC",
            "nonce": str(2**200),  # a uint256 survives the file exactly
            "client_order_id": "persisted-1",
        }
        t.data("POST", "/orders/raw", raw, expect=201)
        # the maker buys with its bonus on m2, the trader too; then m2 is settled
        mk.data("POST", "/orders", {"market_id": m2.id, "outcome": "b", "amount": 20}, expect=201)
        t.data("POST", "/orders", {"market_id": m2.id, "outcome": "a", "amount": 15}, expect=201)
        admin(sb, "POST", f"/markets/{m2.id}/settle", {"winner": "a"})
    # every market of a three-way event settled: the event ends
    event = next(e for e in engine.events.values() if len(e.market_ids) == 3 and not e.ended)
    for market_id, winner in zip(event.market_ids, "bab", strict=True):
        admin(sb, "POST", f"/markets/{market_id}/settle", {"winner": winner})
    # the house moves the price of m1 (its quotes move with it)
    admin(sb, "POST", f"/markets/{m1.id}/price", {"price": str(Decimal((m1.mid or 50) + 2) / 100)})
    return [m1.id, m2.id, *event.market_ids]


@pytest.mark.slow
def test_a_restart_on_the_same_file_restores_everything(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    # a still house (walk: null): the walking one moves its prices between the two snapshots
    with serve_in_thread(STILL, state=path) as sb:
        markets = scenario(sb)
        before = snapshot(sb, markets)
        armed = set(sb.engine._armed)  # take-profit orders still watching the market
    assert armed
    assert before["violations"] == []
    assert sum(e["event"]["ended"] for e in before["events"]) == 2  # m2's and the three-way
    statuses = {o["status"] for o in before[TRADER]["orders"]}
    assert {"matched", "cancelled", "live", "won"} <= statuses, statuses
    assert any(o["order_source_id"] == "persisted-1" for o in before[TRADER]["orders"])
    assert before[MAKER]["balances"]["bonus"] != Decimal(40)  # it spent bonus; it was credited
    with serve_in_thread(STILL, state=path) as sb:
        after = snapshot(sb, markets)
        # a used client_order_id still answers with its order and places nothing
        raw = next(o for o in before[TRADER]["orders"] if o["order_source_id"] == "persisted-1")
        m1 = sb.engine.markets[markets[0]]
        body = {
            "market_id": m1.id,
            "outcome": "b",
            "token_id": m1.fx.token_id_b,
            "maker_amount": "1000000",
            "taker_amount": "50000000",
            "side": 0,
            "fee_rate_bps": m1.fx.fee_rate_bps,
            "order_type": "GTC",
            "client_order_id": "persisted-1",
        }
        with SignedClient(sb.base_url, sb.user(TRADER)) as c:
            again = c.data("POST", "/orders/raw", body, expect=201)
        assert again["order_id"] == raw["id"]
        assert len(sb.engine.orders) == len(before[TRADER]["orders"] + before[MAKER]["orders"])
        assert set(sb.engine._armed) == armed
    assert after == before


@pytest.mark.slow
def test_orders_in_processing_and_gtd_expiries_resume_after_a_restart(tmp_path: Path) -> None:
    """An order stopped mid-processing goes live after the restart; a GTD order still expires."""
    path = tmp_path / "state.db"
    config = _default_with_seed(0) | {"processing_delay_ms": 400}
    with serve_in_thread(config, state=path) as sb:
        market = book_market(sb.engine)
        low = str(Decimal(max(1, (market.mid or 50) - 20)) / 100)
        body = {"market_id": market.id, "order_type": "GTC", "token_option": "yes"}
        with SignedClient(sb.base_url, sb.user(TRADER)) as c:
            slow = c.data("POST", "/orders", body | {"limit_price": low, "amount": 5}, expect=201)
            gtd = body | {"order_type": "GTD", "limit_price": low, "amount": 6}
            gtd["expiration"] = int(time.time()) + 3
            expiring = c.data("POST", "/orders", gtd, expect=201)
        assert sb.engine.order(slow["order_id"]).status == "pending"
    with serve_in_thread(config, state=path) as sb:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            slow_now = sb.engine.order(slow["order_id"])
            gtd_now = sb.engine.order(expiring["order_id"])
            if slow_now.status == "live" and gtd_now.status == "cancelled":
                break
            time.sleep(0.05)
        assert slow_now.status == "live"
        assert gtd_now.status == "cancelled"
        assert sb.engine.check_invariants() == []


@pytest.mark.slow
def test_without_state_a_restart_forgets(tmp_path: Path) -> None:
    """The comparison above can fail: in memory, a new sandbox starts from the config."""
    with serve_in_thread() as sb:
        markets = scenario(sb)
        before = snapshot(sb, markets)
    with serve_in_thread() as sb:
        after = snapshot(sb, markets)
    assert after[TRADER]["orders"] == [] != before[TRADER]["orders"]


def signed_request(
    sb: Sandbox | Engine, method: str, path: str, body: Any = None
) -> tuple[dict[str, str], bytes]:
    user = sb.user_config(TRADER) if isinstance(sb, Engine) else sb.user(TRADER)
    content = b"" if body is None else dumps(body)
    headers = RequestSigner(user.api_key, user.api_secret).headers(method, PREFIX + path, content)
    if content:
        headers["Content-Type"] = "application/json"
    return headers, content


def send(
    base_url: str, method: str, path: str, headers: dict[str, str], content: bytes
) -> httpx.Response:
    return httpx.request(method, base_url + PREFIX + path, headers=headers, content=content)


@pytest.mark.slow
def test_a_request_captured_before_a_restart_is_refused_after_it(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with serve_in_thread(state=path) as sb:
        market = book_market(sb.engine)
        body = {"market_id": market.id, "outcome": "a", "amount": 5}
        post = signed_request(sb, "POST", "/orders", body)
        get = signed_request(sb, "GET", "/wallet")
        assert send(sb.base_url, "POST", "/orders", *post).status_code == 201
        assert send(sb.base_url, "GET", "/wallet", *get).status_code == 200
        orders = len(sb.engine.orders)
    with serve_in_thread(state=path) as sb:
        for method, route, (headers, content) in (
            ("POST", "/orders", post),
            ("GET", "/wallet", get),
        ):
            r = send(sb.base_url, method, route, headers, content)
            assert r.status_code == 401, r.text
            assert loads(r.content)["detail"] == "nonce already used"
        assert len(sb.engine.orders) == orders  # the replay placed nothing


def test_without_state_the_replay_is_accepted(tmp_path: Path) -> None:
    """Why the state file matters: an in-memory sandbox forgets the nonces."""
    with serve_in_thread() as sb:
        market = book_market(sb.engine)
        post = signed_request(
            sb, "POST", "/orders", {"market_id": market.id, "outcome": "a", "amount": 5}
        )
        assert send(sb.base_url, "POST", "/orders", *post).status_code == 201
    with serve_in_thread() as sb:
        assert send(sb.base_url, "POST", "/orders", *post).status_code == 201


def start_cli(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    match = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+)\n", first)
    assert match, (first, proc.stderr.read() if proc.stderr else "")
    return proc, match.group(1)


@pytest.mark.slow
@pytest.mark.parametrize("command", [("clobkit.sandbox",), ("clobkit", "sandbox")])
def test_a_killed_cli_sandbox_keeps_what_it_answered(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Committed before the answer: SIGKILL right after it loses neither the order nor a nonce.

    ``/wallet`` changes no engine state, so its nonce is committed on its own before the answer.
    """
    path = tmp_path / "state.db"
    proc, base = start_cli(*command, "--state", str(path))
    try:
        probe = Engine(None)  # fixture ids depend only on the seed
        body = {"market_id": book_market(probe).id, "outcome": "a", "amount": 5}
        post = signed_request(probe, "POST", "/orders", body)
        r = send(base, "POST", "/orders", *post)
        assert r.status_code == 201, r.text
        order_id = loads(r.content)["data"]["order_id"]
        get = signed_request(probe, "GET", f"/orders/{order_id}")
        wallet = signed_request(probe, "GET", "/wallet")
        assert send(base, "GET", f"/orders/{order_id}", *get).status_code == 200
        assert send(base, "GET", "/wallet", *wallet).status_code == 200
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    with serve_in_thread(state=path) as sb:
        assert sb.engine.order(order_id).status == "matched"
        for method, route, (headers, content) in (
            ("POST", "/orders", post),
            ("GET", f"/orders/{order_id}", get),
            ("GET", "/wallet", wallet),
        ):
            r = send(sb.base_url, method, route, headers, content)
            assert r.status_code == 401, (route, r.text)
            assert loads(r.content)["detail"] == "nonce already used"


@pytest.mark.slow
def test_a_websocket_update_is_committed_before_it_is_sent(tmp_path: Path) -> None:
    """With a processing delay the ticker moves the order on, with no HTTP answer involved:
    killing the sandbox as soon as the WebSocket says "live" must not lose "live"."""
    path = tmp_path / "state.db"
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(_default_with_seed(0) | {"processing_delay_ms": 300}))
    proc, base = start_cli("clobkit.sandbox", "--config", str(config_file), "--state", str(path))
    try:
        probe = Engine(None)
        user = probe.user_config(TRADER)
        market = book_market(probe)
        low = str(Decimal(max(1, (market.mid or 50) - 20)) / 100)
        ws_url = "ws" + base[len("http") :] + PREFIX + "/ws"
        headers = RequestSigner(user.api_key, user.api_secret).headers("GET", PREFIX + "/ws")
        with connect(ws_url, additional_headers=headers, open_timeout=10) as ws:
            ws.send(dumps({"action": "subscribe", "topics": [f"user:{TRADER}:orders"]}))
            assert loads(ws.recv(timeout=10))["type"] == "subscribed"
            body = {"market_id": market.id, "order_type": "GTC", "token_option": "yes"}
            post = signed_request(
                probe, "POST", "/orders", body | {"limit_price": low, "amount": 5}
            )
            r = send(base, "POST", "/orders", *post)
            assert r.status_code == 201, r.text
            order_id = loads(r.content)["data"]["order_id"]
            while True:
                message = loads(ws.recv(timeout=10))
                if message["type"] == "data" and message["data"]["status"] == "live":
                    proc.send_signal(signal.SIGKILL)
                    break
            assert message["data"]["id"] == order_id
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    with serve_in_thread(_default_with_seed(0), state=path) as sb:
        assert sb.engine.order(order_id).status == "live"


@pytest.mark.slow
def test_counters_continue_after_a_restart(tmp_path: Path) -> None:
    """No id, position id or fill transaction hash is reused after a restart."""
    path = tmp_path / "state.db"

    def place_and_collect(sb: Sandbox) -> tuple[set[str], set[str], set[int], int]:
        market = book_market(sb.engine)
        with SignedClient(sb.base_url, sb.user(TRADER)) as c:
            for _ in range(3):
                c.data(
                    "POST",
                    "/orders",
                    {"market_id": market.id, "outcome": "a", "amount": 2},
                    expect=201,
                )
                c.data(
                    "POST",
                    "/orders",
                    {"market_id": market.id, "outcome": "b", "amount": 2},
                    expect=201,
                )
        engine = sb.engine
        with engine._lock:
            ids = set(engine.orders)
            txs = {tx for o in engine.orders.values() for tx in o.tx_hashes}
            positions = {p.id for p in engine.accounts[TRADER].positions.values()}
            return ids, txs, positions, engine._seq

    with serve_in_thread(state=path) as sb:
        ids1, txs1, pos1, seq1 = place_and_collect(sb)
    with serve_in_thread(state=path) as sb:
        market = book_market(sb.engine, skip=2)  # new positions get new ids
        with SignedClient(sb.base_url, sb.user(TRADER)) as c:
            c.data(
                "POST", "/orders", {"market_id": market.id, "outcome": "a", "amount": 2}, expect=201
            )
        ids2, _, pos2, _ = place_and_collect(sb)
    assert ids1 < ids2
    new_orders = [sb.engine.orders[i] for i in ids2 - ids1]
    assert len(new_orders) == 7
    assert min(o.seq for o in new_orders) > seq1  # the order sequence (and house quote ids) go on
    fresh_txs = {tx for o in new_orders for tx in o.tx_hashes}
    assert fresh_txs
    assert not fresh_txs & txs1
    assert pos1 < pos2
    assert min(pos2 - pos1) > max(pos1)


@pytest.mark.slow
def test_concurrent_requests_then_a_restart_conserve_money(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    users = [
        {
            "user_id": f"00000000-0000-4000-8000-0000000003{i:02d}",
            "api_key": f"persist-{i}",
            "api_secret": f"persist-secret-{i}",
            "balance": "100000",
        }
        for i in range(4)
    ]
    config = {"users": users, "rate_limit_per_minute": None, "risk": {"per_minute": None}}
    errors: list[str] = []
    with serve_in_thread(config, state=path) as sb:
        markets = [m for m in sb.engine.markets.values() if m.active and m.mid is not None][:2]
        stop = threading.Event()
        threads = [
            threading.Thread(target=_random_trader, args=(sb, i, markets, stop, errors))
            for i in range(4)
        ]
        threads.append(threading.Thread(target=_house_filler, args=(sb, stop)))
        for th in threads:
            th.start()
        time.sleep(4)
        stop.set()
        for th in threads:
            th.join(30)
        assert sb.engine.check_invariants() == []
        before = _money_state(sb.engine, users)
    assert errors == []
    assert before[3]["fills"] > 10
    assert before[3]["cancels"] > 0
    with serve_in_thread(config, state=path) as sb:
        assert sb.engine.check_invariants() == []
        assert _money_state(sb.engine, users) == before


def _random_trader(
    sb: Sandbox, index: int, markets: list[Any], stop: threading.Event, errors: list[str]
) -> None:
    """User ``index`` orders and cancels at random until ``stop``; odd answers go to ``errors``."""
    rng = random.Random(index)
    live: list[str] = []
    with SignedClient(sb.base_url, sb.users[index]) as c:
        while not stop.is_set():
            r = _random_request(c, rng, rng.choice(markets), live)
            if r is not None and (r.status_code >= 500 or r.status_code in (401, 403)):
                errors.append(f"{r.status_code} {r.text}")


def _random_request(
    c: SignedClient, rng: random.Random, m: Any, live: list[str]
) -> httpx.Response | None:
    """One random order request on market ``m`` (None: nothing to cancel)."""
    roll = rng.random()
    if roll < 0.5:
        cents = max(1, min(99, (m.mid or 50) + rng.randint(-3, 2)))
        body = {
            "market_id": m.id,
            "order_type": "GTC",
            "token_option": "yes",
            "limit_price": str(Decimal(cents) / 100),
            "amount": rng.randint(2, 20),
        }
        r = c.post("/orders", body)
        if r.status_code == 201:
            live.append(loads(r.content)["data"]["order_id"])
        return r
    if roll < 0.7:
        return c.post("/orders", {"market_id": m.id, "outcome": rng.choice("ab"), "amount": 3})
    if roll < 0.8:
        return c.post("/orders", {"market_id": m.id, "side": "SELL", "outcome": "a", "shares": 2})
    if live:
        return c.delete(f"/orders/{live.pop(rng.randrange(len(live)))}")
    return None


def _house_filler(sb: Sandbox, stop: threading.Event) -> None:
    """Every 20 ms the house fills part of a random resting user order, until ``stop``."""
    rng = random.Random(99)
    while not stop.wait(0.02):
        with sb.engine._lock:
            resting = [o.id for o in sb.engine.open_orders.values() if o.resting and not o.house]
        if resting:
            with contextlib.suppress(Rejected):  # it matched or was cancelled meanwhile
                sb.engine.house_fill(rng.choice(resting), rng.randint(1, 10))


def _money_state(engine: Engine, users: list[dict[str, str]]) -> tuple[Any, ...]:
    """(totals, every order, every user's balances, stats): what a restart must keep."""
    return (
        engine.totals(),
        {oid: engine.order(oid) for oid in engine.orders},
        {u["user_id"]: engine.balances(u["user_id"]) for u in users},
        dict(engine.stats),
    )


def test_bad_state_files_give_one_clear_error(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(8192))
    with pytest.raises(StateFileError, match="not a clobkit sandbox state file"):
        Sandbox(state=garbage)

    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
    db.close()
    with pytest.raises(StateFileError, match="another program"):
        Sandbox(state=foreign)

    ours = tmp_path / "state.db"
    with serve_in_thread(state=ours), pytest.raises(StateFileError, match="in use by another"):
        Sandbox(state=ours)
    other_users = {"users": [{"user_id": TRADER, "api_key": "k", "api_secret": "s"}]}
    with pytest.raises(StateFileError, match="other users"):
        Sandbox(other_users, state=ours)
    with pytest.raises(StateFileError, match="seed 0, the config has seed 7"):
        Sandbox(_default_with_seed(7), state=ours)

    # a damaged row: the file is refused, not half loaded
    with sqlite3.connect(ours) as db:
        db.execute("UPDATE accounts SET data = '{\"cash\": 5}' WHERE user_id = ?", (TRADER,))
    db.close()
    with pytest.raises(StateFileError, match="Object missing required field `bonus`"):
        Sandbox(state=ours)
    with sqlite3.connect(ours) as db:
        db.execute("UPDATE markets SET data = 'not json'")
    db.close()
    with pytest.raises(StateFileError, match="damaged"):
        Sandbox(state=ours)
    Sandbox(state=tmp_path / "new.db").close_state()  # a new file is fine


def _default_with_seed(seed: int) -> dict[str, Any]:
    from clobkit.sandbox.config import DEFAULT_USERS

    return {"users": [u.to_dict() for u in DEFAULT_USERS], "seed": seed}


@pytest.mark.parametrize("command", [("clobkit.sandbox",), ("clobkit", "sandbox")])
def test_the_cli_refuses_a_bad_state_file_in_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00not sqlite" * 1000)
    result = subprocess.run(
        [sys.executable, "-m", *command, "--port", "0", "--state", str(garbage)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "not a clobkit sandbox state file" in lines[0]


def test_without_state_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with serve_in_thread() as sb:
        assert sb.app.state.sandbox.store is None
        scenario(sb)
    assert list(tmp_path.iterdir()) == []


def test_old_nonces_are_pruned(tmp_path: Path) -> None:
    """The nonce table keeps only what the timestamp window can still accept."""
    clock = Clock()
    store = StateStore(tmp_path / "state.db", clock=clock)
    try:
        now = round(clock() * 1000)
        for i in range(50):
            store.note_nonce("k", f"old-{i}", now + 1_000)
        store.note_nonce("k", "young", now + 60_000)
        store.flush()
        assert len(store.nonces()) == 51
        clock.advance(5)
        store.note_nonce("k", "next", round(clock() * 1000) + 30_000)
        store.flush()
        assert sorted(n for _, n, _ in store.nonces()) == ["next", "young"]
        assert store._conn().execute("SELECT COUNT(*) FROM nonces").fetchone()[0] == 2
    finally:
        store.close()


def engine_dump(engine: Engine) -> dict[str, Any]:
    """Everything the engine holds that a restart must bring back, as plain values."""
    with engine._lock:
        minute_ago = engine._now_ms() - 60_000
        accounts = {
            uid: (
                engine.balances(uid),
                [t for t in a.minute if t > minute_ago],
                (a.day_key, a.day_units, a.month_key, a.month_units),
                {k: o.id for k, o in a.client_ids.items()},
                [o.id for o in a.orders],
                {
                    token: (
                        p.id,
                        p.shares,
                        p.reserved,
                        p.cost,
                        p.realized,
                        p.is_bonus,
                        p.updated_ms,
                    )
                    for token, p in a.positions.items()
                },
            )
            for uid, a in engine.accounts.items()
        }
        markets = {
            mid: (
                m.fx.status,
                m.fx.winner,
                m.mid,
                m.collateral,
                m.last_trade,
                m.traded_units,
                sorted(m.traders),
                m.book_ms,
                m.updated_ms,
                [[o.id for o in level] for level in m.bids + m.asks],
                {k: o.id for k, o in m.house_quotes.items()},
                (m.event.live, m.event.ended, m.event.updated_ms),
            )
            for mid, m in engine.markets.items()
        }
        return {
            "orders": {oid: engine.order(oid) for oid in engine.orders},
            "house_quotes": {
                o.id: (o.outcome, o.limit_cents, o.size, o.matched, o.seq)
                for o in engine.open_orders.values()
                if o.house
            },
            "open": sorted(engine.open_orders),
            "accounts": accounts,
            "markets": markets,
            "due": sorted((t, o.id) for t, _, o in engine._due if o.is_open),
            "expiries": sorted((t, o.id) for t, _, o in engine._expiries if o.is_open),
            "armed": sorted(engine._armed),
            "clob_ids": sorted(engine.clob_ids),
            "ledger": (engine.house_usdc, engine.house_shares, engine.deposits),
            "counters": (engine._seq, engine._fill_seq, engine._position_seq, engine.stats),
            "instance": engine.instance_id,
        }


@pytest.mark.slow
def test_random_engine_operations_survive_every_restart(tmp_path: Path) -> None:
    """Hundreds of seeded operations of every kind, restarts at random: nothing differs.

    The engine runs on a settable clock with a processing delay, so orders are
    caught mid-processing and GTD orders expire across restarts.
    """
    path = tmp_path / "state.db"
    clock = Clock()
    config = _default_with_seed(0) | {"processing_delay_ms": 50}

    def open_engine() -> tuple[Engine, StateStore]:
        store = StateStore(path, clock=clock)
        return Engine(config, clock=clock, store=store), store

    engine, store = open_engine()
    rng = random.Random(2026)
    markets = [m.id for m in engine.markets.values() if m.active][:6]
    restarts = 0
    for step in range(1, 401):
        _random_engine_step(engine, clock, rng, markets)
        if rng.random() < 0.1:  # a restart after any kind of operation
            restarts += 1
            assert engine.check_invariants() == []
            before = engine_dump(engine)
            store.close()
            engine, store = open_engine()
            assert engine_dump(engine) == before, f"after step {step}"
    assert engine.stats["fills"] > 20
    assert engine.stats["expiries"] > 0
    assert engine.stats["settlements"] == 3
    assert restarts > 20
    store.close()


def _random_engine_step(
    engine: Engine, clock: Clock, rng: random.Random, markets: list[str]
) -> None:
    """One seeded operation by a random user on a random market (a refusal is one too)."""
    uid = rng.choice([TRADER, MAKER])
    market = engine.markets[rng.choice(markets)]
    roll = rng.random()
    with contextlib.suppress(Rejected):
        if roll < 0.6:
            _random_order(engine, clock, rng, uid, market.id, market.mid or 50, roll)
        else:
            _random_event(engine, clock, rng, uid, market.id, markets, roll)


def _random_order(
    engine: Engine,
    clock: Clock,
    rng: random.Random,
    uid: str,
    market_id: str,
    mid: int,
    roll: float,
) -> None:
    """A limit order (GTC or GTD, maybe with a take-profit), a market buy or a sell."""
    if roll < 0.3:
        cents = max(1, min(99, mid + rng.randint(-5, 4)))
        body: dict[str, Any] = {
            "market_id": market_id,
            "order_type": rng.choice(["GTC", "GTD"]),
            "token_option": rng.choice(["yes", "no"]),
            "limit_price": str(Decimal(cents) / 100),
            "amount": rng.randint(1, 30),
            "expiration": int(clock()) + rng.randint(1, 5),
        }
        if rng.random() < 0.3:
            body["take_profit_price"] = str(Decimal(min(99, cents + 3)) / 100)
        engine.place_order(uid, body)
    elif roll < 0.5:
        engine.place_order(uid, {"market_id": market_id, "outcome": rng.choice("ab"), "amount": 4})
    else:
        body = {"market_id": market_id, "side": "SELL", "outcome": rng.choice("ab")}
        engine.place_order(uid, body | {"shares": rng.randint(1, 6)})


def _random_event(
    engine: Engine,
    clock: Clock,
    rng: random.Random,
    uid: str,
    market_id: str,
    markets: list[str],
    roll: float,
) -> None:
    """A cancel, a house fill, a price move, a deposit, a settlement or time passing."""
    if roll < 0.7:
        own = [o.id for o in engine.accounts[uid].orders if o.status == "live"]
        if own:
            engine.cancel_order(uid, rng.choice(own))
    elif roll < 0.8:
        resting = [o.id for o in engine.open_orders.values() if o.resting and not o.house]
        if resting:
            engine.house_fill(rng.choice(resting), rng.randint(1, 8))
    elif roll < 0.85:
        engine.set_price(market_id, str(Decimal(rng.randint(20, 80)) / 100))
    elif roll < 0.9:
        engine.deposit(uid, rng.randint(1, 50), bonus=rng.random() < 0.5)
    elif roll < 0.92 and len(markets) > 3:
        markets.remove(market_id)
        engine.settle(market_id, rng.choice("ab"))
    else:
        clock.advance(rng.choice([0.02, 0.06, 0.5, 2]))
        engine.tick()


@pytest.mark.slow
def test_hostile_state_files_are_refused_in_one_line(tmp_path: Path) -> None:
    """Each column of a state file set to a wrong type, NULL or out of range, a table
    dropped or added, a trigger: refused before the first request, naming what."""
    from .state_files import HOSTILE, base_state, change, load

    base = tmp_path / "base.db"
    base_state(base)
    assert load(base) is None  # the untouched file serves
    for what, statements, said in HOSTILE:
        path = tmp_path / "hostile.db"
        base_state(path)
        change(path, *statements)
        refusal = load(path)
        assert refusal is not None, what
        assert refusal.startswith(f"state file {path}"), what
        assert said in refusal, (what, refusal)


def refusal(path: str | Path, config: Any = None) -> str:
    """The one-line refusal of a sandbox started on ``path``."""
    with pytest.raises(StateFileError) as caught:
        Sandbox(config, state=path).close_state()
    text = str(caught.value)
    assert "\n" not in text, text
    return text


def cli_refusal(state: str, cwd: Path) -> str:
    """``error: ...`` of ``python -m clobkit.sandbox --state STATE``: exit 2, one line."""
    env = dict(os.environ)
    src = str(Path(__file__).parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "clobkit.sandbox", "--port", "0", "--state", state],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: state file "), result.stderr
    return lines[0]


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    assert refusal(tmp_path) == f"state file {tmp_path}: it is a directory, not a file"


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "deeper" / "state.db"
    assert refusal(path) == (
        f"state file {path}: its directory {tmp_path / 'nope' / 'deeper'} does not exist"
    )
    file = tmp_path / "plain"
    file.write_text("x")
    assert (
        refusal(file / "state.db") == f"state file {file / 'state.db'}: {file} is not a directory"
    )
    assert not (tmp_path / "nope").exists()


def test_an_empty_path_and_sqlites_memory_name_are_refused(tmp_path: Path) -> None:
    assert refusal("") == "state file '': the path is empty"
    assert "in-memory database" in refusal(":memory:")
    assert "NUL" in refusal(str(tmp_path / "a\0b"))


def test_the_cli_names_a_bad_path(tmp_path: Path) -> None:
    assert cli_refusal(str(tmp_path), tmp_path).endswith("it is a directory, not a file")
    assert cli_refusal("no/such/dir/s.db", tmp_path) == (
        f"error: state file no/such/dir/s.db: its directory {tmp_path}/no/such/dir does not exist"
    )


def _privileged(probe: Path) -> bool:
    """True when file modes do not bind this process (root with CAP_DAC_OVERRIDE)."""
    probe.write_text("x")
    probe.chmod(0o444)
    try:
        return os.access(probe, os.W_OK)
    finally:
        probe.chmod(0o644)
        probe.unlink()


def test_a_read_only_file_or_directory_is_named(tmp_path: Path) -> None:
    ro = tmp_path / "ro.db"
    base_state(ro)
    ro.chmod(0o444)
    if _privileged(tmp_path / "probe"):
        # file modes do not bind this process (root): the file opens as any other, never
        # refused by a look at its mode (the permission is only read once SQLite failed)
        Sandbox(None, state=ro).close_state()
        return
    assert refusal(ro) == f"state file {ro}: it is read-only (the sandbox writes to it)"
    ro.chmod(0o000)
    assert refusal(ro) == f"state file {ro}: it cannot be read (permission denied)"
    folder = tmp_path / "locked"
    folder.mkdir()
    base_state(folder / "s.db")
    folder.chmod(0o555)
    try:
        for name in ("s.db", "new.db"):
            assert refusal(folder / name) == (
                f"state file {folder / name}: its directory {folder} is not writable"
                f" (SQLite keeps {name}-wal beside the file)"
            )
    finally:
        folder.chmod(0o755)


ODD_NAMES = [
    "sp ace.db",
    "uni-é✓😀.db",
    "q?mode=ro.db",
    "pct%20.db",
    "hash#x.db",
    "file:x.db",  # SQLite reads a name starting "file:" as a URI: it opened x.db
    "file:y.db?mode=memory",
    "-dash.db",
    "new\nline.db",
]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_file_names_are_the_file_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A relative name with URI characters is that file in the working directory, and keeps
    the state across a restart."""
    monkeypatch.chdir(tmp_path)
    with serve_in_thread(state=name) as sb:
        market = book_market(sb.engine)
        order = sb.engine.place_order(TRADER, {"market_id": market.id, "outcome": "a", "amount": 5})
    assert sorted(os.listdir(tmp_path)) == [name]
    with serve_in_thread(state=name) as sb:
        assert order.order_id in sb.engine.orders


def test_a_refusal_naming_an_odd_path_is_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "new\nline\tx"
    odd.mkdir()
    assert refusal(odd) == f"state file {str(odd)!r}: it is a directory, not a file"
    assert refusal(odd / "more" / "s.db") == (
        f"state file {str(odd / 'more' / 's.db')!r}: its directory {str(odd / 'more')!r}"
        " does not exist"
    )


def test_a_truncated_file_is_damaged_not_foreign(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    base_state(path)
    data = path.read_bytes()
    for cut in (4096 * 3 + 100, len(data) // 2, len(data) - 4096):
        path.write_bytes(data[:cut])
        text = refusal(path)
        assert text.startswith(f"state file {path} is damaged"), text
        assert "not a clobkit" not in text


def test_a_file_of_a_newer_clobkit_says_so(tmp_path: Path) -> None:
    """A newer format most likely has another schema: the version is told, not "damaged"."""
    path = tmp_path / "state.db"
    base_state(path)
    newer = str(int(SCHEMA_VERSION) + 1)
    change(
        path,
        f"UPDATE meta SET value = '{newer}' WHERE key = 'schema'",
        "CREATE TABLE fills (data TEXT)",
        "ALTER TABLE orders ADD COLUMN venue TEXT",
    )
    assert refusal(path) == (
        f"state file {path} was written by a newer clobkit (schema {newer};"
        f" this sandbox reads schema {SCHEMA_VERSION}): upgrade clobkit or use a new file"
    )
    change(path, "UPDATE meta SET value = '0' WHERE key = 'schema'")
    assert refusal(path) == f"state file {path} has schema '0', this sandbox reads '1'"


def test_a_damaged_identity_is_named(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    base_state(path)
    change(path, """UPDATE meta SET value = '{"seed": 0}' WHERE key = 'identity'""")
    assert "missing required field `users`" in refusal(path)
    change(path, "DELETE FROM meta WHERE key = 'identity'")
    assert refusal(path) == f"state file {path} is damaged: meta: its identity row is missing"


def _config(**extra: Any) -> dict[str, Any]:
    return {"users": [u.to_dict() for u in DEFAULT_USERS], **extra}


def test_another_extra_games_is_named(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    Sandbox(_config(extra_games=3), state=path).close_state()
    assert refusal(path, _config(extra_games=5)) == (
        f"state file {path} was written with extra_games 3, the config has extra_games 5"
    )
    assert "extra_games 3, the config has extra_games 0" in refusal(path, _config())
    assert "seed 0, the config has seed 4" in refusal(path, _config(seed=4, extra_games=3))
    Sandbox(_config(extra_games=3), state=path).close_state()  # the original config still reads


def test_a_file_without_extra_games_in_its_identity_still_reads(tmp_path: Path) -> None:
    """Files written before extra_games was recorded: told apart by the markets alone."""
    path = tmp_path / "state.db"
    Sandbox(_config(), state=path).close_state()
    change(
        path, "UPDATE meta SET value = json_remove(value, '$.extra_games') WHERE key = 'identity'"
    )
    Sandbox(_config(), state=path).close_state()
    assert refusal(path, _config(extra_games=2)) == (
        f"state file {path} was written for other markets"
        " (another extra_games setting or fixture version)"
    )


_USERS = [
    {
        "user_id": f"00000000-0000-4000-8000-0000000004{i:02d}",
        "api_key": f"burst-{i}",
        "api_secret": f"burst-secret-{i}",
        "balance": "100000",
    }
    for i in range(4)
]


# A skew window longer than the test: each answered request is replayed after the kill and
# the restart, which a busy machine can stretch past the default 30 s, and the clock's
# refusal comes before the nonce's (the nonce's memory is what this test is about).
_BURST_CONFIG = {
    "users": _USERS,
    "rate_limit_per_minute": None,
    "risk": {"per_minute": None},
    "skew_seconds": 900,
}


class _Answered:
    """Every answered request of the burst: (method, route, headers, body, status, order id)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[str, str, dict[str, str], bytes, int, str | None]] = []
        self.enough = threading.Event()


def _burst_trader(base: str, index: int, markets: list[Any], answered: _Answered) -> None:
    """Orders and cancels at random until the sandbox stops answering."""
    rng = random.Random(index)
    signer = RequestSigner(_USERS[index]["api_key"], _USERS[index]["api_secret"])
    live: list[str] = []
    with loopback_http(base_url=base, timeout=30) as c:
        while True:
            m = rng.choice(markets)
            fok = {"market_id": m.id, "outcome": "a", "amount": 3}
            body: dict[str, Any] | None = fok
            method, route = "POST", "/orders"
            if rng.random() < 0.6:
                cents = max(1, min(99, (m.mid or 50) + rng.randint(-3, 2)))
                price = str(Decimal(cents) / 100)
                body = {**fok, "order_type": "GTC", "limit_price": price, "amount": 5}
            elif live:
                body, method, route = None, "DELETE", f"/orders/{live.pop()}"
            content = b"" if body is None else dumps(body)
            headers = signer.headers(method, PREFIX + route, content)
            headers["Content-Type"] = "application/json"
            try:
                r = c.request(method, PREFIX + route, headers=headers, content=content)
            except httpx.HTTPError:
                return  # killed
            oid = loads(r.content)["data"]["order_id"] if r.status_code == 201 else None
            if oid is not None and body is not None and "order_type" in body:
                live.append(oid)
            with answered.lock:
                answered.rows.append((method, route, headers, content, r.status_code, oid))
                if len(answered.rows) >= 300:
                    answered.enough.set()


@pytest.mark.slow
def test_a_kill_in_a_burst_of_orders_keeps_every_answer(tmp_path: Path) -> None:
    """SIGKILL while four clients order and cancel: after the restart every answered order
    and cancel is there, every answered request is refused as a replay, money is conserved."""
    path, config = tmp_path / "state.db", tmp_path / "config.json"
    config.write_text(json.dumps(_BURST_CONFIG))
    proc, base = start_cli("clobkit.sandbox", "--config", str(config), "--state", str(path))
    markets = [m for m in Engine(_BURST_CONFIG).markets.values() if m.active and m.mid][:2]
    answered = _Answered()
    threads = [
        threading.Thread(target=_burst_trader, args=(base, i, markets, answered)) for i in range(4)
    ]
    try:
        for th in threads:
            th.start()
        assert answered.enough.wait(120)
    finally:
        proc.send_signal(signal.SIGKILL)  # the clients are still sending
        proc.wait(timeout=15)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        for th in threads:
            th.join(30)
    # one client for the replays: httpx.request makes a client (and its TLS context) each
    # call, 0.5 s apiece on a busy machine
    with serve_in_thread(_BURST_CONFIG, state=path) as sb, loopback_http() as replay:
        assert sb.engine.check_invariants() == []
        for method, route, headers, content, status, oid in answered.rows:
            if oid is not None:
                assert oid in sb.engine.orders, oid
            if method == "DELETE" and status == 200:
                assert sb.engine.orders[route.rsplit("/", 1)[1]].status == CANCELLED, route
            r = replay.request(
                method, sb.base_url + PREFIX + route, headers=headers, content=content
            )
            assert (r.status_code, loads(r.content)["detail"]) == (401, "nonce already used")
        assert sb.engine.check_invariants() == []


def test_the_base_state_reads(tmp_path: Path) -> None:
    """The file the tests above change is itself fine (so each refusal is the change's)."""
    path = tmp_path / "state.db"
    base_state(path)
    with serve_in_thread(state=path) as sb, SignedClient(sb.base_url, sb.user(TRADER)) as c:
        assert c.get("/wallet").status_code == 200
        assert sb.engine.check_invariants() == []
