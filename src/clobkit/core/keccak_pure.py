"""The pure twin's Keccak-256 (pycryptodome's): one home for the pure twin and for
``choice.keccak256`` when no compiled core is live (the compiled twin never imports it)."""

from __future__ import annotations

from Crypto.Hash import keccak as _keccak

from .parse import as_bytes

__all__ = ["keccak256"]


def keccak256(data: bytes) -> bytes:
    """Keccak-256 (Ethereum's, not SHA3-256) of ``data`` (any bytes-like object)."""
    return _keccak.new(data=as_bytes(data, "data"), digest_bits=256).digest()
