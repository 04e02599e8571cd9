"""Small value types shared by both core twins and the public API.

``Side`` and ``OrderType`` live in ``clobkit.core.enums`` and load on first use
of their names here (``import clobkit`` does not import ``enum``).
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NamedTuple, TypeVar

    from .enums import OrderType, Side

    _T = TypeVar("_T")

    def record(cls: type[_T]) -> type[_T]:
        return cls

else:
    NamedTuple = object  # replaced by @record

    def record(cls):
        """A ``class X(NamedTuple)`` body made into its ``collections.namedtuple``,
        as ``typing.NamedTuple`` makes it, without importing ``typing`` (which
        costs ``import clobkit`` several milliseconds). Fields without defaults,
        no methods: that is all its users need."""
        fields = tuple(cls.__annotations__)
        # class machinery (__module__, __qualname__, ...) differs by Python
        # version; anything else, or any function, would be lost: refuse it
        extra = [
            name
            for name, value in vars(cls).items()
            if callable(value) or not (name.startswith("__") and name.endswith("__"))
        ]
        if extra:
            raise TypeError(f"@record takes fields only, not {sorted(extra)}")
        made = namedtuple(cls.__name__, fields, module=cls.__module__)
        made.__doc__ = cls.__doc__
        made.__qualname__ = cls.__qualname__
        made.__annotations__ = cls.__annotations__
        return made


__all__ = ["CORE_API", "Amounts", "OrderType", "Side", "lazy", "record"]

#: The names both core twins define (``clobkit.core._core_c`` and ``clobkit.core.pure``).
CORE_API = (
    "OrderHasher",
    "RequestSigner",
    "append_column",
    "csv_columns",
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


@record
class Amounts(NamedTuple):
    """Exchange amounts in 6-decimal integer units (1 USDC or 1 share = 1_000_000).

    ``maker_amount`` is what the order pays, ``taker_amount`` what it receives:
    USDC and shares for a BUY, shares and USDC for a SELL.
    """

    maker_amount: int
    taker_amount: int


def lazy(namespace: dict[str, object], names: dict[str, str]) -> Callable[[str], object]:
    """A module's ``__getattr__`` (PEP 562) that imports each name of ``names``
    (name -> the module defining it) on first use and keeps it in ``namespace``
    (the module's globals), so later lookups skip the function."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__


__getattr__ = lazy(globals(), {"Side": "clobkit.core.enums", "OrderType": "clobkit.core.enums"})
