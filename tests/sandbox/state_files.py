"""Hostile sandbox state files: a real file, changed by SQL as a person or a bug might.

``base_state(path)`` writes a state file that holds every kind of row (orders
of every status, positions, deposits, settled markets and an ended event,
used nonces); ``HOSTILE`` lists changes of it, each with what the refusal
names. ``load(path)`` starts a sandbox on a file and answers a few requests:
the file is either refused with one ``StateFileError`` line or fully usable.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from clobkit import RequestSigner
from clobkit.sandbox import serve_in_thread
from clobkit.sandbox.store import StateFileError

from ..conftest import loopback_http
from .conftest import TRADER

TABLES = ("meta", "engine", "accounts", "positions", "markets", "events", "orders", "nonces")
_BASE: dict[str, bytes] = {}


def base_state(path: Path) -> None:
    """A state file of the persistence scenario (written once, then copied)."""
    if not _BASE:
        from .test_persistence import scenario

        made = path.with_name("base-state.db")
        with serve_in_thread(state=made) as sb:
            scenario(sb)
        _BASE["db"] = made.read_bytes()
        made.unlink()
    path.write_bytes(_BASE["db"])


def change(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    try:
        for statement in statements:
            db.execute(statement)
        db.commit()
    finally:
        db.close()


def load(path: Path) -> str | None:
    """Start a sandbox on ``path``: None when it served requests, else the refusal's text."""
    try:
        with serve_in_thread(state=path) as sb:
            assert sb.engine.check_invariants() == []
            user = sb.user(TRADER)
            signer = RequestSigner(user.api_key, user.api_secret)
            with loopback_http(base_url=sb.base_url, timeout=10) as c:
                for route in ("/wallet", "/orders", "/positions", "/events?limit=5"):
                    path_ = "/api/ext/v1" + route
                    answer = c.get(path_, headers=signer.headers("GET", path_))
                    assert answer.status_code < 500, (route, answer.text)
            assert sb.engine.check_invariants() == []
    except StateFileError as exc:
        text = str(exc)
        assert "\n" not in text
        return text
    return None


def copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst


def _json(table: str, field: str, value: str) -> str:
    """Set ``field`` of the first row's JSON in ``table`` to the SQL JSON ``value``."""
    return (
        f"UPDATE {table} SET data = json_set(data, '$.{field}', {value})"
        f" WHERE rowid = (SELECT min(rowid) FROM {table})"
    )


# (what is changed, its SQL, a piece of the one-line refusal)
HOSTILE = [
    (
        "engine seq as text",
        [_json("engine", "seq", "'x'")],
        "Expected `int`, got `str` - at `$.seq`",
    ),
    (
        "negative engine seq",
        [_json("engine", "seq", "-1")],
        "Expected `int` >= 0 - at `$.seq`",
    ),
    (
        "engine seq below used",
        [_json("engine", "seq", "1")],
        "engine: seq 1 is below an order's seq",
    ),
    ("position_seq below used", [_json("engine", "position_seq", "0")], "position_seq 0 is below"),
    (
        "fill_seq null",
        [_json("engine", "fill_seq", "json('null')")],
        "got `null` - at `$.fill_seq`",
    ),
    ("stats count text", [_json("engine", "stats.fills", "'7'")], "at `$.stats[...]`"),
    ("unknown engine field", [_json("engine", "extra", "1")], "unknown field `extra`"),
    (
        "order seq text column",
        ["UPDATE orders SET seq = 'x'"],
        "column seq holds text, not integer",
    ),
    ("order size negative", [_json("orders", "size", "-5")], "at `$.size`"),
    ("order status number", [_json("orders", "status", "3")], "at `$.status`"),
    ("order is_bonus int", [_json("orders", "is_bonus", "1")], "at `$.is_bonus`"),
    ("order id mismatch", [_json("orders", "id", "'other'")], "its columns and its data disagree"),
    ("account cash text", [_json("accounts", "cash", "'100'")], "at `$.cash`"),
    ("account minute text", [_json("accounts", "minute", "'x'")], "at `$.minute`"),
    ("position shares negative", [_json("positions", "shares", "-1")], "at `$.shares`"),
    ("market mid out of range", [_json("markets", "mid", "500")], "at `$.mid`"),
    ("market book text", [_json("markets", "book", "'x'")], "at `$.book`"),
    (
        "event live as int",
        ["UPDATE events SET data = '[1, false, 0]' WHERE rowid = (SELECT min(rowid) FROM events)"],
        "Expected `bool`, got `int`",
    ),
    ("primary key NULL", ["UPDATE markets SET market_id = NULL"], "column market_id holds NULL"),
    (
        "nonce expiry text",
        ["INSERT INTO nonces VALUES ('k', 'n', 'x')"],
        "column expires_ms holds text",
    ),
    ("nonce as blob", ["INSERT INTO nonces VALUES ('k', x'00', 1)"], "column nonce holds blob"),
    ("nonces dropped", ["DROP TABLE nonces"], "its table nonces is missing"),
    ("orders dropped", ["DROP TABLE orders"], "its table orders is missing"),
    ("index dropped", ["DROP INDEX nonces_by_expiry"], "its index nonces_by_expiry is missing"),
    ("table added", ["CREATE TABLE notes (x)"], "it has a table notes this sandbox never writes"),
    ("index added", ["CREATE INDEX o2 ON orders (user_id)"], "it has a index o2"),
    ("view added", ["CREATE VIEW v AS SELECT 1"], "it has a view v"),
    (
        "trigger added",
        ["CREATE TRIGGER t AFTER INSERT ON nonces BEGIN DELETE FROM nonces; END"],
        "it has a trigger t",
    ),
    (
        "table changed",
        ["ALTER TABLE orders ADD COLUMN note TEXT"],
        "its table orders is not the one this sandbox writes",
    ),
    ("meta emptied", ["DELETE FROM meta"], "has rows but the meta table is empty"),
    ("engine row gone", ["DELETE FROM engine"], "its engine row is missing"),
    ("not json", ["UPDATE markets SET data = 'not json'"], "damaged"),
    ("huge int", [_json("engine", "house_usdc", "json('1" + "0" * 5000 + "')")], "damaged"),
]
