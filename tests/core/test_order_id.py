"""Order ids: both twins against eth-account's EIP-712 digest."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import eth_account.messages  # noqa: F401 - sets its recursion limit before hypothesis runs
import pytest
from eth_utils import to_checksum_address
from hypothesis import given, settings
from hypothesis import strategies as st

from clobkit import OrderHasher, WalletInfo, sign_order_id
from clobkit.errors import OrderFieldError, SignatureInputError

from ..conftest import examples
from .oracle import eth_account_order_id

MAX = 2**256 - 1
WALLET: dict[str, Any] = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}
UINTS = ("token_id", "maker_amount", "taker_amount", "salt", "fee_rate_bps", "nonce", "expiration")

uint256 = st.one_of(
    st.just(0),
    st.just(MAX),
    st.just(MAX - 1),
    st.just(2**64 - 1),
    st.just(2**64),
    st.just(2**63),
    st.integers(0, 10**12),
    st.integers(0, MAX),
)
orders = st.fixed_dictionaries(
    dict.fromkeys(UINTS, uint256) | {"side": st.sampled_from([0, 1]), "neg_risk": st.booleans()}
)
address = st.binary(min_size=20, max_size=20).map(lambda b: to_checksum_address(b))
wallets = st.fixed_dictionaries(
    {
        "maker": address,
        "signer": address,
        "chain_id": st.one_of(st.just(137), st.integers(1, 2**64)),
        "signature_type": st.sampled_from([0, 1, 2]),
        "ctf_exchange": st.one_of(st.just(WALLET["ctf_exchange"]), address),
        "neg_risk_exchange": st.one_of(st.just(WALLET["neg_risk_exchange"]), address),
    }
)
spelling = st.sampled_from([int, str])


def _args(order: dict[str, Any], spell: Any = int) -> dict[str, Any]:
    return {k: (spell(v) if k in UINTS else v) for k, v in order.items()}


@settings(max_examples=examples(200))
@given(wallet=wallets, batch=st.lists(orders, min_size=50, max_size=50), spell=spelling)
def test_ten_thousand_orders_match_eth_account(
    core: ModuleType, wallet: dict[str, Any], batch: list[dict[str, Any]], spell: Any
) -> None:
    """200 examples x 50 orders: singles and the batch equal eth-account's digest (the
    pure twin on 10 of each batch: eth-account's 2 ms an order is this test's time, and
    tests/core/test_twins.py holds the pure twin to the compiled one on any input)."""
    if core.__name__ == "clobkit.core.pure":
        batch = batch[:10]
    hasher = core.OrderHasher(wallet)
    want = [eth_account_order_id(wallet, o, o["neg_risk"]) for o in batch]
    assert [hasher.order_id(**_args(o, spell)) for o in batch] == want
    columns = {
        "token_ids": [spell(o["token_id"]) for o in batch],
        "maker_amounts": [spell(o["maker_amount"]) for o in batch],
        "taker_amounts": [spell(o["taker_amount"]) for o in batch],
        "sides": [o["side"] for o in batch],
        "salts": [spell(o["salt"]) for o in batch],
        "fee_rate_bps": [o["fee_rate_bps"] for o in batch],
        "nonces": tuple(o["nonce"] for o in batch),
        "expirations": [str(o["expiration"]) for o in batch],
        "neg_risk": [o["neg_risk"] for o in batch],
    }
    assert hasher.order_ids(**columns) == want


def test_known_vector(core: ModuleType) -> None:
    order = {
        "token_id": 123,
        "maker_amount": 1,
        "taker_amount": 2,
        "side": 0,
        "salt": 5,
        "fee_rate_bps": 0,
        "nonce": 0,
        "expiration": 0,
    }
    hasher = core.OrderHasher(WalletInfo(maker=WALLET["maker"], signer=WALLET["signer"]))
    got = hasher.order_id(**order)
    assert got == "0x60c20b17e69a6a1b9c70d8802edcddd0caef2f75633f8f2803bb9857e7bf3910"
    assert got == eth_account_order_id(WALLET, order, False)
    assert hasher.order_id(**order, neg_risk=True) == eth_account_order_id(WALLET, order, True)


def test_edges_every_field(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    for edge in (0, 1, 2**64 - 1, 2**64, MAX):
        for field in UINTS:
            order = dict.fromkeys(UINTS, 7) | {"side": 1, field: edge}
            for neg in (False, True):
                want = eth_account_order_id(WALLET, order, neg)
                assert hasher.order_id(**order, neg_risk=neg) == want
                assert hasher.order_id(**_args(order, str), neg_risk=neg) == want


def test_side_spellings_and_defaults(core: ModuleType) -> None:
    from clobkit import Side

    hasher = core.OrderHasher(WALLET)
    base = {"token_id": 9, "maker_amount": 10, "taker_amount": 20, "salt": 1}
    ids = {hasher.order_id(**base, side=s) for s in (1, "SELL", Side.SELL)}
    assert len(ids) == 1
    full = hasher.order_id(**base, side=0, fee_rate_bps=0, nonce=0, expiration=0, neg_risk=False)
    assert hasher.order_id(**base, side="BUY") == full
    assert hasher.order_id(**{**base, "token_id": "009"}, side="BUY") == full


@pytest.mark.slow
def test_batch_broadcast_lengths_and_threads(core: ModuleType) -> None:
    hasher = core.OrderHasher(WALLET)
    n = 40_000
    salts = list(range(n))
    ids = hasher.order_ids(
        token_ids="77", maker_amounts=10, taker_amounts=[20] * n, sides="BUY", salts=salts
    )
    assert len(ids) == n
    assert ids[12345] == hasher.order_id(
        token_id=77, maker_amount=10, taker_amount=20, side=0, salt=12345
    )
    assert (
        hasher.order_ids(
            token_ids="77",
            maker_amounts=10,
            taker_amounts=[20] * n,
            sides="BUY",
            salts=salts,
            threads=2,
        )
        == ids
    )
    assert (
        hasher.order_ids(
            token_ids="77",
            maker_amounts=10,
            taker_amounts=[20] * n,
            sides="BUY",
            salts=salts,
            threads=3,
        )
        == ids
    )
    assert (
        hasher.order_ids(token_ids=[], maker_amounts=[], taker_amounts=[], sides=[], salts=[]) == []
    )
    one = hasher.order_ids(token_ids=1, maker_amounts=2, taker_amounts=3, sides=0, salts=4)
    assert one == [hasher.order_id(token_id=1, maker_amount=2, taker_amount=3, side=0, salt=4)]
    with pytest.raises(OrderFieldError, match="salts"):
        hasher.order_ids(
            token_ids=[1, 2], maker_amounts=1, taker_amounts=1, sides=0, salts=[1, 2, 3]
        )
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(
            token_ids=["1", "2", "x"], maker_amounts=1, taker_amounts=1, sides=0, salts=0
        )
    assert info.value.field == "token_ids[2]"
    with pytest.raises(OrderFieldError) as info:
        hasher.order_ids(
            token_ids=1, maker_amounts=1, taker_amounts=1, sides=[0] * 20000 + ["S"], salts=0
        )
    assert info.value.field == "sides[20000]"
    with pytest.raises(OrderFieldError, match="threads"):
        hasher.order_ids(token_ids=1, maker_amounts=1, taker_amounts=1, sides=0, salts=0, threads=0)


BAD_UINTS = [
    -1,
    MAX + 1,
    "-1",
    "",
    " 1",
    "1 ",
    "1_000",
    "0x10",
    "1.0",
    "١٢",
    1.0,
    None,
    True,
    b"1",
    str(MAX + 1),
    "9" * 100,
    [1],
]


@pytest.mark.parametrize("field", UINTS)
@pytest.mark.parametrize("value", BAD_UINTS, ids=repr)
def test_bad_uint256(core: ModuleType, field: str, value: object) -> None:
    hasher = core.OrderHasher(WALLET)
    order: dict[str, Any] = dict.fromkeys(UINTS, 1) | {"side": 0, field: value}
    with pytest.raises(OrderFieldError) as info:
        hasher.order_id(**order)
    assert info.value.field == field
    assert field in str(info.value)


@pytest.mark.parametrize("value", [2, -1, "buy", None, True, 0.0, "0"], ids=repr)
def test_bad_side(core: ModuleType, value: object) -> None:
    with pytest.raises(OrderFieldError) as info:
        core.OrderHasher(WALLET).order_id(
            token_id=1, maker_amount=1, taker_amount=1, side=value, salt=1
        )
    assert info.value.field == "side"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("maker", "0x123"),
        ("maker", "1111111111111111111111111111111111111111"),
        ("signer", "0x" + "g" * 40),
        ("signer", 0x22),
        ("ctf_exchange", "0x4bfb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E"),  # broken checksum
        ("neg_risk_exchange", None),
        ("chain_id", 0),
        ("chain_id", "abc"),
        ("signature_type", 256),
        ("signature_type", True),
    ],
)
def test_bad_wallet(core: ModuleType, field: str, value: object) -> None:
    with pytest.raises(OrderFieldError) as info:
        core.OrderHasher(WALLET | {field: value})
    assert info.value.field == f"wallet.{field}"
    wallet = dict(WALLET)
    del wallet[field]
    with pytest.raises(OrderFieldError, match=f"wallet.{field}"):
        core.OrderHasher(wallet)


def test_wallet_spellings(core: ModuleType) -> None:
    lower = {k: (v.lower() if isinstance(v, str) else v) for k, v in WALLET.items()}
    upper = {k: ("0x" + v[2:].upper() if isinstance(v, str) else v) for k, v in WALLET.items()}
    args = {"token_id": 1, "maker_amount": 1, "taker_amount": 1, "side": 0, "salt": 1}
    ids = {
        core.OrderHasher(w).order_id(**args) for w in (WALLET, lower, upper, WalletInfo(**WALLET))
    }
    assert len(ids) == 1
    assert "0x1111111111111111111111111111111111111111" in repr(core.OrderHasher(WALLET))
    assert core.OrderHasher(WALLET).domain_separator() != core.OrderHasher(WALLET).domain_separator(
        True
    )


def test_the_saved_wallet_envelope_is_the_wallet(core: ModuleType) -> None:
    """``{"success": true, "data": ...}`` as ``GET /wallet`` answers and a user saves it:
    the hashers take it as clobkit order-ids --wallet and clobkit.dask do."""
    args = {"token_id": 1, "maker_amount": 1, "taker_amount": 1, "side": 0, "salt": 1}
    want = core.OrderHasher(WALLET).order_id(**args)
    for envelope in ({"success": True, "data": WALLET}, {"data": WALLET}):
        assert core.OrderHasher(envelope).order_id(**args) == want
    with pytest.raises(OrderFieldError, match="is a failed response: unauthorized") as info:
        core.OrderHasher({"success": False, "error": "unauthorized"})
    assert info.value.field == "wallet"
    with pytest.raises(OrderFieldError, match=r"wallet\.maker: is missing"):
        core.OrderHasher({"success": True, "data": [1]})


def test_forced_keccak_paths_agree() -> None:
    """Each compiled Keccak path, forced in turn, against eth-account."""
    core_c = pytest.importorskip("clobkit.core._core_c")
    hasher = core_c.OrderHasher(WALLET)
    batch = [
        {k: (i * 7919 + j) ** 5 % (MAX + 1) for j, k in enumerate(UINTS)} | {"side": i % 2}
        for i in range(67)
    ]
    want = [eth_account_order_id(WALLET, o, i % 3 == 0) for i, o in enumerate(batch)]
    cols = {
        "token_ids": [o["token_id"] for o in batch],
        "maker_amounts": [o["maker_amount"] for o in batch],
        "taker_amounts": [o["taker_amount"] for o in batch],
        "sides": [o["side"] for o in batch],
        "salts": [o["salt"] for o in batch],
        "fee_rate_bps": [o["fee_rate_bps"] for o in batch],
        "nonces": [o["nonce"] for o in batch],
        "expirations": [o["expiration"] for o in batch],
        "neg_risk": [i % 3 == 0 for i in range(67)],
    }
    tried = []
    try:
        for path in ("portable", "avx2", "avx512"):
            if not core_c.set_implementation(keccak=path):
                continue
            tried.append(path)
            assert core_c.implementation()["keccak"] == path
            assert hasher.order_ids(**cols) == want
            assert [hasher.order_id(**o, neg_risk=i % 3 == 0) for i, o in enumerate(batch)] == want
    finally:
        core_c.set_implementation(keccak="auto")
    assert "portable" in tried


def test_keccak256_against_pycryptodome(core: ModuleType) -> None:
    from Crypto.Hash import keccak

    for n in (0, 1, 55, 135, 136, 137, 271, 272, 1000, 5000):
        data = bytes(range(256)) * (n // 256 + 1)
        data = data[:n]
        assert core.keccak256(data) == keccak.new(data=data, digest_bits=256).digest()
    assert core.keccak256(bytearray(b"abc")) == keccak.new(data=b"abc", digest_bits=256).digest()


def test_sign_order_id_recovers_signer() -> None:
    from eth_account import Account

    account = Account.from_key("0x" + "42" * 32)
    hasher = OrderHasher(WALLET | {"signer": account.address})
    oid = hasher.order_id(token_id=1, maker_amount=1, taker_amount=2, side=0, salt=3)
    sig = sign_order_id(oid, "0x" + "42" * 32)
    assert sig.startswith("0x")
    assert len(sig) == 2 + 130
    assert int(sig[-2:], 16) in (27, 28)
    assert (
        Account._recover_hash(bytes.fromhex(oid[2:]), signature=bytes.fromhex(sig[2:]))
        == account.address
    )
    with pytest.raises(OrderFieldError, match="order_id"):
        sign_order_id("0x12", "0x" + "42" * 32)
    with pytest.raises(OrderFieldError) as info:
        sign_order_id(oid, "0x1234")
    assert "1234" not in str(info.value)


def test_compiled_twin_loaded() -> None:
    """Normal runs build the compiled twin; a silent fallback to Python is a failure."""
    import os

    import clobkit

    if os.environ.get("CLOBKIT_NO_EXTENSIONS", "") not in ("", "0"):
        assert clobkit.IMPLEMENTATION == "python"
    else:
        importlib.import_module("clobkit.core._core_c")
        assert clobkit.IMPLEMENTATION == "c"


@pytest.mark.slow
def test_batches_from_many_python_threads(core: ModuleType) -> None:
    """Callers racing for the native helper pool still get every id right."""
    from concurrent.futures import ThreadPoolExecutor

    hasher = core.OrderHasher(WALLET)
    n = 20_000
    cols = {"token_ids": "5", "maker_amounts": 1, "taker_amounts": 2, "sides": 1}
    want = hasher.order_ids(**cols, salts=list(range(n)))
    with ThreadPoolExecutor(6) as pool:
        results = list(
            pool.map(
                lambda t: hasher.order_ids(**cols, salts=list(range(n)), threads=t),
                [2, 3, 2, 4, 1, 2],
            )
        )
    assert all(r == want for r in results)


def test_batch_threads_after_fork(core: ModuleType) -> None:
    """A forked child has none of the parent's helper threads; threads= must still work."""
    import os

    hasher = core.OrderHasher(WALLET)
    n = 20_000
    cols = {"token_ids": "5", "maker_amounts": 1, "taker_amounts": 2, "sides": 0}
    want = hasher.order_ids(**cols, salts=list(range(n)), threads=2)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        ok = hasher.order_ids(**cols, salts=list(range(n)), threads=2) == want
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.read(r, 1) == b"1"
    assert status == 0


