"""The reads a desk's quoters share on open, counted on the wire against the sandbox.

Before, both outcomes of a market each read the market and prepared its fee rates,
racing (up to twice the requests, each charged to the budget), and a quoter entered
on its own left the desk's shared reads behind for later quoters: they opened with
the positions read before it, fills since unseen.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from clobkit import AsyncClient
from clobkit.mm import Desk

from .conftest import Counted, held, options
from .test_desk import two_sided


def sent(transport: Counted, ending: str, starting: str = "") -> int:
    return sum(
        n
        for (method, path), n in transport.sent.items()
        if method == "GET" and path.startswith(starting) and path.endswith(ending)
    )


async def test_both_outcomes_of_a_market_read_it_once(sb: Any, user: Any) -> None:
    markets = two_sided(sb, 3)
    transport = Counted(sb)
    async with (
        AsyncClient(**options(sb, user)) as client,
        Desk(client, user_id=user.user_id) as desk,
    ):
        quoters = [desk.quoter(m, o) for m in markets for o in ("a", "b")]
        await desk.open()
        assert sent(transport, "", "/api/ext/v1/markets/") == len(markets)
        assert sent(transport, "/fee-rate") == 2 * len(markets)  # each token once
        assert {q.fee_rate_bps for q in quoters} <= {0, 200}
        assert all(q.market is not None and q.token_id for q in quoters)
        requests = {(r["endpoint"], r["count"]) for r in desk.metrics()["requests"]}
        assert ("GET /markets/:id", len(markets)) in requests
        assert ("prepare", len(markets)) in requests
        # the fee rate each quoter takes was cached by its market's prepare: no request,
        # so none charged to the budget nor counted
        assert not [r for r in desk.metrics()["requests"] if r["endpoint"] == "GET /fee-rate"]


async def test_a_quoter_opened_later_reads_the_positions_anew(
    sb: Any, user: Any, client: AsyncClient
) -> None:
    first, second = two_sided(sb, 2)
    async with Desk(client, user_id=user.user_id) as desk:
        alone = desk.quoter(first, "a")
        await alone.__aenter__()  # entered on its own, outside desk.open()
        # a BUY over the house's asks: filled at once, a position the desk never saw
        placed = await client.place_raw_order(second, "a", "BUY", Decimal("0.95"), 10)
        await client.wait_for_order(placed.order_id, "matched", timeout=10)
        later = desk.quoter(second, "a")
        await desk.open()
        assert later.position > 0
        assert later.position == held(sb, user, later)
        await alone.__aexit__(None, None, None)
