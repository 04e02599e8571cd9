"""``clobkit order-ids``' memory is bounded by its pipeline's depth, not by the input (#45).

A real process runs the command on an input and on one eight times as long,
with small blocks and batches so both are many items; its peak resident
memory (the kernel's ``ru_maxrss``) grows by much less than the input did.
Measured, not timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import TOKEN, WALLET

pytest.importorskip("pyarrow")

_CHILD = textwrap.dedent(
    """
    import resource, sys
    import clobkit.cli.orderids.csv_fast as csv_fast
    from clobkit.cli.orderids.run import run

    csv_fast.BLOCK = 1 << 18  # 256 KiB blocks: hundreds of items
    wallet, src, dst = sys.argv[1:4]
    summary = run(wallet, src, dst, threads=2, batch_size=5_000, progress=False)
    print(summary.written, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """
)


def _write(path: Path, rows: int) -> None:
    with path.open("w") as f:
        f.write("token_id,maker_amount,taker_amount,side,salt,note\n")
        for i in range(rows):
            usdc = 9_295_000 + i % 1000
            f.write(f'"{TOKEN}",{usdc},16900000,BUY,{i * 7919 % 10**12},"row {i} {"x" * 40}"\n')


def _peak(tmp_path: Path, src: Path, out: str) -> tuple[int, int]:
    """(rows written, peak resident KiB) of one run in a child process."""
    wallet = tmp_path / "wallet.json"
    wallet.write_text(json.dumps(WALLET))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(wallet), str(src), f"{tmp_path}/{out}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    written, peak = done.stdout.split()
    return int(written), int(peak)


@pytest.mark.slow
@pytest.mark.parametrize("out", ["out.csv", "out.parquet", "dataset/"])
def test_memory_does_not_grow_with_the_input(tmp_path: Path, out: str) -> None:
    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    _write(small, 50_000)
    _write(big, 400_000)
    grown = big.stat().st_size - small.stat().st_size  # about 60 MB
    rows_small, peak_small = _peak(tmp_path, small, out)
    rows_big, peak_big = _peak(tmp_path, big, out)
    assert (rows_small, rows_big) == (50_000, 400_000)
    # a pipeline that held its input or output would grow by at least ``grown``
    assert (peak_big - peak_small) * 1024 < grown / 4, (peak_small, peak_big, grown)
