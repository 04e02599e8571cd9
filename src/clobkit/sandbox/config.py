"""Sandbox configuration: users (keys, scopes, balances, IP whitelist), limits and risk.

A configuration is a :class:`SandboxConfig`, or a mapping in the JSON format
of ``--config FILE``::

    {"users": [{"user_id": "<UUID>", "api_key": "...", "api_secret": "...",
                "scopes": ["markets:read", "orders:read", "orders:write", "portfolio:read"],
                "balance": "10000", "bonus_balance": "0", "ip_whitelist": null}],
     "rate_limit_per_minute": 6000,
     "risk": {"per_order": "50000", "per_minute": 300, "daily": "250000", "monthly": "2000000"},
     "skew_seconds": 30, "processing_delay_ms": 0, "strict_query_signing": false,
     "limits": {"max_body_bytes": 262144, ...}, "forwarded_allow_ips": null,
     "admin_token": null, "exchange_version": 1,
     "faults": {"error_rate": 0.2, "after_commit": 0.5, "seed": 3, "latency_ms": [50, 400]},
     "walk": {"every_seconds": 1.0, "chance": 0.3, "band_cents": 10, "seed": null}}

Every key but ``users`` is optional; ``null`` disables a limit. Money is given
as decimal strings (numbers are accepted) and kept as exact ``Decimal``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any, TypeVar, cast

from ..core.checks import positive_int, seconds
from ..core.spec import RATE_LIMIT_PER_MINUTE, SINGLE_ORDER_MAX, UNIT_QUANTUM
from ..errors import ValidationError
from .errors import ConfigError
from .faults import FaultConfig
from .walk import WalkConfig

__all__ = [
    "ALL_SCOPES",
    "DEFAULT_USERS",
    "SINGLE_ORDER_MAX",
    "ConfigError",
    "LimitsConfig",
    "RiskConfig",
    "SandboxConfig",
    "UserConfig",
    "load_config",
]

ALL_SCOPES: tuple[str, ...] = ("markets:read", "orders:read", "orders:write", "portfolio:read")
READ_SCOPES: tuple[str, ...] = ("markets:read", "orders:read", "portfolio:read")

_T = TypeVar("_T")


#: Most ``extra_games`` a config may ask for: each league's fixtures are built at start
#: (2,000 took 6 s on the project's machine, and the cost grows faster than the count).
MAX_EXTRA_GAMES = 500


def _money(value: object, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (Decimal, str, int, float)):
        raise ConfigError(f"{what} must be a decimal string or number, got {value!r}")
    try:
        amount = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise ConfigError(f"{what} must be a decimal number, got {value!r}") from None
    if not amount.is_finite() or amount < 0 or amount.adjusted() > 15:
        raise ConfigError(f"{what} must be a finite non-negative amount, got {value!r}")
    if amount != amount.quantize(UNIT_QUANTUM):  # (within 28 digits, as bounded above)
        raise ConfigError(f"{what} has more than 6 decimals: {value!r}")
    return amount


def _is_network(entry: object) -> bool:
    try:
        ipaddress.ip_network(entry, strict=False)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return False
    return True


def _optional_money(value: object, what: str) -> Decimal | None:
    return None if value is None else _money(value, what)


def _optional_count(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{what} must be a non-negative integer or null, got {value!r}")
    return value


@dataclass(frozen=True)
class UserConfig:
    """One API user: its key pair, scopes, starting balances and optional IP whitelist.

    ``balance`` and ``bonus_balance`` are USDC (``Decimal``; strings and ints are
    converted). ``ip_whitelist`` is ``None`` (any address) or a list of
    addresses / CIDR networks. ``maker`` / ``signer`` override the wallet
    addresses, which are otherwise derived from ``user_id``.
    """

    user_id: str
    api_key: str
    api_secret: str
    scopes: tuple[str, ...] = ALL_SCOPES
    balance: Decimal = Decimal(0)
    bonus_balance: Decimal = Decimal(0)
    ip_whitelist: tuple[str, ...] | None = None
    maker: str | None = None
    signer: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "user_id", str(uuid.UUID(str(self.user_id))))
        except ValueError:
            raise ConfigError(f"user_id must be a UUID, got {self.user_id!r}") from None
        for name in ("api_key", "api_secret"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or not value.isprintable():
                raise ConfigError(f"{name} of user {self.user_id} must be a non-empty string")
        if any(c.isspace() or not c.isascii() for c in self.api_key):
            raise ConfigError(f"api_key of user {self.user_id} must be printable ASCII")
        if isinstance(self.scopes, str) or not isinstance(self.scopes, (list, tuple)):
            raise ConfigError(f"scopes of user {self.user_id} must be a list of scopes")
        scopes = tuple(self.scopes)
        unknown = [s for s in scopes if s not in ALL_SCOPES]
        if unknown:
            raise ConfigError(f"unknown scopes {unknown} for user {self.user_id}")
        object.__setattr__(self, "scopes", scopes)
        object.__setattr__(self, "balance", _money(self.balance, "balance"))
        object.__setattr__(self, "bonus_balance", _money(self.bonus_balance, "bonus_balance"))
        if self.ip_whitelist is not None:
            if not isinstance(self.ip_whitelist, (list, tuple)):
                raise ConfigError("ip_whitelist must be a list of addresses or null")
            entries = tuple(self.ip_whitelist)
            bad = [e for e in entries if not _is_network(e)]
            if bad:
                raise ConfigError(f"bad ip_whitelist entries {bad!r}")
            object.__setattr__(self, "ip_whitelist", entries)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UserConfig:
        if not isinstance(data, Mapping):
            raise ConfigError(f"each user must be an object, got {data!r}")
        known = {f.name for f in fields(cls)}
        extra = set(data) - known
        if extra:
            raise ConfigError(f"unknown user keys: {sorted(extra)}")
        missing = {"user_id", "api_key", "api_secret"} - set(data)
        if missing:
            raise ConfigError(f"user entry is missing {sorted(missing)}")
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "api_key": self.api_key,
            "api_secret": self.api_secret,
            "scopes": list(self.scopes),
            "balance": str(self.balance),
            "bonus_balance": str(self.bonus_balance),
            "ip_whitelist": None if self.ip_whitelist is None else list(self.ip_whitelist),
        }


@dataclass(frozen=True)
class RiskConfig:
    """Risk controls; breaching one answers 500 ``ORDER_FAILED_PLACE_BET``.

    ``per_order`` caps one order's USDC value, ``per_minute`` the number of
    orders a user places in any 60 s, ``daily`` / ``monthly`` the USDC placed
    per UTC calendar day / month. ``None`` disables a control. Bonus-funded
    orders are exempt from all four; the 50,000 USDC single-order maximum
    applies to every order regardless.
    """

    per_order: Decimal | None = SINGLE_ORDER_MAX
    per_minute: int | None = 300
    daily: Decimal | None = Decimal(250_000)
    monthly: Decimal | None = Decimal(2_000_000)

    def __post_init__(self) -> None:
        object.__setattr__(self, "per_order", _optional_money(self.per_order, "risk.per_order"))
        object.__setattr__(self, "per_minute", _optional_count(self.per_minute, "risk.per_minute"))
        object.__setattr__(self, "daily", _optional_money(self.daily, "risk.daily"))
        object.__setattr__(self, "monthly", _optional_money(self.monthly, "risk.monthly"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RiskConfig:
        if not isinstance(data, Mapping):
            raise ConfigError(f"risk must be an object or null, got {data!r}")
        extra = set(data) - {f.name for f in fields(cls)}
        if extra:
            raise ConfigError(f"unknown risk keys: {sorted(extra)}")
        return cls(**dict(data))


def _checked(check: Callable[[object, str], _T], value: object, what: str) -> _T:
    """``check`` (``clobkit.core.checks``'s, or one built on them) on the config key ``what``:
    its refusal, in the words the client and the recorder use (key and value named), as
    the ``ConfigError`` every config check raises."""
    try:
        return check(value, what)
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None


#: The longest time limit, in seconds (excluded). These limits are what keeps a client
#: from holding a connection, and its place among ``max_connections``, indefinitely
#: (docs/sandbox.md, "Limits": everything a client can make the server hold is
#: bounded); they cannot be ``null``, and a deadline of a day or more would be none.
_MAX_LIMIT_SECONDS = 86_400


def _limit_seconds(value: object, what: str) -> float:
    """A time limit: a positive finite number of seconds under a day."""
    number = seconds(value, what)
    if number >= _MAX_LIMIT_SECONDS:
        raise ValidationError(what, value, f"must be under {_MAX_LIMIT_SECONDS:,} seconds")
    return number


@dataclass(frozen=True)
class LimitsConfig:
    """What the server bounds (config key ``limits``); docs/sandbox.md "Limits".

    Bytes: ``max_body_bytes`` (a request body; 413 past it),
    ``max_header_bytes`` (a request's line and headers; 431),
    ``ws_max_message_bytes`` (one WebSocket frame from a client),
    ``ws_max_queue_bytes`` (messages waiting for a slow subscriber; it is
    dropped past it). Seconds: ``request_timeout_seconds`` (to receive one
    request's head and body, from its first byte or the connection's start),
    ``keep_alive_seconds`` (an idle keep-alive connection). Counts:
    ``max_connections`` (concurrent connections and requests; 503 past it),
    ``ws_max_topics`` (topics in one message and per connection).
    """

    max_body_bytes: int = 256 * 1024
    max_header_bytes: int = 16 * 1024
    request_timeout_seconds: float = 10.0
    keep_alive_seconds: float = 5.0
    max_connections: int = 1000
    ws_max_message_bytes: int = 1024 * 1024
    ws_max_queue_bytes: int = 8 * 1024 * 1024
    ws_max_topics: int = 1000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            check = _limit_seconds if f.name.endswith("_seconds") else positive_int
            checked = _checked(check, value, f"limits.{f.name}")
            object.__setattr__(self, f.name, checked)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LimitsConfig:
        if not isinstance(data, Mapping):
            raise ConfigError("limits must be an object")
        extra = set(data) - {f.name for f in fields(cls)}
        if extra:
            raise ConfigError(f"unknown limits keys: {sorted(extra)}")
        return cls(**dict(data))


def _user(n: int, name: str, scopes: tuple[str, ...], balance: int) -> UserConfig:
    return UserConfig(
        user_id=f"00000000-0000-4000-8000-{n:012d}",
        api_key=f"sandbox-{name}-key",
        api_secret=f"sandbox-{name}-secret",
        scopes=scopes,
        balance=Decimal(balance),
    )


#: The default users (documented in docs/sandbox.md and printed at start-up).
DEFAULT_USERS: tuple[UserConfig, ...] = (
    _user(1, "trader", ALL_SCOPES, 10_000),
    _user(2, "maker", ALL_SCOPES, 10_000),
    _user(3, "reader", READ_SCOPES, 0),
)
"""The sandbox's users when its configuration names none: ``trader`` and ``maker`` (every
scope, 10,000 USDC each) and ``reader`` (read scopes, no balance); their keys are
``sandbox-<name>-key`` / ``sandbox-<name>-secret`` (docs/sandbox.md, "Default users")."""


@dataclass(frozen=True)
class SandboxConfig:
    """Everything a sandbox instance needs; each instance keeps its own state.

    ``processing_delay_ms`` > 0 makes orders wait that long in each of
    pending, signing and submitted (0: they walk to live before the 201).
    ``seed`` picks the deterministic fixtures (events, markets, prices).
    ``limits`` bounds sizes, times and counts (:class:`LimitsConfig`).
    ``forwarded_allow_ips`` names the proxies whose ``X-Forwarded-For`` is
    trusted for the client address (``None``: no forwarding header is trusted).
    ``admin_token``, when set, must come in ``X-Admin-Token`` on admin routes.
    ``exchange_version`` (1, 2 or 3) picks the exchange contracts every user's
    wallet reports: 1 is the API text's flow, where a raw order's
    ``clob_order_id`` can be precomputed; on 2 and 3 the service stamps each
    order with its own timestamp, so only the service knows the id.
    ``faults`` (``None``: none) makes requests fail or slow on purpose (``faults.py``).
    ``extra_games`` adds that many upcoming games per league to the fixtures, each
    with a moneyline market the house quotes (0: the default set of 72 markets).
    ``min_expiration_seconds``: how far ahead of the sandbox's clock a GTD order's
    expiration must lie at least (0: only in the future, as the API text says; a
    service may ask more, Polymarket a minute); a shorter one is refused, 400
    ``ORDER_INVALID_EXPIRATION`` naming the minimum.
    ``walk`` moves the house's prices while the sandbox serves (``walk.py``; ``None``:
    a still book).
    """

    users: tuple[UserConfig, ...] = DEFAULT_USERS
    rate_limit_per_minute: int | None = RATE_LIMIT_PER_MINUTE
    risk: RiskConfig = field(default_factory=RiskConfig)
    skew_seconds: float = 30.0
    processing_delay_ms: int = 0
    strict_query_signing: bool = False
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    forwarded_allow_ips: tuple[str, ...] | None = None
    admin_token: str | None = None
    seed: int = 0
    exchange_version: int = 1
    faults: FaultConfig | None = None
    extra_games: int = 0
    min_expiration_seconds: int = 0
    walk: WalkConfig | None = field(default_factory=WalkConfig)

    def __post_init__(self) -> None:
        games = _optional_count(self.extra_games, "extra_games")
        if games is None or games > MAX_EXTRA_GAMES:  # each costs its fixtures' building
            raise ConfigError(f"extra_games must be an integer from 0 to {MAX_EXTRA_GAMES}")
        if type(self.seed) is not int:
            raise ConfigError(f"seed must be an integer, got {self.seed!r}")
        set_ = partial(object.__setattr__, self)  # the dataclass is frozen
        set_("faults", _faults(self.faults))
        set_("walk", _walk(self.walk))
        set_("users", _users(self.users))
        set_(
            "rate_limit_per_minute",
            _optional_count(self.rate_limit_per_minute, "rate_limit_per_minute"),
        )
        if isinstance(self.risk, Mapping):
            set_("risk", RiskConfig.from_dict(self.risk))
        elif self.risk is not None and not isinstance(self.risk, RiskConfig):
            raise ConfigError(f"risk must be an object or null, got {self.risk!r}")
        self._check_scalars()
        set_("limits", _limits(self.limits))
        set_("forwarded_allow_ips", _proxies(self.forwarded_allow_ips))
        _check_admin_token(self.admin_token)

    def _check_scalars(self) -> None:
        """The clock skew, the delay, the signing flag and the exchange version checked."""
        _checked(seconds, self.skew_seconds, "skew_seconds")
        if _optional_count(self.processing_delay_ms, "processing_delay_ms") is None:
            raise ConfigError("processing_delay_ms must be a non-negative integer")
        if not isinstance(self.strict_query_signing, bool):
            raise ConfigError("strict_query_signing must be a boolean")
        if type(self.exchange_version) is not int or self.exchange_version not in (1, 2, 3):
            raise ConfigError(f"exchange_version must be 1, 2 or 3, got {self.exchange_version!r}")
        minimum = self.min_expiration_seconds
        if type(minimum) is not int or not 0 <= minimum < _MAX_LIMIT_SECONDS:
            raise ConfigError(
                f"min_expiration_seconds must be an integer from 0 to {_MAX_LIMIT_SECONDS - 1},"
                f" got {minimum!r}"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SandboxConfig:
        allowed = {f.name for f in fields(cls)}
        extra = set(data) - allowed
        if extra:
            raise ConfigError(f"unknown config keys: {sorted(extra)}")
        values: dict[str, Any] = dict(data)
        if "users" in values:
            raw_users = values["users"]
            if not isinstance(raw_users, list):
                raise ConfigError("users must be a list")
            values["users"] = tuple(
                u if isinstance(u, UserConfig) else UserConfig.from_dict(u) for u in raw_users
            )
        if "risk" in values:
            risk = values["risk"]
            if risk is None:
                values["risk"] = RiskConfig(None, None, None, None)
            elif not isinstance(risk, RiskConfig):
                values["risk"] = RiskConfig.from_dict(risk)
        return cls(**values)

    def with_strict_query_signing(self, strict: bool) -> SandboxConfig:
        return (
            self
            if self.strict_query_signing == strict
            else replace(self, strict_query_signing=strict)
        )

    def user_by_key(self) -> dict[str, UserConfig]:
        return {u.api_key: u for u in self.users}


def _faults(value: object) -> FaultConfig | None:
    """``faults`` as a FaultConfig (from a mapping) or None."""
    if isinstance(value, Mapping):
        return FaultConfig.from_dict(value)
    if value is not None and not isinstance(value, FaultConfig):
        raise ConfigError(f"faults must be an object or null, got {value!r}")
    return value


def _walk(value: object) -> WalkConfig | None:
    """``walk`` as a WalkConfig (from a mapping) or None (a still book)."""
    if isinstance(value, Mapping):
        return WalkConfig.from_dict(value)
    if value is not None and not isinstance(value, WalkConfig):
        raise ConfigError(f"walk must be an object or null, got {value!r}")
    return value


def _users(value: Iterable[object]) -> tuple[UserConfig, ...]:
    """``users`` as a non-empty tuple of UserConfig with distinct ids and keys."""
    users = tuple(value)
    if not users:
        raise ConfigError("at least one user is needed")
    for u in users:
        if not isinstance(u, UserConfig):
            raise ConfigError(f"users must be UserConfig instances, got {u!r}")
    checked = cast("tuple[UserConfig, ...]", users)
    for attr in ("user_id", "api_key"):
        values = [getattr(u, attr) for u in checked]
        if len(set(values)) != len(values):
            raise ConfigError(f"duplicate {attr} among users")
    return checked


def _limits(value: object) -> LimitsConfig:
    """``limits`` as a LimitsConfig (from a mapping)."""
    if isinstance(value, Mapping):
        value = LimitsConfig.from_dict(value)
    if not isinstance(value, LimitsConfig):
        raise ConfigError("limits must be an object")
    return value


def _proxies(value: Iterable[str] | None) -> tuple[str, ...] | None:
    """``forwarded_allow_ips`` as a non-empty tuple of networks or ``*``, or None."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise ConfigError("forwarded_allow_ips must be a list of addresses or null")
    proxies = tuple(value)
    bad = [p for p in proxies if p != "*" and not _is_network(p)]
    if bad or not proxies:
        raise ConfigError(f"bad forwarded_allow_ips entries {bad or proxies!r}")
    return proxies


