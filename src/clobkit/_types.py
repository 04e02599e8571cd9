"""Small value types shared by both core twins and the public API."""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import NamedTuple

__all__ = ["CORE_API", "Amounts", "OrderType", "Side"]

#: The names both core twins define (``clobkit._core_c`` and ``clobkit._core_py``).
CORE_API = (
    "OrderHasher",
    "RequestSigner",
    "from_units",
    "keccak256",
    "limit_amounts",
    "market_amounts",
    "market_price",
    "new_salt",
    "new_salts",
    "salts_from_bytes",
    "sha256_hex",
    "signature",
    "to_units",
    "verify_signature",
)


class Side(IntEnum):
    """Order side; the integer is the exchange's ``uint8 side``."""

    BUY = 0
    SELL = 1

    def __str__(self) -> str:
        return self.name


class OrderType(str, Enum):
    """Time in force: ``FOK`` fills at once or is killed; ``GTC``/``GTD`` rest."""

    FOK = "FOK"
    GTC = "GTC"
    GTD = "GTD"

    def __str__(self) -> str:
        return self.value


class Amounts(NamedTuple):
    """Exchange amounts in 6-decimal integer units (1 USDC or 1 share = 1_000_000).

    ``maker_amount`` is what the order pays, ``taker_amount`` what it receives:
    USDC and shares for a BUY, shares and USDC for a SELL.
    """

    maker_amount: int
    taker_amount: int
