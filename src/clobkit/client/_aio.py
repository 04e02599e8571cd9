"""``within`` (``asyncio.timeout`` for an awaitable, which ``clobkit.mm`` imports) and
the pacing of the requests an ``AsyncClient`` sends again."""

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


async def within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """The result of ``awaitable`` within ``seconds`` (``None``: no bound), else
    ``TimeoutError``, whatever the call did once cancelled at the deadline (ended
    with an error of its own, or a result).

    ``asyncio.timeout`` (3.11): a cancellation of the caller always propagates,
    even one that arrives as the deadline passes or as the call ends (where
    ``asyncio.wait_for`` up to 3.11 returned the result and dropped it). The call
    runs as a task of its own, as under ``wait_for``.
    """
    bound = asyncio.timeout(seconds)
    try:
        async with bound:
            result = await asyncio.ensure_future(awaitable)
    except Exception as exc:
        if bound.expired() and not isinstance(exc, TimeoutError):
            raise TimeoutError from exc  # it failed as it ended, past its deadline
        raise
    if bound.expired():  # it returned once cancelled: still past its deadline
        raise TimeoutError
    return result
