"""Sandbox request authentication: signature, clock skew, nonce replay, IP whitelist, rate limit.

Pure Python, no I/O; the app hands it the request's method, raw path, query
string, headers and body. Verification uses the core's ``verify_signature``.

* A request needs ``X-API-KEY``, ``X-API-TIMESTAMP`` (ms), ``X-API-NONCE`` and
  ``X-API-SIGNATURE``; anything missing or wrong answers 401 ``unauthorized``.
* The signed PATH is the path with its query string; the bare path is also
  accepted unless the sandbox runs with ``strict_query_signing``.
* The timestamp must lie within the skew window (default 30 s) of the
  server's clock; a nonce is refused if the same key used it before and its
  first request's timestamp is still inside the window (after that the
  timestamp check refuses the replay anyway, so the nonce is forgotten).
  Only a request that passes every check below records its nonce (a 429 can
  be resent as signed); a nonce is at most 64 printable ASCII characters.
* 403 ``forbidden: ip not whitelisted`` when the user has a whitelist and the
  client address is outside it; 429 with ``Retry-After`` past the per-key
  limit of requests in any 60 s; 403 ``forbidden: missing scope <scope>``.
"""

from __future__ import annotations

import heapq
import ipaddress
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from .. import verify_signature
from ..core.spec import (
    CODE_RATE_LIMITED,
    ERROR_IP_FORBIDDEN,
    ERROR_RATE_LIMITED,
    ERROR_UNAUTHORIZED,
    forbidden_scope,
)
from .config import SandboxConfig, UserConfig
from .errors import Rejected

__all__ = ["Authenticator"]

_HEADERS = ("x-api-key", "x-api-timestamp", "x-api-nonce", "x-api-signature")
WINDOW_MS = 60_000
#: The longest nonce accepted (the client sends 32 hex digits); printable ASCII only.
NONCE_MAX = 64

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _unauthorized(detail: str) -> Rejected:
    return Rejected(401, ERROR_UNAUTHORIZED, detail=detail)


class Authenticator:
    """Verifies signed requests of one sandbox's users (thread-safe)."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        clock: Callable[[], float] = time.time,
        on_nonce: Callable[[str, str, int], None] | None = None,
    ) -> None:
        """``on_nonce(api_key, nonce, expires_ms)`` hears of every nonce recorded (state file)."""
        self._on_nonce = on_nonce
        self._users = config.user_by_key()
        self._skew_ms = int(config.skew_seconds * 1000)
        self._strict = config.strict_query_signing
        self._rate = config.rate_limit_per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._nonces: dict[str, set[str]] = {}
        self._nonce_expiry: list[tuple[int, str, str]] = []
        self._hits: dict[str, deque[int]] = {}
        self._networks: dict[str, list[IPNetwork] | None] = {
            u.user_id: None
            if u.ip_whitelist is None
            else [ipaddress.ip_network(n, strict=False) for n in u.ip_whitelist]
            for u in config.users
        }

    @property
    def strict(self) -> bool:
        return self._strict

    def authenticate(
        self,
        *,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        client_ip: str | None,
    ) -> UserConfig:
        """The user of a correctly signed, fresh, allowed request; else raises ``Rejected``."""
        values = [headers.get(name) for name in _HEADERS]
        for name, value in zip(_HEADERS, values, strict=True):
            if not value:
                raise _unauthorized(f"missing header {name.upper()}")
        key, ts, nonce, sig = (v or "" for v in values)
        user = self._users.get(key)
        if user is None:
            raise _unauthorized("unknown API key")
        if not (ts.isascii() and ts.isdigit()) or len(ts) > 16:
            raise _unauthorized("X-API-TIMESTAMP must be milliseconds since the epoch")
        now = round(self._clock() * 1000)
        stamp = int(ts)
        if not (len(nonce) <= NONCE_MAX and nonce.isascii() and nonce.isprintable()):
            raise _unauthorized(f"X-API-NONCE must be 1 to {NONCE_MAX} printable ASCII characters")
        if abs(now - stamp) > self._skew_ms:
            window = f"{self._skew_ms / 1000:g} s"
            raise _unauthorized(
                f"X-API-TIMESTAMP is outside the {window} window of the server clock"
            )
        candidates = [f"{path}?{query}"] if query else [path]
        if query and not self._strict:
            candidates.append(path)
        if not any(
            verify_signature(user.api_secret, method, p, ts, nonce, body, sig) for p in candidates
        ):
            raise _unauthorized("signature mismatch")
        with self._lock:
            self._purge(now)
            if nonce in self._nonces.get(key, ()):
                raise _unauthorized("nonce already used")
        self._check_ip(user, client_ip)
        with self._lock:
            # Re-checked under the same lock that records it: two racing requests with
            # one nonce cannot both pass. Only a request that passed every check (rate
            # included) burns its nonce, so a 429 can be retried as it was signed.
            used = self._nonces.setdefault(key, set())
            if nonce in used:
                raise _unauthorized("nonce already used")
            self._check_rate(user, now)
            used.add(nonce)
            heapq.heappush(self._nonce_expiry, (stamp + self._skew_ms, key, nonce))
            if self._on_nonce is not None:
                self._on_nonce(key, nonce, stamp + self._skew_ms)
        return user

    def restore_nonces(self, used: list[tuple[str, str, int]]) -> None:
        """Remember nonces used before a restart: (api_key, nonce, expires_ms) each."""
        with self._lock:
            for key, nonce, expires_ms in used:
                self._nonces.setdefault(key, set()).add(nonce)
                heapq.heappush(self._nonce_expiry, (expires_ms, key, nonce))

    def _purge(self, now: int) -> None:
        heap = self._nonce_expiry
        while heap and heap[0][0] < now:
            _, key, nonce = heapq.heappop(heap)
            self._nonces.get(key, set()).discard(nonce)

    def _check_ip(self, user: UserConfig, client_ip: str | None) -> None:
        networks = self._networks.get(user.user_id)
        if networks is None:
            return
        try:
            address = ipaddress.ip_address(client_ip or "")
        except ValueError:
            address = None
        if address is None or not any(address in n for n in networks):
            raise Rejected(403, ERROR_IP_FORBIDDEN, detail=f"client address {client_ip}")

    def _check_rate(self, user: UserConfig, now: int) -> None:
        """Count a request of ``user`` at ``now`` (ms), or raise 429; the caller holds the lock."""
        if self._rate is None:
            return
        hits = self._hits.setdefault(user.api_key, deque())
        while hits and hits[0] <= now - WINDOW_MS:
            hits.popleft()
        if len(hits) >= self._rate:
            wait = max(1, math.ceil((hits[0] + WINDOW_MS - now) / 1000))
            raise Rejected(
                429,
                ERROR_RATE_LIMITED,
                code=CODE_RATE_LIMITED,
                detail=f"at most {self._rate} requests per minute per API key",
                headers={"Retry-After": str(wait)},
            )
        hits.append(now)

    @staticmethod
    def require_scope(user: UserConfig, scope: str) -> None:
        if scope not in user.scopes:
            raise Rejected(403, forbidden_scope(scope))
