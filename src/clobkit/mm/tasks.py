"""Requests run together in a structured way: when the caller returns, raises or is
cancelled, none of them is still running untracked; ``Rerun``, a job started on
demand that runs once more when asked while it runs; and ``leaving``, what a block's
exit raises."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

__all__ = ["Rerun", "all_of", "beside", "each_of", "leaving"]

T = TypeVar("T")
log = logging.getLogger("clobkit.mm")


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


@contextlib.asynccontextmanager
async def beside(call: Awaitable[T]) -> AsyncIterator[asyncio.Task[T]]:
    """``call`` run beside the block (its task): it has ended when the block is left.
    Cancelled, the block cancels it too; a failure of the block waits for it to end
    (a cancel sent beside a signing that failed still completes) and goes on; after
    a normal end, its failure is raised."""
    task = asyncio.ensure_future(call)
    try:
        yield task
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError):
            task.cancel()
        await _end([task])
        if not task.cancelled():
            task.exception()  # read (see all_of): the block's exception goes on
        raise
    await _end([task])
    task.result()


async def _ended(calls: Iterable[Awaitable[T]]) -> list[asyncio.Task[T]]:
    tasks = [asyncio.ensure_future(call) for call in calls]
    await _end(tasks)
    return tasks


async def _end(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Wait until every one of ``tasks`` has ended; cancelled, cancel them, wait until
    each has ended, and re-raise."""
    if not tasks:
        return
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


async def leaving(close: Awaitable[None], exc: BaseException | None, what: str) -> None:
    """Await ``close`` as a block ends with ``exc`` (``None``: it ended normally). A
    failure of ``close`` is raised after a normal end; after ``exc``, ``exc`` goes on
    (a cancellation stays one: ``asyncio.timeout`` and task groups read it) and the
    failure is said on it (a note, ``what: failure (orders may still rest)``) and
    logged at ERROR, not raised in its place, where it would hide ``exc``."""
    if exc is None:
        await close
        return
    try:
        await close
    except Exception as failure:
        said = f"{what}: {failure} (orders may still rest)"
        exc.add_note(said)
        log.error("%s", said)


class Rerun:
    """``job`` run on demand (``ask``), one run at a time. Asked while it runs, it runs
    once more when that run ends: what the running one read (a listing, the cache)
    may predate the ask, so ending without a rerun would leave the ask unanswered (a
    fill missed after a second reconnect, a late copy left resting). An exception of
    a run goes to ``failed``; a rerun still follows when asked meanwhile."""

    def __init__(
        self, job: Callable[[], Awaitable[None]], name: str, failed: Callable[[Exception], None]
    ) -> None:
        self._job = job
        self._name = name
        self._failed = failed
        self._asked = False
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Whether a run is in progress (or about to start)."""
        return self._task is not None and not self._task.done()

    def ask(self) -> None:
        """Run the job now, or once more after the run in progress."""
        self._asked = True
        if not self.running:
            self._task = asyncio.ensure_future(self._run())
            self._task.set_name(self._name)

    async def _run(self) -> None:
        while self._asked:
            self._asked = False
            try:
                await self._job()
            except Exception as exc:
                self._failed(exc)

    async def close(self) -> None:
        """Cancel the run in progress, and the rerun asked, and wait until it ends."""
        self._asked = False
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            if task is not asyncio.current_task():  # closed by its own job: it ends next
                # wait(), not await: a cancellation of the caller itself still propagates
                await asyncio.wait([task])
