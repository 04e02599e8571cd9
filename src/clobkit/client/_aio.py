"""A timeout for awaits that must not lose a cancellation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["within"]

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """The result of ``awaitable`` within ``seconds``, else ``asyncio.TimeoutError``.

    Not ``asyncio.wait_for``: up to Python 3.11 it returns the result and drops a
    cancellation that arrives as the awaited call completes (the stream's task then
    went on reading, and ``close()`` waited on it for ever).
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except BaseException:  # cancelled: the inner call is too
        task.cancel()
        raise
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise asyncio.TimeoutError
    return task.result()