def _check_admin_token(token: object) -> None:
    if token is not None and not (
        isinstance(token, str) and token and token.isascii() and token.isprintable()
    ):
        raise ConfigError("admin_token must be a non-empty printable ASCII string or null")


def load_config(
    source: SandboxConfig | Mapping[str, Any] | str | os.PathLike[str] | None,
) -> SandboxConfig:
    """A SandboxConfig from itself, a mapping, a JSON file path, or None (the defaults)."""
    if source is None:
        return SandboxConfig()
    if isinstance(source, SandboxConfig):
        return source
    if isinstance(source, Mapping):
        return SandboxConfig.from_dict(source)
    with open(source, encoding="utf-8") as fh:
        try:
            data = json.load(fh)
        except (ValueError, UnicodeDecodeError) as exc:  # a number past int's digits too
            raise ConfigError(
                f"config file {os.fspath(source)!r} is not valid JSON: {exc}"
            ) from None
    if not isinstance(data, dict):
        raise ConfigError("the config file must hold a JSON object")
    return SandboxConfig.from_dict(data)


def describe_users(users: Iterable[UserConfig]) -> str:
    """Human-readable key listing (printed by ``python -m clobkit.sandbox``)."""
    return "\n".join(
        f"  user {u.user_id}  key={u.api_key}  secret={u.api_secret}  "
        f"scopes={','.join(u.scopes)}  balance={u.balance} USDC"
        + (f"  bonus={u.bonus_balance}" if u.bonus_balance else "")
        for u in users
    )
