"""Shared signers across threads, and the native hashing pool after a burst."""

from __future__ import annotations

import os
import sys
import threading
import time
from types import ModuleType
from typing import Any

import pytest

from .test_twins import WALLET, Text


def test_threads_sharing_a_signer_sign_their_own_requests(core: ModuleType) -> None:
    # lower-case methods and str-subclass paths take the slow (Python) path of
    # validation, where another thread can run between the method's check and
    # the path's: a cache of the last ones on the signer was overwritten there
    signer = core.RequestSigner("key", "secret")
    failures: list[str] = []
    start = threading.Barrier(2)

    def work(method: str, base: str) -> None:
        start.wait()
        for round_ in range(150):
            batch = [(method, Text(f"{base}?n={round_}&i={i}")) for i in range(40)]
            for (m, path), headers in zip(batch, signer.headers_many(batch), strict=True):
                expected = core.signature(
                    "secret", m, path, headers["X-API-TIMESTAMP"], headers["X-API-NONCE"], b""
                )
                if headers["X-API-SIGNATURE"] != expected:
                    failures.append(f"{m} {path}")
                    return

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [
            threading.Thread(target=work, args=("get", "/api/ext/v1/a")),
            threading.Thread(target=work, args=("delete", "/api/ext/v1/b")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    assert failures == []


def _native_threads() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line")  # pragma: no cover


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_a_burst_of_threads_does_not_stay(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    before = _native_threads()
    n = 20_000
    ids = hasher.order_ids(
        token_ids=1,
        maker_amounts=range(1, n + 1),
        taker_amounts=2,
        sides=0,
        salts=3,
        threads=1000,
    )
    assert len(ids) == n
    assert ids[7] == hasher.order_id(token_id=1, maker_amount=8, taker_amount=2, side=0, salt=3)
    # the pool is bounded, and idle helpers leave within seconds
    from clobkit.core.parse import MAX_THREADS as limit

    assert _native_threads() <= before + limit
    deadline = time.monotonic() + 30
    while _native_threads() > before + 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _native_threads() <= before + 1


def test_threads_are_capped_not_overflowed(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    one = hasher.order_ids(token_ids=1, maker_amounts=[1, 2], taker_amounts=3, sides=0, salts=4)
    for threads in (2**31, 2**63, 10**40):
        got: Any = hasher.order_ids(
            token_ids=1, maker_amounts=[1, 2], taker_amounts=3, sides=0, salts=4, threads=threads
        )
        assert got == one


HUGE = 10**5000  # past Python's 4,300-digit limit for int <-> str
PADDED = "0" * 5000 + "1"  # the value 1 behind 5,000 zeros


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.to_units(HUGE), "value"),
        (lambda c: c.from_units(HUGE), "units"),
        (lambda c: c.limit_amounts("BUY", "0.5", HUGE), "size"),
        (lambda c: c.market_amounts("SELL", HUGE, "1"), "price"),
        (lambda c: c.market_price([("0.5", "10")], "BUY", HUGE), "amount"),
        (lambda c: c.market_price([("0.5", HUGE)], "BUY", "1"), "levels[0].size"),
        (lambda c: c.OrderHasher(WALLET).order_id(**_order(salt=HUGE)), "salt"),
        (lambda c: c.OrderHasher(WALLET).order_id(**_order(token_id="9" * 5000)), "token_id"),
        (lambda c: c.OrderHasher(WALLET | {"chain_id": "9" * 5000}), "wallet.chain_id"),
        (lambda c: c.signature("s", "GET", "/x", HUGE, "n", b""), "timestamp"),
        (lambda c: c.new_salts(HUGE), "n"),
        (lambda c: c.append_column(b"a\n", b"x", HUGE), "width"),
        (lambda c: c.market_price(9, "BUY", "1"), "levels"),  # found by tests/fuzz
        (lambda c: c.keccak256("abc"), "data"),
        (lambda c: c.sha256_hex(5), "data"),
    ],
)
def test_huge_numbers_are_refused_naming_the_field(core: ModuleType, call: Any, field: str) -> None:
    from clobkit.errors import ClobkitError

    with pytest.raises(ClobkitError) as info:
        call(core)
    assert str(info.value).startswith(f"{field}: ")


def test_zero_padded_numbers_are_their_value(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    assert hasher.order_id(**_order(salt=PADDED, token_id="0" * 6000 + "7")) == hasher.order_id(
        **_order(salt=1, token_id=7)
    )
    assert core.from_units(PADDED) == core.from_units(1)
    assert core.from_units("-" + PADDED) == core.from_units(-1)
    assert core.limit_amounts("BUY", "0.5", PADDED) == core.limit_amounts("BUY", "0.5", "1")


def _order(**fields: Any) -> dict[str, Any]:
    order: dict[str, Any] = {
        "token_id": 1,
        "maker_amount": 2,
        "taker_amount": 3,
        "side": "BUY",
        "salt": 4,
        "fee_rate_bps": 0,
        "nonce": 0,
        "expiration": 0,
    }
    return order | fields
