"""V2 and V3 order ids: both twins against eth-account's EIP-712 digest (issue #10)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import eth_account.messages  # noqa: F401 - sets its recursion limit before hypothesis runs
import pytest
from eth_utils import to_checksum_address
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit.errors import OrderFieldError

from ..conftest import examples
from .oracle import (
    eth_abi_struct_hash_v1,
    eth_abi_struct_hash_v2,
    eth_account_order_id,
    eth_account_order_id_v2,
)

MAX = 2**256 - 1
V2_CTF = "0xE111180000d2663C0091e4f400237545B87B996B"
V2_NEG = "0xe2222d279d744050d28e00520010520000310F59"
V3 = "0xe3333700cA9d93003F00f0F71f8515005F6c00Aa"
WALLET: dict[str, Any] = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": V2_CTF,
    "neg_risk_exchange": V2_NEG,
}
WALLET_V3 = WALLET | {"ctf_exchange": V3, "neg_risk_exchange": V3}
WALLETS = {2: WALLET, 3: WALLET_V3}
UINTS = ("token_id", "maker_amount", "taker_amount", "salt", "timestamp")
ORDER: dict[str, Any] = {
    "token_id": 1234,
    "maker_amount": 100_000_000,
    "taker_amount": 50_000_000,
    "side": 0,
    "salt": 479249096354,
    "timestamp": 1_710_000_000_000,
}

uint256 = st.one_of(
    st.just(0),
    st.just(MAX),
    st.just(2**64 - 1),
    st.just(2**64),
    st.integers(0, 10**13),
    st.integers(0, MAX),
)
word = st.one_of(
    st.none(),
    st.binary(min_size=32, max_size=32),
    st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex()),
    st.binary(min_size=32, max_size=32).map(lambda b: "0X" + b.hex().upper()),
    st.just(b"\xff" * 32),
)
orders = st.fixed_dictionaries(
    dict.fromkeys(UINTS, uint256)
    | {
        "side": st.sampled_from([0, 1]),
        "neg_risk": st.booleans(),
        "metadata": word,
        "builder": word,
    }
)
address = st.binary(min_size=20, max_size=20).map(lambda b: to_checksum_address(b))
wallets = st.fixed_dictionaries(
    {
        "maker": address,
        "signer": address,
        "chain_id": st.sampled_from([137, 80002, 1, 2**64]),
        "signature_type": st.sampled_from([0, 1, 2, 3]),
        "ctf_exchange": st.one_of(st.just(V2_CTF), address),
        "neg_risk_exchange": st.one_of(st.just(V2_NEG), address),
    }
)
KECCAK_PATHS = ("portable", "avx2", "avx512")


def columns(batch: list[dict[str, Any]], spell: Any = int) -> dict[str, Any]:
    return {
        "token_ids": [spell(o["token_id"]) for o in batch],
        "maker_amounts": [spell(o["maker_amount"]) for o in batch],
        "taker_amounts": tuple(spell(o["taker_amount"]) for o in batch),
        "sides": [o["side"] for o in batch],
        "salts": [spell(o["salt"]) for o in batch],
        "timestamps": [spell(o["timestamp"]) for o in batch],
        "metadatas": [o.get("metadata") for o in batch],
        "builders": [o.get("builder") for o in batch],
        "neg_risk": [o.get("neg_risk", False) for o in batch],
    }


def _args(order: dict[str, Any], spell: Any = int) -> dict[str, Any]:
    return {k: (spell(v) if k in UINTS else v) for k, v in order.items()}


@settings(max_examples=examples(100))
@given(
    wallet=wallets,
    version=st.sampled_from([2, 3]),
    batch=st.lists(orders, min_size=30, max_size=30),
    spell=st.sampled_from([int, str]),
)
def test_v2_v3_orders_match_eth_account(
    core: ModuleType, wallet: dict[str, Any], version: int, batch: list[dict[str, Any]], spell: Any
) -> None:
    """100 examples x 30 orders: singles, struct hashes and the batch equal the oracles."""
    hasher = core.OrderHasher(wallet, version=version)
    assert hasher.version == version
    want = [eth_account_order_id_v2(wallet, o, o["neg_risk"], version) for o in batch]
    assert [hasher.order_id(**_args(o, spell)) for o in batch] == want
    assert hasher.order_ids(**columns(batch, spell)) == want
    o = batch[0]
    assert hasher.struct_hash(**_args(o, spell)) == eth_abi_struct_hash_v2(wallet, o)


def test_forced_keccak_paths_v2() -> None:
    """Each compiled Keccak path, forced in turn, on V2 and V3 against eth-account."""
    core_c = pytest.importorskip("clobkit.core._core_c")
    batch: list[dict[str, Any]] = [
        {k: (i * 7919 + j) ** 7 % (MAX + 1) for j, k in enumerate(UINTS)}
        | {
            "side": i % 2,
            "neg_risk": i % 3 == 0,
            "metadata": bytes([i]) * 32 if i % 4 else None,
            "builder": "0x" + f"{i:02x}" * 32,
        }
        for i in range(67)
    ]
    tried = []
    try:
        for version, wallet in WALLETS.items():
            hasher = core_c.OrderHasher(wallet)
            want = [eth_account_order_id_v2(wallet, o, o["neg_risk"], version) for o in batch]
            for path in KECCAK_PATHS:
                if not core_c.set_implementation(keccak=path):
                    continue
                tried.append(path)
                assert hasher.order_ids(**columns(batch)) == want
                assert [hasher.order_id(**o) for o in batch] == want
                for n in range(1, 18):  # every tail length of the SIMD groups
                    assert hasher.order_ids(**columns(batch[:n])) == want[:n]
    finally:
        core_c.set_implementation(keccak="auto")
    assert "portable" in tried


def test_peer_vector_py_clob_client_v2(core: ModuleType) -> None:
    """The order hash of py-clob-client-v2's own test, on Amoy with signature type 3.

    Polymarket/py-clob-client-v2, tests/order_utils/test_exchange_order_builder_v2.py,
    test_build_signed_order_poly_1271_matches_expected_signature (order_hash).
    """
    deposit_wallet = "0x1111111111111111111111111111111111111111"
    wallet = {
        "maker": deposit_wallet,
        "signer": deposit_wallet,
        "chain_id": 80002,
        "signature_type": 3,
        "ctf_exchange": V2_CTF,
        "neg_risk_exchange": V2_NEG,
    }
    hasher = core.OrderHasher(wallet)
    order = ORDER | {"metadata": "0x" + "00" * 32, "builder": None}
    want = "0x2afca94626db91b2d556c351584a4cd93e13da32e377dc48c7983e43afa5ab47"
    assert hasher.order_id(**order) == want
    assert hasher.order_ids(**columns([order])) == [want]
    assert eth_account_order_id_v2(wallet, order, False) == want


def test_edges_every_field(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    for edge in (0, 1, 2**64 - 1, 2**64, MAX):
        for field in UINTS:
            order = dict.fromkeys(UINTS, 7) | {"side": 1, field: edge}
            for neg in (False, True):
                want = eth_account_order_id_v2(WALLET, order, neg)
                assert hasher.order_id(**order, neg_risk=neg) == want
                assert hasher.order_id(**_args(order, str), neg_risk=neg) == want
    for field in ("metadata", "builder"):
        for raw in (bytes(32), b"\xff" * 32, bytes(range(32)), b"\x80" + bytes(30) + b"\x01"):
            order = ORDER | {field: raw}
            want = eth_account_order_id_v2(WALLET, order, False)
            for spelling in (raw, bytearray(raw), memoryview(raw), "0x" + raw.hex()):
                assert hasher.order_id(**(ORDER | {field: spelling})) == want
                assert hasher.order_ids(**columns([ORDER | {field: spelling}])) == [want]


def test_defaults_and_broadcast(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    base = hasher.order_id(**ORDER)
    zero = "0x" + "00" * 32
    assert hasher.order_id(**ORDER, metadata=None, builder=bytes(32)) == base
    assert hasher.order_id(**ORDER, metadata=zero, builder=zero, neg_risk=False) == base
    assert hasher.order_id(**ORDER, neg_risk=True) != base
    n = 20_000
    ids = hasher.order_ids(
        token_ids="1234",
        maker_amounts=100_000_000,
        taker_amounts=[50_000_000] * n,
        sides="BUY",
        salts=479249096354,
        timestamps=list(range(1_710_000_000_000, 1_710_000_000_000 + n)),
        metadatas=bytes(32),  # bytes are one bytes32, broadcast, not a sequence of ints
        builders=zero,
    )
    assert len(ids) == n
    assert ids[0] == base
    assert ids[12345] == hasher.order_id(**ORDER | {"timestamp": 1_710_000_012_345})
    for threads in (2, 3):
        assert (
            hasher.order_ids(
                token_ids="1234",
                maker_amounts=100_000_000,
                taker_amounts=[50_000_000] * n,
                sides="BUY",
                salts=479249096354,
                timestamps=list(range(1_710_000_000_000, 1_710_000_000_000 + n)),
                threads=threads,
            )
            == ids
        )
    one = hasher.order_ids(
        token_ids=1234, maker_amounts=100_000_000, taker_amounts=50_000_000, sides=0,
        salts=479249096354, timestamps=1_710_000_000_000,
    )  # fmt: skip
    assert one == [base]
    empty: dict[str, list[Any]] = {
        "token_ids": [],
        "maker_amounts": [],
        "taker_amounts": [],
        "sides": [],
        "salts": [],
    }
    assert hasher.order_ids(**empty, timestamps=[]) == []


def test_v1_struct_hash(core: ModuleType) -> None:
    wallet = WALLET | {
        "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
        "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
    }
    hasher = core.OrderHasher(wallet)
    order = {k: v for k, v in ORDER.items() if k != "timestamp"}
    full = order | {"fee_rate_bps": 30, "nonce": 2, "expiration": MAX}
    for o in (order, full):
        assert hasher.struct_hash(**o) == eth_abi_struct_hash_v1(wallet, o)
        assert hasher.struct_hash(**o, neg_risk=True) == eth_abi_struct_hash_v1(wallet, o)
    want = eth_account_order_id(wallet, full, False)
    assert hasher.order_id(**full) == want
    # the digest is keccak(0x1901 || domain || struct hash)
    digest = core.keccak256(b"\x19\x01" + hasher.domain_separator() + hasher.struct_hash(**full))
    assert "0x" + digest.hex() == want


V1_ONLY = {"fee_rate_bps": 0, "nonce": 0, "expiration": 0}
V2_ONLY = {"timestamp": 1, "metadata": None, "builder": bytes(32)}


@pytest.mark.parametrize(("field", "value"), list(V1_ONLY.items()))
@pytest.mark.parametrize("version", [2, 3])
def test_v1_fields_refused_on_v2(core: ModuleType, version: int, field: str, value: Any) -> None:
    hasher = core.OrderHasher(WALLETS[version])
    for method in (hasher.order_id, hasher.struct_hash):
        with pytest.raises(OrderFieldError) as info:
            method(**ORDER, **{field: value})
        assert info.value.field == field
        assert f"V{version}" in str(info.value)
    plural = {"fee_rate_bps": "fee_rate_bps", "nonce": "nonces", "expiration": "expirations"}
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(**columns([ORDER]), **{plural[field]: [value]})
    assert info.value.field == plural[field]


@pytest.mark.parametrize(("field", "value"), list(V2_ONLY.items()))
def test_v2_fields_refused_on_v1(core: ModuleType, field: str, value: Any) -> None:
    hasher = core.OrderHasher(WALLET, version=1)
    order = {k: v for k, v in ORDER.items() if k != "timestamp"}
    for method in (hasher.order_id, hasher.struct_hash):
        with pytest.raises(OrderFieldError) as info:
            method(**order, **{field: value})
        assert info.value.field == field
        assert "V1" in str(info.value)
    cols = columns([ORDER])
    del cols["timestamps"], cols["metadatas"], cols["builders"]
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(**cols, **{field + "s": value})
    assert info.value.field == field + "s"


def test_missing_timestamp(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    order = {k: v for k, v in ORDER.items() if k != "timestamp"}
    with pytest.raises(OrderFieldError) as info:
        hasher.order_id(**order)
    assert info.value.field == "timestamp"
    cols = columns([ORDER])
    del cols["timestamps"]
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(**cols)
    assert info.value.field == "timestamps"


BAD_WORDS = [
    b"\x00" * 31,
    b"\x00" * 33,
    "0x" + "00" * 31,
    "0x" + "00" * 33,
    "00" * 32,
    "0x" + "g" * 64,
    "0x" + " 0" * 32,
    "0x" + "٠" * 64,
    0,
    1.0,
    True,
    [0] * 32,
]


@pytest.mark.parametrize("field", ["metadata", "builder"])
@pytest.mark.parametrize("value", BAD_WORDS, ids=repr)
def test_bad_bytes32(core: ModuleType, field: str, value: object) -> None:
    hasher = core.OrderHasher(WALLET)
    with pytest.raises(OrderFieldError) as info:
        hasher.order_id(**ORDER, **{field: value})
    assert info.value.field == field
    cols = columns([ORDER, ORDER])
    cols[field + "s"] = [None, value]
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(**cols)
    assert info.value.field == f"{field}s[1]"


@pytest.mark.parametrize("value", [-1, MAX + 1, "", "1.5", None, 1.0, b"1"], ids=repr)
def test_bad_timestamp(core: ModuleType, value: object) -> None:
    hasher = core.OrderHasher(WALLET)
    with pytest.raises(OrderFieldError) as info:
        hasher.order_id(**ORDER | {"timestamp": value})
    assert info.value.field == "timestamp"
    cols = columns([ORDER])
    cols["timestamps"] = [value]
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(**cols)
    assert info.value.field == "timestamps[0]"


def test_bytes_column_is_one_value_not_a_sequence(core: ModuleType) -> None:
    """A bytes argument is one bytes32 (broadcast); before V2 a bytes ``token_ids``
    was silently read as a sequence of small ints, one order per byte."""
    v1 = core.OrderHasher(WALLET, version=1)
    with pytest.raises(OrderFieldError) as info:
        v1.order_ids(token_ids=b"12", maker_amounts=1, taker_amounts=1, sides=0, salts=0)
    assert info.value.field == "token_ids"
    hasher = core.OrderHasher(WALLET)
    ids = hasher.order_ids(**columns([ORDER, ORDER]) | {"metadatas": bytearray(b"\x07" * 32)})
    assert ids == [hasher.order_id(**ORDER, metadata=b"\x07" * 32)] * 2
