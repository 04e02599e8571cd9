"""A faithful local implementation of the External Trading API, on loopback.

::

    from clobkit.sandbox import serve_in_thread

    with serve_in_thread() as sb:          # default users, free port
        sb.base_url                        # API under /api/ext/v1
        sb.clob_url                        # GET /fee-rate?token_id=...
        sb.ws_url                          # ws://.../api/ext/v1/ws
        sb.users                           # keys, secrets, scopes, balances
        sb.settle(market_id, "a")          # resolve a market
        sb.house_fill(order_id, "10")      # the house fills part of a resting order

``python -m clobkit.sandbox`` runs one in the foreground. The parts:
``engine`` (books, matching, lifecycle, balances, risk; pure Python; it
answers typed ``records``), ``app`` (Starlette routes and WebSocket; ``views``
turns the records into JSON), ``auth``, ``fixtures``, ``config``,
``store`` (the optional SQLite state file: ``serve_in_thread(state=FILE)``).
See docs/sandbox.md for what it does where the API text is silent.
"""

from __future__ import annotations

from .app import create_app
from .config import DEFAULT_USERS, RiskConfig, SandboxConfig, UserConfig, load_config
from .engine import Engine
from .errors import Rejected
from .records import (
    Balances,
    Cancelled,
    Level,
    OrderBook,
    OrderRecord,
    Page,
    Placed,
    PriceSnapshot,
    Settlement,
    Totals,
)
from .server import Sandbox, serve_in_thread
from .store import StateFileError
from .walk import WalkConfig

__all__ = [
    "DEFAULT_USERS",
    "Balances",
    "Cancelled",
    "Engine",
    "Level",
    "OrderBook",
    "OrderRecord",
    "Page",
    "Placed",
    "PriceSnapshot",
    "Rejected",
    "RiskConfig",
    "Sandbox",
    "SandboxConfig",
    "Settlement",
    "StateFileError",
    "Totals",
    "UserConfig",
    "WalkConfig",
    "create_app",
    "load_config",
    "serve_in_thread",
]
