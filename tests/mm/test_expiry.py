"""Quotes that expire on their own (``order_ttl``): every quote a GTD order whose
expiration lies ``order_ttl`` s ahead, renewed before it expires while the quoter
lives (the old one left to expire, or cancelled), cancelled first when the limits
have no room for both; a service's minimum expiry honoured; orders of unknown
expiration replaced."""

from __future__ import annotations

import asyncio
import math
import time
from decimal import Decimal
from typing import Any

import pytest

from clobkit import AsyncClient
from clobkit.errors import ExpirationRefused, ValidationError
from clobkit.mm import Desk, Expiry, Quote, Quoter

from .conftest import config, eventually, options, sandbox_module

OPEN = ("pending", "signing", "submitted", "live")
LADDER = [Quote("BUY", Decimal("0.05"), 100), Quote("BUY", Decimal("0.06"), 100)]

V1 = pytest.mark.parametrize("version", [1], ids=["V1"], indirect=True)


def open_rows(sb: Any, user: Any, market_id: str) -> list[Any]:
    rows = sb.engine.list_orders(user.user_id, page_size=10_000).items
    return [r for r in rows if r.market_id == market_id and r.status in OPEN]


async def samples(sb: Any, user: Any, market_id: str, seconds: float) -> list[list[Decimal]]:
    """The prices of the orders resting, sampled every 20 ms for ``seconds``."""
    seen = []
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        seen.append(sorted(r.clob_price for r in open_rows(sb, user, market_id)))
        await asyncio.sleep(0.02)
    return seen


@V1
async def test_quotes_are_gtd_orders_expiring_order_ttl_ahead(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Quoter(client, market_id, "a", user_id=user.user_id, order_ttl=30) as q:
        before = time.time()
        await q.requote(LADDER)
        rows = open_rows(sb, user, market_id)
        assert len(rows) == 2
        for row in rows:
            assert row.order_type == "GTD"
            assert math.ceil(before + 30) <= row.expiration <= math.ceil(time.time() + 30)
        assert all(o.order_type == "GTD" for o in q.open_orders)
        await q.requote(LADDER)  # the same ladder: kept, nothing sent
        assert len(open_rows(sb, user, market_id)) == 2
    assert open_rows(sb, user, market_id) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("version", "renewal"),
    [(1, "expire"), (2, "cancel")],  # each policy once, each wallet version once
    ids=["expire-V1", "cancel-V2"],
    indirect=["version"],
)
async def test_renewal_keeps_the_ladder_on_the_book(
    sb: Any, user: Any, client: AsyncClient, market_id: str, renewal: str
) -> None:
    """Renewed before they expire: every wanted level rests at every sample while the
    quoter lives, and a renewed order is left to expire (or cancelled)."""
    ttl = Expiry(3, renew_before=1.2, renewal=renewal)
    async with Quoter(client, market_id, "a", user_id=user.user_id, order_ttl=ttl) as q:
        await q.requote(LADDER)
        first = {r.id for r in open_rows(sb, user, market_id)}
        # past the first orders' expiry (whole seconds: 4 s at most): each renewed once
        seen = await samples(sb, user, market_id, 4.5)
        assert all(set(s) == {Decimal("0.05"), Decimal("0.06")} for s in seen)
        metrics = q.execution.renewer.metrics() if q.execution.renewer else {}
        assert metrics["renewals"] >= 2
        assert metrics["lapses"] == 0
        assert metrics["failures"] == 0
        assert metrics["requests"] == metrics["renewals"] * (1 if renewal == "expire" else 2)
        now = {r.id for r in open_rows(sb, user, market_id)}
        assert not now & first  # the first orders are gone: expired or cancelled
        rows = sb.engine.list_orders(user.user_id, page_size=10_000).items
        ended = [r for r in rows if r.id in first]
        assert {r.status for r in ended} == {"cancelled"}
        assert len(open_rows(sb, user, market_id)) <= 4  # an old one and its successor at most
    assert open_rows(sb, user, market_id) == []
    assert sb.engine.check_invariants() == []


