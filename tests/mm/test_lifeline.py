"""A desk's heartbeats to the sentinel (``Desk(..., sentinel=URL)``): sent from its event
loop, saying quoting, halted (its kill switch told at once) and left; a desk the
sentinel does not accept refuses to start; a desk whose heartbeats go unacknowledged
past the sentinel's timeout halts itself (the sentinel is cancelling everything)."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.core.spec import ENV_SENTINEL_TOKEN
from clobkit.errors import TransportError, ValidationError
from clobkit.mm import Desk, Quote
from clobkit.sentinel import HALTED, LEFT, QUOTING

from ..conftest import import_extra
from .conftest import eventually, options, service_view

import_extra("starlette", "sentinel")

from clobkit.sentinel.listener import listener_app  # noqa: E402

from ..sentinel.conftest import TOKEN, Heard, serve  # noqa: E402

pytestmark = pytest.mark.parametrize("version", [1], ids=["V1"], indirect=True)


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SENTINEL_TOKEN, TOKEN)


def heard_states(heard: Heard) -> list[tuple[str, str | None]]:
    states: list[tuple[str, str | None]] = []
    for beat in heard.beats:
        if not states or states[-1] != (beat.state, beat.reason):
            states.append((beat.state, beat.reason))
    return states


async def test_the_desk_says_what_it_does(client: AsyncClient, user: Any, market_id: str) -> None:
    heard = Heard()
    # a long timeout: a busy machine's pauses never make the desk think itself unheard
    with serve(listener_app(TOKEN.encode(), heard, 30.0)) as url:
        desk = Desk(client, user_id=user.user_id, sentinel=url)
        desk.name = "desk-under-test"
        async with desk:
            assert heard.beats[0].state == QUOTING  # heard before anything was quoted
            assert heard.beats[0].desk == "desk-under-test"
            q = desk.quoter(market_id, "a")
            await desk.requote({q: [Quote("BUY", Decimal("0.05"), 100)]})
            await eventually(lambda: any(b.open_orders == 1 for b in heard.beats))
            await desk.halt("a test halt")
            await eventually(lambda: heard.beats[-1].state == HALTED)  # told at once
            desk.resume()
            await eventually(lambda: heard.beats[-1].state == QUOTING)
            metrics = desk.metrics()["sentinel"]
            assert metrics["timeout"] == 30.0
            assert 3 <= metrics["acknowledged"] <= len(heard.beats)  # the first, halt, resume
            assert metrics["failed"] == 0
        assert heard_states(heard) == [
            (QUOTING, None),
            (HALTED, "a test halt"),
            (QUOTING, None),
            (LEFT, "left, nothing resting"),
        ]
        assert len({b.session for b in heard.beats}) == 1
        seqs = [b.seq for b in heard.beats]
        assert seqs == sorted(seqs)


async def test_a_desk_the_sentinel_refuses_does_not_start(
    sb: Any, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard = Heard()
    with serve(listener_app(b"the-sentinel-s-own-token-32-char", heard, 1.0)) as url:
        async with AsyncClient(**options(sb, user)) as client:
            with pytest.raises(TransportError, match="did not accept a heartbeat"):
                async with Desk(client, user_id=user.user_id, sentinel=url):
                    raise AssertionError("entered without a sentinel")
    assert heard.beats == []
    monkeypatch.delenv(ENV_SENTINEL_TOKEN)
    async with AsyncClient(**options(sb, user)) as client:
        with pytest.raises(ValidationError) as caught:
            Desk(client, sentinel=url)
        assert caught.value.field == "token"
        monkeypatch.setenv(ENV_SENTINEL_TOKEN, TOKEN)
        with pytest.raises(ValidationError) as caught:
            Desk(client, sentinel="ftp://host")
        assert caught.value.field == "sentinel"


async def test_a_desk_the_sentinel_no_longer_hears_halts_itself(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    heard = Heard()
    with serve(listener_app(TOKEN.encode(), heard, 1.0)) as url:
        desk = Desk(client, user_id=user.user_id, sentinel=url)
        await desk.__aenter__()
    try:  # the listener is gone: no heartbeat is acknowledged any more
        q = desk.quoter(market_id, "a")
        await desk.requote({q: [Quote("BUY", Decimal("0.05"), 100)]})
        await eventually(lambda: desk.halted is not None, timeout=30)
        assert desk.halted is not None
        assert "the sentinel did not acknowledge a heartbeat" in desk.halted
        await eventually(lambda: not service_view(sb, user, q.market_id), timeout=30)
        assert desk.metrics()["sentinel"]["failed"] > 0
    finally:
        await desk.__aexit__(None, None, None)


async def test_the_heartbeats_come_from_the_desks_event_loop(
    client: AsyncClient, user: Any
) -> None:
    """A loop blocked by a long call sends nothing meanwhile: a silence the sentinel
    sees, and the desk halts itself when its loop runs again."""
    heard = Heard()
    with serve(listener_app(TOKEN.encode(), heard, 0.5)) as url:
        async with Desk(client, user_id=user.user_id, sentinel=url) as desk:
            await eventually(lambda: len(heard.beats) >= 3)
            before = len(heard.beats)
            time.sleep(1.0)  # the loop blocked: twice the sentinel's timeout
            assert len(heard.beats) == before
            await eventually(lambda: desk.halted is not None)
            assert desk.halted is not None
            assert "did not acknowledge" in desk.halted
