"""What the clobkit command and its demo share: the two expected failures and the connection.

Its own module so that ``_demo`` and ``cli`` do not import each other.
"""

from __future__ import annotations

import argparse
import os
from typing import NamedTuple

from ..core.spec import ENV_API_KEY, ENV_API_SECRET, ENV_BASE_URL, ENV_CLOB_URL

__all__ = ["ENV", "Connection", "Failed", "Usage"]

#: The environment variable of each connection field.
ENV = {
    "base_url": ENV_BASE_URL,
    "api_key": ENV_API_KEY,
    "api_secret": ENV_API_SECRET,
    "clob_url": ENV_CLOB_URL,
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
            from ..core.parse import service_base_url

            base_url = service_base_url(base_url) or None
        return cls(base_url, pick("api_key"), pick("api_secret"), pick("clob_url"))

    def require(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) is None:
                flag = "--" + name.replace("_", "-")
                raise Usage(f"no {name.replace('_', ' ')}: pass {flag} or set {ENV[name]}")
