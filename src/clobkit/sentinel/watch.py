"""What the sentinel keeps: each desk's run it hears (a session), when it last heard it,
what the desk said of itself; and what it does when one falls silent: cancel every
order of the account until nothing rests, then sweep again for a while (a place sent
just before the silence may still land), and keep watching.

``Watch`` is the sentinel's whole decision, with no HTTP in it: ``hear`` takes each
accepted heartbeat, ``check`` finds the silent desks, ``fire`` cancels. The listener
(``listener.py``) and the process around it (``run.py``) only feed it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..client import CancelAllResult
from ..errors import ClobkitError
from .wire import HALTED, LEFT, Heartbeat

__all__ = ["Session", "Watch"]

log = logging.getLogger("clobkit.sentinel")

#: The most sessions watched at once: the oldest are forgotten past it.
SESSIONS_MAX = 256
#: Seconds between two cancel-alls of one firing that left something resting
#: (doubling, at most ``_RETRY_MAX``).
_RETRY = 0.2
_RETRY_MAX = 5.0


@dataclass
class Session:
    """One desk's run as the sentinel heard it."""

    desk: str
    state: str
    reason: str | None
    heard: float  # monotonic seconds of the last heartbeat
    open_orders: int
    dead: bool = False  # fell silent: the sentinel fired; watched again once heard


class Watch:
    """Fires ``cancel_all()`` (the account's cancel-all: ``AsyncClient.cancel_all_orders``)
    when a desk it heard has been silent for ``timeout`` s; after it, sweeps again
    for ``linger`` s (at 1, 2, 4, ... s) until a desk is heard (the one back, or a new
    one: its orders are its own).

    ``fires`` counts firings, ``cancelled`` the orders they cancelled; ``last`` is the
    last cancel-all's result.
    """

    def __init__(
        self,
        timeout: float,
        cancel_all: Callable[[], Awaitable[CancelAllResult]],
        *,
        linger: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeout = timeout
        self.cancel_all = cancel_all
        self.linger = linger
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self.fires = 0
        self.cancelled = 0
        self.last: CancelAllResult | None = None
        self._heard_again = asyncio.Event()

    # -- what the desks say ----------------------------------------------------------

    def hear(self, beat: Heartbeat) -> None:
        """An accepted heartbeat: its session watched (again), its state logged when it
        changes; ``left``: no longer watched."""
        now = self.clock()
        old = self.sessions.pop(beat.session, None)  # re-inserted: the newest is last
        if beat.state == LEFT:
            if old is not None:
                log.info(
                    "desk %s left (%s; %d orders it knew of): no longer watched",
                    beat.desk,
                    beat.reason or "orderly exit",
                    beat.open_orders,
                )
            return
        if old is None:
            log.info("watching desk %s (session %s, %s)", beat.desk, beat.session, beat.state)
        elif old.dead:
            log.warning(
                "desk %s heard again after %.1f s of silence: watched again (its orders were"
                " cancelled)",
                beat.desk,
                now - old.heard,
            )
        self._heard_again.set()  # a desk quotes again: its orders are not to be swept
        if beat.state == HALTED and (old is None or old.state != HALTED or old.dead):
            log.warning("desk %s halted itself: %s", beat.desk, beat.reason or "no reason given")
        elif old is not None and old.state == HALTED and beat.state != HALTED:
            log.info("desk %s resumed quoting", beat.desk)
        self.sessions[beat.session] = Session(
            beat.desk, beat.state, beat.reason, now, beat.open_orders
        )
        while len(self.sessions) > SESSIONS_MAX:
            del self.sessions[next(iter(self.sessions))]

    def silent(self) -> list[Session]:
        """The watched sessions silent for longer than ``timeout`` (not yet fired on)."""
        now = self.clock()
        return [s for s in self.sessions.values() if not s.dead and now - s.heard > self.timeout]

    # -- firing ---------------------------------------------------------------------

    async def check(self) -> bool:
        """Fire if a watched desk is silent; whether it fired."""
        silent = self.silent()
        if not silent:
            return False
        now = self.clock()
        for s in silent:
            s.dead = True
            was = f"after halting itself ({s.reason})" if s.state == HALTED else "while quoting"
            log.error(
                "no heartbeat from desk %s for %.2f s (%s, %d orders it knew of): cancelling"
                " every order of the account",
                s.desk,
                now - s.heard,
                was,
                s.open_orders,
            )
        await self.fire()
        return True

    async def fire(self) -> None:
        """Cancel every order of the account, again until a listing shows none."""
        self.fires += 1
        self._heard_again.clear()
        started = self.clock()
        wait = _RETRY
        while True:
            result = await self._cancel_once()
            if result is not None and result.flat:
                log.warning(
                    "cancelled %d orders (%d already gone) in %.2f s: nothing rests",
                    len(result.cancelled),
                    len(result.gone),
                    self.clock() - started,
                )
                return
            await asyncio.sleep(wait)
            wait = min(2 * wait, _RETRY_MAX)

    async def _cancel_once(self) -> CancelAllResult | None:
        try:
            result = await self.cancel_all()
        except ClobkitError as exc:  # the service unreachable: try again
            log.error("cancel-all failed: %s; trying again", exc)
            return None
        self.last = result
        self.cancelled += len(result.cancelled)
        if not result.flat:
            log.error(
                "cancel-all left %d orders resting (%s): trying again",
                len(result.remaining),
                "listed" if result.confirmed else "the last listing failed",
            )
        return result

    async def sweep_after(self) -> None:
        """After a firing: sweep again at 1, 2, 4, ... s for ``linger`` s (a place sent
        just before the silence may land late), until a desk is heard (again, or a new
        one)."""
        end = self.clock() + self.linger
        wait = 1.0
        while (left := end - self.clock()) > 0:
            try:
                await asyncio.wait_for(self._heard_again.wait(), min(wait, left))
            except TimeoutError:
                pass
            else:
                return  # a desk is back: its new orders are its own business
            result = await self._cancel_once()
            if result is not None and result.cancelled:
                log.warning("a later sweep cancelled %d more orders", len(result.cancelled))
            wait *= 2

    async def run(self, interval: float | None = None) -> None:
        """Watch until cancelled: check every ``interval`` s (a tenth of ``timeout``, at
        most 50 ms); each firing is followed by its sweeps, a firing of another silent
        desk meanwhile cutting them short."""
        step = min(0.05, self.timeout / 10) if interval is None else interval
        lingering: asyncio.Task[None] | None = None
        try:
            while True:
                await asyncio.sleep(step)
                if await self.check():
                    if lingering is not None:
                        lingering.cancel()
                    lingering = asyncio.ensure_future(self.sweep_after())
        finally:
            if lingering is not None:
                lingering.cancel()
