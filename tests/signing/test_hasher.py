"""OrderHasher.sign / sign_many (both twins) against eth-account, py-clob-client-v2 and
the peers' fixed vectors: V2/V3 wallets of every signature type."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import eth_account.messages  # noqa: F401 - sets its recursion limit before hypothesis runs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit import OrderSigner, SignedOrder
from clobkit.errors import OrderFieldError

from ..conftest import examples
from ..core import signing_oracle as oracle
from .test_keys import (
    DEPOSIT_WALLET,
    DEV_ADDRESS,
    DEV_KEY,
    PY_V2_POLY_1271,
    PY_V2_POLY_1271_HASH,
    V2_CTF,
    V2_NEG_RISK,
    ZERO_ADDRESS,
)

V3_EXCHANGE = "0xe3333700cA9d93003F00f0F71f8515005F6c00Aa"
OTHER_KEY = "0x" + "42" * 32


def wallet(
    signature_type: int, signer: str, maker: str | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "maker": maker or signer,
        "signer": signer,
        "chain_id": 137,
        "signature_type": signature_type,
        "ctf_exchange": V2_CTF,
        "neg_risk_exchange": V2_NEG_RISK,
        **extra,
    }


def message(w: dict[str, Any], order: dict[str, Any]) -> dict[str, Any]:
    """The oracle's typed-data message of one order of wallet ``w``."""
    return {
        "salt": order["salt"],
        "maker": w["maker"],
        "signer": w["signer"],
        "tokenId": order["token_id"],
        "makerAmount": order["maker_amount"],
        "takerAmount": order["taker_amount"],
        "side": order["side"],
        "signatureType": w["signature_type"],
        "timestamp": order["timestamp"],
        "metadata": order.get("metadata") or bytes(32),
        "builder": order.get("builder") or bytes(32),
    }


ORDER = {
    "token_id": 1234,
    "maker_amount": 100_000_000,
    "taker_amount": 50_000_000,
    "side": 0,
    "salt": 479249096354,
    "timestamp": 1710000000000,
}


def test_py_clob_client_v2_poly_1271_vector(core: ModuleType) -> None:
    """Polymarket/py-clob-client-v2 tests/order_utils/test_exchange_order_builder_v2.py:
    the deposit wallet's order on Amoy, signed by its owner (the dev key)."""
    w = wallet(3, DEPOSIT_WALLET, chain_id=80002)
    hasher = core.OrderHasher(w)
    assert hasher.version == 2
    signed = hasher.sign(OrderSigner(DEV_KEY), **ORDER)
    assert signed == SignedOrder(PY_V2_POLY_1271_HASH, PY_V2_POLY_1271)
    assert hasher.sign_many(OrderSigner(DEV_KEY), **{k + "s": [v] for k, v in ORDER.items()}) == [
        signed
    ]


def test_rs_clob_client_v2_post_order_vector(core: ModuleType) -> None:
    """Polymarket/rs-clob-client-v2 tests/clob.rs ``post_order_should_succeed``: the
    all-zero V2 order (maker = signer = the zero address). The id signs to the peer's
    signature, and hasher.sign refuses: the dev key is not the wallet's signer."""
    hasher = core.OrderHasher(wallet(0, ZERO_ADDRESS))
    zero = dict.fromkeys(ORDER, 0)
    oid = hasher.order_id(**zero)
    assert oid == oracle.order_id(137, V2_CTF, "2", message(wallet(0, ZERO_ADDRESS), zero))
    assert OrderSigner(DEV_KEY).sign(oid) == (
        "0x8a6edfe94a2169c3d05673521b53b7aee2205288f1363f1c9e24716317eebe6a"
        "17ca4bc397b85a5f39be21f32d0d8b38e0fd6de6af091dc0f4ba1f667d1883981c"
    )
    with pytest.raises(OrderFieldError) as info:
        hasher.sign(OrderSigner(DEV_KEY), **zero)
    assert info.value.field == "signer"


uint = st.one_of(st.integers(0, 2**64), st.integers(0, 2**256 - 1))
bytes32 = st.one_of(st.just(bytes(32)), st.binary(min_size=32, max_size=32))
orders = st.fixed_dictionaries(
    {
        "token_id": uint,
        "maker_amount": uint,
        "taker_amount": uint,
        "side": st.sampled_from([0, 1]),
        "salt": uint,
        "timestamp": st.integers(0, 2**64),
        "metadata": bytes32,
        "builder": bytes32,
        "neg_risk": st.booleans(),
    }
)


