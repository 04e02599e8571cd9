"""The sandbox's optional state file: SQLite (standard library), WAL, one transaction per operation.

Without a state file the sandbox keeps everything in memory, exactly as
before; nothing here runs. With one (``--state FILE``, ``Sandbox(state=...)``):

* The engine records what each operation changed (orders, markets, users) in
  three sets; when the outermost operation ends, still under the engine lock
  and before any answer or WebSocket event leaves, :meth:`StateStore.save`
  writes the changed rows, the engine's counters and ledger and the nonces
  used since the last commit in **one** transaction. What each row holds,
  and how it is read back, is declared once per kind of object in
  ``persisted.py`` (an ``Order``'s row is the dataclass field by field, so a
  field added to it is persisted without touching either module).
* Used nonces are buffered by the authenticator's hook and committed with the
  next transaction; the app's ``CommitBeforeAnswer`` middleware commits
  any still buffered before a response (or WebSocket accept) starts, so a
  request's nonce is on disk before its answer. Nonces older than the
  authenticator's timestamp window are pruned (a replay of them fails the
  timestamp check anyway).
* ``journal_mode=WAL``, ``synchronous=NORMAL``: a commit survives the sandbox
  process being killed; an OS crash or power loss may lose the last
  transactions. ``locking_mode=EXCLUSIVE``: one sandbox per file at a time.
* A file written for another configuration (other seed, users or markets), a
  file of another program, or a corrupt one is refused with
  :class:`StateFileError` (one line, naming the file and what is wrong),
  before the first request: its schema must be exactly the one written here
  (no table, index, trigger or view missing, changed or added), every column
  must hold its SQL type, every row's JSON must hold each field with its
  type (a counter as text, a NULL, an unknown field: refused) and range
  (no negative counter or amount), and the counters must lie beyond every
  id they have handed out. Nothing is half loaded. A path that cannot be a
  state file (a directory, a missing or read-only one) is refused saying so.
"""

from __future__ import annotations

import heapq
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from ..core.safe_files import new_regular
from ..core.spec import LIVE
from ..errors import ClobkitError
from .invariants import violations as state_violations
from .persisted import ACCOUNT, ENGINE, EVENT, MARKET, ORDER, POSITION, Damaged, Identity
from .state import FOK, Order, Position
from .state import EngineState as Engine

__all__ = ["SCHEMA_VERSION", "StateFileError", "StateStore"]

