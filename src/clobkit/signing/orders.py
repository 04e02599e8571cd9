"""Orders signed by any signer: the digests a wallet's orders need (the order id, or
for a deposit wallet its ERC-7739 wrapper), handed to a ``Signer`` or an
``AsyncSigner`` as one batch, and the signatures put back with their ids.

``hasher.sign`` / ``sign_many`` come here for a signer other than the local
``OrderSigner`` (whose batches are hashed and signed in the compiled core's
workers); ``sign_order_async`` / ``sign_orders_async`` are the same for the event
loop: the hashing is local and fast, the signatures are requested concurrently.
Types 0-2 need the wallet's own signer (checked before anything is signed); a
deposit wallet (type 3) is checked by its contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import OrderSigner, SignedOrder, check_signer
from .erc7739 import is_poly_1271, poly_1271_one, poly_1271_rows
from .protocol import AsyncSigner, Signer, as_async_signer, as_signer

__all__ = [
    "sign_order_async",
    "sign_order_with",
    "sign_orders_async",
    "sign_orders_with",
    "signable",
]


def signable(hasher: Any, order: Mapping[str, Any]) -> tuple[str, bytes, str]:
    """(the order's id, the digest to sign, what follows the signature)."""
    if is_poly_1271(hasher):
        return poly_1271_one(hasher, order)
    order_id: str = hasher.order_id(**order)
    return order_id, bytes.fromhex(order_id[2:]), ""


def _batch(
    hasher: Any, columns: Mapping[str, Any], threads: int | None
) -> tuple[list[str], list[bytes], list[str] | None]:
    if "out" in columns:
        from ..errors import OrderFieldError

        raise OrderFieldError("out", columns["out"], "is not an argument of sign_many")
    if is_poly_1271(hasher):
        return poly_1271_rows(hasher, columns, threads)
    ids: list[str] = hasher.order_ids(**columns, threads=threads)
    return ids, [bytes.fromhex(i[2:]) for i in ids], None


def _joined(ids: list[str], signatures: list[str], tails: list[str] | None) -> list[SignedOrder]:
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
    ids, digests, tails = _batch(hasher, columns, threads)
    return _joined(ids, signer.sign_many(digests), tails)


async def sign_order_async(
    hasher: Any, signer: AsyncSigner, order: Mapping[str, Any]
) -> SignedOrder:
    """The order (``hasher.sign``'s keywords, as a mapping) signed by ``signer``
    without blocking the loop: ``SignedOrder(order_id, signature)``."""
    signer = as_async_signer(signer)
    check_signer(hasher, signer)
    if isinstance(signer, OrderSigner):
        from . import sign_order

        return sign_order(hasher, signer, order)  # one local signature: tens of µs
    order_id, digest, tail = signable(hasher, order)
    return SignedOrder(order_id, (await signer.sign_digests([digest]))[0] + tail)


async def sign_orders_async(
    hasher: Any, signer: AsyncSigner, columns: Mapping[str, Any], threads: int | None = None
) -> list[SignedOrder]:
    """``hasher.sign_many``'s columns signed by ``signer``: hashed locally (``threads``),
    the signatures requested concurrently (a KMS signer, within its budget), in order.
    A failure signs nothing: the batch is whole or raises."""
    signer = as_async_signer(signer)
    check_signer(hasher, signer)
    if isinstance(signer, OrderSigner):
        import asyncio

        from . import sign_orders

        return await asyncio.to_thread(sign_orders, hasher, signer, columns, threads)
    ids, digests, tails = _batch(hasher, columns, threads)
    return _joined(ids, await signer.sign_digests(digests), tails)