@settings(max_examples=examples(100))
@given(
    order=orders, signature_type=st.sampled_from([0, 1, 2, 3]), chain=st.sampled_from([137, 80002])
)
def test_sign_equals_eth_account(
    core: ModuleType, order: dict[str, Any], signature_type: int, chain: int
) -> None:
    """Types 0-2: the signer's signature of the EIP-712 order id; type 3: the ERC-7739
    wrapper signed by the deposit wallet's owner. Both checked against eth-account."""
    if signature_type == 3:
        w = wallet(3, DEPOSIT_WALLET, chain_id=chain)
    else:
        w = wallet(
            signature_type,
            DEV_ADDRESS,
            maker=DEPOSIT_WALLET if signature_type else None,
            chain_id=chain,
        )
    exchange = V2_NEG_RISK if order["neg_risk"] else V2_CTF
    msg = message(w, order)
    oid = oracle.order_id(chain, exchange, "2", msg)
    if signature_type == 3:
        want = oracle.poly_1271_signature(
            chain, exchange, "2", msg, DEPOSIT_WALLET, int(DEV_KEY, 16)
        )
    else:
        want = oracle.eth_account_sign(bytes.fromhex(oid[2:]), int(DEV_KEY, 16))
    spelled = {**order, "metadata": "0x" + order["metadata"].hex()}
    assert core.OrderHasher(w).sign(OrderSigner(DEV_KEY), **spelled) == SignedOrder(oid, want)


@pytest.mark.parametrize("signature_type", [0, 1, 2])
def test_sign_equals_py_clob_client_v2(core: ModuleType, signature_type: int) -> None:
    """The peer's build_signed_order for the same order, key and salt."""
    from py_clob_client_v2.order_utils.exchange_order_builder_v2 import ExchangeOrderBuilderV2
    from py_clob_client_v2.order_utils.model.order_data_v2 import OrderDataV2
    from py_clob_client_v2.signer import Signer

    maker = DEV_ADDRESS if signature_type == 0 else DEPOSIT_WALLET
    w = wallet(signature_type, DEV_ADDRESS, maker=maker)
    peer = ExchangeOrderBuilderV2(
        V2_CTF, 137, Signer(DEV_KEY, 137), generate_salt=lambda: str(ORDER["salt"])
    )
    theirs = peer.build_signed_order(
        OrderDataV2(
            maker=maker,
            signer=DEV_ADDRESS,
            tokenId=str(ORDER["token_id"]),
            makerAmount=str(ORDER["maker_amount"]),
            takerAmount=str(ORDER["taker_amount"]),
            side=ORDER["side"],
            signatureType=signature_type,
            timestamp=str(ORDER["timestamp"]),
        )
    )
    ours = core.OrderHasher(w).sign(OrderSigner(DEV_KEY), **ORDER)
    their_id = peer.build_order_hash(peer.build_order_typed_data(theirs))
    assert ours == SignedOrder(their_id, theirs.signature)


def test_v3_poly_1271_equals_py_clob_client_v2(core: ModuleType) -> None:
    """V3: the same struct under domain version "3" (the peer's domain_version)."""
    from py_clob_client_v2.order_utils.exchange_order_builder_v2 import ExchangeOrderBuilderV2
    from py_clob_client_v2.order_utils.model.order_data_v2 import OrderDataV2
    from py_clob_client_v2.signer import Signer

    w = wallet(3, DEPOSIT_WALLET, ctf_exchange=V3_EXCHANGE, neg_risk_exchange=V3_EXCHANGE)
    hasher = core.OrderHasher(w)
    assert hasher.version == 3
    peer = ExchangeOrderBuilderV2(
        V3_EXCHANGE,
        137,
        Signer(DEV_KEY, 137),
        generate_salt=lambda: str(ORDER["salt"]),
        domain_version="3",
    )
    theirs = peer.build_signed_order(
        OrderDataV2(
            maker=DEPOSIT_WALLET,
            signer=DEPOSIT_WALLET,
            tokenId=str(ORDER["token_id"]),
            makerAmount=str(ORDER["maker_amount"]),
            takerAmount=str(ORDER["taker_amount"]),
            side=ORDER["side"],
            signatureType=3,
            timestamp=str(ORDER["timestamp"]),
        )
    )
    their_id = peer.build_order_hash(peer.build_order_typed_data(theirs))
    assert hasher.sign(OrderSigner(DEV_KEY), **ORDER) == SignedOrder(their_id, theirs.signature)


@pytest.mark.parametrize("signature_type", [0, 1, 2])
def test_wrong_signer_is_refused(core: ModuleType, signature_type: int) -> None:
    hasher = core.OrderHasher(wallet(signature_type, DEV_ADDRESS, maker=DEPOSIT_WALLET))
    other = OrderSigner(OTHER_KEY)
    calls: tuple[Callable[[], object], ...] = (
        lambda: hasher.sign(other, **ORDER),
        lambda: hasher.sign_many(other, **{k + "s": [v, v] for k, v in ORDER.items()}, threads=2),
    )
    for call in calls:
        with pytest.raises(ValueError, match="signer") as info:
            call()
        err = info.value
        assert isinstance(err, OrderFieldError)
        assert err.field == "signer"
        assert other.address in str(err)
        assert DEV_ADDRESS in str(err)
        assert OTHER_KEY[2:] not in str(err)
    # the deposit wallet's owner key is not checked against the wallet: it is not its address
    w3 = wallet(3, DEPOSIT_WALLET)
    assert core.OrderHasher(w3).sign(other, **ORDER).order_id == core.OrderHasher(w3).order_id(
        **ORDER
    )