SCHEMA_VERSION = "1"
_APP = "clobkit-sandbox-state"
_PRUNE_EVERY_MS = 1_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS engine (id INTEGER PRIMARY KEY CHECK (id = 1), data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (user_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS positions (
    user_id TEXT NOT NULL, token_id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (user_id, token_id));
CREATE TABLE IF NOT EXISTS markets (market_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nonces (
    api_key TEXT NOT NULL, nonce TEXT NOT NULL, expires_ms INTEGER NOT NULL,
    PRIMARY KEY (api_key, nonce));
CREATE INDEX IF NOT EXISTS nonces_by_expiry ON nonces (expires_ms);
"""


class StateFileError(ClobkitError):
    """The sandbox's state file cannot be used (foreign, corrupt, busy or of another config)."""


def _master(db: sqlite3.Connection) -> dict[tuple[str, str], str | None]:
    """The schema's objects (tables, indexes, triggers, views): (type, name) -> its SQL."""
    rows = db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return {(kind, name): sql for kind, name, sql in rows}


def _written_schema() -> dict[tuple[str, str], str | None]:
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(_SCHEMA)
        return _master(db)
    finally:
        db.close()


_WRITTEN = _written_schema()
# each column's SQL type as this module writes it (typeof(): NULL is none of them)
_COLUMNS = {
    "meta": {"key": "text", "value": "text"},
    "engine": {"id": "integer", "data": "text"},
    "accounts": {"user_id": "text", "data": "text"},
    "positions": {"user_id": "text", "token_id": "text", "data": "text"},
    "markets": {"market_id": "text", "data": "text"},
    "events": {"event_id": "text", "data": "text"},
    "orders": {"order_id": "text", "user_id": "text", "seq": "integer", "data": "text"},
    "nonces": {"api_key": "text", "nonce": "text", "expires_ms": "integer"},
}


_ENCODE = msgspec.json.Encoder().encode


def _dumps(data: object) -> str:
    """A row's JSON text (msgspec: several times faster than json, big ints exact)."""
    return _ENCODE(data).decode()


def _shown(path: str) -> str:
    """The path as it is in a message, quoted when it would not read as one line of text."""
    return path if path and path.isprintable() else repr(path)


def _name_problem(path: str) -> str | None:
    """What makes ``path`` no file name at all (None: nothing)."""
    if not path:
        return "the path is empty"
    if "\0" in path:
        return "the path holds a NUL character"
    if path == ":memory:":
        return "that is SQLite's in-memory database, not a file (leave the state file out)"
    return None


def _path_problem(path: str) -> str | None:
    """What keeps ``path`` from being a state file before SQLite opens it (None: nothing seen)."""
    problem = _name_problem(path)
    if problem is None and os.path.isdir(path):
        problem = "it is a directory, not a file"
    if problem is not None:
        return problem
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(folder):
        return f"its directory {_shown(folder)} does not exist"
    if not os.path.isdir(folder):
        return f"{_shown(folder)} is not a directory"
    if os.path.exists(path) and not os.path.isfile(path):
        return "it is not a regular file"
    return None


def _access_problem(path: str) -> str | None:
    """The permission that made SQLite fail on ``path``, if one is missing (None: none)."""
    if os.path.exists(path):
        if not os.access(path, os.R_OK):
            return "it cannot be read (permission denied)"
        if not os.access(path, os.W_OK):
            return "it is read-only (the sandbox writes to it)"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f"its directory {_shown(folder)} is not writable"
            f" (SQLite keeps {_shown(os.path.basename(path))}-wal beside the file)"
        )
    return None


class StateStore:
    """One open state file. Thread-safe; the engine calls it under its own lock."""

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time):
        self.path = os.fspath(path)
        self._name = _shown(self.path)
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: list[tuple[str, str, int]] = []
        self._failed: str | None = None
        self._pruned_ms = 0
        self._cache: dict[tuple[str, str], str] = {}
        self._engine_row = ""
        self._db: sqlite3.Connection | None = None
        problem = _path_problem(self.path)
        if problem is None:  # made here if new: never created or opened through a link
            problem = new_regular(self.path, ("-wal", "-shm", "-journal"))
        if problem is not None:
            raise StateFileError(f"state file {self._name}: {problem}")
        try:
            # always a URI of the literal name: SQLite reads a name starting "file:"
            # as a URI (another file, or none), and "?" / "#" would end it
            uri = Path(os.path.abspath(self.path)).as_uri()
            self._db = sqlite3.connect(
                uri, timeout=0, isolation_level=None, check_same_thread=False, uri=True
            )
            self._prepare(self._db)
        except sqlite3.Error as exc:
            self.close()
            raise self._refusal(exc) from None
        except StateFileError:
            self.close()
            raise

    def _refusal(self, exc: sqlite3.Error) -> StateFileError:
        """The one line for an SQLite error met while opening the file (what it means)."""
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StateFileError(f"state file {self._name} is in use by another sandbox")
        if "file is not a database" in text:
            return StateFileError(
                f"state file {self._name} is not a clobkit sandbox state file ({text})"
            )
        if "malformed" in text:  # SQLITE_CORRUPT: an SQLite file cut short or overwritten
            return StateFileError(f"state file {self._name} is damaged ({text})")
        problem = _access_problem(self.path)
        return StateFileError(f"state file {self._name}: {problem or text}")

    def _prepare(self, db: sqlite3.Connection) -> None:
        """Lock the file for this process (WAL), then check its schema or write it (new)."""
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise StateFileError(f"state file {self._name}: WAL mode unavailable ({mode})")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("BEGIN IMMEDIATE")  # takes the exclusive lock, kept until close
        found = _master(db)
        tables = {name for kind, name in found if kind == "table"}
        if tables and "meta" not in tables:
            raise StateFileError(
                f"state file {self._name} is an SQLite file of another program (no meta table)"
            )
        if found:
            # another version's file most likely has another schema: say which first
            if "meta" in tables:
                self._check_version(db)
            # never CREATE ... IF NOT EXISTS over a file: a dropped nonces table
            # would come back empty, and every nonce used before would replay
            self._check_schema(found)
        else:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
        db.execute("COMMIT")  # the exclusive lock stays until close

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        """Commit buffered nonces and release the file (later saves raise StateFileError)."""
        with self._lock:
            db, self._db = self._db, None
            if db is None:
                return
            try:
                if self._pending and self._failed is None:
                    db.execute("BEGIN")
                    self._write_nonces(db)
                    db.execute("COMMIT")
            finally:
                db.close()

    def _conn(self) -> sqlite3.Connection:
        if self._failed is not None:
            raise StateFileError(
                f"state file {self._name}: an earlier write failed ({self._failed});"
                " restart the sandbox"
            )
        if self._db is None:
            raise StateFileError(f"state file {self._name} is closed")
        return self._db

    def _transaction(self, write: Callable[[sqlite3.Connection], None]) -> None:
        db = self._conn()
        try:
            db.execute("BEGIN")
            write(db)
            self._write_nonces(db)
            db.execute("COMMIT")
        except BaseException as exc:
            # memory and file may now disagree: refuse every later write
            self._failed = f"{type(exc).__name__}: {exc}"
            if db.in_transaction:
                db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StateFileError(f"state file {self._name}: write failed ({exc})") from None
            raise

    # -- what the file holds ---------------------------------------------------------

    def _check_schema(self, found: dict[tuple[str, str], str | None]) -> None:
        """The file's schema is exactly the one this module writes, or StateFileError."""

        # tables first: a dropped table takes its indexes with it
        def order(key: tuple[str, str]) -> tuple[bool, str, str]:
            return (key[0] != "table", *key)

        for key in sorted(set(_WRITTEN) - set(found), key=order):
            raise StateFileError(
                f"state file {self._name} is damaged: its {key[0]} {key[1]} is missing"
            )
        for key in sorted(set(found) - set(_WRITTEN), key=order):
            raise StateFileError(
                f"state file {self._name} is damaged: it has a {key[0]} {key[1]}"
                " this sandbox never writes"
            )
        for key in sorted(found, key=order):
            if found[key] != _WRITTEN[key]:
                raise StateFileError(
                    f"state file {self._name} is damaged: its {key[0]} {key[1]} is not"
                    " the one this sandbox writes"
                )

    def _check_version(self, db: sqlite3.Connection) -> None:
        """A clobkit file of another format is refused naming its version (newer: upgrade)."""
        try:
            meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('app', 'schema')"))
        except sqlite3.Error:
            return  # a meta table of another shape: the schema check names it
        schema = meta.get("schema")
        if meta.get("app") != _APP or schema == SCHEMA_VERSION:
            return
        if (
            isinstance(schema, str)
            and schema.isascii()
            and schema.isdigit()
            and int(schema) > int(SCHEMA_VERSION)
        ):
            raise StateFileError(
                f"state file {self._name} was written by a newer clobkit (schema {schema};"
                f" this sandbox reads schema {SCHEMA_VERSION}): upgrade clobkit or use a new file"
            )
        raise StateFileError(
            f"state file {self._name} has schema {schema!r}, this sandbox reads {SCHEMA_VERSION!r}"
        )

    def _check_columns(self, db: sqlite3.Connection) -> None:
        """Every column of every row holds its SQL type (SQLite would store any value)."""
        for table, columns in _COLUMNS.items():
            for column, kind in columns.items():
                row = db.execute(
                    f"SELECT rowid, typeof({column}) FROM {table}"
                    f" WHERE typeof({column}) != ? LIMIT 1",
                    (kind,),
                ).fetchone()
                if row is not None:
                    raise StateFileError(
                        f"state file {self._name} is damaged: table {table}, row {row[0]}:"
                        f" column {column} holds {'NULL' if row[1] == 'null' else row[1]},"
                        f" not {kind}"
                    )

    # -- identity ----------------------------------------------------------------

    def _check_identity(self, db: sqlite3.Connection, engine: Engine) -> bool:
        """True when the file holds a state of this configuration; False when it is new."""
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        self._check_columns(db)
        if not meta:
            # the first transaction writes meta with everything else: rows without it are not ours
            for table in _COLUMNS:
                if db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone():
                    raise StateFileError(
                        f"state file {self._name} is damaged: table {table} has rows"
                        " but the meta table is empty"
                    )
            return False
        if db.execute("SELECT count(*) FROM engine").fetchone()[0] != 1:
            raise StateFileError(f"state file {self._name} is damaged: its engine row is missing")
        if meta.get("app") != _APP:
            raise StateFileError(f"state file {self._name} is not a clobkit sandbox state file")
        if "identity" not in meta:  # (its schema was checked on opening)
            raise Damaged("meta: its identity row is missing")
        mismatch = Identity.read(meta["identity"]).mismatch(Identity.of(engine))
        if mismatch:
            raise StateFileError(f"state file {self._name} was written {mismatch}")
        return True

    # -- writing ---------------------------------------------------------------------

    def note_nonce(self, api_key: str, nonce: str, expires_ms: int) -> None:
        """Buffer a used nonce; committed with the next transaction (or by :meth:`flush`)."""
        with self._lock:
            self._pending.append((api_key, nonce, expires_ms))

    def flush(self) -> None:
        """Commit buffered nonces now (before an answer leaves); no-op when none."""
        with self._lock:
            if self._pending:
                self._transaction(lambda db: None)

    def _write_nonces(self, db: sqlite3.Connection) -> None:
        if self._pending:
            db.executemany("INSERT OR REPLACE INTO nonces VALUES (?, ?, ?)", self._pending)
            self._pending = []
        now = round(self._clock() * 1000)
        if now - self._pruned_ms >= _PRUNE_EVERY_MS:
            db.execute("DELETE FROM nonces WHERE expires_ms < ?", (now,))
            self._pruned_ms = now

    def save(
        self,
        engine: Engine,
        orders: Iterable[Order],
        markets: Iterable[str],
        users: Iterable[str],
    ) -> None:
        """Write one operation's changes (and buffered nonces) in one transaction."""
        orders, markets, users = list(orders), list(markets), list(users)
        with self._lock:
            if not (orders or markets or users or self._pending):
                return
            self._transaction(lambda db: self._write(db, engine, orders, markets, users))

    def save_all(self, engine: Engine) -> None:
        """Write the whole state of a fresh engine (a new file) and bind it to the config."""
        with self._lock:
            ident = _dumps(Identity.of(engine))

            def write(db: sqlite3.Connection) -> None:
                db.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    [("app", _APP), ("schema", SCHEMA_VERSION), ("identity", ident)],
                )
                orders = list(engine.orders.values()) + list(engine.open_orders.values())
                self._write(db, engine, orders, list(engine.markets), list(engine.accounts))

            self._transaction(write)

    def _write(
        self,
        db: sqlite3.Connection,
        engine: Engine,
        orders: list[Order],
        markets: list[str],
        users: list[str],
    ) -> None:
        """Write the rows of what changed, each from its record (``persisted.py``)."""
        self._write_orders(db, engine, orders)
        self._write_markets(db, engine, markets)
        position_rows = self._write_accounts(db, engine, users)
        engine_row = _dumps(ENGINE.dump(engine, engine))
        if engine_row != self._engine_row:
            db.execute("INSERT OR REPLACE INTO engine VALUES (1, ?)", (engine_row,))
        # only once the transaction is written: the cache mirrors what is on disk
        # (a failed commit poisons the store, so a stale cache is never used)
        self._engine_row = engine_row
        for user_id, token, text in position_rows:
            self._cache[(user_id, token)] = text

    @staticmethod
    def _write_orders(db: sqlite3.Connection, engine: Engine, orders: list[Order]) -> None:
        upsert: list[tuple[str, str, int, str]] = []
        gone: list[tuple[str]] = []
        for order in orders:
            if order.house and order.id not in engine.open_orders:
                gone.append((order.id,))  # a finished house quote (or a one-off counter)
                continue
            upsert.append((order.id, order.user_id, order.seq, _dumps(ORDER.dump(order, engine))))
        if gone:
            db.executemany("DELETE FROM orders WHERE order_id = ?", gone)
        if upsert:
            db.executemany("INSERT OR REPLACE INTO orders VALUES (?, ?, ?, ?)", upsert)

    @staticmethod
    def _write_markets(db: sqlite3.Connection, engine: Engine, markets: list[str]) -> None:
        market_rows, event_rows = [], {}
        for market_id in markets:
            m = engine.markets[market_id]
            market_rows.append((market_id, _dumps(MARKET.dump(m, engine))))
            # settlement ends the event once all its markets are resolved
            event_rows[m.event.id] = _dumps(EVENT.dump(m.event, engine))
        if market_rows:
            db.executemany("INSERT OR REPLACE INTO markets VALUES (?, ?)", market_rows)
            db.executemany("INSERT OR REPLACE INTO events VALUES (?, ?)", event_rows.items())

    def _write_accounts(
        self, db: sqlite3.Connection, engine: Engine, users: list[str]
    ) -> list[tuple[str, str, str]]:
        """Write the users' accounts and changed positions; the position rows written."""
        account_rows, position_rows = [], []
        for user_id in users:
            account = engine.accounts[user_id]
            account_rows.append((user_id, _dumps(ACCOUNT.dump(account, engine))))
            for token, pos in account.positions.items():
                text = _dumps(POSITION.dump(pos, engine))
                if self._cache.get((user_id, token)) != text:
                    position_rows.append((user_id, token, text))
        if account_rows:
            db.executemany("INSERT OR REPLACE INTO accounts VALUES (?, ?)", account_rows)
        if position_rows:
            db.executemany("INSERT OR REPLACE INTO positions VALUES (?, ?, ?)", position_rows)
        return position_rows

    # -- reading -----------------------------------------------------------------------

    def restore(self, engine: Engine) -> bool:
        """Load the file's state into a freshly built engine; False when the file is new."""
        with self._lock:
            db = self._conn()
            try:
                if not self._check_identity(db, engine):
                    return False
                self._load(db, engine)
            except StateFileError:
                raise
            except Damaged as exc:
                raise StateFileError(f"state file {self._name} is damaged: {exc}") from None
            except (
                sqlite3.Error,
                msgspec.DecodeError,
                ValueError,
                KeyError,
                TypeError,
                IndexError,
            ) as exc:
                raise StateFileError(
                    f"state file {self._name} is damaged: {type(exc).__name__}: {exc}"
                ) from None
        violations = state_violations(engine)  # restore runs inside Engine.__init__
        if violations:
            raise StateFileError(
                f"state file {self._name} is inconsistent: {violations[0]}"
                + (f" (and {len(violations) - 1} more)" if len(violations) > 1 else "")
            )
        return True

    def _load(self, db: sqlite3.Connection, engine: Engine) -> None:
        """Read every row into the engine, each through its record (``persisted.py``)."""
        (text,) = db.execute("SELECT data FROM engine WHERE id = 1").fetchone()
        g = ENGINE.decode(text, "engine")
        self._engine_row = _dumps(msgspec.structs.asdict(g))
        for user_id, text in db.execute("SELECT user_id, data FROM accounts"):
            ACCOUNT.apply(
                engine.accounts[user_id], ACCOUNT.decode(text, f"accounts {user_id}"), engine
            )
        for user_id, token, text in db.execute("SELECT user_id, token_id, data FROM positions"):
            row = POSITION.decode(text, f"positions {user_id} {token}")
            position = Position(**POSITION.attributes(row, None, engine))
            engine.accounts[user_id].positions[token] = position
            self._cache[(user_id, token)] = text
        for order_id, user_id, seq, text in db.execute("SELECT * FROM orders ORDER BY seq"):
            row = ORDER.decode(text, f"orders {order_id}")
            if (row.id, row.user_id, row.seq) != (order_id, user_id, seq):
                raise Damaged(f"orders {order_id}: its columns and its data disagree")
            _index(engine, Order(**ORDER.attributes(row, None, engine)))
        for market_id, text in db.execute("SELECT market_id, data FROM markets"):
            market = engine.markets[market_id]
            MARKET.apply(market, MARKET.decode(text, f"markets {market_id}"), engine)
        for event_id, text in db.execute("SELECT event_id, data FROM events"):
            EVENT.apply(engine.events[event_id], EVENT.decode(text, f"events {event_id}"), engine)
        ENGINE.apply(engine, g, engine)  # last: its armed orders are loaded
        self._check_counters(engine)

    def _check_counters(self, engine: Engine) -> None:
        """Each counter lies beyond every id it has handed out (else the next one repeats)."""
        seqs = [o.seq for o in engine.open_orders.values()] + [
            o.seq for o in engine.orders.values()
        ]
        if seqs and engine._seq < max(seqs):
            raise Damaged(f"engine: seq {engine._seq} is below an order's seq {max(seqs)}")
        ids = [p.id for a in engine.accounts.values() for p in a.positions.values()]
        if ids and engine._position_seq < max(ids):
            raise Damaged(
                f"engine: position_seq {engine._position_seq} is below a position's id {max(ids)}"
            )

    def nonces(self) -> list[tuple[str, str, int]]:
        """The used nonces still inside the timestamp window: (api_key, nonce, expires_ms)."""
        now = round(self._clock() * 1000)
        with self._lock:
            db = self._conn()
            return db.execute(
                "SELECT api_key, nonce, expires_ms FROM nonces WHERE expires_ms >= ?", (now,)
            ).fetchall()


def _index(engine: Engine, order: Order) -> None:
    """Put an order read from the file where the engine finds it (the transient indexes)."""
    if order.is_open:
        engine.open_orders[order.id] = order
        if order.status != LIVE:
            heapq.heappush(engine._due, (order.next_step_ms, order.seq, order))
        if order.expiration:
            heapq.heappush(engine._expiries, (order.expiration * 1000, order.seq, order))
    if order.house:
        if not order.is_open or order.order_type == FOK:
            raise ValueError(f"house order {order.id} is not a resting quote")
        order.market.house_quotes[(order.a_side, order.a_price)] = order
        return
    account = engine.accounts[order.user_id]
    engine.orders[order.id] = order
    engine.clob_ids.add(order.clob_order_id)
    account.orders.append(order)
    if order.client_order_id is not None:
        account.client_ids[order.client_order_id] = order
