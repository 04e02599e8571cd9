"""A desk's line to ``clobkit sentinel`` (``Desk(..., sentinel="http://HOST:PORT")``):
heartbeats from the desk's own event loop saying what it does (quoting, or halted
and why), its kill switch's firings and resumes told at once, its leaving told last;
and when the sentinel has not acknowledged a heartbeat for longer than its timeout,
the desk halts itself: the sentinel has cancelled every order of the account by
then (or is doing so), and quoting on would only fight it."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from ..sentinel.beacon import Beacon
from ..sentinel.wire import HALTED, LEFT, QUOTING, read_token
from .gate import Gate
from .killswitch import KillSwitch

__all__ = ["Lifeline", "desk_name"]


def desk_name() -> str:
    """A desk's default name in the sentinel's log: its host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Lifeline:
    """The heartbeats of one desk (its ``kill`` switch and ``gate``) to the sentinel at
    ``url``, signed with ``CLOBKIT_SENTINEL_TOKEN`` (read now: a desk refuses to start
    without it). ``fire(reason)`` halts the desk (its watchdog's)."""

    def __init__(self, url: str, kill: KillSwitch, gate: Gate, fire: Callable[[str], None]) -> None:
        self.kill = kill
        self.gate = gate
        self.beacon = Beacon(url, read_token(), desk_name(), self.status, fire)
        kill.on_change.append(self.beacon.tell)

    def status(self) -> tuple[str, str | None, int]:
        """What the next heartbeat says: (state, reason, open orders)."""
        halted = self.kill.halted
        return (QUOTING if halted is None else HALTED, halted, self.gate.open_orders)

    async def start(self, name: str) -> None:
        """The first heartbeat acknowledged (else ``TransportError``), then the rest;
        ``name``: the desk's in the sentinel's log."""
        self.beacon.desk = name
        await self.beacon.start()

    async def close(self, flat: bool | None) -> None:
        """The desk leaves: no longer watched (``flat``: whether a listing showed
        nothing of it resting; ``None``: it did not cancel on exit)."""
        if flat is None:
            reason = "left without cancelling (cancel_on_exit=False)"
        else:
            reason = "left, nothing resting" if flat else "left, some orders may rest"
        await self.beacon.close(LEFT, reason)

    def metrics(self) -> dict[str, Any]:
        """Heartbeats ``sent``, ``acknowledged`` and ``failed``; the sentinel's
        ``timeout`` (s)."""
        beacon = self.beacon
        return {
            "url": beacon.url,
            "sent": beacon.sent,
            "acknowledged": beacon.acks,
            "failed": beacon.failures,
            "timeout": beacon.timeout,
        }
