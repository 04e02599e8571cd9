"""HMAC-SHA256 request signing of the External Trading API (section 5)."""

from __future__ import annotations

from .core.select import RequestSigner, sha256_hex, signature, verify_signature

__all__ = ["RequestSigner", "sha256_hex", "signature", "verify_signature"]
