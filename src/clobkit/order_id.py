"""The exchange's ``clob_order_id``, precomputed offline, and optional ECDSA signing."""

from __future__ import annotations

from .core.select import OrderHasher, keccak256
from .core.wallet import checksum, parse_address

__all__ = ["OrderHasher", "checksum_address", "keccak256", "sign_order_id"]


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

    Signs the precomputed EIP-712 digest once on libsecp256k1 (see
    ``OrderSigner`` to sign many with one key); for signature types 0-2 the
    key must belong to the wallet's ``signer``. For the exchange's own order
    flow: the service's raw orders carry no signature.
    """
    from .signing import OrderSigner, parse_order_id

    parse_order_id(order_id)  # the id's error comes before the key's, as it always has
    return OrderSigner(private_key).sign(order_id)
