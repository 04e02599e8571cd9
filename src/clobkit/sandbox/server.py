"""Running a sandbox: uvicorn in a background thread on a free loopback port."""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from types import TracebackType
from typing import Any

import uvicorn

from ._http import GuardedH11Protocol
from .app import create_app
from .config import SandboxConfig, UserConfig, load_config
from .context import SandboxState
from .counting import RequestLog
from .engine import Engine
from .faults import Faults, drop_streams
from .records import Balances, OrderRecord, Settlement
from .state import MarketState
from .wire import PREFIX

__all__ = ["Sandbox", "serve_in_thread"]

ConfigSource = SandboxConfig | Mapping[str, Any] | str | os.PathLike[str] | None


class Sandbox:
    """One running sandbox: its URLs, users, engine and the admin shortcuts.

    ``base_url`` (API under ``/api/ext/v1``), ``clob_url`` (``/fee-rate``) and
    ``ws_url`` are known once :meth:`start` returns. Two sandboxes in one
    process share nothing.
    """

    def __init__(
        self,
        config: ConfigSource = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        strict_query_signing: bool = False,
        state: str | os.PathLike[str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``clock``: seconds since the epoch, for the engine and the signature window."""
        cfg = load_config(config)
        if strict_query_signing:
            cfg = cfg.with_strict_query_signing(True)
        self.config = cfg
        # state: restore from / commit to this SQLite file (None: memory only);
        # raises StateFileError for a foreign, corrupt, busy or mismatched file
        self.app = create_app(cfg, state=state, clock=clock)
        #: The HTTP requests received, by method and path (``RequestLog``): what the
        #: clients really sent, retries included.
        self.requests = RequestLog(self.app)
        st: SandboxState = self.app.state.sandbox
        self.engine: Engine = st.engine
        self._store = st.store
        self._state = st
        self.host = host
        self._port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # -- addresses ---------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}"

    @property
    def clob_url(self) -> str:
        return self.base_url

    @property
    def ws_url(self) -> str:
        return "ws" + self.base_url[len("http") :] + PREFIX + "/ws"

    @property
    def users(self) -> list[UserConfig]:
        return list(self.config.users)

    # -- lifecycle -----------------------------------------------------------

    def start(self, timeout: float = 10.0) -> Sandbox:
        """Bind, serve in a daemon thread, and return once connections are accepted."""
        if self._thread is not None:
            raise RuntimeError("this sandbox is already running")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio disables Nagle only on sockets whose
        # protocol says TCP, and with Nagle on every keep-alive answer waits
        # ~40 ms for the client's delayed ACK.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._port))
        except OSError:
            sock.close()
            raise
        self._port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn_config(self.requests, self.config))
        self._server = server

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # pragma: no cover - surfaced by start()
                self._error = exc
            finally:
                sock.close()

        self._thread = threading.Thread(
            target=run, name=f"clobkit-sandbox-{self._port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the sandbox failed to start: {self._error!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the sandbox did not start in time")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down and wait for its thread; close the state file (if any).

        To continue from the file, start a new ``Sandbox`` on it.
        """
        server, thread = self._server, self._thread
        if server is None or thread is None:
            self.close_state()
            return
        server.should_exit = True
        # a request held on purpose (faults.latency_ms) would outlast uvicorn's grace
        # period and lose its answer: end the delays until the server has stopped
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            self._state.faults.release()
            thread.join(0.05)
        if thread.is_alive():  # pragma: no cover - a stuck connection
            server.force_exit = True
            thread.join(timeout)
        self._server = self._thread = None
        self.close_state()

    def close_state(self) -> None:
        """Release the state file (if any); later changes to this sandbox's engine raise."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> Sandbox:
        return self if self._thread is not None else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- admin shortcuts (same as the /admin routes) -----------------------------

    def settle(self, market_id: str, winner: str) -> Settlement:
        """Resolve a market: winner ``"a"`` or ``"b"``; what was paid out."""
        return self.engine.settle(market_id, winner)

    def house_fill(self, order_id: str, shares: Decimal | str | int | float) -> OrderRecord:
        """The house takes the other side of ``shares`` of a resting order (a partial fill).

        Answers the order as it stands after the fill.
        """
        return self.engine.house_fill(order_id, shares)

    def set_price(self, market_id: str, price: Decimal | str | float) -> MarketState:
        """Move the house's mid price of a market (it requotes at once).

        Answers the engine's live record of the market (read it under
        ``sb.engine.reading()``).
        """
        return self.engine.set_price(market_id, price)

    def deposit(
        self, user_id: str, amount: Decimal | str | int, *, bonus: bool = False
    ) -> Balances:
        """Credit a user's USDC (or bonus) balance; the balances after it."""
        return self.engine.deposit(user_id, amount, bonus=bonus)

    @property
    def faults(self) -> Faults:
        """The fault injector (``faults.injected`` counts what failed on purpose)."""
        return self._state.faults

    def drop_streams(self, timeout: float = 5.0) -> int:
        """Close every WebSocket connection (clients see their stream drop); how many."""
        loop = self._state.hub.loop
        if loop is None or loop.is_closed():
            return 0
        done = asyncio.run_coroutine_threadsafe(drop_streams(self._state.streams), loop)
        return done.result(timeout)

    def user(self, name_or_id: str) -> UserConfig:
        """A configured user by user_id or api_key."""
        for u in self.config.users:
            if name_or_id in (u.user_id, u.api_key):
                return u
        raise KeyError(name_or_id)


def uvicorn_config(app: Any, config: SandboxConfig) -> uvicorn.Config:
    """The uvicorn settings of a sandbox: its limits, and no trusted proxy unless named."""
    limits = config.limits
    proxies = config.forwarded_allow_ips
    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
        ws_ping_interval=None,
        # uvicorn trusts X-Forwarded-For from 127.0.0.1 by default, which lets any local
        # client pick its address for the IP whitelist: trust only the proxies named.
        proxy_headers=proxies is not None,
        forwarded_allow_ips=list(proxies) if proxies is not None else [],
        http=functools.partial(  # type: ignore[arg-type]
            GuardedH11Protocol, request_timeout=limits.request_timeout_seconds
        ),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        timeout_keep_alive=limits.keep_alive_seconds,  # type: ignore[arg-type]
        limit_concurrency=limits.max_connections,
        ws_max_size=limits.ws_max_message_bytes,
    )


@contextmanager
def serve_in_thread(
    config: ConfigSource = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    strict_query_signing: bool = False,
    state: str | os.PathLike[str] | None = None,
) -> Iterator[Sandbox]:
    """Run a sandbox on ``host:port`` (0: a free port) for the duration of the block.

    ``state``: an SQLite file holding the sandbox's state across restarts (None: memory).
    """
    sandbox = Sandbox(
        config, host=host, port=port, strict_query_signing=strict_query_signing, state=state
    )
    try:
        sandbox.start()
    except BaseException:
        sandbox.close_state()
        raise
    try:
        yield sandbox
    finally:
        sandbox.stop()
