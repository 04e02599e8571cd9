"""``mm.tasks``: calls run together end together, and every failure among them is read."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from clobkit.mm.tasks import all_of, each_of


async def _fail(message: str, delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    raise ValueError(message)


async def _ok(value: int) -> int:
    await asyncio.sleep(0)
    return value


async def test_all_of_raises_the_first_failure_and_reads_every_other(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two calls fail (a batch of signatures refused whole): the first in order is raised,
    and the second is not logged by asyncio as "never retrieved" when collected (that log,
    from the garbage collector inside ast.parse on CPython 3.11.7, raised SystemError)."""
    with caplog.at_level(logging.ERROR, logger="asyncio"), pytest.raises(ValueError, match="a"):
        await all_of([_fail("a", 0.01), _ok(1), _fail("b")])
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_all_of_and_each_of_keep_the_calls_order() -> None:
    assert await all_of([_ok(3), _ok(1), _ok(2)]) == [3, 1, 2]
    got = await each_of([_ok(1), _fail("x"), _ok(2)])
    assert got[0] == 1
    assert isinstance(got[1], ValueError)
    assert got[2] == 2
    assert await all_of([]) == []


async def test_a_cancelled_all_of_waits_for_every_call_to_end() -> None:
    ended: list[str] = []

    async def slow(name: str) -> None:
        try:
            await asyncio.sleep(10)
        finally:
            ended.append(name)

    task = asyncio.ensure_future(all_of([slow("a"), slow("b")]))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(ended) == ["a", "b"]
