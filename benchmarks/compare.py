"""``python -m benchmarks.compare``: clobkit against the installed peers, from the repository.

A thin wrapper around :func:`clobkit.bench.main` (the same tool as
``clobkit bench``; ``--help`` lists the options). Unless ``--json`` is given
it also writes ``benchmarks/results/compare.json`` (per machine, not committed).
"""

from __future__ import annotations

import sys
from pathlib import Path

from clobkit.bench import main

RESULT = Path(__file__).parent / "results" / "compare.json"


def compare(argv: list[str]) -> int:
    """Run ``clobkit bench`` with ``argv``, defaulting ``--json`` to benchmarks/results/."""
    if not any(a == "--json" or a.startswith("--json=") for a in argv):
        RESULT.parent.mkdir(exist_ok=True)
        argv = [*argv, "--json", str(RESULT)]
    return main(argv)


if __name__ == "__main__":
    raise SystemExit(compare(sys.argv[1:]))