def test_checksum_address() -> None:
    from clobkit.order_id import checksum_address

    for raw in (bytes(20), b"\xff" * 20, bytes(range(20))):
        assert checksum_address(raw) == to_checksum_address(raw)
        assert checksum_address("0x" + raw.hex()) == to_checksum_address(raw)
    assert checksum_address(WALLET["ctf_exchange"].lower()) == WALLET["ctf_exchange"]
    with pytest.raises(OrderFieldError, match="address"):
        checksum_address("0x123")


def test_import_self_check_trusts_the_simd_paths_here() -> None:
    """Every SIMD Keccak path this CPU runs agrees with the portable one at import;
    one that did not would be distrusted and never used (ids stay exact, only slower)."""
    core_c = pytest.importorskip("clobkit.core._core_c")
    before = core_c.implementation()
    assert core_c.self_check() == []
    assert core_c.implementation() == before  # the check restores the path in use
    try:
        assert core_c.set_implementation(keccak="portable")
        assert core_c.self_check() == []
        assert core_c.implementation()["keccak"] == "portable"
    finally:
        core_c.set_implementation(keccak="auto")
    assert core_c.implementation() == before


@pytest.mark.parametrize("batch", [5, None, 1.5, object()])
def test_a_batch_that_is_not_iterable_is_named(core: ModuleType, batch: Any) -> None:
    with pytest.raises(SignatureInputError, match="must be an iterable") as info:
        core.RequestSigner("key", "secret").headers_many(batch)
    assert info.value.field == "requests"
