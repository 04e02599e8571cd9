"""A raw order whose outcome is unknown, on V1, V2 and V3 wallets, in both clients.

The sandbox fails requests on purpose (``faults``), before or after they took
effect. ``place_raw_order`` then raises an error carrying the order as sent
(``error.order``), and ``resolve_raw_order`` settles it: the order as the
service holds it (the first send's when it landed), or ``None`` when the
service refuses it and so holds none under its ``client_order_id``. Never a
second order under one key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clobkit.errors import ApiError, RateLimited, ServerError, TransportError, ValidationError
from clobkit.models import Order, RawOrderResult

from .conftest import full_scope_users
from .helpers import market_with_book, resting_buy_price

UNKNOWN = (TransportError, ServerError, RateLimited)
VERSIONS = [pytest.param(v, id=f"V{v}") for v in (1, 2, 3)]


def by_key(sb: Any, user: Any) -> dict[str, list[Any]]:
    """The engine's orders of ``user`` by the client_order_id their record carries."""
    out: dict[str, list[Any]] = {}
    for record in sb.engine.list_orders(user.user_id, page_size=10_000).items:
        if record.order_source_id is not None:
            out.setdefault(record.order_source_id, []).append(record)
    return out


def attempt(call: Callable[..., Any], *args: Any) -> tuple[Any, RawOrderResult | None]:
    """``(call(*args), None)``, or ``(None, error.order)`` when the outcome is unknown."""
    try:
        return call(*args), None
    except UNKNOWN as exc:
        return None, exc.order


def resolved(api: Any, order: RawOrderResult) -> Order | None:
    """``resolve_raw_order`` until the outcome is known (faults may hit it too)."""
    for _ in range(50):
        found, again = attempt(api.resolve_raw_order, order)
        if again is None:
            return found  # type: ignore[no-any-return]
        assert again.client_order_id == order.client_order_id
        order = again
    raise AssertionError("the outcome stayed unknown")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_unknown_outcome_resolves_to_one_order(
    serve: Callable[..., Any], make_api: Any, flavour: str, version: int
) -> None:
    config = {"exchange_version": version, "rate_limit_per_minute": None, "risk": None}
    with serve(config=config) as sb:
        user = full_scope_users(sb)[0]
        api = make_api(sb, user, flavour, max_retries=0)
        market = market_with_book(api, "nba")
        price = resting_buy_price(api.get_orderbook(market.token_id_a))
        api.prepare([market.id])
        sb.faults.configure({"error_rate": 0.3, "after_commit": 0.5, "seed": 27})
        orders: dict[str, tuple[str, str]] = {}  # client_order_id -> (order_id, clob_order_id)
        unknown = 0
        for _ in range(40):
            result, sent = attempt(api.place_raw_order, market.id, "a", "BUY", price, 20)
            if sent is None:
                assert result.clob_order_id.startswith("0x")
                orders[result.client_order_id] = (result.order_id, result.clob_order_id)
                continue
            unknown += 1
            assert sent.client_order_id
            assert (sent.market_id, sent.outcome) == (market.id, "a")
            assert sent.maker_amount > 0
            # precomputed on V1: the id to look for is in the error; never guessed on V2/V3
            assert sent.clob_order_id_precomputed == (version == 1)
            assert sent.clob_order_id.startswith("0x") == (version == 1)
            found = resolved(api, sent)
            assert found is not None
            assert found.order_source_id == sent.client_order_id
            if version == 1:
                assert found.clob_order_id == sent.clob_order_id
            orders[sent.client_order_id] = (found.id, found.clob_order_id or "")
        sb.faults.configure(None)
        injected = sb.faults.injected
        assert unknown > 0
        assert injected["after_500"] + injected["after_drop"] > 0
        assert injected["before_500"] + injected["before_drop"] > 0
        # exactly one order per key, each the one the client was given
        held = by_key(sb, user)
        assert sorted(held) == sorted(orders)
        for key, (order_id, clob_order_id) in orders.items():
            assert [(r.id, r.clob_order_id) for r in held[key]] == [(order_id, clob_order_id)]
        # waiting and cancelling work by the ids returned
        for order_id, clob_order_id in orders.values():
            live = api.wait_for_order(order_id, "live", timeout=5)
            assert live.clob_order_id == clob_order_id
            api.cancel_order(order_id)
            assert api.get_order(order_id).status == "cancelled"
        assert sb.engine.check_invariants() == []


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("after_commit", [False, True])
def test_never_placed_is_the_services_refusal(
    serve: Callable[..., Any], make_api: Any, version: int, after_commit: bool
) -> None:
    """The order's market closes before it is resolved: a send that never landed is
    refused now, and once no copy can land any more (``landing_time``, waited out)
    that refusal is final (``None``: never placed); one that landed is answered with
    its order, since the service checks the key before the order itself."""
    with serve(config={"exchange_version": version}) as sb:
        user = full_scope_users(sb)[0]
        api = make_api(sb, user, "sync", max_retries=0, landing_time=0.2)
        market = market_with_book(api, "nba")
        price = resting_buy_price(api.get_orderbook(market.token_id_a))
        api.prepare([market.id])
        sb.faults.configure({"error_rate": 1.0, "after_commit": float(after_commit), "seed": 1})
        with pytest.raises(UNKNOWN) as info:
            api.place_raw_order(market.id, "a", "BUY", price, 20)
        sb.faults.configure(None)
        assert isinstance(info.value, (TransportError, ApiError))
        sent = info.value.order
        assert sent is not None
        sb.settle(market.id, "b")  # the market closes: the order cannot be placed now
        found = api.resolve_raw_order(sent, wait=True)
        held = by_key(sb, user).get(sent.client_order_id, [])
        if after_commit:
            assert found is not None
            assert found.order_source_id == sent.client_order_id
            assert [r.id for r in held] == [found.id]
            assert found.status in ("cancelled", "lost")  # the settlement ended it
        else:
            assert found is None
            assert held == []
        assert sb.engine.check_invariants() == []


def test_resolve_needs_a_raw_order(sandbox: Any, make_api: Any) -> None:
    api = make_api(sandbox, full_scope_users(sandbox)[0], "sync")
    with pytest.raises(ValidationError, match="order"):
        api.resolve_raw_order("0x12")
    with pytest.raises(ValidationError, match="market_id"):
        api.resolve_raw_order(
            RawOrderResult(
                order_id="",
                clob_order_id="",
                client_order_id="k",
                token_id="1",
                side=0,
                maker_amount=1,
                taker_amount=2,
                salt=1,
                fee_rate_bps=0,
            )
        )
