"""Orders signed on the event loop by any ``AsyncSigner``: ``sign_order_async`` /
``sign_orders_async`` hash locally (fast) and request the signatures concurrently,
then put them back with their ids (``hasher``'s ``signable``, ``batch_of``,
``joined``: the same digests the sync ``sign_order_with`` hands a ``Signer``).
Types 0-2 need the wallet's own signer (checked before anything is signed); a
deposit wallet (type 3) is checked by its contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .hasher import SignedOrder, batch_of, check_signer, joined, signable
from .keys import OrderSigner
from .protocol import AsyncSigner, as_async_signer

__all__ = ["sign_order_async", "sign_orders_async"]


async def sign_order_async(
    hasher: Any, signer: AsyncSigner, order: Mapping[str, Any]
) -> SignedOrder:
    """The order (``hasher.sign``'s keywords, as a mapping) signed by ``signer``
    without blocking the loop: ``SignedOrder(order_id, signature)``."""
    signer = as_async_signer(signer)
    check_signer(hasher, signer)
    if isinstance(signer, OrderSigner):
        from .hasher import sign_order

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

        from .hasher import sign_orders

        return await asyncio.to_thread(sign_orders, hasher, signer, columns, threads)
    ids, digests, tails = batch_of(hasher, columns, threads)
    return joined(ids, await signer.sign_digests(digests), tails)
