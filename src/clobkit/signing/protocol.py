"""The signer protocols: what signs orders' digests, and names its address.

``AsyncSigner`` (``AsyncClient``, the ``Quoter`` and ``Desk``) and its sync twin
``Signer`` (``Client``, ``hasher.sign`` / ``sign_many``, ``clobkit order-ids
--sign``) each name the signer's ``address`` and sign a batch of 32-byte digests
into ``"0x"`` + 130 hex digits apiece (``r || s || v``, v 27/28, low s), the
bytes eth-account produces. The local ``OrderSigner`` is both; ``AwsKmsSigner``
and ``GcpKmsSigner`` are both once entered (``async with`` / ``with``), which
reads the key's public key, and so its address, once.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Protocol, cast

from ..errors import OrderFieldError

__all__ = ["AsyncSigner", "Signer", "as_async_signer", "as_signer", "signer_address"]


class Signer(Protocol):
    """Signs digests in the caller's thread: ``address`` (EIP-55) and ``sign_many``."""

    @property
    def address(self) -> str:
        """The signer's EIP-55 address."""

    def sign_many(self, digests: Sequence[bytes | str], /) -> list[str]:
        """``"0x"`` + 130 hex (r || s || v) of each 32-byte digest, in order."""


class AsyncSigner(Protocol):
    """Signs digests without blocking the event loop: ``address`` and ``sign_digests``."""

    @property
    def address(self) -> str:
        """The signer's EIP-55 address."""

    async def sign_digests(self, digests: Sequence[bytes | str], /) -> list[str]:
        """``"0x"`` + 130 hex (r || s || v) of each 32-byte digest, in order; the
        digests of one call are signed concurrently where the signer can."""


# Checked on the type, not the instance: a KMS signer not yet entered has no address
# to read (its property raises), and the check must not call it.
def as_signer(value: object) -> Signer:
    """``value`` when it signs in the caller's thread, else ``OrderFieldError`` (never
    echoing the value: it may be a key passed by mistake)."""
    kind = type(value)
    if not (hasattr(kind, "address") and callable(getattr(kind, "sign_many", None))):
        raise OrderFieldError(
            "signer",
            type(value).__name__,
            "must be a Signer (OrderSigner(private_key), or a KMS signer entered with 'with')",
        )
    return cast("Signer", value)


def as_async_signer(value: object) -> AsyncSigner:
    """``value`` when it signs without blocking the loop, else ``OrderFieldError``."""
    kind = type(value)
    sign = getattr(kind, "sign_digests", None)
    if not (hasattr(kind, "address") and inspect.iscoroutinefunction(sign)):
        raise OrderFieldError(
            "signer",
            type(value).__name__,
            "must be an AsyncSigner (OrderSigner(private_key), or a KMS signer entered "
            "with 'async with')",
        )
    return cast("AsyncSigner", value)


def signer_address(value: object) -> str:
    """The address of a signer of either kind; ``OrderFieldError`` for anything else."""
    if not hasattr(type(value), "address"):
        raise OrderFieldError(
            "signer",
            type(value).__name__,
            "must be a Signer or an AsyncSigner (OrderSigner, AwsKmsSigner, GcpKmsSigner)",
        )
    address: str = cast("Signer", value).address
    return address