@pytest.mark.slow
@V1
async def test_without_room_for_both_the_old_order_is_cancelled_first(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    """``max_open_orders`` 2 with two levels: a successor beside its old order would
    make three, so renewal cancels first; the limit holds at every sample."""
    ttl = Expiry(3, renew_before=1.2)
    async with Quoter(
        client, market_id, "a", user_id=user.user_id, max_open_orders=2, order_ttl=ttl
    ) as q:
        await q.requote(LADDER)
        seen = await samples(sb, user, market_id, 4.5)
        assert all(len(s) <= 2 for s in seen)
        assert seen[-1] == [Decimal("0.05"), Decimal("0.06")]
        metrics = q.execution.renewer.metrics() if q.execution.renewer else {}
        assert metrics["fallbacks"] >= 2
        assert metrics["renewals"] >= 2
        assert metrics["requests"] == 2 * metrics["renewals"]


@V1
async def test_an_order_of_unknown_expiration_is_replaced(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    """A GTC order at a wanted level (placed before, adopted on enter) would rest for
    good: a quoter whose quotes expire replaces it with a GTD one."""
    placed = await client.place_raw_order(market_id, "a", "BUY", "0.05", 100)
    async with Quoter(client, market_id, "a", user_id=user.user_id, order_ttl=30) as q:
        assert [o.id for o in q.open_orders] == [placed.order_id]
        report = await q.requote(LADDER[:1])
        assert [o.id for o in report.cancelled] == [placed.order_id]
        rows = open_rows(sb, user, market_id)
        assert [r.order_type for r in rows] == ["GTD"]


async def test_a_service_minimum_expiry_is_named_and_honoured() -> None:
    with sandbox_module.serve_in_thread(config(1, min_expiration_seconds=60)) as strict:
        market = next(
            str(m) for m, s in strict.engine.markets.items() if s.active and s.mid is not None
        )
        async with AsyncClient(**options(strict, strict.users[1])) as c:
            async with Quoter(c, market, "a", order_ttl=10) as q:
                with pytest.raises(ExpirationRefused) as caught:
                    await q.requote(LADDER[:1])
                assert caught.value.minimum == 60
                assert "at least 60 s ahead" in str(caught.value)
            ttl = Expiry(61, min_expiration=60)
            async with Quoter(c, market, "a", order_ttl=ttl) as q:
                report = await q.requote(LADDER[:1])
                assert len(report.placed) == 1


@V1
@pytest.mark.parametrize(
    ("given", "field"),
    [
        (0, "order_ttl"),
        (-1, "order_ttl"),
        (float("nan"), "order_ttl"),
        ("30", "order_ttl"),
        (Expiry(10, renew_before=6), "renew_before"),
        (Expiry(10, renewal="never"), "renewal"),
        (Expiry(10, min_expiration=-1), "min_expiration"),
        (Expiry(10, min_expiration=60), "order_ttl"),
    ],
)
async def test_bad_expiry_options_are_refused(
    sb: Any, user: Any, given: object, field: str
) -> None:
    async with AsyncClient(**options(sb, user)) as c:
        with pytest.raises(ValidationError) as caught:
            Quoter(c, "m", "a", order_ttl=given)  # type: ignore[arg-type]
        assert caught.value.field == field
        with pytest.raises(ValidationError) as caught:
            Desk(c, order_ttl=given)  # type: ignore[arg-type]
        assert caught.value.field == field


@V1
async def test_a_desks_quoter_takes_the_desks_expiry(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    async with Desk(client, user_id=user.user_id, order_ttl=30) as desk:
        with pytest.raises(ValidationError, match="is the desk's"):
            desk.quoter(market_id, "a", order_ttl=5)
        q = desk.quoter(market_id, "a")
        await desk.requote({q: LADDER})
        assert {r.order_type for r in open_rows(sb, user, market_id)} == {"GTD"}
        renewal = desk.metrics()["renewal"]
        assert renewal["order_ttl"] == 30.0
        assert renewal["renewal"] == "expire"
        assert renewal["renewals"] == 0  # none due yet
    async with Desk(client, user_id=user.user_id) as desk:
        assert desk.metrics()["renewal"] is None
        assert desk.metrics()["sentinel"] is None


@pytest.mark.slow
@V1
async def test_a_halted_desk_renews_nothing(
    sb: Any, user: Any, client: AsyncClient, market_id: str
) -> None:
    ttl = Expiry(3, renew_before=1.2)
    async with Desk(client, user_id=user.user_id, order_ttl=ttl) as desk:
        q = desk.quoter(market_id, "a")
        await desk.requote({q: LADDER})
        await desk.halt("test")
        await eventually(lambda: open_rows(sb, user, market_id) == [])
        await asyncio.sleep(3.5)  # past the orders' expiry: no successor went out
        assert open_rows(sb, user, market_id) == []
        assert desk.metrics()["renewal"]["renewals"] == 0