def test_signer_must_be_an_order_signer(core: ModuleType) -> None:
    hasher = core.OrderHasher(wallet(0, DEV_ADDRESS))
    for bad in (DEV_KEY, bytes.fromhex(DEV_KEY[2:]), None):
        with pytest.raises(OrderFieldError) as info:
            hasher.sign(bad, **ORDER)
        assert info.value.field == "signer"
        assert DEV_KEY[2:] not in str(info.value)


@pytest.mark.parametrize("signature_type", [0, 2, 3])
def test_sign_many_equals_sign(core: ModuleType, signature_type: int) -> None:
    """Sequences and scalars mixed, neg_risk per row, every thread count: the singles."""
    owner = DEV_ADDRESS if signature_type != 3 else DEPOSIT_WALLET
    hasher = core.OrderHasher(wallet(signature_type, owner))
    signer = OrderSigner(DEV_KEY)
    n = 37
    columns: dict[str, Any] = {
        "token_ids": "7132104567925221259462638553270691275033272857194253228963137931245558399",
        "maker_amounts": [1_000_000 + i for i in range(n)],
        "taker_amounts": [str(2_000_000 + 7 * i) for i in range(n)],
        "sides": [i % 2 for i in range(n)],
        "salts": list(range(10**9, 10**9 + n)),
        "timestamps": 1_760_000_000_000,
        "metadatas": ["0x" + f"{i:064x}" for i in range(n)],
        "neg_risk": [i % 3 == 0 for i in range(n)],
    }
    singles = [
        hasher.sign(
            signer,
            token_id=columns["token_ids"],
            maker_amount=columns["maker_amounts"][i],
            taker_amount=columns["taker_amounts"][i],
            side=columns["sides"][i],
            salt=columns["salts"][i],
            timestamp=columns["timestamps"],
            metadata=columns["metadatas"][i],
            neg_risk=columns["neg_risk"][i],
        )
        for i in range(n)
    ]
    assert [s.order_id for s in singles] == hasher.order_ids(**columns)
    for threads in (None, 1, 2, 4):
        assert hasher.sign_many(signer, **columns, threads=threads) == singles
    empty = {k: ([] if isinstance(v, list) else v) for k, v in columns.items()}
    assert hasher.sign_many(signer, **empty, threads=2) == []


@pytest.mark.parametrize("signature_type", [0, 3])
def test_sign_many_names_the_bad_row(core: ModuleType, signature_type: int) -> None:
    owner = DEV_ADDRESS if signature_type != 3 else DEPOSIT_WALLET
    hasher = core.OrderHasher(wallet(signature_type, owner))
    columns = {k + "s": [v] * 5 for k, v in ORDER.items()}
    columns["salts"] = [1, 2, -3, 4, 5]
    with pytest.raises(OrderFieldError) as info:
        hasher.sign_many(OrderSigner(DEV_KEY), **columns, threads=2)
    assert info.value.field == "salts[2]"
    with pytest.raises(OrderFieldError) as info:
        hasher.sign_many(
            OrderSigner(DEV_KEY), **{k + "s": [v] for k, v in ORDER.items()}, threads=0
        )
    assert info.value.field == "threads"


def test_v1_wallet_signs_its_order_id(core: ModuleType) -> None:
    """The API text's V1 flow: the signer's signature of the V1 EIP-712 digest."""
    from ..core.oracle import eth_account_order_id

    w = wallet(
        2,
        DEV_ADDRESS,
        maker=DEPOSIT_WALLET,
        ctf_exchange="0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
        neg_risk_exchange="0xC5d563A36AE78145C45a50134d48A1215220f80a",
    )
    hasher = core.OrderHasher(w)
    assert hasher.version == 1
    order = {k: v for k, v in ORDER.items() if k != "timestamp"} | {"fee_rate_bps": 0, "nonce": 3}
    for neg_risk in (False, True):
        oid = eth_account_order_id(w, order | {"expiration": 0}, neg_risk)
        want = oracle.eth_account_sign(bytes.fromhex(oid[2:]), int(DEV_KEY, 16))
        signed = hasher.sign(OrderSigner(DEV_KEY), **order, neg_risk=neg_risk)
        assert signed == SignedOrder(oid, want)
    columns = {k + "s": [v] * 3 for k, v in order.items() if k != "fee_rate_bps"}
    many = hasher.sign_many(OrderSigner(DEV_KEY), **columns, fee_rate_bps=0, threads=2)
    assert many == [hasher.sign(OrderSigner(DEV_KEY), **order)] * 3
