"""``clobkit sentinel``: the watching process. It starts the listener in a process of
its own (``listener.py``), feeds each heartbeat that process accepted to its ``Watch``,
and fires the account's cancel-all through its own ``AsyncClient`` when a desk falls
silent. A listener that exits is started again; until it is, nothing is heard, so a
desk it watched is taken for silent (the safe side)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable

import msgspec

from ..client import AsyncClient, CancelAllResult
from .watch import Watch
from .wire import Heartbeat, read_token

__all__ = ["run_sentinel"]

log = logging.getLogger("clobkit.sentinel")

_decoder = msgspec.json.Decoder(Heartbeat)
#: Seconds one cancel-all of a firing may take before it is started again.
CANCEL_TIMEOUT = 30.0
_RESTART = 1.0  # s before a listener that exited is started again


async def run_sentinel(
    client: AsyncClient,
    listen: str,
    heartbeat_timeout: float,
    *,
    linger: float | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Watch the desks heard on ``listen`` (``HOST:PORT``) until cancelled; cancel every
    order of ``client``'s account when one is silent for ``heartbeat_timeout`` s, then
    sweep again for ``linger`` s (default: the client's ``landing_time``). ``announce``
    gets the line saying where it listens, once the listener is up."""
    read_token()  # refused now, not when the listener starts
    await client.get_wallet()  # the account is reachable: fail now, not when firing

    async def cancel_all() -> CancelAllResult:
        return await client.cancel_all_orders(timeout=CANCEL_TIMEOUT)

    watch = Watch(
        heartbeat_timeout,
        cancel_all,
        linger=client.config.landing_time if linger is None else linger,
    )
    watching = asyncio.ensure_future(watch.run())
    first = True
    try:
        while True:
            try:
                await _listen(listen, heartbeat_timeout, watch, announce if first else None)
            except RuntimeError as exc:
                if first:  # a wrong address or a port in use: said at once
                    raise
                log.error("%s", exc)
            first = False
            log.error("the listener exited: starting it again in %g s", _RESTART)
            await asyncio.sleep(_RESTART)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching


def _hear(watch: Watch, line: bytes) -> None:
    """One heartbeat the listener accepted, to the watch."""
    try:
        beat = _decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:  # never expected
        log.error("the listener wrote an unreadable line: %s", exc)
        return
    watch.hear(beat)


async def _listen(
    listen: str, timeout: float, watch: Watch, announce: Callable[[str], None] | None
) -> None:
    """Run one listener process until it exits, each line it writes a heartbeat heard."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clobkit.sentinel.listener",
        "--listen",
        listen,
        "--timeout",
        repr(timeout),
        stdin=asyncio.subprocess.PIPE,  # closed when this process ends: the listener leaves
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    try:
        first = await child.stdout.readline()
        if not first.startswith(b"listening on "):
            await child.wait()
            raise RuntimeError(f"the listener did not start on {listen} (exit {child.returncode})")
        where = first.decode().strip()
        log.info("%s, heartbeat timeout %g s", where, timeout)
        if announce is not None:
            announce(f"sentinel {where} (heartbeat timeout {timeout:g} s)")
        while line := await child.stdout.readline():
            _hear(watch, line)
    finally:
        if child.returncode is None:
            child.terminate()
            with contextlib.suppress(ProcessLookupError):
                await child.wait()
