"""Wallet parsing and the EIP-712 constants shared by both core twins.

Runs once per ``OrderHasher``; each twin passes its own Keccak-256 so the
compiled twin's constants are computed by the compiled hash.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from .errors import OrderFieldError

ORDER_TYPE = (
    "Order(uint256 salt,address maker,address signer,address taker,uint256 tokenId,"
    "uint256 makerAmount,uint256 takerAmount,uint256 expiration,uint256 nonce,"
    "uint256 feeRateBps,uint8 side,uint8 signatureType)"
)
DOMAIN_TYPE = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
DOMAIN_NAME = "Polymarket CTF Exchange"
DOMAIN_VERSION = "1"
UINT256_MAX = (1 << 256) - 1

_HEX = frozenset("0123456789abcdefABCDEF")
_WALLET_FIELDS = (
    "maker",
    "signer",
    "chain_id",
    "signature_type",
    "ctf_exchange",
    "neg_risk_exchange",
)


class PreparedWallet(NamedTuple):
    """The 32-byte ABI words an order hash needs that depend only on the wallet."""

    typehash: bytes
    maker: bytes
    signer: bytes
    taker: bytes
    signature_type: bytes
    domain_ctf: bytes
    domain_neg_risk: bytes
    chain_id: int
    signature_type_value: int


def parse_address(value: object, field: str, keccak256: Callable[[bytes], bytes]) -> bytes:
    """20 address bytes from ``0x`` + 40 hex; mixed case must be a valid EIP-55 checksum."""
    if not isinstance(value, str):
        raise OrderFieldError(field, value, "must be a 0x-prefixed hex address string")
    if len(value) != 42 or value[:2] not in ("0x", "0X") or not _HEX.issuperset(value[2:]):
        raise OrderFieldError(field, value, "must be 0x followed by 40 hex digits")
    body = value[2:]
    if body != body.lower() and body != body.upper() and body != checksum(body.lower(), keccak256):
        raise OrderFieldError(field, value, "fails its EIP-55 checksum (mistyped address?)")
    return bytes.fromhex(body)


def checksum(lower_hex: str, keccak256: Callable[[bytes], bytes]) -> str:
    """EIP-55 mixed-case form of 40 lowercase hex digits (no 0x)."""
    digest = keccak256(lower_hex.encode("ascii")).hex()
    return "".join(
        c.upper() if int(h, 16) >= 8 else c for c, h in zip(lower_hex, digest, strict=False)
    )


def _small_int(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.isascii() and value.isdigit():
            value = int(value)
        else:
            raise OrderFieldError(field, value, "must be an integer")
    if not low <= value <= high:
        raise OrderFieldError(field, value, f"must lie in [{low}, {high}]")
    return value


def _field(wallet: object, name: str) -> object:
    if isinstance(wallet, Mapping):
        if name not in wallet:
            raise OrderFieldError(f"wallet.{name}", None, "is missing")
        return wallet[name]
    try:
        return getattr(wallet, name)
    except AttributeError:
        raise OrderFieldError(f"wallet.{name}", None, "is missing") from None


def prepare_wallet(wallet: object, keccak256: Callable[[bytes], bytes]) -> PreparedWallet:
    """Validate a ``WalletInfo`` or ``GET /wallet`` data mapping and derive the constant words."""
    values = {name: _field(wallet, name) for name in _WALLET_FIELDS}
    maker = parse_address(values["maker"], "wallet.maker", keccak256)
    signer = parse_address(values["signer"], "wallet.signer", keccak256)
    ctf = parse_address(values["ctf_exchange"], "wallet.ctf_exchange", keccak256)
    neg = parse_address(values["neg_risk_exchange"], "wallet.neg_risk_exchange", keccak256)
    chain_id = _small_int(values["chain_id"], "wallet.chain_id", 1, UINT256_MAX)
    sig_type = _small_int(values["signature_type"], "wallet.signature_type", 0, 255)

    def word(raw: bytes) -> bytes:
        return raw.rjust(32, b"\0")

    domain_head = (
        keccak256(DOMAIN_TYPE.encode())
        + keccak256(DOMAIN_NAME.encode())
        + keccak256(DOMAIN_VERSION.encode())
        + chain_id.to_bytes(32, "big")
    )
    return PreparedWallet(
        typehash=keccak256(ORDER_TYPE.encode()),
        maker=word(maker),
        signer=word(signer),
        taker=bytes(32),
        signature_type=sig_type.to_bytes(32, "big"),
        domain_ctf=keccak256(domain_head + word(ctf)),
        domain_neg_risk=keccak256(domain_head + word(neg)),
        chain_id=chain_id,
        signature_type_value=sig_type,
    )
