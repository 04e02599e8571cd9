"""The Quoter against the real sandbox: placement, shifts, fills, limits, exit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.errors import AmountError, ClobkitError, InsufficientBalance, QuoteRefused
from clobkit.mm import Quote, Quoter
from clobkit.models import Order

from .conftest import (
    Counted,
    assert_same,
    eventually,
    held,
    options,
    quoter_view,
    service_view,
)


def ladder(first: int, levels: int = 10, size: int = 20, side: str = "BUY") -> list[Quote]:
    """``levels`` quotes of ``size`` shares at first, first+1, ... cents."""
    return [Quote(side, Decimal(first + k) / 100, size) for k in range(levels)]


def prices(rows: list[tuple[Any, ...]]) -> list[Decimal]:
    return sorted(row[3] for row in rows)


def orders_on(sb: Any, user: Any, market_id: str) -> int:
    """How many orders the service ever created for the user on the market."""
    records = sb.engine.list_orders(user.user_id, page_size=10_000).items
    return sum(1 for r in records if r.market_id == market_id)


async def test_first_placement(sb: Any, user: Any, client: AsyncClient, market_id: str) -> None:
    async with Quoter(client, market_id, "a") as q:
        assert q.token_id == sb.engine.markets[market_id].fx.token_id_a
        assert q.min_order_size == Decimal(1)
        assert q.book.best_bid is not None
        assert q.book.best_ask is not None
        report = await q.requote(ladder(10))
        assert len(report.placed) == 10
        assert report.cancelled == []
        assert report.kept == []
        assert {o.clob_order_id for o in report.placed} == {row[1] for row in quoter_view(q)}
        assert q.user_id == user.user_id
        assert prices(service_view(sb, user, market_id)) == [
            Decimal(p) / 100 for p in range(10, 20)
        ]
        assert_same(sb, user, q)


async def test_shift_keeps_what_matches(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(ladder(10))
        before = {row[0] for row in quoter_view(q)}
        report = await q.requote(ladder(12))  # two levels leave, two arrive
        assert (len(report.placed), len(report.cancelled), len(report.kept)) == (2, 2, 8)
        assert {o.limit_price for o in report.cancelled} == {Decimal("0.10"), Decimal("0.11")}
        assert {o.limit_price for o in report.placed} == {Decimal("0.20"), Decimal("0.21")}
        assert before & {row[0] for row in quoter_view(q)} == {o.id for o in report.kept}
        assert_same(sb, user, q)
        resized = ladder(12)
        resized[3] = Quote("BUY", resized[3].price, 25)  # same price, new size: replaced
        report = await q.requote(resized)
        assert (len(report.placed), len(report.cancelled), len(report.kept)) == (1, 1, 9)
        report = await q.requote(resized)  # nothing to do: nothing sent
        assert (len(report.placed), len(report.cancelled), len(report.kept)) == (0, 0, 10)
        assert orders_on(sb, user, market_id) == 13
        assert_same(sb, user, q)


async def test_partial_fills_seen_from_the_stream(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(ladder(10, levels=3))
        target = next(o for o in q.open_orders if o.limit_price == Decimal("0.11"))
        sb.house_fill(target.id, "7.5")
        await eventually(lambda: q.position == Decimal("7.5"))
        fill = q.fills[-1]
        assert (fill.order_id, fill.side, fill.price, fill.shares) == (
            target.id,
            "BUY",
            Decimal("0.11"),
            Decimal("7.5"),
        )
        now = {o.id: o for o in q.open_orders}[target.id]
        assert now.original_size is not None
        assert now.size_matched is not None
        assert now.original_size - now.size_matched == Decimal("12.5")
        assert_same(sb, user, q)
        # the partly filled level no longer has the wanted size: it is replaced
        report = await q.requote(ladder(10, levels=3))
        assert [o.id for o in report.cancelled] == [target.id]
        assert len(report.placed) == 1
        assert len(report.kept) == 2
        sb.house_fill(report.placed[0].id, "20")  # filled completely: gone from the view
        await eventually(lambda: q.position == Decimal("27.5"))
        assert report.placed[0].id not in {o.id for o in q.open_orders}
        assert_same(sb, user, q)


async def test_a_quote_that_crosses_fills_at_the_books_price(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    # a BUY above the best ask trades at the ask's price: the fill says so (it said
    # the quote's price, so cash counted from q.fills was wrong)
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        ask = q.book.best_ask
        assert ask is not None
        cash = sb.engine.balances(user.user_id).cash
        await q.requote([Quote("BUY", ask + Decimal("0.05"), 10)])
        await eventually(lambda: q.position == 10)
        assert [(f.price, f.shares) for f in q.fills] == [(ask, Decimal(10))]
        spent = cash - sb.engine.balances(user.user_id).cash
        assert spent == sum(f.price * f.shares for f in q.fills)
        await q.requote([])


async def test_fills_while_disconnected(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(ladder(10, levels=4))
        assert q.feed is not None
        listener = q.feed.handle
        q.feed.handle = lambda item: None  # type: ignore[method-assign] # deaf while we fill
        assert sb.drop_streams() == 1
        orders = sorted(q.open_orders, key=lambda o: o.limit_price or Decimal(0))
        sb.house_fill(orders[0].id, "20")  # completely
        sb.house_fill(orders[1].id, "4")  # partly
        assert q.position == 0
        q.feed.handle = listener  # type: ignore[method-assign]
        await q.reconcile()
        assert q.position == Decimal(24) == held(sb, user, q)
        assert len(q.open_orders) == 3
        assert_same(sb, user, q)
        await eventually(lambda: q.reconnects >= 1)


async def test_reconnect_marker_rereads_orders(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(ladder(10, levels=4))
        sb.drop_streams()
        sb.house_fill(q.open_orders[0].id, "20")  # while the stream is down
        await eventually(lambda: q.reconnects == 1 and q.position == Decimal(20))
        await eventually(lambda: quoter_view(q) == service_view(sb, user, market_id))
        assert_same(sb, user, q)


async def test_a_reconnect_during_the_last_ones_reread_reads_again(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    # a lone quoter re-read its orders once per reconnect, but a reconnect that came
    # while that re-read was running started none: the re-read's listing, taken before
    # the second gap, missed a fill made in it, and the quoter's position stayed wrong
    # (stale, until its next requote); seen as a state-machine failure under load
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(ladder(10, levels=4))
        # every listing read at once and answered 1.5 s later: the re-read in flight
        sb.faults.configure({"routes": {"GET /orders": {"latency_ms": 1500}}})
        sb.drop_streams()
        await every_turn(lambda: q.reconnects == 1)  # its re-read's listing is read
        await asyncio.sleep(0.2)
        sb.drop_streams()
        sb.house_fill(q.open_orders[0].id, "20")  # while the stream is down again
        await eventually(lambda: q.reconnects == 2)
        await eventually(lambda: q.position == Decimal(20), timeout=10.0)
        sb.faults.configure({})
        await eventually(lambda: quoter_view(q) == service_view(sb, user, market_id))
        assert_same(sb, user, q)


@pytest.mark.parametrize("heard", ["stream", "rest"])
async def test_unknown_outcome_places_and_cancels(
    sb: Any, user: Any, market_id: str, heard: str
) -> None:
    # no client retries: every fault reaches the quoter; every one lands after commit,
    # so a request that failed must be recognised (from the stream by the client_order_id
    # its record echoes, or over REST) and never sent again, on every exchange version
    transport = Counted(sb)
    async with (
        AsyncClient(**options(sb, user, max_retries=0)) as client,
        Quoter(client, market_id, "a", user_id=user.user_id) as q,
    ):
        if heard == "rest":  # deaf to the stream: only REST can resolve
            assert q.feed is not None
            q.feed.handle = lambda item: None  # type: ignore[method-assign]
        q.execution.resolver.attempts = 50  # no client retries: resolution itself fails often
        sb.faults.configure({"error_rate": 0.35, "after_commit": 1.0, "seed": 7})
        placed = cancelled = 0
        for first in (10, 14, 11, 30, 12):
            report = await q.requote(ladder(first))
            placed += len(report.placed)
            cancelled += len(report.cancelled)
            assert prices(quoter_view(q)) == [Decimal(first + k) / 100 for k in range(10)]
        sb.faults.configure(None)
        injected = sb.faults.injected
        assert injected["after_500"] > 0
        assert injected["after_drop"] > 0
        assert orders_on(sb, user, market_id) == placed  # nothing was placed twice
        assert transport.count("POST", "/api/ext/v1/orders/raw") == placed
        assert transport.count("DELETE", "/orders/:id") == cancelled
        assert_same(sb, user, q)


async def test_unknown_outcome_before_commit_is_sent_again(
    sb: Any, user: Any, market_id: str
) -> None:
    async with (
        AsyncClient(**options(sb, user, max_retries=0)) as client,
        Quoter(client, market_id, "a", user_id=user.user_id) as q,
    ):
        q.execution.resolver.attempts = 50
        sb.faults.configure({"error_rate": 0.35, "after_commit": 0.0, "seed": 1})
        for first in (10, 15, 12):
            await q.requote(ladder(first))
        sb.faults.configure(None)
        assert sb.faults.injected["before_500"] + sb.faults.injected["before_drop"] > 0
        assert prices(quoter_view(q)) == [Decimal(12 + k) / 100 for k in range(10)]
        assert_same(sb, user, q)


async def test_limits_refused_before_anything_is_sent(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(
        client,
        market_id,
        "a",
        user_id=user.user_id,
        max_open_orders=5,
        max_position=100,
        max_notional=20,
    ) as q:
        await q.requote(ladder(10, levels=2))
        created = orders_on(sb, user, market_id)
        cases = [
            (ladder(10, levels=6), "max_open_orders"),
            (ladder(40, levels=5, size=20), "max_notional"),  # 0.40..0.44 x 20 = 42 USDC
            (ladder(5, levels=5, size=30), "max_position"),  # 150 shares if all filled
            ([Quote("BUY", "0.10", 5)], "minimum"),  # 0.50 USDC < 1 USDC
            ([Quote("BUY", "0.10", 20), Quote("BUY", "0.1", 30)], "repeats"),
        ]
        for quotes, words in cases:
            with pytest.raises(QuoteRefused, match=words) as info:
                await q.requote(quotes)
            assert isinstance(info.value, ClobkitError)
        with pytest.raises(AmountError, match="price"):
            await q.requote([Quote("BUY", "0.105", 20)])
        with pytest.raises(AmountError):
            await q.requote([Quote("BUY", "1.00", 20)])
        assert orders_on(sb, user, market_id) == created  # nothing was sent
        assert prices(quoter_view(q)) == [Decimal("0.10"), Decimal("0.11")]
        assert_same(sb, user, q)


async def test_a_quote_the_service_refuses(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(ladder(10, levels=2))
        # selling shares the account does not hold: the service says insufficient balance
        with pytest.raises(InsufficientBalance):
            await q.requote([*ladder(10, levels=2), Quote("SELL", "0.90", 20)])
        assert prices(quoter_view(q)) == [Decimal("0.10"), Decimal("0.11")]
        assert q.pending == 0
        assert_same(sb, user, q)


async def test_cancel_on_exit(sb: Any, user: Any, client: AsyncClient, market_id: str) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await q.requote(ladder(10, levels=5))
        assert len(service_view(sb, user, market_id)) == 5
    assert service_view(sb, user, market_id) == []
    assert sb.engine.check_invariants() == []


async def test_kept_on_exit_and_adopted_on_enter(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", cancel_on_exit=False) as q:
        await q.requote(ladder(10, levels=5))
        first = quoter_view(q)
    assert service_view(sb, user, market_id) == first
    async with Quoter(client, market_id, "a") as q:  # user learnt from the orders
        assert quoter_view(q) == first
        report = await q.requote(ladder(10, levels=5))
        assert (len(report.placed), len(report.cancelled), len(report.kept)) == (0, 0, 5)
        await q.cancel_all()
        assert q.open_orders == []
        assert service_view(sb, user, market_id) == []


async def test_bad_arguments(client: AsyncClient, market_id: str) -> None:
    with pytest.raises(ClobkitError, match="outcome"):
        Quoter(client, market_id, "c")
    with pytest.raises(ClobkitError, match="max_open_orders"):
        Quoter(client, market_id, "a", max_open_orders=0)
    with pytest.raises(AmountError, match="max_notional"):
        Quoter(client, market_id, "a", max_notional="lots")


async def test_ids_of_every_version(
    sb: Any, user: Any, client: AsyncClient, market_id: str, version: int
) -> None:
    """V1 ids are precomputed; V2/V3 ids sign the service's timestamp and are learnt from
    the service. Either way each order is tracked by the client_order_id it was sent
    with, which its record echoes (``order_source_id``), and the ids in the view are
    the service's."""
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        assert q.exchange_version == version
        report = await q.requote(ladder(10, levels=4))
        records = {r.id: r for r in sb.engine.list_orders(user.user_id, page_size=100).items}
        for order in report.placed:
            record = records[order.id]
            assert order.clob_order_id == record.clob_order_id
            assert order.order_source_id == record.order_source_id
            tracked = q.execution.cache.by_key(record.order_source_id)
            assert tracked is not None
            assert tracked.order_id == order.id
        assert_same(sb, user, q)


