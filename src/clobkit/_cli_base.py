"""What the clobkit command and its demo share: the two expected failures and the connection.

Its own module so that ``_demo`` and ``cli`` do not import each other.
"""

from __future__ import annotations

import argparse
import os
from typing import NamedTuple

__all__ = ["ENV", "Connection", "Failed", "Usage"]

ENV = {
    "base_url": "CLOBKIT_BASE_URL",
    "api_key": "CLOBKIT_API_KEY",
    "api_secret": "CLOBKIT_API_SECRET",
    "clob_url": "CLOBKIT_CLOB_URL",
}


class Usage(Exception):
    """A usage error: one line on stderr, exit 2."""


class Failed(Exception):
    """An expected failure (API, network, rejected rows): one line on stderr, exit 1."""


class Connection(NamedTuple):  # not a dataclass: dataclasses costs every command 15 ms to import
    """Where and as whom to connect; any field may be missing until a command needs it."""

    base_url: str | None
    api_key: str | None
    api_secret: str | None
    clob_url: str | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Connection:
        def pick(name: str) -> str | None:
            value = getattr(args, name, None) or os.environ.get(ENV[name], "")
            return value or None

        base_url = pick("base_url")
        if base_url is not None:  # the same base URL as the client's (.../api/ext/v1 or not)
            from ._parse import service_base_url

            base_url = service_base_url(base_url) or None
        return cls(base_url, pick("api_key"), pick("api_secret"), pick("clob_url"))

    def require(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) is None:
                flag = "--" + name.replace("_", "-")
                raise Usage(f"no {name.replace('_', ' ')}: pass {flag} or set {ENV[name]}")
