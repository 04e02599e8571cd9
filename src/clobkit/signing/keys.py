"""Key handling: a secp256k1 private key held unseen (``OrderSigner``: ``sign``,
``sign_many``, ``sign_digests``), and order ids read as the 32-byte digests they sign
(``parse_order_id``). Signatures go through ``batch``.

The private key lives in a cffi buffer (or coincurve's ``PrivateKey``); it never
appears in a repr, an error message or a log line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from ..core.choice import keccak256
from ..core.columns import is_columnar, numpy_rows
from ..core.parse import HIDDEN, parse_threads
from ..core.wallet import checksum
from ..errors import OrderFieldError
from . import batch

__all__ = ["ID_REASON", "OrderSigner", "digest_of", "id_list", "parse_order_id"]

KEY_REASON = "must be a secp256k1 private key: 0x + 64 hex digits, or 32 bytes"
ID_REASON = "must be 0x followed by 64 hex digits (or 32 bytes)"


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
        raise OrderFieldError("private_key", HIDDEN, KEY_REASON)
    return raw


def id_list(order_ids: object) -> Any:
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


def digest_of(value: object) -> bytes | None:
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
    digest = digest_of(value)
    if digest is None:
        raise OrderFieldError(field, value, ID_REASON)
    return digest


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
        key = batch.backend().key(_parse_key(private_key))
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
            lower = keccak256(batch.backend().public_key(self._key)[1:])[12:].hex()
            self._address = "0x" + checksum(lower, keccak256)
        return self._address

    def _key_at(self) -> int:
        """Where the 32 key bytes live, for the compiled core (alive while ``self`` is)."""
        return batch.backend().key_at(self._key)

    def sign(self, order_id: str | bytes) -> str:
        """Signature of one order id: ``"0x"`` + 130 hex digits (r || s || v, v 27/28)."""
        return batch.sign_hex(self._key, parse_order_id(order_id))

    def sign_many(
        self, order_ids: Iterable[str | bytes], *, threads: int | None = None
    ) -> list[str]:
        """Signatures of a batch of order ids, in order, over ``threads`` threads (None = 1).

        Every id is checked before any is signed; a bad one is named by its
        index (``order_ids[3]``).
        """
        workers = parse_threads(threads)
        ids = id_list(order_ids)
        core = batch.native()
        raw = None if core is None else core.parse_ids(ids)  # None: not all plainly ids
        if raw is None:
            parsed = list(map(digest_of, ids))
            if None in parsed:
                i = parsed.index(None)
                raise OrderFieldError(f"order_ids[{i}]", ids[i], ID_REASON)
            if core is None:
                return batch.sign_batch(self._key, cast("list[bytes]", parsed), workers)
            raw = b"".join(cast("list[bytes]", parsed))
        result: list[str] = core.sign_digests(batch.handle(), self._key_at(), raw, workers)
        return result

    async def sign_digests(self, digests: Iterable[str | bytes], /) -> list[str]:
        """``AsyncSigner``'s call: ``sign_many`` on the loop for a handful of digests
        (tens of µs each), in a worker thread past ``_ON_LOOP`` (the loop runs on)."""
        batch = id_list(digests)
        if len(batch) <= _ON_LOOP:
            return self.sign_many(batch)
        import asyncio

        return await asyncio.to_thread(self.sign_many, batch)


#: Digests an ``OrderSigner`` signs on the event loop at most (about 2 ms of ECDSA).
_ON_LOOP = 64
