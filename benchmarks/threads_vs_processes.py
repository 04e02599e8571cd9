"""Threads in one process against processes: where batch work stops scaling (#20, #45).

Run: PYTHONPATH=src python benchmarks/threads_vs_processes.py [--kinds sign,ids,lists,
     lists-arrow,arrow,command,dask] [--max 16] [--rounds 3] [--quick] [--json PATH]

The same as ``clobkit bench --scaling`` (``clobkit.bench.scaling``, where the
kinds, sizes and the table are defined): for every batch kind, the command and
Dask, threads ÷ processes at 2, 4, 8 and 16 workers (up to this machine's
cores), each with its speed-up over one, and the command's rate over the
in-memory Arrow rate at the same count. scripts/device_scaling.sh runs it on a
lent machine.
"""

from __future__ import annotations

import sys

from clobkit.bench.scaling import main

if __name__ == "__main__":
    sys.exit(main(prog="threads_vs_processes.py"))
