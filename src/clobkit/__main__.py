"""``python -m clobkit``: the ``clobkit`` command."""

from __future__ import annotations

import sys


def command() -> int:
    """The ``clobkit`` command's process: ``python -m clobkit`` and the console script."""
    if sys.argv[1:2] == ["order-ids"]:
        from ._pyarrow import for_command

        for_command()  # this process runs the command and exits
    try:
        from .cli import main
    except KeyboardInterrupt:  # Ctrl-C while importing: one line, no traceback
        print("clobkit: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    raise SystemExit(command())
