"""The sandbox's latency on purpose (``faults.latency_ms``): slow answers, held before
or after the request takes effect, seeded, and released on demand. Against a running
sandbox, with the real client; never timed: a held request is held until released."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from clobkit.errors import TimeoutError as ClobkitTimeoutError
from clobkit.errors import TransportError
from clobkit.sandbox import SandboxConfig, serve_in_thread
from clobkit.sandbox.config import ConfigError
from clobkit.sandbox.faults import FaultConfig, Faults

from .test_faults import _client, _market, _orders

GUARD = 30.0  # s: a hang guard only
HOLD = 60_000  # ms: held until the test releases it


def eventually(check: Callable[[], bool], timeout: float = GUARD) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        time.sleep(0.005)


def test_latency_config_is_read() -> None:
    config = SandboxConfig.from_dict(
        {"faults": {"latency_ms": [50, 400], "latency_share": 0.5, "latency_at": "both"}}
    )
    assert config.faults == FaultConfig(latency_ms=(50, 400), latency_share=0.5, latency_at="both")
    assert config.faults is not None
    assert config.faults.to_dict()["latency_ms"] == [50, 400]
    assert FaultConfig.from_dict(config.faults.to_dict()) == config.faults
    assert FaultConfig(latency_ms=200).latency_at == "after"  # the unknown-outcome case
    assert not FaultConfig().slow
    assert not FaultConfig(latency_ms=5, latency_share=0).slow


@pytest.mark.parametrize(
    ("faults", "words"),
    [
        ({"latency_ms": -1}, r"faults.latency_ms must be integer milliseconds .*got -1"),
        ({"latency_ms": 60_001}, r"faults.latency_ms must be .*got 60001"),
        ({"latency_ms": 2.5}, r"faults.latency_ms must be .*got 2.5"),
        ({"latency_ms": True}, r"faults.latency_ms must be .*got True"),
        ({"latency_ms": "200"}, r"faults.latency_ms must be .*got '200'"),
        ({"latency_ms": [5]}, r"faults.latency_ms must be .*got \[5\]"),
        ({"latency_ms": [1, 2, 3]}, r"faults.latency_ms must be .*got \[1, 2, 3\]"),
        ({"latency_ms": [400, 50]}, r"faults.latency_ms range must have low <= high"),
        ({"latency_ms": [5, None]}, r"faults.latency_ms must be .*got \[5, None\]"),
        ({"latency_share": 1.5}, "faults.latency_share must lie in"),
        ({"latency_share": "all"}, "faults.latency_share must be a number"),
        ({"latency_at": "during"}, r"faults.latency_at must be .*got 'during'"),
        ({"latency": 5}, "unknown faults keys"),
    ],
)
def test_bad_latency_config(faults: Any, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        SandboxConfig.from_dict({"faults": faults})
    with serve_in_thread() as sb, pytest.raises(ConfigError, match=words):
        sb.faults.configure(faults)  # switching at run time checks the same


def test_delays_are_seeded_and_drawn_only_with_latency() -> None:
    def draws(**config: Any) -> list[Any]:
        faults = Faults(FaultConfig(**config))
        return [(faults.draw(), faults.delays()) for _ in range(40)]

    ranged = {"latency_ms": [10, 90], "latency_share": 0.5, "error_rate": 0.3, "seed": 7}
    first = draws(**ranged)
    assert first == draws(**ranged)
    assert first != draws(**{**ranged, "seed": 8})
    delays = [d for _, d in first]
    assert (0.0, 0.0) in delays
    assert any(0.01 <= after <= 0.09 for _, after in delays)
    assert all(before == 0 for before, _ in delays)  # "after" by default
    # without latency the failures drawn are those of a config that never had it
    plain = draws(error_rate=0.3, seed=7)
    assert [f for f, _ in plain] == [f for f, _ in draws(error_rate=0.3, seed=7, latency_ms=0)]
    assert all(d == (0.0, 0.0) for _, d in plain)
    both = draws(latency_ms=[10, 20], latency_at="both")
    assert all(0.01 <= b <= 0.02 and 0.01 <= a <= 0.02 for _, (b, a) in both)


def test_latency_after_commit_is_an_unknown_outcome() -> None:
    """Held after the order took effect: the client's own timeout raises the
    TransportError carrying the order, which rests on the service all the same."""
    with serve_in_thread() as sb, _client(sb, timeout=1.0) as client:
        market = _market(sb)
        client.prepare([market])
        sb.faults.configure({"latency_ms": HOLD})
        with pytest.raises(ClobkitTimeoutError) as info:
            client.place_raw_order(market, "a", "BUY", "0.05", 40)
        assert isinstance(info.value, TransportError)
        assert info.value.order is not None
        assert sb.faults.held == 1
        assert sb.faults.delayed == 1
        records = sb.engine.list_orders(sb.users[1].user_id).items
        assert [r.order_source_id for r in records] == [info.value.order.client_order_id]
        assert sb.faults.release() == 1
        eventually(lambda: sb.faults.held == 0)
        sb.faults.configure(None)
        assert client.resolve_raw_order(info.value.order) is not None
        assert _orders(sb) == 1


def test_latency_before_commit_takes_effect_when_it_ends() -> None:
    """Held before it takes effect: nothing is placed while held, and the request still
    takes effect once released (a queued request at a slow service)."""
    with serve_in_thread() as sb, _client(sb, timeout=1.0) as client:
        market = _market(sb)
        client.prepare([market])
        sb.faults.configure({"latency_ms": HOLD, "latency_at": "before"})
        with pytest.raises(ClobkitTimeoutError):
            client.place_raw_order(market, "a", "BUY", "0.05", 40)
        assert sb.faults.held == 1
        assert _orders(sb) == 0
        sb.faults.configure(None)  # later requests are not slow; the held one stays held
        client.get_wallet(refresh=True)
        assert sb.faults.held == 1
        assert _orders(sb) == 0
        sb.faults.release()
        eventually(lambda: _orders(sb) == 1)


def test_latency_share_and_fee_rate() -> None:
    """Only a share of the signed requests is slowed; the count says how many."""
    config = {"faults": {"latency_ms": [0, 2], "latency_share": 0.5, "seed": 3}}
    with serve_in_thread(config) as sb, _client(sb) as client:
        for _ in range(30):
            client.get_wallet(refresh=True)
        assert 0 < sb.faults.delayed < 30
        assert sum(sb.faults.injected.values()) == 0


def test_stopping_the_sandbox_answers_a_held_request() -> None:
    """A request held (60 s) when the sandbox stops gets its answer: the shutdown ended
    the delay. Before, uvicorn's grace period ran out and the answer was lost."""
    import threading

    from clobkit.sandbox import Sandbox

    sb = Sandbox(SandboxConfig.from_dict({"faults": {"latency_ms": HOLD}})).start()
    answers: list[object] = []

    def read() -> None:
        with _client(sb, timeout=GUARD) as client:
            try:
                answers.append(client.get_wallet())
            except TransportError as exc:
                answers.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        eventually(lambda: sb.faults.held == 1)
    finally:
        sb.stop()
        reader.join(GUARD)
    assert len(answers) == 1
    assert not isinstance(answers[0], Exception), answers[0]


