"""A timeout for awaits that must not lose a cancellation, and the pacing of the
requests an ``AsyncClient`` sends again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["paced", "within"]

T = TypeVar("T")

# what an AsyncClient awaits before each request of a call beyond its first (a retry,
# a further poll or page); a ContextVar, so that it follows the calls awaited within
# ``paced`` (and the tasks they gather) and no other caller's
_PACE: ContextVar[Callable[[], Awaitable[None]] | None] = ContextVar("clobkit_pace", default=None)


@contextlib.contextmanager
def paced(take: Callable[[], Awaitable[None]]) -> Iterator[None]:
    """Within it, each request an ``AsyncClient`` call sends beyond its first (a retry
    after its backoff, a further poll of ``wait_for_order``, a further page of an
    ``iter_*`` walk) first awaits ``take()``: room in a request budget of one's own,
    say (``clobkit.mm``'s desk counts them so). The first is the caller's to count."""
    token = _PACE.set(take)
    try:
        yield
    finally:
        _PACE.reset(token)


async def pace() -> None:
    """Await the ``take`` of the ``paced`` block this runs in, if any."""
    take = _PACE.get()
    if take is not None:
        await take()


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
        try:
            # its end, however it ends; a cancel of this caller meanwhile propagates
            # (awaiting the task itself, its CancelledError and ours look alike)
            await asyncio.wait({task})
        finally:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: an error raised as it ended is not "lost"
        raise TimeoutError
    return task.result()
