"""Faults on purpose, to test bots against: failed requests and dropped streams.

``"faults": {"error_rate": 0.2, "after_commit": 0.5, "seed": 3}`` in the
configuration makes a share (``error_rate``) of the signed API requests fail:
half of those with a 500 in the envelope, half with a dropped connection (the
answer's headers arrive, its body never does). Of the failures, the share
``after_commit`` happens *after* the request took effect (the order was
placed, the cancel done): the unknown-outcome case a client must resolve
before sending again. Draws come from one ``random.Random(seed)``, so a run is
repeatable as far as the order of requests is. Default: no faults.

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
from dataclasses import dataclass, fields
from typing import Any

from starlette.types import Receive, Scope, Send

__all__ = ["DroppedConnection", "FaultConfig", "Faults", "drop_streams"]

#: WebSocket close code of a dropped stream (1012: service restart).
DROP_CODE = 1012


class DroppedConnection(Exception):
    """Raised inside the ASGI app to make the server drop a connection on purpose."""


@dataclass(frozen=True)
class FaultConfig:
    """``error_rate``: share of signed API requests that fail (0..1); ``after_commit``:
    share of those failing after the request took effect (0..1); ``seed`` of the draws."""

    error_rate: float = 0.0
    after_commit: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        from .config import ConfigError  # config imports this module

        for name in ("error_rate", "after_commit"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"faults.{name} must be a number in [0, 1], got {value!r}")
            if not 0 <= value <= 1:
                raise ConfigError(f"faults.{name} must lie in [0, 1], got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"faults.seed must be an integer, got {self.seed!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FaultConfig:
        from .config import ConfigError

        if not isinstance(data, Mapping):
            raise ConfigError(f"faults must be an object or null, got {data!r}")
        extra = set(data) - {f.name for f in fields(cls)}
        if extra:
            raise ConfigError(f"unknown faults keys: {sorted(extra)}")
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        return {"error_rate": self.error_rate, "after_commit": self.after_commit, "seed": self.seed}


class Faults:
    """The seeded draws of one sandbox and counts of what was injected."""

    def __init__(self, config: FaultConfig | None) -> None:
        self._lock = threading.Lock()
        self.configure(config)
        #: Injected failures by kind (before / after commit, 500 / drop).
        self.injected = {"before_500": 0, "before_drop": 0, "after_500": 0, "after_drop": 0}

    def configure(self, config: FaultConfig | Mapping[str, Any] | None) -> None:
        """Switch to ``config`` (``None``: no faults) while running; reseeds the draws."""
        if isinstance(config, Mapping):
            config = FaultConfig.from_dict(config)
        with self._lock:
            self.config = config or FaultConfig()
            self._random = random.Random(self.config.seed)

    @property
    def active(self) -> bool:
        return self.config.error_rate > 0

    def draw(self) -> tuple[bool, bool] | None:
        """``None`` (no fault) or ``(after_commit, drop)`` for the next request."""
        if not self.active:
            return None
        with self._lock:
            r = self._random
            if r.random() >= self.config.error_rate:
                return None
            after = r.random() < self.config.after_commit
            drop = r.random() < 0.5
            key = ("after_" if after else "before_") + ("drop" if drop else "500")
            self.injected[key] += 1
        return after, drop

    async def run(
        self,
        handle: Callable[[], Awaitable[Any]],
        failure: Callable[[], Any],
    ) -> Any:
        """``await handle()`` unless a fault says otherwise; ``failure()`` makes the
        response of an injected 500 (a dropped connection needs no response)."""
        fault = self.draw()
        if fault is None:
            return await handle()
        after, drop = fault
        if after:
            await handle()  # the request takes effect; its answer is lost
        return _Dropped() if drop else failure()


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
