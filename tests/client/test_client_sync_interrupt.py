"""Ctrl-C in a sync call that fans out over worker threads (``Client.prepare``): the
call returns at once, the workers' requests in flight end in the background, and the
caches hold whole answers or none.

Against the sandbox on loopback, its requests held by its latency fault
(``faults.latency_ms``) until the test releases them: no race against a clock.
Time bounds are hang guards only.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clobkit import Client
from clobkit.sandbox import serve_in_thread

from .conftest import client_options, full_scope_users

# these tests send themselves SIGINT
pytestmark = pytest.mark.usefixtures("default_ctrl_c")

GUARD = 30.0  # s: a hang guard, never a speed bound
HOLD = 60_000  # ms: held until the test releases it


def _eventually_true(check: Callable[[], bool], timeout: float = GUARD) -> bool:
    """Whether ``check()`` became true (a hang guard: ``timeout`` is never a speed bound)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def eventually(check: Callable[[], bool], timeout: float = GUARD) -> None:
    """Wait until ``check()`` is true (a hang guard only)."""
    assert _eventually_true(check, timeout), "the condition did not become true in time"


def _market(sb: Any) -> str:
    for market_id, state in sb.engine.markets.items():
        if state.active and sb.engine.orderbook(state.fx.token_id_a) is not None:
            return str(market_id)
    raise AssertionError("no market with a book")


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")]


@pytest.fixture
def sb() -> Iterator[Any]:
    with serve_in_thread() as sandbox:
        yield sandbox


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_ctrl_c_in_prepare_returns_while_its_requests_are_held(sb: Any) -> None:
    """KeyboardInterrupt while ``prepare``'s workers wait on held answers: it is
    raised before they are released; released, the answers in flight are cached
    whole, no further request goes out for the interrupted call, the workers end,
    and the client works on."""
    market = _market(sb)
    client = Client(**client_options(sb, full_scope_users(sb)[0], timeout=GUARD, max_retries=0))
    # KeyboardInterrupt reaches the main thread only: pytest runs tests there
    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident
    assert main is not None
    returned = threading.Event()

    def interrupt() -> None:
        # the wallet and the market requests, each on its own worker, held
        if not _eventually_true(lambda: sb.faults.held == 2):
            return
        signal.pthread_kill(main, signal.SIGINT)  # the main thread, waiting on its workers
        if not returned.wait(GUARD):
            sb.faults.release()  # the test fails below; it does not hang

    try:
        sb.faults.configure({"latency_ms": HOLD})
        helper = threading.Thread(target=interrupt, daemon=True)
        helper.start()
        with pytest.raises(KeyboardInterrupt):
            client.prepare([market])
        returned.set()
        held_at_return = sb.faults.held
        delayed = sb.faults.delayed
        helper.join(GUARD)
        assert held_at_return == 2  # returned while its requests were still held
        assert not client._core.fee_rates
        sb.faults.configure(None)
        assert sb.faults.release() == 2
        eventually(lambda: sb.faults.held == 0)
        eventually(lambda: not _workers())  # the workers end, having sent nothing more
        assert sb.faults.delayed == delayed == 2
        # the answers that were in flight are cached whole; nothing was fetched beyond
        assert client._core.hasher is not None
        assert market in client._core.markets
        assert not client._core.fee_rates
        client.prepare([market])  # the client works on, from its caches
        assert len(client._core.fee_rates) == 2
    finally:
        returned.set()
        sb.faults.configure(None)
        sb.faults.release()
        client.close()
