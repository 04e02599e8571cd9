"""The ``clobkit`` command (private but for ``main``): ``parser`` builds and runs
the command line; ``common`` and ``base`` are what every subcommand shares;
``offline``, ``signed``, ``services``, ``protect`` and ``order_ids`` add the
subcommands; ``demo`` is ``clobkit demo``; ``orderids`` is the file pipeline of
``clobkit order-ids``. Nothing here is imported by ``import clobkit``, and
importing a part (``clobkit.cli.orderids``) does not build the parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and the reference site; run time: __getattr__ below
    from .parser import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from .parser import main

        return main
    raise AttributeError(f"module 'clobkit.cli' has no attribute {name!r}")
