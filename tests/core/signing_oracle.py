"""Independent oracles for order signing: eth-account's EIP-712 and ECDSA, eth-keys' pure backend.

Nothing here shares code with clobkit: the V2 Order struct and the ERC-7739
TypedDataSign wrapper are written out as typed data and handed to
eth-account's ``encode_typed_data``, which derives type strings, type hashes
and struct hashes on its own.
"""

from __future__ import annotations

from typing import Any

from eth_account import Account
from eth_account.messages import _hash_eip191_message, encode_typed_data
from eth_keys import KeyAPI
from eth_keys.backends import NativeECCBackend

N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # secp256k1 order

# The Order type string of the V2/V3 exchange, as py-clob-client-v2 spells it
# (py_clob_client_v2/order_utils/exchange_order_builder_v2.py, ORDER_TYPE_STRING).
ORDER_TYPE_V2 = (
    "Order(uint256 salt,address maker,address signer,uint256 tokenId,"
    "uint256 makerAmount,uint256 takerAmount,uint8 side,uint8 signatureType,"
    "uint256 timestamp,bytes32 metadata,bytes32 builder)"
)
ORDER_V2 = [
    {"name": "salt", "type": "uint256"},
    {"name": "maker", "type": "address"},
    {"name": "signer", "type": "address"},
    {"name": "tokenId", "type": "uint256"},
    {"name": "makerAmount", "type": "uint256"},
    {"name": "takerAmount", "type": "uint256"},
    {"name": "side", "type": "uint8"},
    {"name": "signatureType", "type": "uint8"},
    {"name": "timestamp", "type": "uint256"},
    {"name": "metadata", "type": "bytes32"},
    {"name": "builder", "type": "bytes32"},
]
DOMAIN = [
    {"name": "name", "type": "string"},
    {"name": "version", "type": "string"},
    {"name": "chainId", "type": "uint256"},
    {"name": "verifyingContract", "type": "address"},
]
TYPED_DATA_SIGN = [
    {"name": "contents", "type": "Order"},
    {"name": "name", "type": "string"},
    {"name": "version", "type": "string"},
    {"name": "chainId", "type": "uint256"},
    {"name": "verifyingContract", "type": "address"},
    {"name": "salt", "type": "bytes32"},
]

_NATIVE = KeyAPI(NativeECCBackend)


def eth_account_sign(digest: bytes, key: int | bytes) -> str:
    """``Account.unsafe_sign_hash``'s r || s || v, as ``0x`` hex."""
    raw = key if isinstance(key, bytes) else key.to_bytes(32, "big")
    return "0x" + bytes(Account.unsafe_sign_hash(digest, raw).signature).hex()


def native_sign(digest: bytes, key: int) -> str:
    """eth-keys' pure-Python ECDSA (no libsecp256k1): r || s || v with v = 27 + recid."""
    sig = _NATIVE.ecdsa_sign(digest, _NATIVE.PrivateKey(key.to_bytes(32, "big")))
    return f"0x{sig.r:064x}{sig.s:064x}{sig.v + 27:02x}"


def domain(chain_id: int, exchange: str, version: str) -> dict[str, Any]:
    return {
        "name": "Polymarket CTF Exchange",
        "version": version,
        "chainId": chain_id,
        "verifyingContract": exchange,
    }


def order_signable(chain_id: int, exchange: str, version: str, message: dict[str, Any]) -> Any:
    """eth-account's SignableMessage of a V2/V3 order: header = domain separator,
    body = hashStruct(order)."""
    return encode_typed_data(
        full_message={
            "types": {"EIP712Domain": DOMAIN, "Order": ORDER_V2},
            "primaryType": "Order",
            "domain": domain(chain_id, exchange, version),
            "message": message,
        }
    )


def order_id(chain_id: int, exchange: str, version: str, message: dict[str, Any]) -> str:
    return "0x" + _hash_eip191_message(order_signable(chain_id, exchange, version, message)).hex()


def poly_1271_digest(
    chain_id: int, exchange: str, version: str, message: dict[str, Any], wallet: str
) -> bytes:
    """ERC-7739: the order nested as ``contents`` of TypedDataSign, under the exchange's domain."""
    signable = encode_typed_data(
        full_message={
            "types": {"EIP712Domain": DOMAIN, "TypedDataSign": TYPED_DATA_SIGN, "Order": ORDER_V2},
            "primaryType": "TypedDataSign",
            "domain": domain(chain_id, exchange, version),
            "message": {
                "contents": message,
                "name": "DepositWallet",
                "version": "1",
                "chainId": chain_id,
                "verifyingContract": wallet,
                "salt": bytes(32),
            },
        }
    )
    return _hash_eip191_message(signable)


def poly_1271_signature(
    chain_id: int, exchange: str, version: str, message: dict[str, Any], wallet: str, key: int
) -> str:
    """ecdsa(65) || domain separator || struct hash || type string || uint16 length."""
    signable = order_signable(chain_id, exchange, version, message)
    digest = poly_1271_digest(chain_id, exchange, version, message, wallet)
    text = ORDER_TYPE_V2.encode()
    tail = bytes(signable.header) + bytes(signable.body) + text + len(text).to_bytes(2, "big")
    return eth_account_sign(digest, key) + tail.hex()
