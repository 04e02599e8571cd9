"""``cancel_all_orders``, both clients, against the sandbox on loopback: every page of
the caller's open orders cancelled at once, failed and refused cancels and orders not
live yet taken again in the next round, until a listing shows nothing resting."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clobkit import errors
from clobkit.client import CancelAllResult

from ..mm.test_desk import two_sided
from .conftest import full_scope_users

OPEN = ("pending", "signing", "submitted", "live")
NO_LIMITS = {"rate_limit_per_minute": None, "risk": None}


@pytest.fixture
def fresh(serve: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """``fresh(**config)``: a sandbox of its own for a test, without rate or risk limits."""
    started: list[Any] = []

    def start(**config: Any) -> Any:
        context = serve({**NO_LIMITS, **config})
        sb = context.__enter__()
        started.append(context)
        return sb

    yield start
    for context in reversed(started):
        context.__exit__(None, None, None)


def resting(sb: Any, user: Any, market_id: str | None = None) -> list[Any]:
    rows = sb.engine.list_orders(user.user_id, page_size=100_000).items
    return [r for r in rows if r.status in OPEN and (market_id is None or r.market_id == market_id)]


def place(sb: Any, user: Any, market_id: str, n: int, outcome: str = "a") -> list[str]:
    """``n`` GTC BUYs resting far below the book (5 USDC each, over any market's
    minimum), placed in the engine: the setup sends no request."""
    body = {
        "market_id": market_id,
        "side": "BUY",
        "order_type": "GTC",
        "token_option": "yes" if outcome == "a" else "no",
        "limit_price": 0.05,
        "amount": 5,
    }
    return [sb.engine.place_order(user.user_id, body).order_id for _ in range(n)]


def test_every_page_cancelled_at_once(
    fresh: Callable[..., Any], make_api: Callable[..., Any], flavour: str
) -> None:
    sb = fresh()
    user = full_scope_users(sb)[0]
    api = make_api(sb, user, flavour)
    market = two_sided(sb, 1)[0]
    placed = place(sb, user, market, 130)  # two pages of the listing (100 a page)
    result = api.cancel_all_orders()
    assert isinstance(result, CancelAllResult)
    assert result.flat
    assert result.confirmed
    assert sorted(o.id for o in result.cancelled) == sorted(placed)
    assert result.gone == []
    assert result.remaining == []
    assert result.deletes == 130
    assert result.rounds == 2  # the cancels, then the listing that shows nothing left
    assert resting(sb, user) == []
    again = api.cancel_all_orders()  # nothing to do: one listing
    assert again.flat
    assert again.rounds == 1
    assert again.deletes == 0
    assert again.cancelled == []


def test_one_market_only(
    fresh: Callable[..., Any], make_api: Callable[..., Any], flavour: str
) -> None:
    sb = fresh()
    user = full_scope_users(sb)[0]
    api = make_api(sb, user, flavour)
    first, second = two_sided(sb, 2)
    place(sb, user, first, 3)
    kept = place(sb, user, second, 2, outcome="b")
    result = api.cancel_all_orders(first)
    assert result.flat
    assert len(result.cancelled) == 3
    assert resting(sb, user, first) == []
    assert sorted(r.id for r in resting(sb, user)) == sorted(kept)


def test_failed_cancels_are_sent_again_until_nothing_rests(
    fresh: Callable[..., Any], make_api: Callable[..., Any], flavour: str
) -> None:
    """Half the DELETEs fail (a 500 or a dropped connection), half of those after the
    cancel took effect: each round cancels what the listing still shows."""
    sb = fresh()
    user = full_scope_users(sb)[0]
    api = make_api(sb, user, flavour, max_retries=0)
    placed = place(sb, user, two_sided(sb, 1)[0], 40)
    failing = {"error_rate": 0.5, "after_commit": 0.5, "seed": 7}
    sb.faults.configure({"routes": {"DELETE /orders/{id}": failing}})
    result = api.cancel_all_orders()
    assert result.flat
    assert resting(sb, user) == []
    assert result.deletes > 40
    assert result.rounds > 2
    # every order is accounted for once: a cancel answered, or gone from the listing
    # (a cancel whose answer was lost after it took effect)
    accounted = [o.id for o in result.cancelled] + [o.id for o in result.gone]
    assert sorted(accounted) == sorted(placed)
    assert result.gone  # with this seed some cancels took effect and lost their answer


def test_an_order_cancelled_elsewhere_meanwhile_is_gone(
    fresh: Callable[..., Any], make_api: Callable[..., Any]
) -> None:
    """A DELETE held by the service before it takes effect while someone else cancels
    the order: refused (not live), and the next listing shows it gone."""
    sb = fresh()
    user = full_scope_users(sb)[0]
    api = make_api(sb, user, "sync")
    first, other = place(sb, user, two_sided(sb, 1)[0], 2)
    held = {"latency_ms": 60_000, "latency_at": "before", "latency_share": 1.0}
    sb.faults.configure({"routes": {"DELETE /orders/{id}": held}})
    done: list[CancelAllResult] = []
    worker = threading.Thread(target=lambda: done.append(api.cancel_all_orders()))
    worker.start()
    try:
        while sb.faults.held < 2:
            threading.Event().wait(0.005)
        sb.engine.cancel_order(user.user_id, first)  # cancelled elsewhere meanwhile
        sb.faults.configure(None)
    finally:
        sb.faults.release()
        worker.join(30)
    (result,) = done
    assert result.flat
    assert [o.id for o in result.gone] == [first]
    assert [o.id for o in result.cancelled] == [other]


def test_orders_not_live_yet_are_cancelled_once_live(
    fresh: Callable[..., Any], make_api: Callable[..., Any], flavour: str
) -> None:
    """The service cancels only live orders: those still pending, signing or submitted
    are waited for (no DELETE sent to be refused), then cancelled."""
    sb = fresh(processing_delay_ms=100)
    user = full_scope_users(sb)[0]
    api = make_api(sb, user, flavour)
    placed = place(sb, user, two_sided(sb, 1)[0], 5)
    assert {r.status for r in resting(sb, user)} - {"live"}  # some still processing
    result = api.cancel_all_orders()
    assert result.flat
    assert sorted(o.id for o in result.cancelled) == sorted(placed)
    assert result.deletes == 5  # one each, once live
    assert resting(sb, user) == []


def test_gives_up_at_its_timeout_and_says_what_rests(
    fresh: Callable[..., Any], make_api: Callable[..., Any], flavour: str
) -> None:
    sb = fresh()
    user = full_scope_users(sb)[0]
    api = make_api(sb, user, flavour, max_retries=0)
    placed = place(sb, user, two_sided(sb, 1)[0], 3)
    sb.faults.configure({"routes": {"DELETE /orders/{id}": {"error_rate": 1.0}}})
    result = api.cancel_all_orders(timeout=0.3)
    assert not result.flat
    assert result.confirmed
    assert sorted(o.id for o in result.remaining) == sorted(placed)
    assert result.cancelled == []
    assert result.deletes >= 3
    assert len(resting(sb, user)) == 3


@pytest.mark.parametrize(
    ("arguments", "field"),
    [(("",), "market_id"), ((7,), "market_id"), ((None, 0), "timeout")],
)
def test_bad_arguments_refused_before_any_request(
    sandbox: Any, make_api: Callable[..., Any], flavour: str, arguments: Any, field: str
) -> None:
    api = make_api(sandbox, full_scope_users(sandbox)[0], flavour)
    market_id, *rest = arguments
    with pytest.raises(errors.ValidationError) as caught:
        api.cancel_all_orders(market_id, **({"timeout": rest[0]} if rest else {}))
    assert caught.value.field == field
