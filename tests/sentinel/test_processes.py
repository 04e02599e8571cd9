"""Real processes, real signals: the sandbox, ``clobkit sentinel`` and a desk each in a
process of their own (``benchmarks/deadman.py``). The desk killed with SIGKILL, its
event loop blocked, its network cut: the sentinel cancels every order of the account
and nothing rests; without a sentinel its quotes expire on the sandbox's clock (an
orderly leave is told apart in tests/mm/test_lifeline.py and test_watch.py). No timing
is asserted (the benchmark measures it): only that nothing rests in the end, within a
generous bound."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from benchmarks import deadman

from .conftest import wait_until

pytestmark = pytest.mark.slow

MARKETS, LEVELS = 2, 2  # 2 markets x 2 outcomes x 2 levels: 8 orders
ORDERS = MARKETS * 2 * LEVELS


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with deadman.sandbox() as url:
        yield url


@pytest.fixture
def maker(base_url: str) -> Iterator[Any]:
    with deadman.maker(base_url) as client:
        yield client


@pytest.fixture
def watched(base_url: str, token: str) -> Iterator[tuple[str, deadman.Log]]:
    """A sentinel watching the maker (timeout 1 s): its URL and its log."""
    proc, url, log = deadman.sentinel(base_url, token, 1.0, linger=5.0)
    try:
        yield url, log
    finally:
        deadman.stop(proc)


@pytest.fixture
def desks() -> Iterator[list[subprocess.Popen[str]]]:
    """The desk processes a test starts, killed at its end."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def start(base_url: str, token: str, desks: list[Any], *extra: str) -> subprocess.Popen[str]:
    proc = deadman.desk(base_url, token, MARKETS, LEVELS, *extra)
    desks.append(proc)
    return proc


def flat(maker: Any) -> None:
    wait_until(lambda: deadman.resting(maker) == 0, timeout=60)


def test_a_killed_desk_leaves_nothing_resting(
    base_url: str, token: str, watched: Any, desks: Any, maker: Any
) -> None:
    url, log = watched
    desk = start(base_url, token, desks, "--sentinel", url)
    assert deadman.resting(maker) == ORDERS
    desk.send_signal(signal.SIGKILL)
    flat(maker)
    wait_until(lambda: f"cancelled {ORDERS} orders" in log.text())
    assert "no heartbeat from desk" in log.text()
    assert "while quoting" in log.text()


def test_a_desk_whose_loop_hangs_leaves_nothing_resting(
    base_url: str, token: str, watched: Any, desks: Any, maker: Any
) -> None:
    url, log = watched
    desk = start(base_url, token, desks, "--sentinel", url, "--hang-on-usr1")
    desk.send_signal(signal.SIGUSR1)  # its event loop blocked in time.sleep
    flat(maker)
    assert desk.poll() is None  # alive, but silent
    wait_until(lambda: "no heartbeat from desk" in log.text())


def test_a_desk_cut_off_the_network_leaves_nothing_resting(
    base_url: str, token: str, watched: Any, desks: Any, maker: Any
) -> None:
    url, log = watched
    service = deadman.Relay(deadman.port_of(base_url))
    to_sentinel = deadman.Relay(deadman.port_of(url))
    try:
        start(service.url, token, desks, "--sentinel", to_sentinel.url)
        assert deadman.resting(maker) == ORDERS
        service.cut()
        to_sentinel.cut()
        flat(maker)
        wait_until(lambda: "no heartbeat from desk" in log.text())
    finally:
        service.close()
        to_sentinel.close()


def test_without_a_sentinel_the_quotes_expire(
    base_url: str, token: str, desks: Any, maker: Any
) -> None:
    desk = start(base_url, token, desks, "--ttl", "4")
    rows = [o for o in maker.open_orders() if o.status == "live"]
    assert len(rows) == ORDERS
    assert {o.order_type for o in rows} == {"GTD"}
    desk.send_signal(signal.SIGKILL)
    flat(maker)  # expired on the sandbox's clock: nobody cancelled them


def test_the_dead_man_benchmark_runs_at_tiny_sizes() -> None:
    """benchmarks/bench_deadman.py end to end (--quick) for the parts the tests above do
    not drive (a kill, a hang, a cut and expiry are theirs): the renewal cost and
    cancel-all, every figure printed and nothing resting at the end."""
    parts = ["--only", "renewal", "--only", "cancel-all"]
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_deadman.py", "--quick", *parts],
        cwd=deadman.ROOT,
        env=deadman.child_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.count("requests per order per TTL") == 1
    assert out.count("resting at the end: 0") == 2
