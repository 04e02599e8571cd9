"""Every attribute of a busy engine is either in the state file or declared transient.

``persisted.py`` declares, per kind of object, what its row holds and what is
transient (with why). These tests walk a real engine after a busy session on a
state file (orders of every status, house quotes, positions, settlements, armed
take-profits, orders in processing, a subscription) and fail on any attribute
the declaration does not name, and on any name it declares that no longer
exists; the fixtures' attributes left out of the file must be those the seed
builds again.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import fields
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from clobkit.sandbox import Engine, Rejected
from clobkit.sandbox.fixtures import EventFixture, MarketFixture, build_fixtures
from clobkit.sandbox.persisted import ACCOUNT, ENGINE, EVENT, MARKET, ORDER, POSITION, Record
from clobkit.sandbox.state import Account, Order, Position
from clobkit.sandbox.store import SCHEMA_VERSION, StateStore

from .conftest import MAKER, TRADER, Clock


def _session(engine: Engine, clock: Clock) -> None:
    """Seeded operations of every kind, ending with work still pending."""
    rng = random.Random(23)
    markets = [m.id for m in engine.markets.values() if m.active][:5]
    for _ in range(150):
        uid = rng.choice([TRADER, MAKER])
        market = engine.markets[rng.choice(markets)]
        cents = max(1, min(98, (market.mid or 50) + rng.randint(-4, 3)))
        roll = rng.random()
        with contextlib.suppress(Rejected):
            if roll < 0.35:
                body: dict[str, Any] = {
                    "market_id": market.id,
                    "order_type": rng.choice(["GTC", "GTD"]),
                    "token_option": rng.choice(["yes", "no"]),
                    "limit_price": str(Decimal(cents) / 100),
                    "amount": rng.randint(1, 20),
                    "expiration": int(clock()) + rng.randint(1, 5),
                    "take_profit_price": str(Decimal(cents + 1) / 100),
                }
                engine.place_order(uid, body)
            elif roll < 0.55:
                engine.place_order(uid, {"market_id": market.id, "outcome": "a", "amount": 3})
            elif roll < 0.65:
                own = [o.id for o in engine.accounts[uid].orders if o.status == "live"]
                if own:
                    engine.cancel_order(uid, rng.choice(own))
            elif roll < 0.75:
                resting = [o.id for o in engine.open_orders.values() if o.resting and not o.house]
                if resting:
                    engine.house_fill(rng.choice(resting), 2)
            elif roll < 0.8:
                engine.set_price(market.id, str(Decimal(rng.randint(30, 70)) / 100))
            elif roll < 0.85:
                engine.deposit(uid, 10, bonus=rng.random() < 0.5)
            else:
                clock.advance(rng.choice([0.02, 0.5, 2]))
                engine.tick()
    event = next(e for e in engine.events.values() if len(e.market_ids) == 3 and not e.ended)
    for market_id, winner in zip(event.market_ids, "bab", strict=True):
        engine.settle(market_id, winner)
    engine.place_order(TRADER, {"market_id": markets[0], "outcome": "b", "amount": 2})
    engine.watch_user(TRADER, 1)
    engine.add_listener(lambda events: None)


def _names(record: Record) -> set[str]:
    """The attributes a record names on its object (a dotted one by its first part)."""
    return {name.split(".")[0] for name in record.persisted} | set(record.transient)


def _undeclared(obj: object, record: Record) -> set[str]:
    return set(vars(obj)) - _names(record)


def _busy_engine(tmp_path: Path) -> tuple[Engine, StateStore, Clock]:
    clock = Clock()
    store = StateStore(tmp_path / "state.db", clock=clock)
    engine = Engine({"processing_delay_ms": 50}, clock=clock, store=store)
    _session(engine, clock)
    return engine, store, clock


def test_every_attribute_of_a_busy_engine_is_persisted_or_transient(tmp_path: Path) -> None:
    start = Clock()()
    engine, store, _ = _busy_engine(tmp_path)
    try:
        orders = [*engine.orders.values(), *engine.open_orders.values()]
        positions = [p for a in engine.accounts.values() for p in a.positions.values()]
        # the session reached every kind of state the declaration speaks of
        assert {o.status for o in orders} >= {"live", "matched", "cancelled", "pending"}
        assert any(o.house for o in orders)
        assert engine._armed
        assert engine._due
        assert positions
        assert engine._watched
        assert engine._listeners
        assert any(e.ended for e in engine.events.values())
        groups: list[tuple[Record, list[Any]]] = [
            (ENGINE, [engine]),
            (MARKET, list(engine.markets.values())),
            (EVENT, list(engine.events.values())),
            (ACCOUNT, list(engine.accounts.values())),
            (POSITION, positions),
            (ORDER, orders),
        ]
        for record, objects in groups:
            found = set().union(*(vars(obj) for obj in objects))
            undeclared = found - _names(record)
            assert not undeclared, (
                f"{record.cls.__name__}: neither persisted nor transient: {undeclared}"
            )
            stale = _names(record) - found
            assert not stale, f"{record.cls.__name__}: declared but never held: {stale}"
        _fixtures_left_out_are_seeded(engine, round(start * 1000))
    finally:
        store.close()


def _fixtures_left_out_are_seeded(engine: Engine, start_ms: int) -> None:
    """The fixture attributes not in the file are those a fresh build gives again."""
    fresh = build_fixtures(engine.config.seed, start_ms, engine.config.extra_games)
    kept_market = {n.removeprefix("fx.") for n in MARKET.persisted if n.startswith("fx.")}
    assert kept_market == {"status", "winner"}
    for fx in fresh.markets:
        ours = engine.markets[fx.id].fx
        for f in fields(MarketFixture):
            if f.name not in kept_market:
                assert getattr(ours, f.name) == getattr(fx, f.name), (fx.id, f.name)
    for ev in fresh.events:
        for f in fields(EventFixture):
            if f.name not in EVENT.persisted:
                assert getattr(engine.events[ev.id], f.name) == getattr(ev, f.name), f.name


def test_an_attribute_nobody_declared_is_caught(tmp_path: Path) -> None:
    engine, store, _ = _busy_engine(tmp_path)
    try:
        assert _undeclared(engine, ENGINE) == set()
        engine.new_counter = 0  # type: ignore[attr-defined]
        assert _undeclared(engine, ENGINE) == {"new_counter"}
        market = next(iter(engine.markets.values()))
        market.volume = 1  # type: ignore[attr-defined]
        assert _undeclared(market, MARKET) == {"volume"}
    finally:
        store.close()


def test_a_dataclass_field_is_persisted_unless_declared_transient() -> None:
    """A field added to Order, Position or Account is in the row with no other change."""
    for record, cls in ((ORDER, Order), (POSITION, Position), (ACCOUNT, Account)):
        every = {f.name for f in fields(cls)}
        assert record.persisted | set(record.transient) == every, cls.__name__
        assert not record.persisted & set(record.transient), cls.__name__
    assert "market" in ORDER.persisted  # as market_id
    assert "market" in POSITION.persisted


def test_every_transient_attribute_says_why() -> None:
    for record in (ENGINE, MARKET, EVENT, ACCOUNT, POSITION, ORDER):
        for name, why in record.transient.items():
            assert len(why.split()) >= 2, (record.cls.__name__, name)


def _rows(engine: Engine) -> dict[tuple[str, str], Any]:
    """Every object's row as its record writes it, by (table, key)."""
    orders = [*engine.orders.values(), *engine.open_orders.values()]
    rows: dict[tuple[str, str], Any] = {("engine", "1"): ENGINE.dump(engine, engine)}
    rows.update({("orders", o.id): ORDER.dump(o, engine) for o in orders})
    for market_id, market in engine.markets.items():
        rows["markets", market_id] = MARKET.dump(market, engine)
    for event_id, event in engine.events.items():
        rows["events", event_id] = EVENT.dump(event, engine)
    for user_id, account in engine.accounts.items():
        rows["accounts", user_id] = ACCOUNT.dump(account, engine)
        for token, position in account.positions.items():
            rows["positions", f"{user_id} {token}"] = POSITION.dump(position, engine)
    return rows