async def test_records_without_the_clients_key(
    sb: Any, user: Any, client: AsyncClient, market_id: str, version: int
) -> None:
    """A service whose order records do not echo the client_order_id: a record that comes
    before its POST's answer is held, then claimed by the answer's order_id (never adopted
    as someone else's order, which the next requote would cancel)."""
    import msgspec

    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        feed, cache, gate = q.feed, q.execution.cache, q.execution.gate
        assert feed is not None
        heard = feed.handle
        stripped = 0

        def without_key(item: Any) -> None:
            nonlocal stripped
            order = getattr(item, "order", None)
            if order is not None and order.order_source_id is not None:
                stripped += 1
                item = msgspec.structs.replace(
                    item, order=msgspec.structs.replace(order, order_source_id=None)
                )
            heard(item)

        feed.handle = without_key  # type: ignore[method-assign]
        hold = cache.hold
        held = 0

        def holding(order: Order, owner: tuple[str, str]) -> None:
            nonlocal held
            held += 1
            hold(order, owner)

        cache.hold = holding  # type: ignore[method-assign,assignment]
        request = gate.request
        unclaimed = cache.outcome(q.owner).unclaimed

        async def answer_after_record(endpoint: str, call: Any, cost: int = 1) -> Any:
            """The POST's answer handed over only once its (stripped) record has come:
            the order this test is about, made certain rather than left to the load."""
            result = await request(endpoint, call, cost)
            if endpoint == "POST /orders" and version != 1:
                await eventually(lambda: result.order_id in unclaimed)
            return result

        gate.request = answer_after_record  # type: ignore[method-assign]
        for first in (10, 13, 11):
            report = await q.requote(ladder(first, levels=5))
            assert len(report.placed) + len(report.kept) == 5
            await eventually(lambda: quoter_view(q) == service_view(sb, user, market_id))
            assert_same(sb, user, q)
        assert stripped > 0
        # V1 records are still recognised by their precomputed clob_order_id
        assert (held > 0) == (version != 1)
        assert cache.outcome(q.owner).unclaimed == {}
        assert orders_on(sb, user, market_id) == 5 + 3 + 2  # nothing placed twice


