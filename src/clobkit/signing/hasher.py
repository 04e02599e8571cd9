"""Orders signed for a wallet: what ``OrderHasher.sign`` and ``sign_many`` of both
twins call (``sign_order``, ``sign_orders``), the signer's check against the wallet
(``check_signer``) and the POLY_1271 signature (``wrap_poly_1271``).

Signature types 0-2 sign the order id with the wallet's signer key; type 3
(POLY_1271, a deposit wallet) signs the ERC-7739 ``TypedDataSign`` wrapper of the
order (``typed_data``) and sends the wrapped signature the deposit wallet verifies.
With the compiled core live, a batch is hashed and signed in its native workers
(``batch``). Any other ``Signer`` (a KMS signer's sync twin) signs through
``orders``. The twins import this module when they first sign, and nothing here
imports a twin: the live core comes from ``core.choice``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..core.choice import keccak256
from ..core.parse import BATCH_KEYWORDS, parse_threads
from ..core.wallet import parse_address
from ..errors import OrderFieldError
from . import batch
from .keys import OrderSigner
from .protocol import Signer, as_signer, signer_address
from .typed_data import (
    Wrapper,
    is_poly_1271,
    poly_1271_one,
    poly_1271_rows,
    word,
    wrapper_of,
)

__all__ = [
    "SignedOrder",
    "batch_of",
    "check_signer",
    "joined",
    "sign_order",
    "sign_order_with",
    "sign_orders",
    "sign_orders_with",
    "signable",
    "wrap_poly_1271",
]


class SignedOrder(NamedTuple):
    """An order id and its signature, both ``"0x"`` hex."""

    order_id: str
    signature: str


def wrap_poly_1271(
    signer: OrderSigner,
    app_domain: bytes,
    contents: bytes,
    chain_id: int,
    wallet: str,
    order_type: str,
) -> str:
    """The POLY_1271 order signature: ``ecdsa(65) || app_domain || contents ||
    order_type || uint16 len(order_type)`` as ``"0x"`` hex (see ``typed_data_sign_digest``)."""
    _check_signer_object(signer)
    wrapper = Wrapper(chain_id, parse_address(wallet, "wallet", keccak256), order_type)
    app_domain, contents = word(app_domain, "app_domain"), word(contents, "contents")
    digest = wrapper.digest(app_domain, contents)
    return batch.sign_hex(signer._key, digest) + wrapper.suffix(app_domain, contents)


def _check_signer_object(signer: object) -> None:
    if not isinstance(signer, OrderSigner):
        # never echo the value: it may be a key passed by mistake
        raise OrderFieldError(
            "signer", type(signer).__name__, "must be an OrderSigner (OrderSigner(private_key))"
        )


def check_signer(hasher: Any, signer: object) -> str:
    """The signer's address, checked: for types 0-2 the exchange recovers the wallet's
    signer from the signature, so it must be the wallet's (type 3 signs for a deposit
    wallet it owns: the contract checks it)."""
    address = signer_address(signer)
    if not is_poly_1271(hasher) and address.lower() != hasher.signer.lower():
        raise OrderFieldError(
            "signer",
            address,
            f"is not this wallet's signer {hasher.signer}; signature type "
            f"{hasher.signature_type} needs the signer's own key",
        )
    return address


def sign_order(hasher: Any, signer: Signer, order: Mapping[str, Any]) -> SignedOrder:
    """``OrderHasher.sign``: the order's id and its signature for the hasher's wallet
    (any ``Signer``: a KMS signer's sync twin signs through ``_signers.orders``)."""
    if not isinstance(signer, OrderSigner):
        return sign_order_with(hasher, signer, order)
    if is_poly_1271(hasher):
        order_id, digest, tail = poly_1271_one(hasher, order)
        return SignedOrder(order_id, batch.sign_hex(signer._key, digest) + tail)
    check_signer(hasher, signer)
    order_id = hasher.order_id(**order)
    return SignedOrder(order_id, batch.sign_hex(signer._key, bytes.fromhex(order_id[2:])))


def sign_orders(
    hasher: Any, signer: Signer, columns: Mapping[str, Any], threads: int | None
) -> list[SignedOrder]:
    """``OrderHasher.sign_many``: ``SignedOrder`` of each order of a batch, in order.

    A bad value is named by its index and nothing is returned. With the
    compiled twin each order is hashed and signed in its native workers
    (``threads`` of them), POLY_1271's ERC-7739 wrapper included. The pure twin
    hashes the batch, then signs over ``threads`` Python threads.
    """
    if "out" in columns:  # order_ids' choice of result: the signed orders have one shape
        raise OrderFieldError("out", columns["out"], "is not an argument of sign_many")
    if not isinstance(signer, OrderSigner):
        return sign_orders_with(hasher, signer, columns, threads)
    workers = parse_threads(threads)
    core = batch.native()
    native = core is not None and isinstance(hasher, core.OrderHasher) and _batch_keys(columns)
    wrap = None
    if is_poly_1271(hasher):
        if not native:
            return _sign_poly_1271_rows(hasher, signer, columns, threads, workers)
        # each order's struct hash wrapped (ERC-7739) in the native workers too, from
        # the wrapper's words computed once here
        wrapper = wrapper_of(hasher)
        wrap = (wrapper.head, wrapper.tail, wrapper.type_text)
    else:
        check_signer(hasher, signer)
    if native:  # hashed and signed in the native workers, no Python object per order
        signed: list[SignedOrder] = hasher._sign_many(
            batch.handle(), signer._key_at(), threads, columns, wrap
        )
        return signed
    ids: list[str] = hasher.order_ids(**columns, threads=threads)
    digests = [bytes.fromhex(i[2:]) for i in ids]
    return list(map(SignedOrder, ids, batch.sign_batch(signer._key, digests, workers)))


def _sign_poly_1271_rows(
    hasher: Any, signer: OrderSigner, columns: Mapping[str, Any], threads: Any, workers: int
) -> list[SignedOrder]:
    """POLY_1271 ``sign_many`` row by row in Python: the pure twin's way (the compiled
    twin wraps and signs in its workers)."""
    ids, digests, tails = poly_1271_rows(hasher, columns, threads)
    signatures = batch.sign_batch(signer._key, digests, workers)  # through the backend
    return [SignedOrder(i, s + t) for i, s, t in zip(ids, signatures, tails, strict=True)]


_KEYWORDS = frozenset(BATCH_KEYWORDS.values())
_REQUIRED = frozenset(("token_ids", "maker_amounts", "taker_amounts", "sides", "salts"))


def _batch_keys(columns: Mapping[str, Any]) -> bool:
    """``order_ids``' keywords, the required ones given (else ``order_ids`` words the TypeError)."""
    return _REQUIRED <= columns.keys() <= _KEYWORDS


# ---------------------------------------------------------------- any other Signer


def signable(hasher: Any, order: Mapping[str, Any]) -> tuple[str, bytes, str]:
    """(the order's id, the digest to sign, what follows the signature)."""
    if is_poly_1271(hasher):
        return poly_1271_one(hasher, order)
    order_id: str = hasher.order_id(**order)
    return order_id, bytes.fromhex(order_id[2:]), ""


def batch_of(
    hasher: Any, columns: Mapping[str, Any], threads: int | None
) -> tuple[list[str], list[bytes], list[str] | None]:
    if "out" in columns:
        raise OrderFieldError("out", columns["out"], "is not an argument of sign_many")
    if is_poly_1271(hasher):
        return poly_1271_rows(hasher, columns, threads)
    ids: list[str] = hasher.order_ids(**columns, threads=threads)
    return ids, [bytes.fromhex(i[2:]) for i in ids], None


def joined(ids: list[str], signatures: list[str], tails: list[str] | None) -> list[SignedOrder]:
    if tails is None:
        return list(map(SignedOrder, ids, signatures))
    return [SignedOrder(i, s + t) for i, s, t in zip(ids, signatures, tails, strict=True)]


def sign_order_with(hasher: Any, signer: Signer, order: Mapping[str, Any]) -> SignedOrder:
    """``OrderHasher.sign`` through a ``Signer`` other than the local key."""
    signer = as_signer(signer)
    check_signer(hasher, signer)
    order_id, digest, tail = signable(hasher, order)
    return SignedOrder(order_id, signer.sign_many([digest])[0] + tail)


def sign_orders_with(
    hasher: Any, signer: Signer, columns: Mapping[str, Any], threads: int | None
) -> list[SignedOrder]:
    """``OrderHasher.sign_many`` through a ``Signer``: every order hashed (and checked)
    first, then the digests signed as one batch."""
    signer = as_signer(signer)
    check_signer(hasher, signer)
    ids, digests, tails = batch_of(hasher, columns, threads)
    return joined(ids, signer.sign_many(digests), tails)
