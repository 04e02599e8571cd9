"""``clobkit sentinel``: cancels every order of an account when its desk falls silent.

A ``Desk(..., sentinel="http://HOST:PORT")`` sends a signed heartbeat from its own
event loop several times a timeout (``Beacon``); the sentinel, a process of its own
on the same host or another, cancels every live order of the account
(``cancel_all_orders``, until nothing rests) when none came for ``--heartbeat-timeout``
seconds: the desk's process killed, its host lost, its network cut, its event loop
blocked. A desk's kill switch tells it too, so an orderly halt and a dead desk read
differently in its log. See docs/when-the-bot-dies.md.

The parts: ``wire`` (the heartbeat and its signature, one home for both ends),
``beacon`` (the desk's side), ``watch`` (the sentinel's decision), ``listener`` (its
HTTP ear, in a process of its own; the ``sentinel`` extra) and ``run`` (the process
that watches and cancels).
"""

from __future__ import annotations

from .beacon import Beacon
from .run import run_sentinel
from .watch import Session, Watch
from .wire import HALTED, LEFT, QUOTING, Heartbeat, Reply, read_token, sign

__all__ = [
    "HALTED",
    "LEFT",
    "QUOTING",
    "Beacon",
    "Heartbeat",
    "Reply",
    "Session",
    "Watch",
    "read_token",
    "run_sentinel",
    "sign",
]
