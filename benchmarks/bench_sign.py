"""Order-signing benchmarks: OrderSigner against the ECDSA floor and the peers.

E (the floor) is one bare libsecp256k1 signature through coincurve's own
wrapper, ``PrivateKey.sign_recoverable(digest, hasher=None)``. Peers:
eth-account's ``unsafe_sign_hash`` and py-clob-client-v2's
``ExchangeOrderBuilderV2.build_signed_order`` (builds, hashes and signs a V2 order).

Run: python -m pytest benchmarks/bench_sign.py  (prints the ratio table at the end)
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from clobkit import OrderSigner

KEY = "0x" + "42" * 32
DIGEST = bytes.fromhex("5f0c6a8e3b1d4c629d1e2b7f4a9c8e11" * 2)
ORDER_ID = "0x" + DIGEST.hex()
BATCH = 2_000  # orders per sign_many call (about 40 ms of ECDSA)
V2_CTF = "0xE111180000d2663C0091e4f400237545B87B996B"


@pytest.fixture(scope="module")
def order_ids() -> list[str]:
    return ["0x" + os.urandom(32).hex() for _ in range(BATCH)]


def test_floor_ecdsa(benchmark: Any, order_ids: list[str]) -> None:
    """E: bare libsecp256k1 signatures through coincurve's wrapper, in a loop as long as
    sign_many's batch (a long call and a short one meet different noise on a busy machine)."""
    from coincurve import PrivateKey

    benchmark.group = f"sign_many ({BATCH} orders, per call)"
    benchmark.extra_info["per"] = BATCH
    key = PrivateKey(bytes.fromhex(KEY[2:]))
    digests = [bytes.fromhex(i[2:]) for i in order_ids]
    sign = key.sign_recoverable
    benchmark.pedantic(lambda: [sign(d, hasher=None) for d in digests], rounds=15, iterations=1)


def test_ecdsa_single(benchmark: Any) -> None:
    """E for one call: the same bare signature, called once."""
    from coincurve import PrivateKey

    benchmark.group = "sign (per order)"
    key = PrivateKey(bytes.fromhex(KEY[2:]))
    want = OrderSigner(KEY).sign(DIGEST)
    assert "0x" + key.sign_recoverable(DIGEST, hasher=None)[:64].hex() == want[:130]
    benchmark(lambda: key.sign_recoverable(DIGEST, hasher=None))


def test_order_signer_sign(benchmark: Any) -> None:
    benchmark.group = "sign (per order)"
    signer = OrderSigner(KEY)
    benchmark(lambda: signer.sign(ORDER_ID))


@pytest.mark.parametrize("threads", [1, 2])
def test_sign_many(benchmark: Any, order_ids: list[str], threads: int) -> None:
    benchmark.group = f"sign_many ({BATCH} orders, per call)"
    benchmark.extra_info["per"] = BATCH
    signer = OrderSigner(KEY)
    assert signer.sign_many(order_ids[:50], threads=threads) == [
        signer.sign(i) for i in order_ids[:50]
    ]
    benchmark.pedantic(
        lambda: signer.sign_many(order_ids, threads=threads), rounds=15, iterations=1
    )


@pytest.fixture(scope="module")
def v2_hasher() -> Any:
    """A V2 EOA wallet whose signer is KEY, so ``hasher.sign`` accepts the key."""
    from clobkit import OrderHasher

    address = OrderSigner(KEY).address
    wallet = {
        "maker": address,
        "signer": address,
        "chain_id": 137,
        "signature_type": 0,
        "ctf_exchange": V2_CTF,
        "neg_risk_exchange": "0xe2222d279d744050d28e00520010520000310F59",
    }
    return OrderHasher(wallet)


V2_ORDER = {
    "token_id": "71321045679252212594626385532706912750332728571942532289631379312455583992563",
    "maker_amount": 9_295_000,
    "taker_amount": 16_900_000,
    "side": 0,
    "salt": 482_391_004_117,
    "timestamp": 1_760_000_000_000,
}


def test_hasher_sign(benchmark: Any, v2_hasher: Any) -> None:
    """Hash and sign one V2 order (#10: <= 1.25 x E)."""
    benchmark.group = "sign (per order)"
    signer = OrderSigner(KEY)
    order = V2_ORDER
    benchmark(lambda: v2_hasher.sign(signer, **order))


@pytest.mark.parametrize("threads", [1, 2])
def test_hasher_sign_many(benchmark: Any, v2_hasher: Any, threads: int) -> None:
    """Hash and sign a batch of V2 orders (#10: 1 thread <= 1.15 x E per order)."""
    benchmark.group = f"sign_many ({BATCH} orders, per call)"
    benchmark.extra_info["per"] = BATCH
    signer = OrderSigner(KEY)
    columns = {
        "token_ids": V2_ORDER["token_id"],
        "maker_amounts": [1_000_000 + i for i in range(BATCH)],
        "taker_amounts": 2_000_000,
        "sides": 0,
        "salts": [482_391_004_117 + i for i in range(BATCH)],
        "timestamps": 1_760_000_000_000,
    }
    benchmark.pedantic(
        lambda: v2_hasher.sign_many(signer, **columns, threads=threads), rounds=15, iterations=1
    )


def test_sign_eth_account(benchmark: Any) -> None:
    benchmark.group = "sign (per order)"
    from eth_account import Account

    want = OrderSigner(KEY).sign(DIGEST)
    assert "0x" + bytes(Account.unsafe_sign_hash(DIGEST, KEY).signature).hex() == want
    benchmark(lambda: Account.unsafe_sign_hash(DIGEST, KEY))


def test_build_signed_order_py_clob_client_v2(benchmark: Any) -> None:
    """The peer's whole path for one V2 order: build, EIP-712 hash, sign."""
    benchmark.group = "sign (per order)"
    builder_mod = pytest.importorskip("py_clob_client_v2.order_utils.exchange_order_builder_v2")
    from py_clob_client_v2.order_utils.model.order_data_v2 import OrderDataV2
    from py_clob_client_v2.signer import Signer

    signer = Signer(KEY, 137)
    builder = builder_mod.ExchangeOrderBuilderV2(
        V2_CTF, 137, signer, generate_salt=lambda: "482391004117"
    )
    data = OrderDataV2(
        maker=signer.address(),
        signer=signer.address(),
        tokenId="71321045679252212594626385532706912750332728571942532289631379312455583992563",
        makerAmount="9295000",
        takerAmount="16900000",
        side=0,
        signatureType=0,
        timestamp="1760000000000",
    )
    benchmark(lambda: builder.build_signed_order(data))
