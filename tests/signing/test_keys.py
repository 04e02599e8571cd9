"""OrderSigner, sign_order_id and the POLY_1271 wrapper against independent oracles."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import Any

import eth_account.messages  # noqa: F401 - sets its recursion limit before hypothesis runs
import numpy as np
import pytest
from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit import OrderSigner, SignedOrder, sign_order_id
from clobkit.errors import ClobkitError, OrderFieldError
from clobkit.signing import parse_order_id, typed_data_sign_digest, wrap_poly_1271

from ..conftest import examples
from ..core import signing_oracle as oracle

# The dev chains' publicly known key (hardhat/anvil account 0), used by the peers' tests.
DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
DEV_ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
V2_CTF = "0xE111180000d2663C0091e4f400237545B87B996B"
V2_NEG_RISK = "0xe2222d279d744050d28e00520010520000310F59"
ZERO_ADDRESS = "0x" + "00" * 20

keys = st.one_of(
    st.integers(1, oracle.N - 1),
    st.sampled_from([1, 2, oracle.N - 1, oracle.N - 2, 2**128, oracle.N // 2]),
)
digests = st.one_of(
    st.binary(min_size=32, max_size=32),
    st.sampled_from(
        [
            bytes(32),
            b"\xff" * 32,
            oracle.N.to_bytes(32, "big"),  # reduced mod n before signing: same as eth-keys
            (oracle.N - 1).to_bytes(32, "big"),
            (oracle.N + 1).to_bytes(32, "big"),
        ]
    ),
)


@settings(max_examples=examples(3000))
@given(key=keys, digest=digests)
def test_signatures_equal_eth_account(key: int, digest: bytes) -> None:
    """3000 random keys and digests: byte-identical to Account.unsafe_sign_hash."""
    want = oracle.eth_account_sign(digest, key)
    signer = OrderSigner("0x" + key.to_bytes(32, "big").hex())
    assert signer.sign("0x" + digest.hex()) == want
    assert signer.sign(digest) == want
    assert OrderSigner(key.to_bytes(32, "big")).sign(digest) == want
    sig = bytes.fromhex(want[2:])
    assert int.from_bytes(sig[32:64], "big") <= oracle.N // 2  # low s
    assert sig[64] in (27, 28)


@settings(max_examples=examples(300))
@given(key=keys, digest=digests)
def test_signatures_equal_pure_python_ecdsa(key: int, digest: bytes) -> None:
    """eth-keys' native backend shares no code with libsecp256k1 (eth-account uses it
    only when coincurve is missing): RFC 6979 and low s give the same bytes."""
    assert OrderSigner(key.to_bytes(32, "big")).sign(digest) == oracle.native_sign(digest, key)


@settings(max_examples=examples(200))
@given(key=keys)
def test_address_is_eth_account_address(key: int) -> None:
    raw = key.to_bytes(32, "big")
    assert OrderSigner(raw).address == Account.from_key(raw).address


def test_key_spellings() -> None:
    body = DEV_KEY[2:]
    for spelling in (DEV_KEY, body, body.upper(), "0X" + body, bytes.fromhex(body)):
        assert OrderSigner(spelling).address == DEV_ADDRESS
    # bytearray and memoryview are taken at run time, beyond the annotation
    assert OrderSigner(bytearray.fromhex(body)).address == DEV_ADDRESS  # type: ignore[arg-type]
    assert OrderSigner(memoryview(bytes.fromhex(body))).address == DEV_ADDRESS  # type: ignore[arg-type]


def test_sign_many_threads_equal_singles() -> None:
    signer = OrderSigner(DEV_KEY)
    ids = ["0x" + os.urandom(32).hex() for _ in range(501)]
    want = [signer.sign(i) for i in ids]
    assert want == [oracle.eth_account_sign(bytes.fromhex(i[2:]), int(DEV_KEY, 16)) for i in ids]
    for threads in (None, 1, 2, 3, 4, 16):
        assert signer.sign_many(ids, threads=threads) == want
    assert signer.sign_many(tuple(ids), threads=2) == want
    assert signer.sign_many(iter(ids), threads=4) == want  # any iterable
    assert signer.sign_many([bytes.fromhex(i[2:]) for i in ids], threads=2) == want
    assert signer.sign_many(ids[:3], threads=8) == want[:3]  # more threads than ids


def test_sign_many_empty() -> None:
    signer = OrderSigner(DEV_KEY)
    for threads in (None, 1, 4):
        assert signer.sign_many([], threads=threads) == []


def test_sign_many_from_many_python_threads() -> None:
    """Callers racing on one signer (and on the shared pool) each get their own answers."""
    from concurrent.futures import ThreadPoolExecutor

    signer = OrderSigner(DEV_KEY)
    batches = [["0x" + os.urandom(32).hex() for _ in range(60)] for _ in range(8)]
    want = [[signer.sign(i) for i in batch] for batch in batches]
    with ThreadPoolExecutor(8) as pool:
        many = list(pool.map(lambda b: signer.sign_many(b, threads=2), batches))
        singles = list(pool.map(lambda b: [signer.sign(i) for i in b], batches))
    assert many == want
    assert singles == want


BAD_IDS: list[Any] = [
    "0x12",
    "0x" + "g" * 64,
    "0X" + "ab" * 32,
    "ab" * 33,
    "0x" + " " * 64,
    "0x" + "ab" * 31 + " a",
    "0x" + "ab" * 33,
    b"\x00" * 31,
    b"\x00" * 33,
    123,
    None,
    ["0x" + "ab" * 32],
]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_order_ids_are_named(bad: Any) -> None:
    signer = OrderSigner(DEV_KEY)
    with pytest.raises(OrderFieldError) as info:
        signer.sign(bad)
    assert info.value.field == "order_id"
    good = "0x" + "ab" * 32
    with pytest.raises(OrderFieldError) as info:
        signer.sign_many([good, good, good, bad, good], threads=2)
    assert info.value.field == "order_ids[3]"
    assert "order_ids[3]" in str(info.value)
    with pytest.raises(OrderFieldError, match="order_id"):
        sign_order_id(bad, DEV_KEY)
    with pytest.raises(OrderFieldError, match="order_id"):
        parse_order_id(bad)


def test_sign_many_refuses_one_id_and_bad_threads() -> None:
    signer = OrderSigner(DEV_KEY)
    with pytest.raises(OrderFieldError) as info:
        signer.sign_many("0x" + "ab" * 32)  # one id, not a list of them
    assert info.value.field == "order_ids"
    for threads in (0, -1, True, 1.5, "2"):
        with pytest.raises(OrderFieldError) as info:
            signer.sign_many(["0x" + "ab" * 32], threads=threads)  # type: ignore[arg-type]
        assert info.value.field == "threads"


BAD_KEYS: list[Any] = [
    0,
    "0x" + "00" * 32,  # zero
    "0x" + oracle.N.to_bytes(32, "big").hex(),  # n
    "0x" + (oracle.N + 1).to_bytes(32, "big").hex(),
    "0x" + "ff" * 32,
    (oracle.N + 5).to_bytes(32, "big"),
    "0x" + "ab" * 31,  # short
    "0x" + "ab" * 33,  # long
    "ab" * 31 + "a",  # odd length
    b"\x01" * 31,
    b"\x01" * 33,
    "0x" + "zq" * 32,  # not hex
    "0x" + "ab" * 31 + " a",
    "0x" + "\u00e9" * 64,
    "",
    12345678901234567890,
    None,
    3.5,
    ["0x" + "ab" * 32],
]


def _secret_texts(key: Any) -> list[str]:
    """The spellings of a key that must never show up in a message."""
    if isinstance(key, (bytes, bytearray)):
        return [bytes(key).hex(), repr(bytes(key))]
    if isinstance(key, str):
        body = key[2:] if key[:2] in ("0x", "0X") else key
        return [t for t in (key, body) if len(t) >= 8]
    text = str(key)
    return [text] if len(text) >= 8 else []


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys_are_refused_without_showing_them(key: Any) -> None:
    oid = "0x" + "11" * 32
    for call in (lambda: OrderSigner(key), lambda: sign_order_id(oid, key)):
        with pytest.raises(OrderFieldError) as info:
            call()
        err = info.value
        assert isinstance(err, ValueError)
        assert isinstance(err, ClobkitError)
        assert err.field == "private_key"
        assert err.value == "<hidden>"
        shown = " ".join(
            (
                str(err),
                repr(err),
                repr(err.args),
                str(err.reason),
                str(pickle.loads(pickle.dumps(err))),
            )
        )
        assert "private_key" in str(err)
        for secret in _secret_texts(key):
            assert secret not in shown
            assert secret.lower() not in shown.lower()


def test_key_never_shown_by_a_signer() -> None:
    signer = OrderSigner(DEV_KEY)
    body = DEV_KEY[2:]
    for text in (repr(signer), str(signer), f"{signer!r}", str(vars(type(signer)))):
        assert body not in text.lower()
    assert repr(signer) == f"OrderSigner(address={DEV_ADDRESS})"
    with pytest.raises(TypeError) as info:
        pickle.dumps(signer)
    assert body not in str(info.value)
    with pytest.raises(AttributeError):
        signer.address = ZERO_ADDRESS  # type: ignore[misc]


def test_sign_order_id_is_the_one_shot() -> None:
    signer = OrderSigner(DEV_KEY)
    oid = "0x" + "5a" * 32
    assert sign_order_id(oid, DEV_KEY) == signer.sign(oid)
    assert sign_order_id(oid, bytes.fromhex(DEV_KEY[2:])) == signer.sign(oid)
    # the order id's error comes first when both are bad
    with pytest.raises(OrderFieldError) as info:
        sign_order_id("0x12", "0x1234")
    assert info.value.field == "order_id"


def test_signed_order_is_a_named_tuple() -> None:
    signed = SignedOrder("0x" + "00" * 32, "0x" + "11" * 65)
    order_id, signature = signed
    assert (order_id, signature) == (signed.order_id, signed.signature)
    assert signed._asdict() == {"order_id": order_id, "signature": signature}


def test_import_clobkit_does_not_load_coincurve() -> None:
    code = (
        "import sys, clobkit; assert 'coincurve' not in sys.modules, 'loaded on import'; "
        f"clobkit.OrderSigner({DEV_KEY!r}); assert 'coincurve' in sys.modules"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# ---------------------------------------------------------------- peers' fixed vectors


def test_rs_clob_client_v2_post_order_vector() -> None:
    """Polymarket/rs-clob-client-v2 tests/clob.rs, ``post_order_should_succeed``: the
    default (all-zero) V2 order on Polygon's CTF exchange V2, signed with the dev key
    (tests/common/mod.rs PRIVATE_KEY), is sent with this signature."""
    message = {
        "salt": 0,
        "maker": ZERO_ADDRESS,
        "signer": ZERO_ADDRESS,
        "tokenId": 0,
        "makerAmount": 0,
        "takerAmount": 0,
        "side": 0,
        "signatureType": 0,
        "timestamp": 0,
        "metadata": bytes(32),
        "builder": bytes(32),
    }
    oid = oracle.order_id(137, V2_CTF, "2", message)
    assert OrderSigner(DEV_KEY).sign(oid) == (
        "0x8a6edfe94a2169c3d05673521b53b7aee2205288f1363f1c9e24716317eebe6a"
        "17ca4bc397b85a5f39be21f32d0d8b38e0fd6de6af091dc0f4ba1f667d1883981c"
    )


# Polymarket/py-clob-client-v2 tests/order_utils/test_exchange_order_builder_v2.py:
# a POLY_1271 order on Amoy (80002) for the deposit wallet 0x1111...1111, signed
# with the dev key; EXPECTED_POLY_1271_SIGNATURE and the order hash.
PY_V2_POLY_1271 = (
    "0xa3a093c83b6c20c83355c16ce94c92e6e9fcbdeb840618cc74f6c57a42ad145b"
    "2b98db73d2c73cbf1f2b6af288566ae81960ddbc3a13921027358a8bff3be6ff1c"
    "a440cbd865bc0c6243d7a8df9a8bf48a8827b0a4abbb61c30e96d305423af148"
    "d23d42d3ad94e65d78258cecaf8dcbaddac0f73dc085040f2c12bb595dd83804"
    "4f726465722875696e743235362073616c742c61646472657373206d616b65722c"
    "61646472657373207369676e65722c75696e7432353620746f6b656e49642c75"
    "696e74323536206d616b6572416d6f756e742c75696e743235362074616b6572"
    "416d6f756e742c75696e743820736964652c75696e7438207369676e61747572"
    "65547970652c75696e743235362074696d657374616d702c6279746573333220"
    "6d657461646174612c62797465733332206275696c6465722900ba"
)
PY_V2_POLY_1271_HASH = "0x2afca94626db91b2d556c351584a4cd93e13da32e377dc48c7983e43afa5ab47"
DEPOSIT_WALLET = "0x1111111111111111111111111111111111111111"
PY_V2_MESSAGE = {
    "salt": 479249096354,
    "maker": DEPOSIT_WALLET,
    "signer": DEPOSIT_WALLET,
    "tokenId": 1234,
    "makerAmount": 100000000,
    "takerAmount": 50000000,
    "side": 0,
    "signatureType": 3,
    "timestamp": 1710000000000,
    "metadata": bytes(32),
    "builder": bytes(32),
}


def test_py_clob_client_v2_poly_1271_vector() -> None:
    signable = oracle.order_signable(80002, V2_CTF, "2", PY_V2_MESSAGE)
    assert oracle.order_id(80002, V2_CTF, "2", PY_V2_MESSAGE) == PY_V2_POLY_1271_HASH
    got = wrap_poly_1271(
        OrderSigner(DEV_KEY),
        bytes(signable.header),
        bytes(signable.body),
        80002,
        DEPOSIT_WALLET,
        oracle.ORDER_TYPE_V2,
    )
    assert got == PY_V2_POLY_1271
    assert got == oracle.poly_1271_signature(
        80002, V2_CTF, "2", PY_V2_MESSAGE, DEPOSIT_WALLET, int(DEV_KEY, 16)
    )


# ---------------------------------------------------------------- POLY_1271 against the peer

bytes32 = st.one_of(st.just(bytes(32)), st.binary(min_size=32, max_size=32))
uint = st.one_of(st.integers(0, 2**64), st.integers(0, 2**256 - 1))
addresses = st.binary(min_size=20, max_size=20).map(
    lambda b: Account.from_key(b"\x01" * 32).address if b == bytes(20) else "0x" + b.hex()
)


@settings(max_examples=examples(150))
@given(
    salt=uint,
    token=uint,
    maker_amount=uint,
    taker_amount=uint,
    side=st.sampled_from([0, 1]),
    timestamp=st.integers(0, 2**64),
    metadata=bytes32,
    builder=bytes32,
    wallet=addresses,
    chain=st.sampled_from([137, 80002]),
    exchange=st.sampled_from([V2_CTF, V2_NEG_RISK]),
    key=keys,
)
def test_poly_1271_equals_eth_account_typed_data_and_py_clob_client_v2(
    salt: int,
    token: int,
    maker_amount: int,
    taker_amount: int,
    side: int,
    timestamp: int,
    metadata: bytes,
    builder: bytes,
    wallet: str,
    chain: int,
    exchange: str,
    key: int,
) -> None:
    from eth_utils import to_checksum_address
    from py_clob_client_v2.order_utils.exchange_order_builder_v2 import ExchangeOrderBuilderV2
    from py_clob_client_v2.signer import Signer

    wallet = to_checksum_address(wallet)
    message = {
        "salt": salt,
        "maker": wallet,
        "signer": wallet,
        "tokenId": token,
        "makerAmount": maker_amount,
        "takerAmount": taker_amount,
        "side": side,
        "signatureType": 3,
        "timestamp": timestamp,
        "metadata": metadata,
        "builder": builder,
    }
    signable = oracle.order_signable(chain, exchange, "2", message)
    app_domain, contents = bytes(signable.header), bytes(signable.body)
    key_hex = "0x" + key.to_bytes(32, "big").hex()
    got = wrap_poly_1271(
        OrderSigner(key_hex), app_domain, contents, chain, wallet, oracle.ORDER_TYPE_V2
    )
    assert got == oracle.poly_1271_signature(chain, exchange, "2", message, wallet, key)
    assert typed_data_sign_digest(
        app_domain, contents, chain, wallet.lower(), oracle.ORDER_TYPE_V2
    ) == oracle.poly_1271_digest(chain, exchange, "2", message, wallet)
    peer = ExchangeOrderBuilderV2(exchange, chain, Signer(key_hex, chain))
    typed = {
        "message": {
            **message,
            "metadata": "0x" + metadata.hex(),
            "builder": "0x" + builder.hex(),
        }
    }
    assert got == peer._build_poly_1271_order_signature(typed)


def test_poly_1271_wrapper_refuses_bad_input() -> None:
    signer = OrderSigner(DEV_KEY)
    word = bytes(32)
    with pytest.raises(OrderFieldError) as info:
        wrap_poly_1271(signer, b"\x00" * 31, word, 137, DEPOSIT_WALLET, oracle.ORDER_TYPE_V2)
    assert info.value.field == "app_domain"
    with pytest.raises(OrderFieldError) as info:
        wrap_poly_1271(signer, word, "0x" + "00" * 32, 137, DEPOSIT_WALLET, oracle.ORDER_TYPE_V2)  # type: ignore[arg-type]
    assert info.value.field == "contents"
    with pytest.raises(OrderFieldError) as info:
        wrap_poly_1271(signer, word, word, 137, "0x1234", oracle.ORDER_TYPE_V2)
    assert info.value.field == "wallet"
    with pytest.raises(OrderFieldError) as info:
        wrap_poly_1271(DEV_KEY, word, word, 137, DEPOSIT_WALLET, oracle.ORDER_TYPE_V2)  # type: ignore[arg-type]
    assert info.value.field == "signer"
    assert DEV_KEY[2:] not in str(info.value)


def _sign_in_child(conn: Any, ids: list[str]) -> None:
    conn.send(OrderSigner(DEV_KEY).sign_many(ids, threads=2))
    conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_sign_many_threads_after_fork() -> None:
    """A forked child has none of the parent's pool threads: it must start its own."""
    import multiprocessing

    signer = OrderSigner(DEV_KEY)
    ids = ["0x" + f"{i:064x}" for i in range(1, 41)]
    want = signer.sign_many(ids, threads=2)  # the parent's pool now exists
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_sign_in_child, args=(child, ids))
    proc.start()
    try:
        assert parent.poll(60), "the forked child never answered (pool threads lost?)"
        assert parent.recv() == want
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    assert proc.exitcode == 0


KEY = "0x" + "11" * 32


@pytest.mark.parametrize("batch", [5, None, 1.5, "0x" + "ab" * 32, np.array(b"x" * 32)])
def test_sign_many_names_a_batch_that_is_not_a_sequence(batch: Any) -> None:
    with pytest.raises(OrderFieldError) as info:
        OrderSigner(KEY).sign_many(batch)
    assert info.value.field == "order_ids"


def test_sign_many_reads_an_s32_array_whole() -> None:
    ids = [bytes.fromhex("cd" * 16 + "00" * 16), bytes.fromhex("00" * 31 + "01")]
    signer = OrderSigner(KEY)
    assert signer.sign_many(np.array(ids, dtype="S32")) == signer.sign_many(ids)
