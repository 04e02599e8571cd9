"""Order signing on libsecp256k1 (through coincurve).

``OrderSigner`` signs order ids (EIP-712 digests): 65 bytes ``r || s || v``
(v 27/28, low s, RFC 6979 nonces), the bytes eth-account produces.

Batches (``sign_many``) run in the compiled core's native worker threads:
each order is hashed and signed there, libsecp256k1 called from C with no
Python object per order. The C code reaches libsecp256k1 through the addresses
of two of its functions in coincurve's compiled module, which coincurve does not
make public: ``_secp.load`` takes that path only after checking, when first
needed, that the module declares them as the C code calls them and that known
digests sign through it exactly as through coincurve's public API; otherwise it
signs through the public API (with a logged warning). Single signatures, and
every signature under the pure twin, go through cffi, which releases the GIL
around each call.

``sign_order`` / ``sign_orders`` back ``OrderHasher.sign`` / ``sign_many``:
signature types 0-2 sign the order id with the wallet's signer key; type 3
(POLY_1271, a deposit wallet) signs the ERC-7739 ``TypedDataSign`` wrapper of
the order and sends the wrapped signature the deposit wallet verifies.

The private key lives in a cffi buffer (or coincurve's ``PrivateKey``); it never
appears in a repr, an error message or a log line.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..core.columns import is_columnar, numpy_rows
from ..core.parse import (
    BATCH_KEYWORDS,
    HIDDEN,
    parse_threads,
)
from ..core.select import keccak256
from ..core.wallet import checksum, parse_address
from ..errors import OrderFieldError
from . import secp as _secp
from .erc7739 import (
    Wrapper,
    is_poly_1271,
    poly_1271_one,
    poly_1271_rows,
    typed_data_sign_digest,
    word,
    wrapper_of,
)
from .protocol import AsyncSigner, Signer, signer_address

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


_KEY_REASON = "must be a secp256k1 private key: 0x + 64 hex digits, or 32 bytes"
_ID_REASON = "must be 0x followed by 64 hex digits (or 32 bytes)"

# libsecp256k1, chosen by the first OrderSigner (``import clobkit`` loads none of it)
_BACKEND: _secp.Backend | None = None
_LOAD_LOCK = threading.Lock()


def _compiled() -> Any:
    """The compiled core when it is the live twin, else None."""
    from ..core import select as _core

    if _core.IMPLEMENTATION != "c":
        return None
    from ..core import _core_c

    return _core_c


def _backend() -> _secp.Backend:
    global _BACKEND
    backend = _BACKEND
    if backend is None:
        with _LOAD_LOCK:
            if _BACKEND is None:
                _BACKEND = _secp.load(compiled=_compiled())
            backend = _BACKEND
    return backend


def _native() -> Any:
    """The compiled core when it signs batches (the live twin, and the backend gives it
    libsecp256k1's functions), else None."""
    if _backend().handle is None:
        return None
    return _compiled()


def _handle() -> tuple[int, int, int]:
    handle = _backend().handle
    assert handle is not None  # asked for only when _native() is the compiled core
    return handle


class SignedOrder(NamedTuple):
    """An order id and its signature, both ``"0x"`` hex."""

    order_id: str
    signature: str


# ---------------------------------------------------------------- key and digests


def _parse_key(value: object) -> bytes:
    """32 key bytes (their range is the backend's to check); every error hides the value."""
    if isinstance(value, str):
        text = value[2:] if value[:2] in ("0x", "0X") else value
        try:
            raw = bytes.fromhex(text) if len(text) == 64 else b""
        except ValueError:
            raw = b""
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
    else:
        raise OrderFieldError(
            "private_key", HIDDEN, f"must be a str or bytes, not {type(value).__name__}"
        )
    if len(raw) != 32:
        raise OrderFieldError("private_key", HIDDEN, _KEY_REASON)
    return raw


def _id_list(order_ids: object) -> Any:
    """``sign_many``'s batch as a list or tuple (a numpy ``S32`` array's whole 32 bytes each)."""
    if isinstance(order_ids, (list, tuple)):
        return order_ids
    if isinstance(order_ids, (str, bytes, bytearray)) or not hasattr(order_ids, "__iter__"):
        raise OrderFieldError("order_ids", order_ids, "must be a sequence of order ids")
    ndim = getattr(order_ids, "ndim", None)  # numpy
    if ndim is not None and is_columnar(order_ids):
        if ndim != 1:
            raise OrderFieldError("order_ids", f"<{ndim}-D array>", "must be one-dimensional")
        return numpy_rows(order_ids)
    return list(cast("Iterable[object]", order_ids))


def _digest(value: object) -> bytes | None:
    """32 bytes of an order id (``0x`` + 64 hex, or 32 raw bytes); None when malformed."""
    if isinstance(value, str):
        if len(value) != 66 or value[:2] != "0x":
            return None
        try:
            raw = bytes.fromhex(value[2:])
        except ValueError:
            return None
        return raw if len(raw) == 32 else None  # fromhex skips spaces
    if isinstance(value, (bytes, bytearray)) and len(value) == 32:
        return bytes(value)
    return None


def parse_order_id(value: object, field: str = "order_id") -> bytes:
    """32 bytes of an order id (``0x`` + 64 hex, or 32 raw bytes); ``OrderFieldError`` if not."""
    digest = _digest(value)
    if digest is None:
        raise OrderFieldError(field, value, _ID_REASON)
    return digest


# ---------------------------------------------------------------- ECDSA


def _sign_hex(key: Any, digest: bytes) -> str:
    """``"0x"`` + 130 hex digits: r || s || v of one 32-byte digest."""
    return _backend().sign_chunk(key, [digest], 0, 1)[0]


def _sign_chunk(key: Any, digests: list[bytes], start: int, stop: int) -> list[str]:
    """Signatures of ``digests[start:stop]``."""
    return _backend().sign_chunk(key, digests, start, stop)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The signing workers: created on first use, reused, bounded by the stdlib default
    (min(32, cores + 4)); a batch asking for more threads than that shares them."""
    global _POOL
    pool = _POOL
    if pool is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(thread_name_prefix="clobkit-sign")
            pool = _POOL
    return pool


def _after_fork() -> None:
    # A forked child has none of the parent's worker threads, and a copy of its
    # blinding seed: start both afresh.
    global _POOL, _POOL_LOCK, _LOAD_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()
    _LOAD_LOCK = threading.Lock()
    if _BACKEND is not None:
        _BACKEND.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


# A batch is cut into about this many chunks per thread, claimed one at a time:
# on a busy machine a stalled thread's share is taken over by the others
# instead of holding up the whole batch.
_CHUNKS_PER_THREAD = 8


def _drain(
    key: Any, digests: list[bytes], size: int, claim: Callable[[], int], parts: list[list[str]]
) -> None:
    """Sign chunks until none is left unclaimed."""
    n = len(digests)
    while True:
        try:
            k = claim()
        except StopIteration:
            return
        start = k * size
        parts[k] = _sign_chunk(key, digests, start, min(start + size, n))


def _sign_batch(key: Any, digests: list[bytes], workers: int) -> list[str]:
    """Signatures of every digest, in order, over ``workers`` threads (the caller's included)."""
    n = len(digests)
    workers = min(workers, n)
    if workers <= 1:
        return _sign_chunk(key, digests, 0, n)
    size = -(-n // (workers * _CHUNKS_PER_THREAD))
    parts: list[list[str]] = [[] for _ in range(0, n, size)]
    claim = iter(range(len(parts))).__next__  # one C call under the GIL: each chunk once
    pool = _pool()
    futures = [pool.submit(_drain, key, digests, size, claim, parts) for _ in range(workers - 1)]
    _drain(key, digests, size, claim, parts)
    for future in futures:
        if not future.cancel():  # a worker that never started has nothing left to do
            future.result()
    return list(chain.from_iterable(parts))


class OrderSigner:
    """Signs order ids with one secp256k1 private key (``0x`` + 64 hex, or 32 bytes).

    ``address`` is the key's EIP-55 address. ``sign`` takes about one
    libsecp256k1 signature (tens of µs); ``sign_many(threads=N)`` spreads a
    batch over N threads. The key is never shown: not in ``repr``, not in errors.

    What a signature is for: the exchange's own order flow, where each order
    carries its signer's EIP-712 signature. The service's raw orders
    (``POST /orders/raw``) carry none (the service signs), so trading through
    ``Client`` needs no private key (docs/going-live.md).
    """

    __slots__ = ("_address", "_key")

    def __init__(self, private_key: str | bytes) -> None:
        key = _backend().key(_parse_key(private_key))
        if key is None:
            raise OrderFieldError(
                "private_key", HIDDEN, "is not a valid secp256k1 private key (0, or not below n)"
            )
        self._key = key
        self._address: str | None = None

    def __repr__(self) -> str:
        return f"OrderSigner(address={self.address})"

    def __reduce__(self) -> Any:
        raise TypeError("an OrderSigner holds a private key and is not pickled")

    @property
    def address(self) -> str:
        """The key's address, EIP-55 (derived once, on first use)."""
        if self._address is None:
            lower = keccak256(_backend().public_key(self._key)[1:])[12:].hex()
            self._address = "0x" + checksum(lower, keccak256)
        return self._address

    def _key_at(self) -> int:
        """Where the 32 key bytes live, for the compiled core (alive while ``self`` is)."""
        return _backend().key_at(self._key)

    def sign(self, order_id: str | bytes) -> str:
        """Signature of one order id: ``"0x"`` + 130 hex digits (r || s || v, v 27/28)."""
        return _sign_hex(self._key, parse_order_id(order_id))

    def sign_many(
        self, order_ids: Iterable[str | bytes], *, threads: int | None = None
    ) -> list[str]:
        """Signatures of a batch of order ids, in order, over ``threads`` threads (None = 1).

        Every id is checked before any is signed; a bad one is named by its
        index (``order_ids[3]``).
        """
        workers = parse_threads(threads)
        ids = _id_list(order_ids)
        core = _native()
        raw = None if core is None else core.parse_ids(ids)  # None: not all plainly ids
        if raw is None:
            parsed = list(map(_digest, ids))
            if None in parsed:
                i = parsed.index(None)
                raise OrderFieldError(f"order_ids[{i}]", ids[i], _ID_REASON)
            if core is None:
                return _sign_batch(self._key, cast("list[bytes]", parsed), workers)
            raw = b"".join(cast("list[bytes]", parsed))
        result: list[str] = core.sign_digests(_handle(), self._key_at(), raw, workers)
        return result

    async def sign_digests(self, digests: Iterable[str | bytes], /) -> list[str]:
        """``AsyncSigner``'s call: ``sign_many`` on the loop for a handful of digests
        (tens of µs each), in a worker thread past ``_ON_LOOP`` (the loop runs on)."""
        batch = _id_list(digests)
        if len(batch) <= _ON_LOOP:
            return self.sign_many(batch)
        import asyncio

        return await asyncio.to_thread(self.sign_many, batch)


#: Digests an ``OrderSigner`` signs on the event loop at most (about 2 ms of ECDSA).
_ON_LOOP = 64


# ---------------------------------------------------------------- POLY_1271 (ERC-7739)


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
    return _sign_hex(signer._key, digest) + wrapper.suffix(app_domain, contents)


# ---------------------------------------------------------------- hasher.sign / sign_many


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
        from .orders import sign_order_with

        return sign_order_with(hasher, signer, order)
    if is_poly_1271(hasher):
        order_id, digest, tail = poly_1271_one(hasher, order)
        return SignedOrder(order_id, _sign_hex(signer._key, digest) + tail)
    check_signer(hasher, signer)
    order_id = hasher.order_id(**order)
    return SignedOrder(order_id, _sign_hex(signer._key, bytes.fromhex(order_id[2:])))


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
        from .orders import sign_orders_with

        return sign_orders_with(hasher, signer, columns, threads)
    workers = parse_threads(threads)
    core = _native()
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
            _handle(), signer._key_at(), threads, columns, wrap
        )
        return signed
    ids: list[str] = hasher.order_ids(**columns, threads=threads)
    digests = [bytes.fromhex(i[2:]) for i in ids]
    return list(map(SignedOrder, ids, _sign_batch(signer._key, digests, workers)))


def _sign_poly_1271_rows(
    hasher: Any, signer: OrderSigner, columns: Mapping[str, Any], threads: Any, workers: int
) -> list[SignedOrder]:
    """POLY_1271 ``sign_many`` row by row in Python: the pure twin's way (the compiled
    twin wraps and signs in its workers)."""
    ids, digests, tails = poly_1271_rows(hasher, columns, threads)
    signatures = _sign_batch(signer._key, digests, workers)  # through the backend
    return [SignedOrder(i, s + t) for i, s, t in zip(ids, signatures, tails, strict=True)]


_KEYWORDS = frozenset(BATCH_KEYWORDS.values())
_REQUIRED = frozenset(("token_ids", "maker_amounts", "taker_amounts", "sides", "salts"))


def _batch_keys(columns: Mapping[str, Any]) -> bool:
    """``order_ids``' keywords, the required ones given (else ``order_ids`` words the TypeError)."""
    return _REQUIRED <= columns.keys() <= _KEYWORDS
