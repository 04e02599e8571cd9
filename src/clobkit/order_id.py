"""The exchange's ``clob_order_id``, precomputed offline, and optional ECDSA signing."""

from __future__ import annotations

from ._core import OrderHasher, keccak256
from ._core_py import HIDDEN
from ._wallet import checksum, parse_address
from .errors import OrderFieldError
from .models import WalletInfo

__all__ = ["OrderHasher", "WalletInfo", "checksum_address", "keccak256", "sign_order_id"]

_HEX = frozenset("0123456789abcdefABCDEF")


def checksum_address(address: str | bytes) -> str:
    """EIP-55 mixed-case form of an address (``0x`` + 40 hex digits, or 20 raw bytes)."""
    raw = (
        bytes(address)
        if isinstance(address, (bytes, bytearray)) and len(address) == 20
        else parse_address(address, "address", keccak256)
    )
    return "0x" + checksum(raw.hex(), keccak256)


def sign_order_id(order_id: str, private_key: str | bytes) -> str:
    """65-byte ECDSA signature ``r || s || v`` (v = 27/28) of an order id, as ``"0x"`` + hex.

    Signs the precomputed EIP-712 digest directly through eth-account; the
    key must belong to the wallet's ``signer``.
    """
    if (
        not isinstance(order_id, str)
        or len(order_id) != 66
        or not order_id.startswith("0x")
        or not _HEX.issuperset(order_id[2:])
    ):
        raise OrderFieldError("order_id", order_id, "must be 0x followed by 64 hex digits")
    from eth_account import Account

    try:
        signed = Account.unsafe_sign_hash(bytes.fromhex(order_id[2:]), private_key)
    except (ValueError, TypeError):
        raise OrderFieldError(
            "private_key", HIDDEN, "is not a valid secp256k1 private key"
        ) from None
    return "0x" + bytes(signed.signature).hex()
