"""The sentinel's decision (``Watch``) against a real sandbox: a desk heard and then
silent makes it cancel every order of the account until nothing rests, retrying
through a failing service, sweeping again for late landings; a desk that halted
itself, one that left and one that comes back read differently in its log."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.client import CancelAllResult
from clobkit.sentinel import HALTED, LEFT, Watch

from ..conftest import import_extra
from ..mm.conftest import options
from .conftest import beat

sandbox_module = import_extra("clobkit.sandbox", "sandbox")
OPEN = ("pending", "signing", "submitted", "live")


@pytest.fixture
def sb() -> Iterator[Any]:
    with sandbox_module.serve_in_thread({"rate_limit_per_minute": None, "risk": None}) as s:
        yield s


@pytest.fixture
def user(sb: Any) -> Any:
    return sb.users[1]


@pytest.fixture
async def client(sb: Any, user: Any) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(**options(sb, user, max_retries=0, timeout=2.0)) as c:
        yield c


def place(sb: Any, user: Any, n: int) -> list[str]:
    """``n`` GTC BUYs resting far below a two-sided book, placed in the engine."""
    market = next(m for m, s in sb.engine.markets.items() if s.active and s.mid is not None)
    body = {
        "market_id": market,
        "side": "BUY",
        "order_type": "GTC",
        "token_option": "yes",
        "limit_price": 0.02,
        "amount": 5,
    }
    return [sb.engine.place_order(user.user_id, body).order_id for _ in range(n)]


def resting(sb: Any, user: Any) -> int:
    rows = sb.engine.list_orders(user.user_id, page_size=100_000).items
    return sum(1 for r in rows if r.status in OPEN)


def watch_of(client: AsyncClient, timeout: float = 0.2, linger: float = 0.0) -> Watch:
    async def cancel_all() -> CancelAllResult:
        return await client.cancel_all_orders(timeout=5)

    return Watch(timeout, cancel_all, linger=linger)


@contextlib.asynccontextmanager
async def running(watch: Watch) -> AsyncIterator[None]:
    """``watch`` checking every 10 ms while the block runs."""
    task = asyncio.ensure_future(watch.run(0.01))
    try:
        yield
    finally:
        task.cancel()


async def until(check: Any, timeout: float = 30.0) -> None:
    """Until ``check()`` (a liveness bound, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, "the condition did not become true in time"
        await asyncio.sleep(0.01)


async def test_a_silent_desk_makes_it_cancel_every_order(
    sb: Any, user: Any, client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "clobkit.sentinel")
    place(sb, user, 130)  # two pages of the listing
    watch = watch_of(client)
    async with running(watch):
        assert watch.fires == 0  # not armed before a heartbeat
        watch.hear(beat(desk="desk-1", open_orders=130))
        await until(lambda: watch.last is not None)
        assert watch.fires == 1
        assert watch.last is not None
        last = watch.last
        assert last.flat
        # each one's DELETE sent; on a loaded machine some answers miss the client's
        # 2 s timeout, and a listing then finds those orders gone (cancelled all the same)
        assert len(last.cancelled) + len(last.gone) == 130
        assert watch.cancelled == len(last.cancelled) > 0
        assert resting(sb, user) == 0
    text = caplog.text
    assert "watching desk desk-1" in text
    assert "no heartbeat from desk desk-1" in text
    assert "while quoting, 130 orders it knew of" in text
    assert f"cancelled {len(last.cancelled)} orders ({len(last.gone)} already gone)" in text


async def test_heartbeats_in_time_keep_it_quiet(sb: Any, user: Any, client: AsyncClient) -> None:
    place(sb, user, 3)
    watch = watch_of(client, timeout=2.0)
    async with running(watch):
        first = beat()
        for seq in range(1, 11):
            watch.hear(beat(session=first.session, seq=seq))
            await asyncio.sleep(0.1)
        assert watch.fires == 0
        assert resting(sb, user) == 3


async def test_an_orderly_halt_and_a_dead_desk_read_differently(
    sb: Any, user: Any, client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "clobkit.sentinel")
    place(sb, user, 2)
    watch = watch_of(client)
    first = beat(desk="desk-2")
    watch.hear(first)
    watch.hear(beat(session=first.session, seq=2, desk="desk-2", state=HALTED, reason="loss"))
    assert "desk desk-2 halted itself: loss" in caplog.text
    async with running(watch):
        await until(lambda: watch.last is not None)  # still watched: silent, it fires
        assert "after halting itself (loss)" in caplog.text
        assert resting(sb, user) == 0


async def test_a_desk_that_left_is_no_longer_watched(
    sb: Any, user: Any, client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "clobkit.sentinel")
    place(sb, user, 2)
    watch = watch_of(client, timeout=0.05)
    first = beat(desk="desk-3")
    watch.hear(first)
    watch.hear(beat(session=first.session, seq=2, desk="desk-3", state=LEFT, reason="done"))
    assert watch.sessions == {}
    assert "desk desk-3 left (done" in caplog.text
    await asyncio.sleep(0.2)
    assert not await watch.check()
    assert watch.fires == 0
    assert resting(sb, user) == 2


@pytest.mark.slow
async def test_it_sweeps_again_for_late_landings_until_the_desk_is_back(
    sb: Any, user: Any, client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "clobkit.sentinel")
    place(sb, user, 2)
    watch = watch_of(client, timeout=0.5, linger=30.0)
    first = beat(desk="desk-4")
    watch.hear(first)
    async with running(watch):
        await until(lambda: watch.last is not None)
        place(sb, user, 1)  # a place sent just before the silence lands now
        await until(lambda: "a later sweep cancelled 1 more orders" in caplog.text)  # at 1 s
        assert resting(sb, user) == 0
        watch.hear(beat(session=first.session, seq=2, desk="desk-4"))
        assert "desk desk-4 heard again after" in caplog.text
        place(sb, user, 1)  # the desk's own again: left alone
        for seq in range(3, 43):  # past the sweep that would have come at 3 s
            watch.hear(beat(session=first.session, seq=seq, desk="desk-4"))
            await asyncio.sleep(0.05)
        assert resting(sb, user) == 1
        assert watch.fires == 1


async def test_it_retries_through_a_failing_service_until_nothing_rests(
    sb: Any, user: Any, client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "clobkit.sentinel")
    place(sb, user, 4)
    sb.faults.configure({"error_rate": 1.0, "seed": 1})  # every request fails
    watch = watch_of(client)
    watch.hear(beat(desk="desk-5"))
    async with running(watch):
        await until(lambda: "trying again" in caplog.text)
        assert resting(sb, user) == 4
        sb.faults.configure(None)
        await until(lambda: watch.last is not None and watch.last.flat)
        assert resting(sb, user) == 0
        assert watch.fires == 1
