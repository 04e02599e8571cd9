"""A desk's streams against the real sandbox: topics spread over WebSockets under a
cap, a refused topic never silent, a closed quoter forgotten.

Before, one WebSocket carried every topic: past the sandbox's 1,000 topics a
connection, the service refused the rest, and the desk dropped the refusals
unread, so those quoters priced from the book read at open, which looked current
forever. A quoter closed on its own stayed on the desk (its market refused a new
quoter, its topic subscribed again after every reconnect), and an order topic
refused (a wrong ``user_id``) left fills unheard while quoting went on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.client import orders_topic
from clobkit.errors import QuoteRefused
from clobkit.mm import Desk, Quote, Quoter
from clobkit.models import Reconnected

from .conftest import MAKER, config, eventually, options, sandbox_module
from .test_desk import two_sided

BID = [Quote("BUY", Decimal("0.10"), 20)]


@pytest.fixture
def capped(version: int) -> Iterator[Any]:
    """A sandbox whose connections take at most 3 topics."""
    with sandbox_module.serve_in_thread(config(version, limits={"ws_max_topics": 3})) as sb:
        yield sb


def two_a_stream(client: AsyncClient, user: Any) -> Desk:
    """A desk whose streams carry at most two topics each."""
    desk = Desk(client, user_id=user.user_id)
    desk.topics_per_stream = 2
    return desk


def carried(desk: Desk) -> list[list[str]]:
    return [stream.topics for stream in desk.streams]


async def test_the_topics_are_spread_over_streams_under_the_cap(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 2)
    async with two_a_stream(client, user) as desk:
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.open()
        topics = carried(desk)
        assert len(topics) == 3  # the order topic and four book topics, two a stream
        assert all(len(t) <= 2 for t in topics)
        assert sorted(t for ts in topics for t in ts) == sorted(
            [orders_topic(user.user_id), *(q.book_topic for q in quoters)]
        )
        for q in quoters:
            assert q.book.feed is not None
            assert q.book_topic in q.book.feed.topics
        await eventually(lambda: not any(q.book.stale for q in quoters))
        updates = {q: q.book.updates for q in quoters}
        reports = await desk.requote(dict.fromkeys(quoters, BID))
        assert all(len(r.placed) == 1 for r in reports.values())
        # every book heard its new bid; every order's record heard on the order topic
        await eventually(lambda: all(q.book.updates > updates[q] for q in quoters))
        assert desk.refused == {}
        assert desk.metrics()["frames"] == sum(s.frames for s in desk.streams)


async def test_a_refused_book_topic_makes_its_book_stale_and_is_logged(
    capped: Any, caplog: pytest.LogCaptureFixture
) -> None:
    user = capped.users[MAKER]
    markets = two_sided(capped, 2)
    caplog.set_level(logging.WARNING, "clobkit.mm")
    async with (
        AsyncClient(**options(capped, user)) as client,
        Desk(client, user_id=user.user_id) as desk,
    ):
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.open()  # the order topic and two books fit; two books do not
        await eventually(lambda: len(desk.refused) == 2)
        refused = [q for q in quoters if q.book.refused is not None]
        assert sorted(desk.refused) == sorted(q.book_topic for q in refused)
        for q in refused:
            assert q.book.refused == "at most 3 topics per connection"
            assert q.book.stale  # the stream is up, but nothing keeps this book current
        await eventually(lambda: not any(q.book.stale for q in quoters if q not in refused))
        snap = desk.metrics()
        assert snap["refused"] == desk.refused
        assert snap["deaf"] is None
        words = [r.getMessage() for r in caplog.records]
        for q in refused:
            assert f"the service refused the topic {q.book_topic}" in " ".join(words)
        assert desk.deaf is None
        q = refused[0]  # a reconnect subscribes anew: refused again, said again
        feed = q.book.feed
        assert feed is not None
        capped.drop_streams()
        # the stream forgets a refusal as it subscribes again (test_stream_topics), so
        # one seen after the reconnect is the service's new answer
        await eventually(lambda: feed.reconnects >= 1 and q.book.refused is not None)
        assert q.book.stale
        assert q.book_topic in desk.refused
        said = f"the service refused the topic {q.book_topic}"
        await eventually(lambda: " ".join(r.getMessage() for r in caplog.records).count(said) == 2)


async def test_under_the_services_cap_no_topic_is_refused(capped: Any) -> None:
    user = capped.users[MAKER]
    markets = two_sided(capped, 2)
    async with (
        AsyncClient(**options(capped, user)) as client,
        Desk(client, user_id=user.user_id) as desk,
    ):
        desk.topics_per_stream = 3
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.open()
        await eventually(lambda: not any(q.book.stale for q in quoters))
        assert desk.refused == {}
        assert len(desk.streams) == 2


async def test_a_refused_order_topic_refuses_new_quotes_but_not_cancels(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (market,) = two_sided(sb, 1)
    other = next(u for u in sb.users if u.user_id != user.user_id)
    async with Desk(client, user_id=other.user_id) as desk:  # a wrong user id
        q = desk.quoter(market, "a")
        await desk.open()
        await eventually(lambda: desk.deaf is not None)
        with pytest.raises(QuoteRefused) as refused:
            await desk.requote({q: BID})
        assert refused.value.field == "orders topic"
        assert refused.value.value == orders_topic(other.user_id)
        assert "fills would go unheard" in str(refused.value)
        with pytest.raises(QuoteRefused):
            await q.requote(BID)
        assert desk.metrics()["deaf"] == desk.deaf
        assert (await desk.requote({q: []}))[q].placed == []  # cancelling is allowed
        assert await client.open_orders() == []  # nothing was sent


async def test_a_standalone_quoter_with_a_wrong_user_refuses_to_quote(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (market,) = two_sided(sb, 1)
    other = next(u for u in sb.users if u.user_id != user.user_id)
    async with Quoter(client, market, "a", user_id=other.user_id) as q:
        await eventually(lambda: q.deaf is not None)
        with pytest.raises(QuoteRefused) as refused:
            await q.requote(BID)
        assert refused.value.value == orders_topic(other.user_id)
        assert q.feed is not None
        stream = q.feed.stream
        assert stream is not None
        sb.drop_streams()  # subscribed again: refused again (the stream forgets the first)
        await eventually(lambda: stream.reconnects >= 1 and q.deaf is not None)
        with pytest.raises(QuoteRefused):
            await q.requote(BID)


async def test_a_quoter_closed_on_its_own_is_forgotten_by_the_desk(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    (market,) = two_sided(sb, 1)
    async with Desk(client, user_id=user.user_id) as desk:
        qa, qb = desk.quoter(market, "a"), desk.quoter(market, "b")
        await desk.requote({qa: BID, qb: BID})
        topic = qa.book_topic
        await qa.__aexit__(None, None, None)  # its order cancelled, its topic dropped
        assert desk.quoters == [qb]
        assert all(topic not in t for t in carried(desk))
        assert qa.resting() == []
        with pytest.raises(QuoteRefused, match="is closed"):
            await qa.requote(BID)
        with pytest.raises(QuoteRefused, match="is closed"):
            await desk.requote({qa: BID})
        assert list(desk.metrics()["markets"]) == [qb.market_id]
        again = desk.quoter(market, "a")  # the market is free for a new quoter
        report = await desk.requote({again: BID})
        assert len(report[again].placed) == 1
        assert any(topic in t for t in carried(desk))
        await eventually(lambda: not again.book.stale)


async def test_a_reconnect_of_a_book_stream_touches_only_its_books(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    markets = two_sided(sb, 2)
    async with two_a_stream(client, user) as desk:
        quoters = [desk.quoter(m, "a") for m in markets]
        await desk.open()
        await eventually(lambda: not any(q.book.stale for q in quoters))
        first, second = quoters
        desk.router.route(Reconnected(topics=[first.book_topic], attempt=1))
        assert first.book.missed
        assert not second.book.missed
        assert not any(q.stale for q in quoters)  # order updates were not lost
        assert (first.reconnects, second.reconnects) == (1, 0)
        desk.router.route(Reconnected(topics=[orders_topic(user.user_id)], attempt=1))
        assert (first.reconnects, second.reconnects) == (2, 1)  # everyone re-reads


async def test_a_dropped_topic_frees_its_place_on_its_stream(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    first, second, third = two_sided(sb, 3)
    async with two_a_stream(client, user) as desk:
        qa, qb = desk.quoter(first, "a"), desk.quoter(second, "a")
        await desk.open(qa)  # one at a time: opened together, either may come first
        await desk.open(qb)
        assert carried(desk) == [[orders_topic(user.user_id), qa.book_topic], [qb.book_topic]]
        await qa.__aexit__(None, None, None)
        qc = desk.quoter(third, "a")
        await desk.open()
        # the first stream took it: no third stream for three topics
        assert carried(desk) == [
            [orders_topic(user.user_id), qc.book_topic],
            [qb.book_topic],
        ]
        await eventually(lambda: not qc.book.stale)
