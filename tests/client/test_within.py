"""``within``: a timeout that never swallows its caller's cancellation.

Before, when the awaited call outlived the deadline and took a while to end after
its own cancel, a cancel of the caller during that wait was suppressed with the
inner call's ``CancelledError``, and the caller got ``TimeoutError``: a task
cancelled at shutdown went on as if only a request had timed out.
"""

from __future__ import annotations

import asyncio
import gc

import pytest

from clobkit.client import within


async def slow_to_end(cancelled: asyncio.Event, gate: asyncio.Event) -> None:
    """Waits for ever; once cancelled, ends only when ``gate`` is set."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        cancelled.set()
        await gate.wait()
        raise


async def test_a_cancel_during_the_timeouts_cleanup_reaches_the_caller() -> None:
    cancelled, gate = asyncio.Event(), asyncio.Event()
    caller = asyncio.ensure_future(within(slow_to_end(cancelled, gate), 0.01))
    await cancelled.wait()  # the deadline passed; the inner call is ending
    caller.cancel()
    await asyncio.sleep(0)
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await caller


async def test_a_call_past_its_deadline_is_a_timeout() -> None:
    cancelled, gate = asyncio.Event(), asyncio.Event()
    gate.set()
    with pytest.raises(asyncio.TimeoutError):
        await within(slow_to_end(cancelled, gate), 0.01)
    assert cancelled.is_set()


async def test_an_error_raised_as_the_call_ends_is_retrieved() -> None:
    async def fails_when_cancelled() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ValueError("while ending") from None

    loop = asyncio.get_running_loop()
    seen: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        with pytest.raises(asyncio.TimeoutError):
            await within(fails_when_cancelled(), 0.01)
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert seen == []
