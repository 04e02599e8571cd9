"""``mm.tasks``: calls run together end together, and every failure among them is read;
``Rerun`` runs once more when asked while it runs."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable

import pytest

from clobkit.mm.tasks import Rerun, all_of, beside, each_of, leaving


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


class _Job:
    """A job whose runs each wait for the test to let them end (``go``)."""

    def __init__(self, fail: frozenset[int] = frozenset()) -> None:
        self.started = 0
        self.ended = 0
        self.fail = fail
        self.go = asyncio.Event()
        self.failures: list[Exception] = []

    async def __call__(self) -> None:
        self.started += 1
        run = self.started
        await self.go.wait()
        self.go.clear()
        self.ended += 1
        if run in self.fail:
            raise ValueError(f"run {run}")


async def _until(check: Callable[[], bool]) -> None:
    for _ in range(1000):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("never")


async def test_rerun_asked_while_running_runs_once_more_and_only_once() -> None:
    """The run in progress may have read before the ask: one more run follows it, however
    many asks came meanwhile; asked when idle, it runs at once."""
    job = _Job()
    rerun = Rerun(job, "test", job.failures.append)
    rerun.ask()
    await _until(lambda: job.started == 1)
    rerun.ask()
    rerun.ask()
    assert rerun.running
    job.go.set()
    await _until(lambda: job.started == 2)
    assert job.ended == 1
    job.go.set()
    await _until(lambda: not rerun.running)
    assert (job.started, job.ended, job.failures) == (2, 2, [])
    rerun.ask()  # idle: a run of its own
    await _until(lambda: job.started == 3)
    job.go.set()
    await _until(lambda: not rerun.running)
    assert job.ended == 3


async def test_rerun_hands_a_failure_over_and_still_reruns_when_asked() -> None:
    job = _Job(fail=frozenset({1}))
    rerun = Rerun(job, "test", job.failures.append)
    rerun.ask()
    await _until(lambda: job.started == 1)
    rerun.ask()  # asked during the run that fails
    job.go.set()
    await _until(lambda: job.started == 2)
    assert [str(f) for f in job.failures] == ["run 1"]
    job.go.set()
    await _until(lambda: not rerun.running)
    assert (job.started, len(job.failures)) == (2, 1)


async def test_rerun_closed_cancels_its_run_and_the_rerun_asked() -> None:
    """Closed, the run in progress is cancelled and awaited, the rerun asked is dropped
    (nothing runs after close), and it can be asked again later (a quoter entered again)."""
    job = _Job()
    rerun = Rerun(job, "test", job.failures.append)
    rerun.ask()
    await _until(lambda: job.started == 1)
    rerun.ask()
    await rerun.close()
    assert not rerun.running
    for _ in range(10):
        await asyncio.sleep(0)
    assert (job.started, job.ended, job.failures) == (1, 0, [])
    rerun.ask()
    await _until(lambda: job.started == 2)
    job.go.set()
    await _until(lambda: not rerun.running)
    await rerun.close()  # idle: nothing to wait for
    assert job.ended == 1


async def _closing(fails: bool) -> None:
    await asyncio.sleep(0)
    if fails:
        raise ValueError("2 orders may rest")


async def test_leaving_raises_a_close_failure_only_after_a_normal_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Ended normally, the close's failure is raised; ended with an exception (or a
    cancellation), that exception goes on with the failure as a note, logged at ERROR."""
    await leaving(_closing(False), None, "leaving q")
    with pytest.raises(ValueError, match="2 orders may rest"):
        await leaving(_closing(True), None, "leaving q")
    for own in (KeyError("model"), asyncio.CancelledError()):
        with caplog.at_level(logging.ERROR, logger="clobkit.mm"):
            await leaving(_closing(True), own, "leaving q")  # returns: the caller re-raises
        said = "leaving q: 2 orders may rest (orders may still rest)"
        assert own.__notes__ == [said]
        assert caplog.records[-1].getMessage() == said
        await leaving(_closing(False), own, "leaving q")  # a close that worked: no note
        assert own.__notes__ == [said]


async def test_rerun_closed_by_its_own_job_ends_without_waiting_for_itself() -> None:
    """A job that closes its own ``Rerun`` (a quoter closed from its tidy) is cancelled
    at its next await; the close does not wait for the job that called it (forever)."""
    reached: list[str] = []

    async def job() -> None:
        await rerun.close()
        reached.append("after close")
        await asyncio.sleep(0)
        reached.append("never")

    rerun = Rerun(job, "test", lambda exc: None)
    rerun.ask()
    await _until(lambda: not rerun.running)
    assert reached == ["after close"]


async def test_beside_has_ended_when_its_block_is_left() -> None:
    """``beside``: a call run beside a block (a requote's cancels beside its signing).
    Left normally, the block waits for it and raises its failure; left with the
    block's own failure, it still runs to its end (not cut) and the block's goes on;
    cancelled, it is cancelled too, and has ended when the cancellation goes on."""
    ended: list[str] = []

    async def slow(value: int = 0) -> int:
        try:
            await asyncio.sleep(0.05)
        finally:
            ended.append("slow")
        return value

    async with beside(slow(7)) as task:
        assert not task.done()
    assert (task.result(), ended) == (7, ["slow"])
    with pytest.raises(ValueError, match="beside"):
        async with beside(_fail("beside")):
            pass
    with pytest.raises(KeyError, match="signer"):
        async with beside(slow()) as task:
            raise KeyError("signer")
    assert task.result() == 0  # ran to its end
    assert ended == ["slow", "slow"]

    async def block() -> None:
        async with beside(asyncio.sleep(10)) as inner:
            tasks.append(inner)
            await asyncio.sleep(10)

    tasks: list[asyncio.Task[None]] = []
    call = asyncio.ensure_future(block())
    await _until(lambda: bool(tasks))
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert tasks[0].cancelled()
