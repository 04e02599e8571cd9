"""What one sandbox app owns, in one record every route reads (no module-level state)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .auth import Authenticator
from .config import SandboxConfig
from .engine import Engine
from .faults import Faults
from .store import StateStore
from .ws import Connection, Hub

if TYPE_CHECKING:
    from .replay import Replay

__all__ = ["SandboxState"]


@dataclass
class SandboxState:
    """Everything one app instance owns (no module-level state)."""

    config: SandboxConfig
    engine: Engine
    auth: Authenticator
    hub: Hub
    faults: Faults
    streams: set[Connection]
    store: StateStore | None = None
    replay: Replay | None = None  # a recording being replayed (replay.attach)
