"""Unknown stays unknown until it is known: a copy of a raw order still queued at a
slow service may land after a later copy was refused for a reason that depends on the
service's state (here: balance). Through the real clients and sandbox, on V1, V2 and
V3 wallets.

The sandbox holds the first copy before it takes effect (``latency_at: "before"``, as
a request queued at a slow service); the client gives up on it and sends the same body
again under the same ``client_order_id``, which the service refuses at once: a resting
order of the same user reserves the balance. Then that order is cancelled and the held
copy lands. Before, ``place_raw_order`` raised ``InsufficientBalance`` (no ``order``)
and ``resolve_raw_order`` answered ``None`` ("never placed") for an order that rested a
moment later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest

from clobkit import errors
from clobkit.errors import InsufficientBalance, OutcomeUnknown, ServerError, TransportError
from clobkit.models import RawOrderResult

from .conftest import full_scope_users
from .helpers import market_with_book, resting_buy_price
from .test_client_unknown_outcome import by_key

VERSIONS = [pytest.param(v, id=f"V{v}") for v in (1, 2, 3)]
HELD = {"latency_ms": 60_000, "latency_at": "before", "seed": 1}  # released by the test
SIZE = 20


class Setup:
    """A sandbox whose user has all but ``spare`` orders' cost (half of one by default)
    reserved by a resting BUY."""

    def __init__(self, sb: Any, api: Any, spare: Decimal = Decimal("0.5")) -> None:
        self.sb, self.api = sb, api
        self.user = full_scope_users(sb)[0]
        self.market = market_with_book(api, "nba")
        self.price = resting_buy_price(api.get_orderbook(self.market.token_id_a))
        api.prepare([self.market.id])
        balances = sb.engine.balances(self.user.user_id)
        free = balances.cash - balances.cash_reserved
        cost = self.price * SIZE
        shares = ((free - cost * spare) / self.price).quantize(Decimal("0.01"), ROUND_DOWN)
        self.hog = api.place_raw_order(self.market.id, "a", "BUY", self.price, shares)

    def free_the_balance(self) -> None:
        self.api.cancel_order(self.hog.order_id)

    def held_until(self, count: int) -> None:
        deadline = time.monotonic() + 10
        while self.sb.faults.held < count:
            assert time.monotonic() < deadline, "the first copy was never held"
            time.sleep(0.005)

    def orders_under(self, key: str) -> list[Any]:
        return by_key(self.sb, self.user).get(key, [])

    def rests(self, key: str) -> bool:
        return [r.status for r in self.orders_under(key)] == ["live"]


@contextmanager
def in_thread(call: Callable[[], Any]) -> Iterator[list[BaseException | Any]]:
    """Run ``call`` in a thread while the block runs; its result or error in the list."""
    out: list[BaseException | Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # handed to the test
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield out
    finally:
        thread.join(30)


def eventually(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        time.sleep(0.01)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_retry_refused_for_balance_while_a_copy_is_queued_is_unknown(
    serve: Callable[..., Any], make_api: Any, flavour: str, version: int
) -> None:
    config = {"exchange_version": version, "rate_limit_per_minute": None, "risk": None}
    with serve(config=config) as sb:
        api = make_api(sb, full_scope_users(sb)[0], flavour, timeout=0.5, max_retries=1)
        s = Setup(sb, api)
        sb.faults.configure(HELD)
        with in_thread(lambda: api.place_raw_order(s.market.id, "a", "BUY", s.price, SIZE)) as out:
            s.held_until(1)
            sb.faults.configure(None)  # the retry goes straight through, and is refused
        (error,) = out
        assert isinstance(error, OutcomeUnknown), error
        assert isinstance(error.refusal, InsufficientBalance)
        sent = error.order
        assert isinstance(sent, RawOrderResult)
        assert sent.sent_at > 0
        assert error.settles_at == pytest.approx(sent.sent_at + 60.0)
        s.free_the_balance()
        sb.faults.release()  # the queued copy lands now
        eventually(lambda: s.rests(sent.client_order_id))
        found = api.resolve_raw_order(sent)
        assert found is not None
        assert [r.id for r in s.orders_under(sent.client_order_id)] == [found.id]
        assert sb.engine.check_invariants() == []


@pytest.mark.parametrize("version", VERSIONS)
def test_resolve_never_says_never_placed_while_a_copy_is_queued(
    serve: Callable[..., Any], make_api: Any, flavour: str, version: int
) -> None:
    config = {"exchange_version": version, "rate_limit_per_minute": None, "risk": None}
    with serve(config=config) as sb:
        api = make_api(sb, full_scope_users(sb)[0], flavour, timeout=0.5, max_retries=0)
        s = Setup(sb, api)
        sb.faults.configure(HELD)
        with in_thread(lambda: api.place_raw_order(s.market.id, "a", "BUY", s.price, SIZE)) as out:
            s.held_until(1)
        (error,) = out
        assert isinstance(error, errors.TimeoutError), error
        sent = error.order
        assert sent is not None
        sb.faults.configure(None)
        with pytest.raises(OutcomeUnknown) as info:  # the resend is refused for balance
            api.resolve_raw_order(sent)
        assert isinstance(info.value.refusal, InsufficientBalance)
        assert info.value.order is not None
        assert info.value.order.client_order_id == sent.client_order_id
        assert s.orders_under(sent.client_order_id) == []
        s.free_the_balance()
        sb.faults.release()
        eventually(lambda: s.rests(sent.client_order_id))
        found = api.resolve_raw_order(info.value.order)
        assert found is not None
        assert found.order_source_id == sent.client_order_id
        assert len(s.orders_under(sent.client_order_id)) == 1
        assert sb.engine.check_invariants() == []


@pytest.mark.parametrize("version", VERSIONS)
def test_waiting_out_the_landing_time_proves_never_placed(
    serve: Callable[..., Any], make_api: Any, version: int
) -> None:
    """A copy lost before it took effect, then refused for balance: ``wait=True``
    sleeps until no copy can land any more and asks again, so ``None`` is proven."""
    config = {"exchange_version": version, "rate_limit_per_minute": None, "risk": None}
    with serve(config=config) as sb:
        api = make_api(sb, full_scope_users(sb)[0], "sync", max_retries=0, landing_time=0.5)
        s = Setup(sb, api)
        sb.faults.configure({"error_rate": 1.0, "after_commit": 0.0, "seed": 1})
        with pytest.raises((TransportError, ServerError)) as info:
            api.place_raw_order(s.market.id, "a", "BUY", s.price, SIZE)
        sb.faults.configure(None)
        assert isinstance(info.value, (TransportError, ServerError))
        sent = info.value.order
        assert sent is not None
        with pytest.raises(OutcomeUnknown):
            api.resolve_raw_order(sent)  # within the landing time: still unknown
        assert api.resolve_raw_order(sent, wait=True) is None
        assert s.orders_under(sent.client_order_id) == []


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_hostile_latency_never_calls_an_order_that_rests_refused(
    serve: Callable[..., Any], make_api: Any, version: int
) -> None:
    """Copies held before they take effect longer than the client waits, a third of
    the answers failing (half after commit), and a balance that runs out and is freed
    again: whatever the caller is told, an order told refused or never placed never
    rests later, and no key holds two orders."""
    config = {"exchange_version": version, "rate_limit_per_minute": None, "risk": None}
    with serve(config=config) as sb:
        user = full_scope_users(sb)[0]
        api = make_api(sb, user, "sync", timeout=0.3, max_retries=2, landing_time=2.0)
        s = Setup(sb, api, spare=Decimal(3))  # room for three orders at a time
        sb.faults.configure(
            {
                "error_rate": 0.3,
                "after_commit": 0.5,
                "latency_ms": [100, 600],
                "latency_share": 0.3,
                "latency_at": "before",
                "seed": 11,
            }
        )
        told: dict[str, str] = {}
        for n in range(40):
            if n % 5 == 4:  # balance freed: a queued copy may land now
                for row in sb.engine.list_orders(s.user.user_id, page_size=1000).items:
                    if row.status == "live" and row.id != s.hog.order_id:
                        sb.engine.cancel_order(s.user.user_id, row.id)
            told.update(_placed_or_not(api, s))
        sb.faults.configure(None)
        sb.faults.release()
        time.sleep(2.5)  # past the landing time: every copy that could land has
        for key, what in told.items():
            held = s.orders_under(key)
            assert len(held) <= 1, key
            if what in ("refused", "never placed"):
                assert held == [], (key, what)
        assert sb.engine.check_invariants() == []
        assert set(told.values()) >= {"placed", "refused"}


def _placed_or_not(api: Any, s: Setup) -> dict[str, str]:
    """Place one order; what the caller was told of it, by its client_order_id."""
    try:
        result = api.place_raw_order(s.market.id, "a", "BUY", s.price, SIZE)
    except errors.ApiError as exc:
        if isinstance(exc, (ServerError, errors.RateLimited)) and exc.order is not None:
            return {exc.order.client_order_id: _resolved(api, exc.order)}
        return {f"refused-{id(exc)}": "refused"}  # refused with no copy unknown
    except (TransportError, OutcomeUnknown) as exc:
        sent = exc.order
    else:
        return {result.client_order_id: "placed"}
    if sent is None:
        raise AssertionError("an unknown outcome without its order")
    return {sent.client_order_id: _resolved(api, sent)}


def _resolved(api: Any, order: RawOrderResult) -> str:
    try:
        found = api.resolve_raw_order(order, wait=True)
    except (TransportError, ServerError, errors.RateLimited, OutcomeUnknown):
        return "unknown"
    return "never placed" if found is None else "placed"
