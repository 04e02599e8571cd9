"""Core benchmarks: every public core function over both twins, the peers, the floors.

Run: python -m pytest benchmarks/bench_core.py  (prints the ratio table at the end)
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import secrets
import time
from decimal import Decimal
from types import ModuleType
from typing import Any

import pytest

TWINS = ["c", "python"]
WALLET = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}
TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
ORDER = {
    "token_id": TOKEN,
    "maker_amount": 9_295_000,
    "taker_amount": 16_900_000,
    "side": "BUY",
    "salt": 482_391_004_117,
}
BODY = (
    b'{"market_id":"5f0c6a8e-3b1d-4c62-9d1e-2b7f4a9c8e11","outcome":"a","token_id":"'
    + TOKEN.encode()
    + b'","maker_amount":"9295000","taker_amount":"16900000","side":0,"fee_rate_bps":0,'
    + b'"order_type":"GTC","salt":"482391004117","client_order_id":"c0ffee"}'
)
BODY = BODY + b" " * (300 - len(BODY))  # the typical 300-byte raw-order body
PATH = "/api/ext/v1/orders/raw"
BATCH = 100_000


def twin(name: str) -> ModuleType:
    return importlib.import_module("clobkit.core._core_c" if name == "c" else "clobkit.core.pure")


# ---------------------------------------------------------------- floors

BIG = b"\x00" * (16 << 20)


def test_floor_keccak(benchmark: Any) -> None:
    """F / 5: one Keccak-f[1600] permutation (136-byte block) through OpenSSL."""
    benchmark.group = "floor"
    benchmark.extra_info["per"] = len(BIG) / 136
    benchmark.pedantic(lambda: hashlib.sha3_256(BIG).digest(), rounds=7, iterations=1)


def test_floor_sha256(benchmark: Any) -> None:
    """S: one SHA-256 compression (64-byte block) through OpenSSL."""
    benchmark.group = "floor"
    benchmark.extra_info["per"] = len(BIG) / 64
    benchmark.pedantic(lambda: hashlib.sha256(BIG).digest(), rounds=7, iterations=1)


# ---------------------------------------------------------------- order ids


@pytest.mark.parametrize("name", TWINS)
def test_order_id_single(benchmark: Any, name: str) -> None:
    benchmark.group = "order_id"
    hasher = twin(name).OrderHasher(WALLET)
    # keywords spelled out, as a caller writes them (a ** dict costs ~0.1 F more)
    token, maker, taker, salt = TOKEN, ORDER["maker_amount"], ORDER["taker_amount"], ORDER["salt"]
    benchmark(
        lambda: hasher.order_id(
            token_id=token, maker_amount=maker, taker_amount=taker, side="BUY", salt=salt
        )
    )


def test_order_id_py_order_utils(benchmark: Any) -> None:
    benchmark.group = "order_id"
    builders = pytest.importorskip("py_order_utils.builders")
    from py_order_utils.model.order import Order
    from py_order_utils.signer import Signer

    builder = builders.OrderBuilder(WALLET["ctf_exchange"], 137, Signer("0x" + "42" * 32))
    fields = {
        "maker": WALLET["maker"],
        "signer": WALLET["signer"],
        "taker": "0x" + "00" * 20,
        "expiration": 0,
        "nonce": 0,
        "feeRateBps": 0,
        "signatureType": 2,
    }

    def peer() -> str:
        order = Order(
            salt=ORDER["salt"],
            tokenId=int(TOKEN),
            makerAmount=ORDER["maker_amount"],
            takerAmount=ORDER["taker_amount"],
            side=0,
            **fields,
        )
        return builder._create_struct_hash(order)

    assert peer() == twin("c").OrderHasher(WALLET).order_id(**ORDER)
    benchmark(peer)


def test_order_id_eth_account(benchmark: Any) -> None:
    benchmark.group = "order_id"
    from tests.core.oracle import eth_account_order_id

    order = {
        "token_id": int(TOKEN),
        "maker_amount": ORDER["maker_amount"],
        "taker_amount": ORDER["taker_amount"],
        "side": 0,
        "salt": ORDER["salt"],
        "fee_rate_bps": 0,
        "nonce": 0,
        "expiration": 0,
    }
    assert eth_account_order_id(WALLET, order, False) == twin("c").OrderHasher(WALLET).order_id(
        **ORDER
    )
    benchmark(lambda: eth_account_order_id(WALLET, order, False))


@pytest.fixture(scope="module")
def batch() -> dict[str, Any]:
    salts = twin("c").new_salts(BATCH)
    return {
        "token_ids": [TOKEN] * BATCH,
        "maker_amounts": list(range(1_000_000, 1_000_000 + BATCH)),
        "taker_amounts": [str(2_000_000 + i) for i in range(BATCH)],
        "sides": [i & 1 for i in range(BATCH)],
        "salts": salts,
    }


@pytest.mark.parametrize(("name", "threads"), [("c", 1), ("c", 2), ("python", 1)])
def test_order_ids_batch(benchmark: Any, batch: dict[str, Any], name: str, threads: int) -> None:
    benchmark.group = "order_ids (100k orders, per call)"
    benchmark.extra_info["per"] = BATCH
    hasher = twin(name).OrderHasher(WALLET)
    rounds = 5 if name == "c" else 1
    benchmark.pedantic(
        lambda: hasher.order_ids(**batch, threads=threads), rounds=rounds, iterations=1
    )


# ---------------------------------------------------------------- V2 order ids (#10)

WALLET_V2 = WALLET | {
    "ctf_exchange": "0xE111180000d2663C0091e4f400237545B87B996B",
    "neg_risk_exchange": "0xe2222d279d744050d28e00520010520000310F59",
}
TIMESTAMP = 1_777_777_777_123
BATCH_V2 = 500_000


@pytest.mark.parametrize("name", TWINS)
def test_order_id_v2_single(benchmark: Any, name: str) -> None:
    benchmark.group = "order_id V2"
    hasher = twin(name).OrderHasher(WALLET_V2)
    assert hasher.version == 2
    token, maker, taker, salt = TOKEN, ORDER["maker_amount"], ORDER["taker_amount"], ORDER["salt"]
    benchmark(
        lambda: hasher.order_id(
            token_id=token,
            maker_amount=maker,
            taker_amount=taker,
            side="BUY",
            salt=salt,
            timestamp=TIMESTAMP,
        )
    )


def test_order_id_v2_py_clob_client_v2(benchmark: Any) -> None:
    """py-clob-client-v2's own typed-data hash of the same order (build_order_hash)."""
    benchmark.group = "order_id V2"
    v2 = pytest.importorskip("py_clob_client_v2.order_utils.exchange_order_builder_v2")
    from py_clob_client_v2.order_utils.model.order_data_v2 import OrderV2
    from py_clob_client_v2.signer import Signer

    builder = v2.ExchangeOrderBuilderV2(
        WALLET_V2["ctf_exchange"], 137, Signer("0x" + "42" * 32, 137)
    )
    zero = "0x" + "00" * 32

    def peer() -> str:
        order = OrderV2(
            salt=str(ORDER["salt"]),
            maker=WALLET_V2["maker"],
            signer=WALLET_V2["signer"],
            tokenId=TOKEN,
            makerAmount=str(ORDER["maker_amount"]),
            takerAmount=str(ORDER["taker_amount"]),
            side=0,  # type: ignore[arg-type]
            signatureType=2,  # type: ignore[arg-type]
            timestamp=str(TIMESTAMP),
            metadata=zero,
            builder=zero,
        )
        return str(builder.build_order_hash(builder.build_order_typed_data(order)))

    assert peer() == twin("c").OrderHasher(WALLET_V2).order_id(**ORDER, timestamp=TIMESTAMP)
    benchmark(peer)