async def test_the_first_stream_record_carries_the_clients_key(
    sb: Any, user: Any, client: AsyncClient, market_id: str, version: int
) -> None:
    """What lets the quoter recognise a V2/V3 order before its POST's answer: the
    order's first record on the stream (status pending) echoes the client_order_id
    as ``order_source_id``, on every exchange version."""
    from clobkit.client import orders_topic
    from clobkit.models import StreamMessage

    async with client.stream([orders_topic(user.user_id)]) as stream:
        placed = await client.place_raw_order(
            market_id, "a", "BUY", "0.05", 40, client_order_id=f"mm-key-v{version}"
        )
        async for item in stream:
            if isinstance(item, StreamMessage) and item.order is not None:
                break
        assert isinstance(item, StreamMessage)
        assert item.order is not None
        assert item.order.status == "pending"
        assert item.order.id == placed.order_id
        assert item.order.order_source_id == f"mm-key-v{version}"
        assert item.order.clob_order_id == placed.clob_order_id
        assert placed.clob_order_id_precomputed == (version == 1)
    await client.cancel_order(placed.order_id)


async def test_a_requote_past_its_limits_with_the_old_orders_cancels_first(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    # moving a BUY of 100 from 0.05 to 0.06 under max_position 100, max_notional 10:
    # sent together, both orders rested for the cancel's round trip (11 USDC, and 200
    # shares if a sweep filled both); the cancel must be done before the place is sent
    async with Quoter(
        client, market_id, "a", user_id=user.user_id, max_position=100, max_notional=10
    ) as q:
        await q.requote([Quote("BUY", Decimal("0.05"), 100)])
        posted = asyncio.Event()
        live_at_post: list[int] = []
        cancel, post = client.cancel_order, client.post_raw_order

        async def slow_cancel(order_id: str) -> Any:
            with contextlib.suppress(asyncio.TimeoutError):  # a place sent beside it comes
                await asyncio.wait_for(posted.wait(), 0.5)
            return await cancel(order_id)

        async def counting_post(prepared: Any) -> Any:
            live_at_post.append(len(service_view(sb, user, market_id)))
            posted.set()
            return await post(prepared)

        client.cancel_order = slow_cancel  # type: ignore[method-assign]
        client.post_raw_order = counting_post  # type: ignore[method-assign]
        try:
            await q.requote([Quote("BUY", Decimal("0.06"), 100)])
        finally:
            client.cancel_order, client.post_raw_order = cancel, post  # type: ignore[method-assign]
        assert live_at_post == [0]  # the old order was gone when the new one went out
        assert prices(service_view(sb, user, market_id)) == [Decimal("0.06")]


async def every_turn(check: Callable[[], bool], timeout: float = 5.0) -> None:
    """``eventually``, checking at every turn of the event loop: a state that lasts
    while any task awaits (a stream waiting out its backoff) is seen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            assert check(), "the condition did not become true in time"
        await asyncio.sleep(0)


async def test_the_book_is_stale_while_the_stream_is_down_and_until_a_fresh_book(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        assert not q.book.stale  # read on enter, kept current by the stream
        taken = q.book.received_at
        assert taken is not None
        seen: list[tuple[bool, int]] = []

        def fresh_again() -> bool:
            seen.append((q.book.stale, q.reconnects))
            return q.reconnects >= 1 and not q.book.stale

        assert sb.drop_streams() == 1
        await every_turn(fresh_again)
        assert (True, 0) in seen  # stale while the stream was down, before its marker
        # fresh again: a book taken after the reconnect (the resubscription's snapshot)
        assert q.book.received_at is not None
        assert q.book.received_at > taken
        age = q.book.age
        assert age is not None
        assert age < time.monotonic() - taken
    assert q.book.stale  # closed: nothing keeps it current


async def test_after_a_reconnect_marker_the_book_is_stale_until_the_next_book(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        await eventually(lambda: not q.book.stale)
        taken = q.book.received_at
        assert taken is not None
        assert q.feed is not None
        q.feed.lost(orders=True, book=True)  # as the stream's marker says: messages lost
        assert q.book.stale  # the stream is up, but book messages may have been missed
        await q.requote([Quote("BUY", Decimal("0.10"), 20)])  # the book changes: a message
        await eventually(lambda: not q.book.stale)
        assert q.book.received_at is not None
        assert q.book.received_at > taken
        await q.requote([])


@contextlib.asynccontextmanager
async def book_reads(sb: Any, user: Any, market_id: str) -> AsyncIterator[tuple[Quoter, Any]]:
    """An open quoter with a fresh book, and a count of its book's REST reads."""
    transport = Counted(sb)
    async with (
        AsyncClient(**options(sb, user)) as client,
        Quoter(client, market_id, "a", user_id=user.user_id) as q,
    ):
        await eventually(lambda: not q.book.stale)
        yield q, lambda: transport.count("GET", f"/api/ext/v1/orderbooks/{q.token_id}")


async def test_a_book_that_does_not_come_after_a_reconnect_is_read_over_rest(
    sb: Any, user: Any, market_id: str
) -> None:
    # the API text promises no snapshot on subscription: without one a quiet market's
    # book stayed stale until it next changed
    async with book_reads(sb, user, market_id) as (q, reads):
        taken, before = q.book.received_at, reads()
        assert taken is not None
        assert q.feed is not None
        q.feed.book_topic = "market:none:book"  # deaf to the topic: no snapshot, no house move
        q.feed.book_grace = 0.05
        q.feed.lost(orders=True, book=True)  # lost messages
        assert q.book.stale
        await eventually(lambda: not q.book.stale, timeout=30)
        assert reads() == before + 1
        assert q.book.received_at is not None
        assert q.book.received_at > taken


async def test_a_snapshot_after_a_reconnect_spares_the_rest_read(
    sb: Any, user: Any, market_id: str
) -> None:
    async with book_reads(sb, user, market_id) as (q, reads):
        before = reads()
        assert q.feed is not None
        q.feed.book_grace = 3.0  # the sandbox's snapshot comes well within it
        sb.drop_streams()
        await eventually(lambda: q.reconnects >= 1 and not q.book.stale, timeout=30)
        rebook = q.feed.rebooking
        assert rebook is not None
        await rebook
        assert reads() == before


async def test_the_books_age_grows_while_no_message_comes(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id) as q:
        # the REST read on enter, then the subscription's snapshot (the sandbox sends one)
        await eventually(lambda: q.book.updates >= 2)
        reads: list[tuple[float | None, float | None]] = []

        def grew_while_quiet() -> bool:
            reads.append((q.book.received_at, q.book.age))
            if len(reads) < 2:
                return False
            (taken, before), (now_taken, now) = reads[-2:]
            if now_taken != taken:  # a book came in between (the house moved): again
                return False
            assert before is not None
            assert now is not None
            assert now > before  # the same book, read later: older
            return True

        await eventually(grew_while_quiet)
        assert not q.book.stale  # old is not stale: the stream is up, nothing was lost
