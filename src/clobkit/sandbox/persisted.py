"""What the sandbox's state file holds: every attribute of the engine and its records, once.

Each kind of object the engine keeps state in has one :class:`Record` here:
its persisted attributes, each as a :class:`Field` (its key in the row's
JSON, the type that value must have when read, how it is written and read
back), and its transient attributes, each with why it need not be on disk.
``store.py`` writes and reads rows only through these records, so an
attribute cannot be written and forgotten on reading (or the reverse), and
``tests/sandbox/test_persisted.py`` fails when an object of a busy engine
holds an attribute that is in neither list.

A dataclass's fields (``Order``, ``Position``, ``Account``) are persisted as
they are unless declared otherwise: a field added to one is in the file
without touching this module. The rows' JSON is the one written since the
format's first version (same keys, same order), so files written before this
module existed are read unchanged. :class:`Identity` is the meta row that
binds a file to the configuration it was written for.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from operator import attrgetter
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import msgspec

from .fixtures import EventFixture
from .ledger import RISK_MINUTE_MS
from .state import Account, EngineState, MarketState, Order, Position, empty_side, rest_at

__all__ = [
    "ACCOUNT",
    "ENGINE",
    "EVENT",
    "MARKET",
    "ORDER",
    "POSITION",
    "Damaged",
    "Identity",
    "Record",
]

Count = Annotated[int, msgspec.Meta(ge=0)]
Cents = Annotated[int, msgspec.Meta(ge=0, le=100)]  # a price on the 0.01 grid (a book level)

# (object, engine) -> the value in the row
Dump = Callable[[Any, EngineState], Any]
# (value read, the object or None when it is built from the row, engine) -> the
# attributes it sets (dotted names reach into a member)
Load = Callable[[Any, Any, EngineState], dict[str, Any]]


class Damaged(Exception):
    """A row the sandbox never writes (its message names the table, row and field)."""


@dataclass(frozen=True)
class Field:
    """One key of a row: the attributes it holds, its type in the file, its codec."""

    key: str
    typ: Any
    attrs: tuple[str, ...]
    dump: Dump
    load: Load
    default: Any = msgspec.NODEFAULT  # a row written without the key reads this
    attr: str | None = None  # the one attribute it holds as it is (plain): read in bulk


def plain(attr: str, typ: Any, key: str | None = None, default: Any = msgspec.NODEFAULT) -> Field:
    """An attribute written as it is (JSON's own types), read back as it is."""
    get = attrgetter(attr)
    return Field(
        key or attr,
        typ,
        (attr,),
        lambda obj, _engine: get(obj),
        lambda value, _obj, _engine: {attr: value},
        default,
        attr,
    )


@dataclass(frozen=True)
class Record:
    """One kind of object in the file: its table, its row's fields, its transient attributes."""

    cls: type
    table: str
    fields: tuple[Field, ...]
    transient: Mapping[str, str]  # attribute -> why it is not in the row
    array_like: bool = False  # the row is a JSON array of the fields' values, in order
    row_type: Any = field(init=False, repr=False, compare=False)
    # writing: the plain fields read from the object's __dict__, then the others
    _plain: tuple[tuple[str, str], ...] = field(init=False, repr=False, compare=False)
    _coded: tuple[Field, ...] = field(init=False, repr=False, compare=False)
    _reorder: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        spec = [
            (f.key, f.typ) if f.default is msgspec.NODEFAULT else (f.key, f.typ, f.default)
            for f in self.fields
        ]
        spec.sort(key=lambda item: len(item) == 3)  # fields with a default last, as msgspec wants
        row_type = msgspec.defstruct(
            f"{self.cls.__name__}Row",
            spec,
            forbid_unknown_fields=True,
            array_like=self.array_like,
        )
        object.__setattr__(self, "row_type", row_type)
        plain = [(f.key, f.attr) for f in self.fields if f.attr and "." not in f.attr]
        coded = tuple(f for f in self.fields if (f.key, f.attr) not in plain)
        object.__setattr__(self, "_plain", tuple(plain))
        object.__setattr__(self, "_coded", coded)
        # the keys in the declared order (the file's) unless the coded fields come last
        keys = [key for key, _ in plain] + [f.key for f in coded]
        object.__setattr__(self, "_reorder", keys != [f.key for f in self.fields])

    @property
    def persisted(self) -> frozenset[str]:
        """The attributes (dotted names reach into a member) the row holds."""
        return frozenset(a for f in self.fields for a in f.attrs)

    def dump(self, obj: Any, engine: EngineState) -> dict[str, Any] | list[Any]:
        """The row of ``obj``, ready for JSON (its keys in the declared order)."""
        if self.array_like:
            return [f.dump(obj, engine) for f in self.fields]
        held = vars(obj)
        row = {key: held[attr] for key, attr in self._plain}
        for f in self._coded:
            row[f.key] = f.dump(obj, engine)
        if self._reorder:
            return {f.key: row[f.key] for f in self.fields}
        return row

    def decode(self, text: str | bytes, where: str) -> Any:
        """A row's JSON checked against the record (each field and its type), or Damaged."""
        try:
            return msgspec.json.decode(text, type=self.row_type)
        except msgspec.ValidationError as exc:
            raise Damaged(f"{where}: {exc}") from None

    def attributes(self, row: Any, obj: Any, engine: EngineState) -> dict[str, Any]:
        """The attributes a decoded row sets on ``obj`` (None: the object is built from them)."""
        values: dict[str, Any] = {}
        for f in self.fields:
            values.update(f.load(getattr(row, f.key), obj, engine))
        return values

    def apply(self, obj: Any, row: Any, engine: EngineState) -> None:
        """Set a decoded row's attributes on an existing object."""
        for name, value in self.attributes(row, obj, engine).items():
            owner, _, attr = name.rpartition(".")
            setattr(attrgetter(owner)(obj) if owner else obj, attr, value)


# the int fields of the dataclasses that never go below zero (counts, amounts,
# ids, times); the others (a position's cost and realized profit, the day and
# month keys) may
_NON_NEGATIVE = frozenset(
    (
        "id",
        "limit_cents",
        "size",
        "maker_amount",
        "taker_amount",
        "reserved",
        "matched",
        "usdc",
        "seq",
        "salt",
        "nonce",
        "fee_rate_bps",
        "expiration",
        "created_ms",
        "updated_ms",
        "next_step_ms",
        "settlement_units",
        "shares",
        "cash",
        "bonus",
        "deposits",
        "cash_reserved",
        "bonus_reserved",
        "payouts",
        "day_units",
        "month_units",
    )
)


def _field_type(cls: type, name: str) -> Any:
    """A dataclass field's type in the file: its annotation, a deque as a list, >= 0 where due."""
    typ = get_type_hints(cls)[name]
    if get_origin(typ) is deque:  # written as a JSON array
        (item,) = get_args(typ)
        typ = list[item]  # type: ignore[valid-type]  # a type built at run time
    if typ is int and name in _NON_NEGATIVE:
        typ = Count
    return typ


def _dataclass_fields(
    cls: type, transient: Mapping[str, str], codecs: Mapping[str, Field], extra: tuple[Field, ...]
) -> tuple[Field, ...]:
    """Every field of dataclass ``cls`` not transient, as it is unless it has a codec; then
    ``extra`` (the fields kept under another key, after the others as ever)."""
    taken = {a for f in extra for a in f.attrs}
    out: list[Field] = []
    for f in fields(cls):
        if f.name in transient or f.name in taken:
            continue
        if f.name in codecs:
            out.append(codecs[f.name])
            continue
        default: Any = msgspec.NODEFAULT
        if f.default is not MISSING:
            default = f.default
        elif f.default_factory is not MISSING:
            default = msgspec.field(default_factory=f.default_factory)
        out.append(plain(f.name, _field_type(cls, f.name), default=default))
    return (*out, *extra)


def _market_id(attr: str = "market") -> Field:
    """A reference to a market, kept as its id."""
    return Field(
        "market_id",
        str,
        (attr,),
        lambda obj, _engine: obj.market.id,
        lambda value, _obj, engine: {attr: engine.markets[value]},
    )


def _recent_minute(account: Account, engine: EngineState) -> list[int]:
    """Only the order times the per-minute risk check can still count (the deque itself is
    trimmed only while that limit is on)."""
    minute_ago = engine._now_ms() - RISK_MINUTE_MS
    recent = []
    for t in reversed(account.minute):  # ascending times: stop at the first old one
        if t <= minute_ago:
            break
        recent.append(t)
    return recent[::-1]


def _book(market: MarketState, _engine: EngineState) -> list[list[Any]]:
    """Each non-empty level: [side, A-space price, the ids of its orders in time priority]."""
    return [
        [side, price, [o.id for o in level]]
        for side, levels in enumerate((market.bids, market.asks))
        for price, level in enumerate(levels)
        if level
    ]


def _levels(
    rows: list[tuple[int, int, list[str]]], market: MarketState, engine: EngineState
) -> dict[str, Any]:
    """The bids and asks of a book row, each order an open one resting on ``market``."""
    bids, asks = empty_side(), empty_side()
    for side, price, ids in rows:
        book = bids if side == 0 else asks
        for oid in ids:
            order = engine.open_orders[oid]
            if not order.resting or order.market is not market:
                raise ValueError(f"order {oid} on the book of {market.id} is not resting")
            rest_at(book, price, order)
    return {"bids": bids, "asks": asks}


_REBUILT = "rebuilt from the orders table"
_OPERATION = "what the current operation changed; empty between operations"
_SEEDED = "fixed by the seed (build_fixtures builds it again)"

ORDER = Record(
    Order,
    "orders",
    _dataclass_fields(Order, {}, {}, (_market_id(),)),
    {},
)

POSITION = Record(
    Position,
    "positions",
    _dataclass_fields(Position, {}, {}, (_market_id(),)),
    {},
)

_ACCOUNT_TRANSIENT = {
    "config": "the user's configuration (the file is bound to the configured users)",
    "wallet": "derived from the configuration",
    "hasher": "derived from the wallet",
    "positions": "rows of the positions table",
    "orders": _REBUILT,
    "client_ids": _REBUILT,
}
ACCOUNT = Record(
    Account,
    "accounts",
    _dataclass_fields(
        Account,
        _ACCOUNT_TRANSIENT,
        {
            "minute": Field(
                "minute",
                list[int],
                ("minute",),
                _recent_minute,
                lambda value, _obj, _engine: {"minute": deque(value)},
            )
        },
        (),
    ),
    _ACCOUNT_TRANSIENT,
)

MARKET = Record(
    MarketState,
    "markets",
    (
        plain("fx.status", str, "status"),
        plain("fx.winner", str | None, "winner"),
        plain("mid", Cents | None),
        plain("collateral", Count),
        plain("last_trade", Cents | None),
        plain("traded_units", Count),
        Field(
            "traders",
            list[str],
            ("traders",),
            lambda m, _engine: sorted(m.traders),
            lambda value, _obj, _engine: {"traders": set(value)},
        ),
        plain("book_ms", Count),
        plain("updated_ms", Count),
        Field(
            "book",
            list[tuple[Annotated[int, msgspec.Meta(ge=0, le=1)], Cents, list[str]]],
            ("bids", "asks"),
            _book,
            _levels,
        ),
    ),
    {
        "fx": _SEEDED + "; its status and winner are in the row",
        "event": _SEEDED + "; its changes are rows of the events table",
        "house_quotes": _REBUILT + " (the house's resting orders)",
        "replayed": "set by a recording attached at start (replay.attach)",
    },
)

# an event's row is [live, ended, updated_ms]: what settlement changes
_EVENT_ROW = (plain("live", bool), plain("ended", bool), plain("updated_ms", Count))
EVENT = Record(
    EventFixture,
    "events",
    _EVENT_ROW,
    {
        f.name: _SEEDED
        for f in fields(EventFixture)
        if f.name not in {a for field in _EVENT_ROW for a in field.attrs}
    },
    array_like=True,
)

ENGINE = Record(
    EngineState,
    "engine",
    (
        plain("instance_id", str),
        plain("_seq", Count, "seq"),
        plain("_fill_seq", Count, "fill_seq"),
        plain("_position_seq", Count, "position_seq"),
        plain("house_usdc", int),
        plain("deposits", Count),
        Field(
            "stats",
            dict[str, Count],
            ("stats",),
            lambda e, _engine: e.stats,
            lambda value, _obj, engine: {"stats": {**engine.stats, **value}},
        ),
        Field(
            "house_shares",
            dict[str, Count],
            ("house_shares",),
            lambda e, _engine: e.house_shares,
            lambda value, _obj, _engine: {"house_shares": dict(value)},
        ),
        Field(
            "armed",
            list[str],
            ("_armed",),
            lambda e, _engine: sorted(e._armed),
            lambda value, _obj, engine: {"_armed": {oid: engine.orders[oid] for oid in value}},
        ),
    ),
    {
        "config": "the configuration, given at start (the file is bound to its seed and users)",
        "_clock": "given at start",
        "leagues": _SEEDED,
        "events": _SEEDED + "; their changes are rows of the events table",
        "events_by_slug": _SEEDED,
        "markets": _SEEDED + "; their changes are rows of the markets table",
        "tokens": _SEEDED,
        "accounts": "one per configured user; their changes are rows of the accounts table",
        "orders": "rows of the orders table",
        "open_orders": "rows of the orders table",
        "clob_ids": _REBUILT,
        "_due": _REBUILT + " (the open orders still processing)",
        "_expiries": _REBUILT + " (the open GTD orders)",
        "_touched": _OPERATION,
        "_changed_orders": _OPERATION,
        "_changed_markets": _OPERATION,
        "_changed_users": _OPERATION,
        "_outbox": _OPERATION,
        "_ladders": "a cache of the house's wanted quotes, computed again when missing",
        "_watched": "live WebSocket subscriptions, none of which outlive the process",
        "_walk": "the price walk's draws: a restarted sandbox walks on from its seed afresh",
        "_lock": "the facade's lock",
        "_depth": "the facade's operation nesting; 0 between operations",
        "_store": "the state file itself",
        "_listeners": "the live app's callbacks",
    },
)


class Identity(msgspec.Struct):
    """The meta row ``identity``: the configuration a state file was written for."""

    seed: int
    users: list[str]  # sorted
    markets: str  # sha256 of the sorted market ids (the fixtures of seed and extra_games)
    extra_games: int | None = None  # absent from files written before it was recorded

    @classmethod
    def of(cls, engine: EngineState) -> Identity:
        """The identity of ``engine``'s configuration."""
        markets = hashlib.sha256("\n".join(sorted(engine.markets)).encode()).hexdigest()
        return cls(engine.config.seed, sorted(engine.accounts), markets, engine.config.extra_games)

    @classmethod
    def read(cls, text: str) -> Identity:
        """The identity row's JSON checked (each field and its type), or Damaged."""
        try:
            return msgspec.json.decode(text, type=cls)
        except msgspec.DecodeError as exc:
            raise Damaged(f"meta identity: {exc}") from None

    def mismatch(self, ours: Identity) -> str | None:
        """How the file's configuration (self) differs from ``ours`` (None: it does not)."""
        if self.seed != ours.seed:
            return f"with seed {self.seed}, the config has seed {ours.seed}"
        if self.users != ours.users:
            only_file = ", ".join(sorted(set(self.users) - set(ours.users))) or "-"
            only_config = ", ".join(sorted(set(ours.users) - set(self.users))) or "-"
            return (
                f"for other users (only in the file: {only_file};"
                f" only in the config: {only_config})"
            )
        if self.extra_games is not None and self.extra_games != ours.extra_games:
            theirs, mine = self.extra_games, ours.extra_games
            return f"with extra_games {theirs}, the config has extra_games {mine}"
        if self.markets != ours.markets:
            # a file written before extra_games was recorded: either may differ
            return "for other markets (another extra_games setting or fixture version)"
        return None
