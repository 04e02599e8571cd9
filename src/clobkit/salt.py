"""Order salts: uniform on [0, 10**12] from the OS CSPRNG, without modulo bias."""

from __future__ import annotations

from .core.select import new_salt, new_salts

__all__ = ["new_salt", "new_salts"]
