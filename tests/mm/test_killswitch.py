"""The kill switch cancels what it knows first, through the real client and sandbox.

A desk of 4 quoters x 3 levels; its streams dropped once (every quoter must re-read
its orders), and ``GET /orders`` held by the service (or answering 500s) while
``DELETE`` works: ``halt()`` and leaving the ``Desk`` block cancel every order all the
same. Before, ``halt()`` sent no ``DELETE`` while the listing hung (``cancel_all``
took each quoter's lock and read the service before cancelling, and the desk's
re-read held every lock during its listing), and every order stayed on the book. No
timing is asserted: the listing is held until the test releases it, so a kill switch
that waited for it would never return (``GUARD`` is a hang guard only).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.errors import ClobkitError
from clobkit.mm import Desk

from .conftest import assert_same, eventually, options, service_view
from .test_desk import ladder, two_sided

GUARD = 30.0  # s: a hang guard only
HELD = {"latency_ms": 60_000, "latency_at": "before"}  # released by the test
LISTING = {"held": HELD, "failing": {"error_rate": 1.0, "seed": 3}}


def resting(sb: Any, user: Any, desk: Desk) -> int:
    return sum(len(service_view(sb, user, q.market_id, q.outcome)) for q in desk.quoters)


async def a_desk_whose_listing_fails(sb: Any, desk: Desk, listing: str) -> None:
    """4 quoters x 3 levels resting, then the listing held or failing and the streams
    dropped: every quoter's view is stale and its re-read cannot complete."""
    quoters = [desk.quoter(m, o) for m in two_sided(sb, 2) for o in ("a", "b")]
    await desk.requote({q: ladder(5) for q in quoters})
    sb.faults.configure({"routes": {"GET /orders": LISTING[listing]}})
    sb.drop_streams()
    await eventually(lambda: desk.reconnects >= 1, GUARD)
    if listing == "held":
        await eventually(lambda: sb.faults.held >= 1, GUARD)  # the re-read hangs


@pytest.mark.parametrize("listing", ["held", "failing"])
async def test_halt_cancels_while_the_listing_hangs_or_fails(
    sb: Any, user: Any, listing: str
) -> None:
    async with (
        AsyncClient(**options(sb, user, max_retries=1)) as client,
        Desk(client, user_id=user.user_id, stream_timeout=None, max_error_rate=1.0) as desk,
    ):
        await a_desk_whose_listing_fails(sb, desk, listing)
        assert resting(sb, user, desk) == 12
        cancelled = await asyncio.wait_for(desk.halt(), GUARD)
        assert len(cancelled) == 12
        assert resting(sb, user, desk) == 0  # before any listing could answer
        sb.faults.configure(None)
        sb.faults.release()
        await desk.reconcile()
        for q in desk.quoters:
            assert_same(sb, user, q)


class Strategy(Exception):
    """The strategy's own error, raised in the desk's block."""


@pytest.mark.parametrize("body", ["ends", "raises"])
@pytest.mark.parametrize("listing", ["held", "failing"])
async def test_leaving_the_desk_cancels_while_the_listing_hangs_or_fails(
    sb: Any, user: Any, listing: str, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Every order is cancelled on leaving though no listing answers; since none could
    confirm it, leaving says so: raised after a block that ended, a note on (and an
    ERROR log of) the block's own exception otherwise. Before, a warning only."""
    async with AsyncClient(**options(sb, user, max_retries=1)) as client:
        desk = Desk(client, user_id=user.user_id, stream_timeout=None, max_error_rate=1.0)
        desk.exit_timeout = 0.5  # the sweep after the cancels cannot list: given up then
        said = r"no listing within exit_timeout \(0.5 s\) showed nothing of the desk resting"

        async def leave() -> None:
            async with desk:
                await a_desk_whose_listing_fails(sb, desk, listing)
                assert resting(sb, user, desk) == 12
                if body == "raises":
                    raise Strategy("the model diverged")

        wanted = ClobkitError if body == "ends" else Strategy
        try:
            with pytest.raises(wanted, match=said if body == "ends" else "diverged") as info:
                await leave()
            assert resting(sb, user, desk) == 0
            if body == "raises":
                (note,) = info.value.__notes__
                assert note.startswith("leaving the desk: no listing within exit_timeout")
                assert note in caplog.text
        finally:
            sb.faults.configure(None)
            sb.faults.release()


@pytest.mark.slow
def test_the_kill_switch_benchmark_runs_at_tiny_sizes() -> None:
    """benchmarks/bench_killswitch.py end to end (--quick): every figure printed, and no
    order told refused or never placed rested later (it exits 1 if one did)."""
    from pathlib import Path

    import clobkit

    root = Path(__file__).resolve().parents[2]
    src = str(Path(clobkit.__file__).parents[1])
    env = os.environ | {"PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_killswitch.py", "--quick"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("empty book after") == 5
    assert done.stdout.count("told refused or never placed yet rested: 0") == 3
