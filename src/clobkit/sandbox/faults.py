"""Faults on purpose, to test bots against: failed requests and dropped streams.

``"faults": {"error_rate": 0.2, "after_commit": 0.5, "seed": 3}`` in the
configuration makes a share (``error_rate``) of the signed API requests fail:
half of those with a 500 in the envelope, half with a dropped connection (the
answer's headers arrive, its body never does). Of the failures, the share
``after_commit`` happens *after* the request took effect (the order was
placed, the cancel done): the unknown-outcome case a client must resolve
before sending again. Draws come from one ``random.Random(seed)``, so a run is
repeatable as far as the order of requests is. Default: no faults.

``"latency_ms": 200`` (or a seeded range ``[50, 400]``) makes a share
(``latency_share``, default all) of the signed requests slow: the answer is
held that long ``latency_at`` ``"after"`` the request took effect (the
default: a client that gives up meanwhile does not know the order rests),
``"before"`` it (the request still takes effect when the delay ends, as one
queued at a slow service does), or ``"both"``. ``Faults.held`` counts the
requests held now (a point a test can wait for; ``held_on(route)``: those of one
endpoint); ``Faults.release()`` ends their delays at once (``release(route,
count)``: the oldest ``count`` of one endpoint's, to land held requests one by one).

``"routes": {"GET /orders": {"latency_ms": 5000}, "DELETE /orders/{id}": null}``
gives one endpoint (its method and path as the API text writes them) faults of
its own in place of the others (``null``: none): a listing that hangs or fails
while cancels work. The draws of every route come from the one seeded
``random.Random``.

:func:`drop_streams` closes every WebSocket connection (``Sandbox.drop_streams()``,
``POST /admin/streams/drop``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from starlette.types import Receive, Scope, Send

from .errors import ConfigError

__all__ = ["DroppedConnection", "FaultConfig", "Faults", "drop_streams"]

#: WebSocket close code of a dropped stream (1012: service restart).
DROP_CODE = 1012


class DroppedConnection(Exception):
    """Raised inside the ASGI app to make the server drop a connection on purpose."""


#: Most milliseconds one answer may be held (``latency_ms``): a minute.
MAX_LATENCY_MS = 60_000
#: Where a delay goes: before the request takes effect, after it, or both.
LATENCY_AT = ("before", "after", "both")


@dataclass(frozen=True)
class FaultConfig:
    """``error_rate``: share of signed API requests that fail (0..1); ``after_commit``:
    share of those failing after the request took effect (0..1); ``seed`` of the draws.

    ``latency_ms``: milliseconds a delayed answer is held, a number or a ``(low, high)``
    range drawn from; ``latency_share``: share of signed requests delayed (0..1);
    ``latency_at``: ``"after"`` the request took effect, ``"before"``, or ``"both"``."""

    error_rate: float = 0.0
    after_commit: float = 0.0
    seed: int = 0
    latency_ms: int | tuple[int, int] = 0
    latency_share: float = 1.0
    latency_at: str = "after"
    #: Faults of one endpoint ("GET /orders") in place of these (``None``: none).
    routes: Mapping[str, FaultConfig | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "latency_ms", _latency(self.latency_ms))
        object.__setattr__(self, "routes", _routes(self.routes))
        if self.latency_at not in LATENCY_AT:
            raise ConfigError(
                f"faults.latency_at must be 'before', 'after' or 'both', got {self.latency_at!r}"
            )
        for name in ("error_rate", "after_commit", "latency_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"faults.{name} must be a number in [0, 1], got {value!r}")
            if not 0 <= value <= 1:
                raise ConfigError(f"faults.{name} must lie in [0, 1], got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"faults.seed must be an integer, got {self.seed!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FaultConfig:
        if not isinstance(data, Mapping):
            raise ConfigError(f"faults must be an object or null, got {data!r}")
        extra = set(data) - {f.name for f in fields(cls)}
        if extra:
            raise ConfigError(f"unknown faults keys: {sorted(extra)}")
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        latency = self.latency_ms
        out: dict[str, Any] = {
            "error_rate": self.error_rate,
            "after_commit": self.after_commit,
            "seed": self.seed,
            "latency_ms": list(latency) if isinstance(latency, tuple) else latency,
            "latency_share": self.latency_share,
            "latency_at": self.latency_at,
        }
        if self.routes:
            out["routes"] = {
                route: None if config is None else config.to_dict()
                for route, config in self.routes.items()
            }
        return out

    def of(self, route: str) -> FaultConfig | None:
        """The faults of ``route`` ("GET /orders"): its own when given, else these."""
        routes = self.routes
        return routes.get(route, self)

    @property
    def slow(self) -> bool:
        """Whether some answers are delayed (a latency above 0 for a share above 0)."""
        latency = self.latency_ms
        high = latency[1] if isinstance(latency, tuple) else latency
        return high > 0 and self.latency_share > 0


#: How an endpoint is named in ``routes``: a method, a space, the API text's path.
ROUTE_METHODS = ("GET", "POST", "DELETE")


def _routes(value: object) -> dict[str, FaultConfig | None]:
    """``routes`` checked: endpoint names to their faults (a mapping, or ``None``)."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"faults.routes must be an object, got {value!r}")
    routes: dict[str, FaultConfig | None] = {}
    for route, config in value.items():
        method, _, path = str(route).partition(" ")
        if method not in ROUTE_METHODS or not path.startswith("/"):
            raise ConfigError(
                f"faults.routes keys are endpoints such as 'GET /orders', got {route!r}"
            )
        if isinstance(config, Mapping):
            if "routes" in config:
                raise ConfigError(f"faults.routes[{route!r}] cannot have routes of its own")
            config = FaultConfig.from_dict(config)
        elif config is not None and not isinstance(config, FaultConfig):
            raise ConfigError(f"faults.routes[{route!r}] must be an object or null")
        routes[route] = config
    return routes


