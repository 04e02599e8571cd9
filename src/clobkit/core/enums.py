"""The public enums ``Side`` and ``OrderType``, loaded on first use (``enum`` is not free).

``clobkit.core.types`` (and through it ``clobkit`` and ``clobkit.amounts``) hands
these out by name; the core twins never need them: they read a ``Side`` as the
int and an ``OrderType`` as the str it is.
"""

from __future__ import annotations

from enum import Enum, IntEnum

__all__ = ["OrderType", "Side"]


class Side(IntEnum):
    """Order side; the integer is the exchange's ``uint8 side``."""

    BUY = 0
    SELL = 1

    def __str__(self) -> str:
        return self.name


class OrderType(str, Enum):  # noqa: UP042 (StrEnum changes str(): "GTC", not "OrderType.GTC")
    """Time in force: ``FOK`` fills at once or is killed; ``GTC``/``GTD`` rest."""

    FOK = "FOK"
    GTC = "GTC"
    GTD = "GTD"

    def __str__(self) -> str:
        return self.value


# Both were defined in clobkit.core.types before they moved here; keep their pickles
# and reprs naming the module users import them from.
Side.__module__ = OrderType.__module__ = "clobkit.core.types"
