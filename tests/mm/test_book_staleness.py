"""The books of a desk's quoters say when they are stale, against the real sandbox.

Before, a book kept showing the last one it took while the desk's stream was down,
and after a reconnect until the next book, with nothing to tell it from a fresh one
(the desk's kill switch only fires past ``stream_timeout``).
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from clobkit import AsyncClient
from clobkit.mm import Desk, Quote
from clobkit.models import Reconnected

from .conftest import eventually
from .test_desk import two_sided
from .test_quoter import every_turn


async def test_the_desks_books_are_stale_while_its_stream_is_down_and_until_fresh_books(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 2)
    async with Desk(client, user_id=user.user_id) as desk:
        quoters = [desk.quoter(m, "a") for m in markets]
        await desk.open()
        await eventually(lambda: not any(q.book.stale for q in quoters))
        taken = {q: q.book.received_at for q in quoters}
        seen: dict[Any, list[tuple[bool, int]]] = {q: [] for q in quoters}

        def fresh_again() -> bool:
            for q in quoters:
                seen[q].append((q.book.stale, desk.reconnects))
            return desk.reconnects >= 1 and not any(q.book.stale for q in quoters)

        assert sb.drop_streams() == 1
        await every_turn(fresh_again)
        for q in quoters:
            assert (True, 0) in seen[q]  # stale while the stream was down, before its marker
            before, now = taken[q], q.book.received_at
            assert before is not None
            assert now is not None
            assert now > before
            age = q.book.age
            assert age is not None
            assert age < time.monotonic() - before
    assert all(q.book.stale for q in quoters)  # closed: nothing keeps them current


async def test_after_the_desks_reconnect_marker_its_books_are_stale_until_the_next_book(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 2)
    async with Desk(client, user_id=user.user_id) as desk:
        quoters = [desk.quoter(m, "a") for m in markets]
        await desk.open()
        await eventually(lambda: not any(q.book.stale for q in quoters))
        taken = {q: q.book.received_at for q in quoters}
        desk.router.route(Reconnected(topics=[], attempt=1))  # the stream's marker: messages lost
        assert all(q.book.stale for q in quoters)  # the stream is up; books may be behind
        # each book changes (a new bid): its message makes it fresh
        await desk.requote({q: [Quote("BUY", Decimal("0.10"), 20)] for q in quoters})
        await eventually(lambda: not any(q.book.stale for q in quoters))
        for q in quoters:
            before, now = taken[q], q.book.received_at
            assert before is not None
            assert now is not None
            assert now > before


async def test_without_book_topics_the_book_read_on_open_is_always_stale(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (market,) = two_sided(sb, 1)
    async with Desk(client, user_id=user.user_id, books=False) as desk:
        q = desk.quoter(market, "a")
        await desk.open()
        # the book read over REST when it opened, never kept current: stale, and its
        # age says how old that read is
        assert q.book.stale
        assert q.book.updates == 1
        assert q.book.best_bid is not None
        first = q.book.age
        assert first is not None
        await eventually(lambda: (q.book.age or 0) > first)  # older with every read
        assert q.book.updates == 1
        assert q.book.stale


async def test_a_desks_quoter_closed_while_the_desk_runs_has_a_stale_book(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 2)
    async with Desk(client, user_id=user.user_id) as desk:
        closed, running = desk.quoter(markets[0], "a"), desk.quoter(markets[1], "a")
        await desk.open()
        await eventually(lambda: not closed.book.stale and not running.book.stale)
        await closed.__aexit__(None, None, None)  # its book topic is no longer routed to it
        assert closed.book.stale
        assert not running.book.stale  # the desk's stream still feeds the others
