"""The recorder's streams against the sandbox: book topics spread over WebSockets under
a cap, a reconnect re-reading only its own books, a refused topic never silent.

Before, one stream carried every book topic: past the sandbox's 1,000 topics on a
connection the rest were refused, and the recorder dropped the refusals unread, so
those books were recorded only in the REST snapshots, without a word.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from clobkit.record import BOOK, SNAPSHOT, Recorder, iter_rows, resolve_markets

from .conftest import (
    client,
    config,
    move_prices,
    moving_markets,
    record_while,
    sandbox_module,
)
from .test_round_trip import until


async def test_the_topics_are_spread_over_streams_and_each_recorded(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        markets = moving_markets(sb, 2)

        async def during() -> None:
            for market in markets:
                await move_prices(sb, market, 3)

        recorder = await record_while(sb, tmp_path, markets, during, topics_per_stream=3)
    assert [len(s.topics) for s in recorder.streams] == [3, 1]
    assert recorder.stream is recorder.streams[0]
    booked = {r.token_id for r in iter_rows(tmp_path) if r.kind == BOOK}
    for stream in recorder.streams:  # each stream's books came
        assert booked & {t.split(":")[1] for t in stream.topics}
    assert recorder.refused == {}
    assert recorder.stats.refused == 0


async def test_a_reconnect_reads_again_only_its_own_books(tmp_path: Path) -> None:
    with sandbox_module.serve_in_thread(config()) as sb:
        markets = moving_markets(sb, 2)
        async with client(sb) as c:
            found = await resolve_markets(c, market_ids=markets)
            recorder = Recorder(c, tmp_path, found, topics_per_stream=2)
            task = asyncio.create_task(recorder.run())
            await until(lambda: (tmp_path / "markets.json").exists() or task.done())
            assert recorder.stats.snapshots == 4  # every book, at the start
            await asyncio.to_thread(sb.drop_streams)
            await until(lambda: recorder.stats.gaps == 2 or task.done())  # one a stream
            # each stream's two books read again: not all four after each reconnect
            await until(lambda: recorder.stats.snapshots >= 8 or task.done())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert recorder.stats.snapshots == 8
    assert sum(1 for r in iter_rows(tmp_path) if r.kind == SNAPSHOT) == 8


async def test_a_refused_topic_is_counted_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "clobkit.record")
    with sandbox_module.serve_in_thread(config()) as sb:
        (market,) = moving_markets(sb, 1)
        async with client(sb) as c:
            (found,) = await resolve_markets(c, market_ids=[market])
            # a token the service does not know: its topic is refused
            odd = found._replace(token_id_b="123456789")
            recorder = Recorder(c, tmp_path, [odd])
            task = asyncio.create_task(recorder.run())
            await until(lambda: recorder.stats.refused == 1 or task.done())
            await move_prices(sb, market, 2)
            await until(lambda: recorder.stats.updates >= 1 or task.done())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert recorder.refused == {"market:123456789:book": "unknown token"}
    assert "refused 1 topics" in recorder.stats.line()
    assert any("market:123456789:book" in r.getMessage() for r in caplog.records)
    kinds = {r.kind for r in iter_rows(tmp_path) if r.token_id == "123456789"}
    assert kinds == {SNAPSHOT}  # its (empty) book only as read over REST
    assert BOOK in {r.kind for r in iter_rows(tmp_path) if r.token_id == found.token_id_a}


async def test_a_league_names_only_its_markets_with_a_book() -> None:
    """``--league nba`` took the league's futures markets, which have no book: the
    recording held them empty and the backtest died reading their books."""
    with sandbox_module.serve_in_thread(config()) as sb:
        engine = sb.engine
        nba = [m for m in engine.markets.values() if m.event.league.id == "nba" and m.active]
        bookless = {m.id for m in nba if not m.has_book()}
        assert bookless  # the fixtures' futures
        async with client(sb) as c:
            by_league = await resolve_markets(c, leagues=["nba"])
            by_event = await resolve_markets(c, event_ids=[engine.markets[min(bookless)].event.id])
        assert {m.market_id for m in by_league} == {m.id for m in nba if m.has_book()}
        assert min(bookless) in {m.market_id for m in by_event}  # named by event: kept