def test_each_field_reads_back_what_it_wrote(tmp_path: Path) -> None:
    """Restarted on its file, a busy engine's every row is the same: each field's reading
    undoes its writing (the restart tests compare the API's answers)."""
    engine, store, clock = _busy_engine(tmp_path)
    before = _rows(engine)
    store.close()
    store = StateStore(tmp_path / "state.db", clock=clock)
    try:
        again = Engine({"processing_delay_ms": 50}, clock=clock, store=store)
        assert _rows(again) == before
    finally:
        store.close()


# The keys of each table's rows in format "1" (store.SCHEMA_VERSION), as every file
# written so far holds them.
_FORMAT_1 = {
    "engine": "instance_id seq fill_seq position_seq house_usdc deposits stats house_shares armed",
    "markets": "status winner mid collateral last_trade traded_units traders book_ms updated_ms"
    " book",
    "events": "live ended updated_ms",
    "accounts": "cash bonus deposits cash_reserved bonus_reserved payouts minute day_key day_units"
    " month_key month_units",
    "positions": "id user_id outcome shares reserved cost realized is_bonus updated_ms market_id",
    "orders": "id user_id outcome side order_type limit_cents size maker_amount taker_amount"
    " amount_based reserved funding matched usdc status seq price_text source source_id"
    " clob_order_id salt nonce fee_rate_bps expiration notification_id client_order_id is_bonus"
    " take_profit stop_loss tx_hashes created_ms updated_ms submitted_ms matched_ms settled_ms"
    " settlement_status settlement_units cancel_reason resting next_step_ms market_id",
}


def test_files_of_format_1_still_read() -> None:
    """A key gone (a row holding it is refused as unknown) or a new key without a default
    (a row lacking it is refused) breaks every file written before: bump SCHEMA_VERSION."""
    assert SCHEMA_VERSION == "1"
    for record in (ENGINE, MARKET, EVENT, ACCOUNT, POSITION, ORDER):
        keys = [f.key for f in record.fields]
        written = _FORMAT_1[record.table].split()
        assert set(written) <= set(keys), (record.table, set(written) - set(keys))
        for f in record.fields:
            if f.key not in written:
                assert f.default is not msgspec.NODEFAULT, (record.table, f.key)
        if record.array_like:  # a row that is an array reads by position
            assert keys == written, record.table