def test_held_requests_are_released_by_endpoint_and_oldest_first() -> None:
    """``release(route, count)`` lands held requests one by one: the oldest of one
    endpoint's, leaving the others held (a test can order what lands when);
    ``held_on`` counts one endpoint's; an endpoint that does not exist is refused."""
    held = {"latency_ms": HOLD, "latency_at": "before"}
    config = {"routes": {"POST /orders/raw": held, "GET /wallet": held}}
    with serve_in_thread() as sb, _client(sb, timeout=0.3) as client:
        market = _market(sb)
        client.prepare([market])
        sb.faults.configure(config)
        for price in ("0.05", "0.06", "0.07"):
            with pytest.raises(ClobkitTimeoutError):
                client.place_raw_order(market, "a", "BUY", price, 40)
        with pytest.raises(ClobkitTimeoutError):
            client.get_wallet(refresh=True)
        assert (sb.faults.held, sb.faults.held_on("POST /orders/raw")) == (4, 3)
        assert sb.faults.held_on("GET /wallet") == 1
        user = sb.users[1].user_id

        def prices() -> list[str]:
            return sorted(str(r.clob_price) for r in sb.engine.list_orders(user).items)

        assert sb.faults.release("POST /orders/raw", 1) == 1
        eventually(lambda: prices() == ["0.05"])
        assert sb.faults.release("POST /orders/raw", 1) == 1  # not the one released
        eventually(lambda: prices() == ["0.05", "0.06"])
        assert sb.faults.held_on("POST /orders/raw") == 1
        assert sb.faults.held_on("GET /wallet") == 1
        assert sb.faults.release("POST /orders/raw") == 1
        eventually(lambda: prices() == ["0.05", "0.06", "0.07"])
        eventually(lambda: sb.faults.held_on("POST /orders/raw") == 0)
        assert sb.faults.held == 1  # the other endpoint's stays held
        with pytest.raises(ConfigError, match="no endpoint is named 'POST /nowhere'"):
            sb.faults.release("POST /nowhere")
        with pytest.raises(ConfigError, match="no endpoint is named 'x'"):
            sb.faults.held_on("x")
        assert sb.faults.release() == 1
        eventually(lambda: sb.faults.held == 0)