def _latency(value: object) -> int | tuple[int, int]:
    """``latency_ms`` checked: milliseconds, or a ``(low, high)`` range of them."""

    def ms(item: object) -> int:
        if type(item) is not int or not 0 <= item <= MAX_LATENCY_MS:
            raise ConfigError(
                f"faults.latency_ms must be integer milliseconds from 0 to {MAX_LATENCY_MS} "
                f"or a [low, high] pair of them, got {value!r}"
            )
        return item

    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            ms(None)  # raises, naming the value
        low, high = ms(value[0]), ms(value[1])
        if low > high:
            raise ConfigError(f"faults.latency_ms range must have low <= high, got {value!r}")
        return (low, high)
    return ms(value)


class Faults:
    """The seeded draws of one sandbox and counts of what was injected; ``routes``:
    the endpoints a configuration's ``routes`` may name (empty: any)."""

    def __init__(self, config: FaultConfig | None, routes: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._routes = frozenset(routes)
        # the delays in progress, oldest first: their loop and the future that ends
        # them, to their route (a dict: an ordered set)
        self._held: dict[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]], str] = {}
        # those of them released but not yet woken (a later count skips them)
        self._released: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()
        self.configure(config)
        #: Injected failures by kind (before / after commit, 500 / drop).
        self.injected = {"before_500": 0, "before_drop": 0, "after_500": 0, "after_drop": 0}
        #: Requests delayed on purpose (``latency_ms``) so far.
        self.delayed = 0

    def configure(self, config: FaultConfig | Mapping[str, Any] | None) -> None:
        """Switch to ``config`` (``None``: no faults) while running (from any thread);
        reseeds the draws. Requests being delayed stay held (``release()``)."""
        if isinstance(config, Mapping):
            config = FaultConfig.from_dict(config)
        unknown = sorted(set(config.routes) - self._routes) if config and self._routes else []
        if unknown:
            raise ConfigError(f"faults.routes names no endpoint: {unknown}")
        with self._lock:
            self.config = config or FaultConfig()
            self._random = random.Random(self.config.seed)

    @property
    def held(self) -> int:
        """Requests being delayed now (``latency_ms``): a point a test can wait for."""
        with self._lock:
            return len(self._held)

    def held_on(self, route: str) -> int:
        """Requests of ``route`` ("DELETE /orders/{id}") being delayed now."""
        self._check(route)
        with self._lock:
            return sum(1 for held in self._held.values() if held == route)

    def release(self, route: str | None = None, count: int | None = None) -> int:
        """End delays in progress now (from any thread): every one, or those of
        ``route``; the oldest ``count`` of them when given. The number released."""
        if route is not None:
            self._check(route)
        with self._lock:
            held = [
                entry
                for entry, of in self._held.items()
                if (route is None or of == route) and entry not in self._released
            ]
            if count is not None:
                held = held[:count]
            self._released.update(held)
        for loop, waiter in held:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(_wake, waiter)
        return len(held)

    def _check(self, route: str) -> None:
        if self._routes and route not in self._routes:
            raise ConfigError(f"faults: no endpoint is named {route!r}")

    @property
    def active(self) -> bool:
        return self.config.error_rate > 0

    def draw(self, config: FaultConfig | None = None) -> tuple[bool, bool] | None:
        """``None`` (no fault) or ``(after_commit, drop)`` for the next request under
        ``config`` (default: the sandbox's)."""
        config = self.config if config is None else config
        if config.error_rate <= 0:
            return None
        with self._lock:
            r = self._random
            if r.random() >= config.error_rate:
                return None
            after = r.random() < config.after_commit
            drop = r.random() < 0.5
            key = ("after_" if after else "before_") + ("drop" if drop else "500")
            self.injected[key] += 1
        return after, drop

    def delays(self, config: FaultConfig | None = None) -> tuple[float, float]:
        """Seconds to hold the next request before and after it takes effect (drawn
        after ``draw()``'s, and only when latency is configured: seeds of runs
        without it draw the same faults as before latency existed)."""
        config = self.config if config is None else config
        with self._lock:
            r = self._random
            if not config.slow:
                return 0.0, 0.0
            latency = config.latency_ms
            low, high = latency if isinstance(latency, tuple) else (latency, latency)
            if r.random() >= config.latency_share:
                return 0.0, 0.0
            before = r.randint(low, high) if config.latency_at != "after" else 0
            after = r.randint(low, high) if config.latency_at != "before" else 0
            self.delayed += 1
        return before / 1000, after / 1000

    async def _hold(self, seconds: float, route: str) -> None:
        """Sleep ``seconds``, or until ``release()``."""
        if seconds <= 0:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(seconds, _wake, waiter)
        entry = (loop, waiter)
        with self._lock:
            self._held[entry] = route
        try:
            await waiter
        finally:
            timer.cancel()
            with self._lock:
                del self._held[entry]
                self._released.discard(entry)

    async def run(
        self,
        handle: Callable[[], Awaitable[Any]],
        failure: Callable[[], Any],
        route: str = "",
    ) -> Any:
        """``await handle()`` unless a fault says otherwise, delayed before and/or after
        as drawn; ``failure()`` makes the response of an injected 500 (a dropped
        connection needs no response). ``route`` ("GET /orders") picks its own faults."""
        config = self.config.of(route)
        if config is None:
            return await handle()
        fault = self.draw(config)
        before, after_commit = self.delays(config)
        await self._hold(before, route)
        if fault is None:
            response = await handle()
        else:
            after, drop = fault
            if after:
                await handle()  # the request takes effect; its answer is lost
            response = _Dropped() if drop else failure()
        # held after it took effect: a client giving up now does not know it did
        await self._hold(after_commit, route)
        return response


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class _Dropped:
    """An ASGI response that starts, promises a body, and breaks off the connection."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"64")],
            }
        )
        # the server closes the transport of a response that raised after it started
        raise DroppedConnection("connection dropped on purpose (sandbox faults)")


class _QuietDrops(logging.Filter):
    """Keeps the server's error log free of the drops made on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        return not (info and isinstance(info[1], DroppedConnection))


_QUIET = _QuietDrops()


def quiet_server_log() -> None:
    """Install the filter on uvicorn's error logger (idempotent)."""
    logger = logging.getLogger("uvicorn.error")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


async def drop_streams(connections: Iterable[Any]) -> int:
    """Close every WebSocket connection in ``connections``; the number closed."""
    chosen = list(connections)
    for conn in chosen:
        conn.closing = True  # nothing more is queued for it
    results = await asyncio.gather(*(_close(conn) for conn in chosen), return_exceptions=True)
    return sum(1 for r in results if r is True)


async def _close(conn: Any) -> bool:
    with contextlib.suppress(Exception):
        await conn.websocket.close(code=DROP_CODE, reason="dropped by the sandbox")
        return True
    return False
