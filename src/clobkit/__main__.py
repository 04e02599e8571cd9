"""``python -m clobkit``: the ``clobkit`` command, and the set-up of its own process.

``clobkit.cli.main`` changes nothing of the process that calls it (it may be
a test or another program); what only a process that runs one command and
exits may do is done here.
"""

from __future__ import annotations

import os
import sys


def command() -> int:
    """The ``clobkit`` command's process: ``python -m clobkit`` and the console script."""
    if sys.argv[1:2] == ["order-ids"]:
        from .cli.orderids.process import for_command

        for_command()  # this process runs the command and exits
        # Where numpy loads (a pyarrow that needs it), its OpenBLAS starts a thread
        # per core that spins for a while: about 0.1 s of CPU per run (perf, user
        # time). Nothing here calls BLAS; a user's own setting is kept.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from .cli.parser import main
    except KeyboardInterrupt:  # Ctrl-C while importing: one line, no traceback
        print("clobkit: interrupted", file=sys.stderr)
        return 130
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # clobkit salts 1000000 | head
        _silence_stdout()
    return code


def _silence_stdout() -> None:
    """After a closed pipe, drop what is left to flush (else Python's exit reports it)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(command())