@pytest.fixture(scope="module")
def batch_v2() -> dict[str, Any]:
    salts = twin("c").new_salts(BATCH_V2)
    return {
        "token_ids": [TOKEN] * BATCH_V2,
        "maker_amounts": list(range(1_000_000, 1_000_000 + BATCH_V2)),
        "taker_amounts": [str(2_000_000 + i) for i in range(BATCH_V2)],
        "sides": [i & 1 for i in range(BATCH_V2)],
        "salts": salts,
        "timestamps": [TIMESTAMP + i for i in range(BATCH_V2)],
    }


@pytest.mark.parametrize("threads", [1, 2])
def test_order_ids_v2_batch(benchmark: Any, batch_v2: dict[str, Any], threads: int) -> None:
    benchmark.group = "order_ids V2 (500k orders, per call)"
    benchmark.extra_info["per"] = BATCH_V2
    hasher = twin("c").OrderHasher(WALLET_V2)
    benchmark.pedantic(
        lambda: hasher.order_ids(**batch_v2, threads=threads), rounds=5, iterations=1
    )


# ---------------------------------------------------------------- signing


def stdlib_headers(key: str, secret: bytes, method: str, path: str, body: bytes) -> dict[str, str]:
    """The same signing, written the obvious way with the standard library."""
    ts = str(time.time_ns() // 1_000_000)
    nonce = secrets.token_hex(16)
    signing = f"{method}\n{path}\n{ts}\n{nonce}\n{hashlib.sha256(body).hexdigest()}"
    sig = hmac.new(secret, signing.encode(), hashlib.sha256).hexdigest()
    return {"X-API-KEY": key, "X-API-TIMESTAMP": ts, "X-API-NONCE": nonce, "X-API-SIGNATURE": sig}


REQUESTS = [("POST", PATH, BODY)] * 1000


@pytest.mark.parametrize("name", TWINS)
def test_headers(benchmark: Any, name: str) -> None:
    benchmark.group = "headers"
    signer = twin(name).RequestSigner("key", "secret")
    benchmark(lambda: signer.headers("POST", PATH, BODY))


def test_headers_stdlib(benchmark: Any) -> None:
    benchmark.group = "headers"
    benchmark(lambda: stdlib_headers("key", b"secret", "POST", PATH, BODY))


@pytest.mark.parametrize("name", TWINS)
def test_headers_many(benchmark: Any, name: str) -> None:
    benchmark.group = "headers_many (1000 requests, per call)"
    benchmark.extra_info["per"] = len(REQUESTS)
    signer = twin(name).RequestSigner("key", "secret")
    benchmark(lambda: signer.headers_many(REQUESTS))


def test_headers_many_stdlib(benchmark: Any) -> None:
    benchmark.group = "headers_many (1000 requests, per call)"
    benchmark.extra_info["per"] = len(REQUESTS)
    benchmark(lambda: [stdlib_headers("key", b"secret", m, p, b) for m, p, b in REQUESTS])


@pytest.mark.parametrize("name", TWINS)
def test_signature(benchmark: Any, name: str) -> None:
    benchmark.group = "signature"
    fn = twin(name).signature
    benchmark(lambda: fn("secret", "POST", PATH, 1_700_000_000_000, "0" * 32, BODY))


@pytest.mark.parametrize("name", TWINS)
def test_verify_signature(benchmark: Any, name: str) -> None:
    benchmark.group = "signature"
    core = twin(name)
    sig = core.signature("secret", "POST", PATH, 1_700_000_000_000, "0" * 32, BODY)
    benchmark(
        lambda: core.verify_signature(
            "secret", "POST", PATH, 1_700_000_000_000, "0" * 32, BODY, sig
        )
    )


# ---------------------------------------------------------------- amounts and salts


@pytest.mark.parametrize("name", TWINS)
def test_limit_amounts(benchmark: Any, name: str) -> None:
    benchmark.group = "limit_amounts"
    fn = twin(name).limit_amounts
    benchmark(lambda: fn("BUY", 0.55, 16.9))


def test_limit_amounts_py_clob_client(benchmark: Any) -> None:
    benchmark.group = "limit_amounts"
    builder = pytest.importorskip("py_clob_client.order_builder.builder")
    b = builder.OrderBuilder.__new__(builder.OrderBuilder)
    config = builder.ROUNDING_CONFIG["0.01"]
    benchmark(lambda: b.get_order_amounts("BUY", 16.9, 0.55, config))


@pytest.mark.parametrize("name", TWINS)
def test_market_amounts(benchmark: Any, name: str) -> None:
    benchmark.group = "market_amounts"
    fn = twin(name).market_amounts
    benchmark(lambda: fn("BUY", "0.3", "10"))


def test_market_amounts_py_clob_client(benchmark: Any) -> None:
    benchmark.group = "market_amounts"
    builder = pytest.importorskip("py_clob_client.order_builder.builder")
    b = builder.OrderBuilder.__new__(builder.OrderBuilder)
    config = builder.ROUNDING_CONFIG["0.01"]
    benchmark(lambda: b.get_market_order_amounts("BUY", 10.0, 0.3, config))


@pytest.mark.parametrize("name", TWINS)
def test_to_units(benchmark: Any, name: str) -> None:
    benchmark.group = "units"
    fn = twin(name).to_units
    benchmark(lambda: fn("12.34"))


@pytest.mark.parametrize("name", TWINS)
def test_from_units(benchmark: Any, name: str) -> None:
    benchmark.group = "units"
    fn = twin(name).from_units
    benchmark(lambda: fn(12_340_000))


BOOK = [{"price": f"0.{50 + i}", "size": str(100 + 10 * i)} for i in range(20)]


@pytest.mark.parametrize("name", TWINS)
def test_market_price(benchmark: Any, name: str) -> None:
    benchmark.group = "market_price (20 levels)"
    fn = twin(name).market_price
    assert fn(BOOK, "BUY", 1000) == Decimal("0.57")
    benchmark(lambda: fn(BOOK, "BUY", 1000))


@pytest.mark.parametrize("name", TWINS)
def test_new_salt(benchmark: Any, name: str) -> None:
    benchmark.group = "salts"
    benchmark(twin(name).new_salt)


@pytest.mark.parametrize("name", TWINS)
def test_new_salts(benchmark: Any, name: str) -> None:
    benchmark.group = "salts"
    benchmark.extra_info["per"] = 10_000
    fn = twin(name).new_salts
    benchmark(lambda: fn(10_000))
