"""Requests run together in a structured way: when the caller returns, raises or is
cancelled, none of them is still running untracked."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

__all__ = ["all_of", "each_of"]

T = TypeVar("T")


async def each_of(calls: Iterable[Awaitable[T]]) -> list[T | BaseException]:
    """Await ``calls`` concurrently; each one's result, or the exception it raised, in
    order. Cancelled, it cancels every call still running and waits until each has
    ended (its state settled: a request cut short becomes one of unknown outcome)
    before it re-raises. (``asyncio.gather`` leaves the other calls running when the
    caller is cancelled.)"""
    tasks = await _ended(calls)
    return [task.exception() or task.result() for task in tasks]


async def all_of(calls: Iterable[Awaitable[T]]) -> list[T]:
    """``each_of``'s results, raising the first exception once every call has ended."""
    tasks = await _ended(calls)
    # every failure read, not only the first: asyncio logs a task whose exception nobody
    # read as "never retrieved", from the garbage collector, wherever it runs
    failures = [task.exception() for task in tasks]
    for failure in failures:
        if failure is not None:
            raise failure
    return [task.result() for task in tasks]


async def _ended(calls: Iterable[Awaitable[T]]) -> list[asyncio.Task[T]]:
    tasks = [asyncio.ensure_future(call) for call in calls]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        pending = set(tasks)
        while pending:
            try:
                _, pending = await asyncio.wait(pending)
            except asyncio.CancelledError:
                continue
        raise
    return tasks
