"""The POLY_1271 (deposit wallet) signature's ERC-7739 wrapper: the digest a deposit
wallet's owner signs for an order, and what follows the ECDSA signature.

The deposit wallet (Solady's ERC1271) checks nested typed data: the order is the
``contents`` of a ``TypedDataSign`` struct whose domain fields are the wallet's own
EIP-712 domain (name "DepositWallet", version "1", the chain, the wallet itself,
salt zero). The signature sent is ``ecdsa(65) || app_domain || contents ||
order_type || uint16 len(order_type)``. Shared by every signer (``signing.py``'s
local key, ``_signers.orders``' remote ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ..core import wallet as _wallet
from ..core.choice import keccak256
from ..core.columns import Column, is_columnar
from ..core.parse import BATCH_KEYWORDS, COLUMN_KINDS, batch_length, is_scalar
from ..core.wallet import parse_address
from ..errors import OrderFieldError

__all__ = [
    "DEPOSIT_WALLET_NAME",
    "DEPOSIT_WALLET_VERSION",
    "TYPED_DATA_SIGN",
    "Wrapper",
    "eip712",
    "is_poly_1271",
    "poly_1271_one",
    "poly_1271_rows",
    "typed_data_sign_digest",
    "word",
    "wrapper_of",
]

TYPED_DATA_SIGN = (
    "TypedDataSign(Order contents,string name,string version,uint256 chainId,"
    "address verifyingContract,bytes32 salt)"
)
DEPOSIT_WALLET_NAME = "DepositWallet"
DEPOSIT_WALLET_VERSION = "1"
_NAME_HASH = keccak256(DEPOSIT_WALLET_NAME.encode())
_VERSION_HASH = keccak256(DEPOSIT_WALLET_VERSION.encode())
_ZERO_WORD = bytes(32)


@lru_cache(maxsize=8)
def _typed_data_sign_typehash(order_type: str) -> bytes:
    return keccak256((TYPED_DATA_SIGN + order_type).encode())


def eip712(domain_separator: bytes, struct_hash: bytes) -> bytes:
    """EIP-712's signing digest: keccak(0x1901 || domain separator || hashStruct)."""
    return keccak256(b"\x19\x01" + domain_separator + struct_hash)


class Wrapper:
    """The per-wallet words of the POLY_1271 wrapper, computed once per call or batch."""

    __slots__ = ("head", "tail", "type_text")

    def __init__(self, chain_id: int, wallet: bytes, order_type: str) -> None:
        text = order_type.encode()
        self.type_text = text + len(text).to_bytes(2, "big")
        self.head = _typed_data_sign_typehash(order_type)
        self.tail = (
            _NAME_HASH
            + _VERSION_HASH
            + chain_id.to_bytes(32, "big")
            + wallet.rjust(32, b"\0")
            + _ZERO_WORD
        )

    def digest(self, app_domain: bytes, contents: bytes) -> bytes:
        struct = keccak256(self.head + contents + self.tail)
        return eip712(app_domain, struct)

    def suffix(self, app_domain: bytes, contents: bytes) -> str:
        """Hex of what follows the ECDSA signature: domain, contents, type string, its length."""
        return (app_domain + contents + self.type_text).hex()


def word(value: object, field: str) -> bytes:
    if isinstance(value, (bytes, bytearray)) and len(value) == 32:
        return bytes(value)
    raise OrderFieldError(field, value, "must be 32 bytes")


def typed_data_sign_digest(
    app_domain: bytes, contents: bytes, chain_id: int, wallet: str, order_type: str
) -> bytes:
    """The 32-byte digest a deposit wallet's owner signs for one order (ERC-7739).

    ``keccak(0x1901 || app_domain || hashStruct(TypedDataSign(contents, "DepositWallet",
    "1", chain_id, wallet, 0)))``; ``app_domain`` is the exchange's domain
    separator, ``contents`` the order's struct hash, ``wallet`` the deposit
    wallet (the order's signer), ``order_type`` the Order type string.
    """
    wrapper = Wrapper(chain_id, parse_address(wallet, "wallet", keccak256), order_type)
    return wrapper.digest(word(app_domain, "app_domain"), word(contents, "contents"))


# ``order_ids``' keyword -> ``order_id``'s (V2/V3: the versions a POLY_1271 wallet signs)
_ROW_KEYS = {batch: one for one, batch in BATCH_KEYWORDS.items()}


def is_poly_1271(hasher: Any) -> bool:
    # (a V1 wallet of type 3 is refused when its OrderHasher is made)
    return bool(hasher.signature_type == _wallet.POLY_1271)


def wrapper_of(hasher: Any) -> Wrapper:
    return _cached(hasher.chain_id, hasher.signer, hasher.version)


@lru_cache(maxsize=64)
def _cached(chain_id: int, signer: str, version: int) -> Wrapper:
    # The order's signer is the deposit wallet: the ERC-1271 verifying contract.
    order_type = _wallet.ORDER_TYPES[version]
    return Wrapper(chain_id, bytes.fromhex(signer[2:]), order_type)


def poly_1271_one(hasher: Any, order: Mapping[str, Any]) -> tuple[str, bytes, str]:
    """A deposit wallet's order: its id, the ERC-7739 digest its owner signs, and what
    follows the signature."""
    contents = hasher.struct_hash(**order)  # checks every field
    app_domain = hasher.domain_separator(order.get("neg_risk", False))
    # the id and the signed contents come from one struct hash
    order_id = "0x" + eip712(app_domain, contents).hex()
    wrapper = wrapper_of(hasher)
    return order_id, wrapper.digest(app_domain, contents), wrapper.suffix(app_domain, contents)


def poly_1271_rows(
    hasher: Any, columns: Mapping[str, Any], threads: Any
) -> tuple[list[str], list[bytes], list[str]]:
    """A deposit wallet's batch: the ids, the ERC-7739 digests, what follows each signature."""
    ids = hasher.order_ids(**columns, threads=threads)  # checks every row (nulls included)
    columns = {
        k: Column(v, k, COLUMN_KINDS[k]).values() if is_columnar(v) else v
        for k, v in columns.items()
    }
    n = batch_length(columns)
    scalars = {_ROW_KEYS[k]: v for k, v in columns.items() if is_scalar(v)}
    sequences = [(_ROW_KEYS[k], v) for k, v in columns.items() if not is_scalar(v)]
    wrapper = wrapper_of(hasher)
    digests = []
    tails = []
    for i in range(n):
        row = dict(scalars)
        for key, column in sequences:
            row[key] = column[i]
        app_domain = hasher.domain_separator(row.get("neg_risk", False))
        contents = hasher.struct_hash(**row)
        digests.append(wrapper.digest(app_domain, contents))
        tails.append(wrapper.suffix(app_domain, contents))
    return ids, digests, tails
