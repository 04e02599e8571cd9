"""The order version from the wallet's exchange addresses, and the wallet's fields (issue #10)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from eth_utils import to_checksum_address

from clobkit import WalletInfo
from clobkit.errors import OrderFieldError

from .oracle import eth_account_order_id, eth_account_order_id_v2

V1 = ("0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E", "0xC5d563A36AE78145C45a50134d48A1215220f80a")
V2 = ("0xE111180000d2663C0091e4f400237545B87B996B", "0xe2222d279d744050d28e00520010520000310F59")
V3 = "0xe3333700cA9d93003F00f0F71f8515005F6c00Aa"
AMOY_V1_CTF = "0xdFE02Eb6733538f8Ea35D585af8DE5958AD99E40"
AMOY_V3 = "0x9fE6e61422AdB6F610d8597F9684b16912D50C3D"
OTHER = "0x3333333333333333333333333333333333333333"
BASE: dict[str, Any] = {
    "maker": "0xabcdefabcdefabcdefabcdefabcdefabcdefabcd",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
}
ORDER = {"token_id": 1, "maker_amount": 2, "taker_amount": 3, "side": 0, "salt": 4}


def wallet(ctf: str, neg: str, **extra: Any) -> dict[str, Any]:
    return BASE | {"ctf_exchange": ctf, "neg_risk_exchange": neg} | extra


@pytest.mark.parametrize(
    ("ctf", "neg", "version"),
    [
        (V1[0], V1[1], 1),
        (AMOY_V1_CTF, V1[1], 1),
        (V2[0], V2[1], 2),
        (V3, V3, 3),
        (AMOY_V3, AMOY_V3, 3),
        (V3, OTHER, 3),  # a known contract decides; an unknown one is neutral
        (OTHER, V2[1], 2),
        (OTHER, OTHER, 1),  # the API text's flow
        (V2[0].lower(), V2[1].upper().replace("0X", "0x"), 2),
    ],
)
@pytest.mark.parametrize("chain_id", [137, 80002])
def test_version_from_addresses(
    core: ModuleType, ctf: str, neg: str, version: int, chain_id: int
) -> None:
    w = wallet(ctf, neg, chain_id=chain_id)
    hasher = core.OrderHasher(w)
    assert hasher.version == version
    assert f"version={version}" in repr(hasher)
    oracle_wallet = w | {"ctf_exchange": to_checksum_address(ctf)}
    oracle_wallet["neg_risk_exchange"] = to_checksum_address(neg)
    for neg_risk in (False, True):
        if version == 1:
            want = eth_account_order_id(
                oracle_wallet, ORDER | {"fee_rate_bps": 0, "nonce": 0, "expiration": 0}, neg_risk
            )
            assert hasher.order_id(**ORDER, neg_risk=neg_risk) == want
        else:
            order = ORDER | {"timestamp": 5}
            want = eth_account_order_id_v2(oracle_wallet, order, neg_risk, version)
            assert hasher.order_id(**order, neg_risk=neg_risk) == want


@pytest.mark.parametrize(
    ("ctf", "neg", "named"),
    [(V2[0], V1[1], "V1"), (V1[0], V2[1], "V2"), (V3, V2[1], "V2"), (AMOY_V1_CTF, V3, "V3")],
)
def test_mixed_wallet_refused_unless_explicit(
    core: ModuleType, ctf: str, neg: str, named: str
) -> None:
    w = wallet(ctf, neg)
    with pytest.raises(OrderFieldError) as info:
        core.OrderHasher(w)
    assert info.value.field == "wallet.neg_risk_exchange"
    assert info.value.value == neg
    assert f"is a {named} exchange" in str(info.value)
    for version in (1, 2, 3):  # an explicit version wins
        assert core.OrderHasher(w, version=version).version == version


def test_explicit_version_wins(core: ModuleType) -> None:
    w = wallet(*V1)
    assert core.OrderHasher(w, version=None).version == 1
    v2 = core.OrderHasher(w, version=2)
    assert v2.version == 2
    order = ORDER | {"timestamp": 5}
    assert v2.order_id(**order) == eth_account_order_id_v2(w, order, False, 2)
    v1 = core.OrderHasher(wallet(*V2), version=1)
    assert v1.order_id(**ORDER) == eth_account_order_id(
        wallet(*V2), ORDER | {"fee_rate_bps": 0, "nonce": 0, "expiration": 0}, False
    )
    # the domain's version is what differs between V2 and V3 ids
    assert core.OrderHasher(w, version=2).order_id(**order) != core.OrderHasher(
        w, version=3
    ).order_id(**order)


@pytest.mark.parametrize("value", [0, 4, "2", 2.0, True, -1])
def test_bad_version(core: ModuleType, value: object) -> None:
    with pytest.raises(OrderFieldError) as info:
        core.OrderHasher(wallet(*V2), version=value)
    assert info.value.field == "version"


def test_signature_types(core: ModuleType) -> None:
    for sig_type in (0, 1, 2, 3):
        hasher = core.OrderHasher(wallet(*V2, signature_type=sig_type))
        assert hasher.signature_type == sig_type
    for sig_type in (0, 1, 2):
        assert core.OrderHasher(wallet(*V1, signature_type=sig_type)).signature_type == sig_type
    with pytest.raises(OrderFieldError, match="POLY_1271") as info:
        core.OrderHasher(wallet(*V1, signature_type=3))
    assert info.value.field == "wallet.signature_type"
    assert core.OrderHasher(wallet(*V1, signature_type=3), version=2).signature_type == 3
    for bad in (4, 255, -1):
        with pytest.raises(OrderFieldError) as info:
            core.OrderHasher(wallet(*V2, signature_type=bad))
        assert info.value.field == "wallet.signature_type"


def test_read_only_fields(core: ModuleType) -> None:
    w = wallet(*V2, chain_id=80002)
    hasher = core.OrderHasher(w)
    assert (hasher.version, hasher.signature_type, hasher.chain_id) == (2, 2, 80002)
    assert hasher.maker == to_checksum_address(BASE["maker"])
    assert hasher.maker != BASE["maker"]  # EIP-55, not as given
    assert hasher.signer == to_checksum_address(BASE["signer"])
    big = core.OrderHasher(wallet(*V1, chain_id=2**100))
    assert big.chain_id == 2**100
    for name in ("version", "signature_type", "chain_id", "maker", "signer"):
        with pytest.raises(AttributeError):
            setattr(hasher, name, 1)


def test_wallet_info_defaults_are_v1(core: ModuleType) -> None:
    info = WalletInfo(maker=BASE["maker"], signer=BASE["signer"])
    assert (info.ctf_exchange, info.neg_risk_exchange) == V1
    assert core.OrderHasher(info).version == 1
    amoy = WalletInfo(
        maker=BASE["maker"],
        signer=BASE["signer"],
        chain_id=80002,
        signature_type=3,
        ctf_exchange=V2[0],
        neg_risk_exchange=V2[1],
    )
    hasher = core.OrderHasher(amoy)
    assert (hasher.version, hasher.chain_id, hasher.signature_type) == (2, 80002, 3)
