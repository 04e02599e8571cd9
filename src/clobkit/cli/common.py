"""The ``clobkit`` command's subcommands, one module per job; ``clobkit.cli`` assembles them.

Each module has an ``add_<command>(sub)`` that adds its subparser and sets ``handler``
(``args -> exit code``); the handlers import what they need when they run, so that
building the parser stays cheap.
"""

from __future__ import annotations

import argparse
from typing import Any, Protocol

from ..core.checks import number
from ..core.spec import ENV_API_KEY, ENV_API_SECRET, ENV_BASE_URL, ENV_CLOB_URL
from ..errors import ValidationError
from .base import Usage

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Commands",
    "add_connection",
    "check_positive",
    "extra_missing",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class Commands(Protocol):
    """What the subcommand modules need of ``add_subparsers()``'s answer."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def add_connection(parser: argparse.ArgumentParser, *, clob: bool = False) -> None:
    """The connection flags (``--clob-url`` too with ``clob``); ``Connection.from_args`` reads
    them, falling back on the environment."""
    group = parser.add_argument_group("connection (default: the CLOBKIT_* environment)")
    group.add_argument("--base-url", metavar="URL", help=f"service host (${ENV_BASE_URL})")
    group.add_argument("--api-key", metavar="KEY", help=f"API key (${ENV_API_KEY})")
    group.add_argument(
        "--api-secret", metavar="SECRET", help=f"API secret (${ENV_API_SECRET}; prefer the env)"
    )
    if clob:
        group.add_argument(
            "--clob-url",
            metavar="URL",
            help=f"fee-rate host (${ENV_CLOB_URL}; default: the base URL)",
        )


def extra_missing(extra: str, exc: ModuleNotFoundError) -> str:
    """The one line saying which extra to install for a missing module."""
    from ..core.extras import install_hint

    return f"this needs the {extra} extra (missing {exc.name}): {install_hint(extra)}"


def check_positive(args: argparse.Namespace, *names: str) -> None:
    """Refuse a flag's number that is not positive and finite (a NaN is never reached)."""
    for name in names:
        value = getattr(args, name)
        if value is not None:
            try:
                number(value, "--" + name.replace("_", "-"))
            except ValidationError as exc:  # the words every layer uses, as a usage error
                raise Usage(str(exc)) from None
