"""Independent checks of a signature: eth-account recovers its signer, and ``s`` is low."""

from __future__ import annotations

from eth_account import Account

N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def recovered(digest: bytes, signature: str) -> str:
    """The address eth-account recovers from a 65-byte ``r || s || v`` hex signature."""
    raw = bytes.fromhex(signature[2:132])
    return str(Account._recover_hash(digest, signature=raw))


def low_s(signature: str) -> bool:
    return int(signature[66:130], 16) <= N // 2


def address_of_spki(der: bytes) -> str:
    """A public key's address through ``cryptography`` and eth-keys (not clobkit)."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_der_public_key,
    )
    from eth_keys import keys

    point = load_der_public_key(der).public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    return str(keys.PublicKey(point[1:]).to_checksum_address())
