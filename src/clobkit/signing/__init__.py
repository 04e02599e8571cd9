"""Order signing (public): ``OrderSigner`` (a local secp256k1 key), the ``Signer`` /
``AsyncSigner`` protocols and the KMS signers (``AwsKmsSigner``, ``GcpKmsSigner``),
``SignedOrder`` and what ``OrderHasher.sign`` / ``sign_many`` call.

A signature is 65 bytes ``r || s || v`` (v 27/28, low s, RFC 6979 nonces), the bytes
eth-account produces. One module a job:

- ``keys``: the private key, held unseen (never in a repr, an error or a log), and
  order ids read as digests; ``OrderSigner``;
- ``typed_data``: the EIP-712 / ERC-7739 typed-data hashing of a POLY_1271 (deposit
  wallet) order;
- ``batch``: libsecp256k1 (``secp``'s backend) and the native batch path: the compiled
  core's workers hash and sign with no Python object per order; the pure twin's
  batches over Python threads;
- ``hasher``: ``sign_order`` / ``sign_orders``, behind ``OrderHasher.sign`` /
  ``sign_many`` of both twins;
- ``protocol``, ``orders`` (any signer, async), and the remote signers: ``remote``,
  ``ecdsa``, ``budget``, ``home``, ``aws``, ``gcp``.

The C code reaches libsecp256k1 through the addresses of two of its functions in
coincurve's compiled module, which coincurve does not make public: ``secp.load``
takes that path only after checking, when first needed, that the module declares
them as the C code calls them and that known digests sign through it exactly as
through coincurve's public API; otherwise it signs through the public API (with a
logged warning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .hasher import SignedOrder, sign_order, sign_orders, wrap_poly_1271
from .hasher import check_signer as check_signer  # the client checks a raw order's signer
from .keys import OrderSigner, parse_order_id
from .protocol import AsyncSigner, Signer
from .typed_data import typed_data_sign_digest

__all__ = [
    "AsyncSigner",
    "AwsKmsSigner",
    "GcpKmsSigner",
    "OrderSigner",
    "SignedOrder",
    "Signer",
    "parse_order_id",
    "sign_order",
    "sign_order_async",
    "sign_orders",
    "sign_orders_async",
    "typed_data_sign_digest",
    "wrap_poly_1271",
]

if TYPE_CHECKING:
    from .aws import AwsKmsSigner as AwsKmsSigner
    from .gcp import GcpKmsSigner as GcpKmsSigner
    from .orders import sign_order_async as sign_order_async
    from .orders import sign_orders_async as sign_orders_async

# loaded on first use: the KMS signers (their SDKs are extras) and the async paths
_LAZY = {
    "AwsKmsSigner": ".aws",
    "GcpKmsSigner": ".gcp",
    "sign_order_async": ".orders",
    "sign_orders_async": ".orders",
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(where, __package__), name)
    globals()[name] = value
    return value
