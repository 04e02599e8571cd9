"""The HTTP requests a running sandbox received: ``Sandbox.requests``.

An ASGI layer outside the whole app (``Sandbox`` hands it to uvicorn), so it counts
every request that reaches the service, the ones it refuses included (a bad
signature, a rate limit, a fault injected on purpose), by method and path as
received (the raw path, no query). Tests count what a client really sent through
its own transport, retries and all, instead of wrapping the client's transport:

    sb.requests.reset()
    ...
    assert sb.requests.count("POST", "/api/ext/v1/orders/raw") == placed
    assert sb.requests.count("DELETE", prefix="/api/ext/v1/orders/") == cancelled
    assert sb.requests.most_in_flight("DELETE") == 12  # held at once (faults.latency_ms)

A request is in flight from its arrival until its answer is sent (or its connection
lost): with a latency fault holding answers, ``most_in_flight`` tells how many a
client had out at once. WebSocket connections are not counted.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["RequestLog"]


class RequestLog:
    """Counts of the HTTP requests received (thread-safe: the server runs in its own
    thread, a test reads from its own), since the sandbox started or ``reset()``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._sent: Counter[tuple[str, str]] = Counter()
        self._now: Counter[str] = Counter()
        self._most: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        raw = scope.get("raw_path") or scope["path"].encode()
        path = raw.split(b"?", 1)[0].decode("latin-1")
        with self._lock:
            self._sent[(method, path)] += 1
            for key in (method, ""):
                self._now[key] += 1
                self._most[key] = max(self._most[key], self._now[key])
        answered = False

        def done() -> None:
            nonlocal answered
            if not answered:
                answered = True
                with self._lock:
                    self._now[method] -= 1
                    self._now[""] -= 1

        async def sending(message: Any) -> None:
            # out of flight before the answer's last bytes go: whoever reads the
            # answer sees the count without it
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            done()  # no answer (an error, a dropped connection)

    @property
    def sent(self) -> dict[tuple[str, str], int]:
        """``(method, path) -> requests`` received."""
        with self._lock:
            return dict(self._sent)

    def count(
        self, method: str | None = None, path: str | None = None, *, prefix: str | None = None
    ) -> int:
        """Requests received: of ``method`` (any when None), to ``path`` exactly or to
        a path starting with ``prefix`` (any when both are None)."""
        with self._lock:
            items = list(self._sent.items())
        return sum(
            n
            for (m, p), n in items
            if (method is None or m == method)
            and (path is None or p == path)
            and (prefix is None or p.startswith(prefix))
        )

    def in_flight(self, method: str | None = None) -> int:
        """Requests (of ``method``) received and not yet answered."""
        with self._lock:
            return self._now[method or ""]

    def most_in_flight(self, method: str | None = None) -> int:
        """The most requests (of ``method``) in flight at once since the last ``reset()``."""
        with self._lock:
            return self._most[method or ""]

    def reset(self) -> None:
        """Forget the counts (the requests in flight now stay in flight)."""
        with self._lock:
            self._sent.clear()
            self._most = Counter({key: n for key, n in self._now.items() if n})
