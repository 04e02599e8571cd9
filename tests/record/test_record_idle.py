"""The recorder idles when the market is quiet, and splits what it holds into files a
replay reads (issue #42)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clobkit.record import BOOK, RecordedMarket, RecordingWriter, iter_rows, recording_files
from clobkit.record import frames as _record_frames

from .conftest import config, sandbox_module

# the recording's own CPU and wall time, imports done before (they cost a second or so)
_MEASURE = """
import json, sys, time
import clobkit.cli, clobkit.client, clobkit.record, pyarrow.parquet
wall, cpu = time.monotonic(), time.process_time()
code = clobkit.cli.main(sys.argv[1:])
print(json.dumps({"code": code, "wall": time.monotonic() - wall,
                  "cpu": time.process_time() - cpu}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("progress", ["--no-progress", "--progress"])
def test_a_quiet_recording_leaves_the_cpu_idle(tmp_path: Path, progress: str) -> None:
    """clobkit record of a market nothing moves, 5 s: its CPU time stays a small part of
    its wall time. Without a progress line it spun a core (the wait for the next progress
    line, which nothing moved on, timed out at 0): 7.6 s of CPU in an 8.7 s recording."""
    with sandbox_module.serve_in_thread(config()) as sb:
        market = sorted(m.id for m in sb.engine.markets.values() if m.active)[0]
        user = sb.users[2]
        src = str(Path(__file__).resolve().parents[2] / "src")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
        argv = ["record", "--market", market, "--out", str(tmp_path / "rec"), progress]
        argv += ["--duration", "5", "--base-url", sb.base_url]
        argv += ["--api-key", user.api_key, "--api-secret", user.api_secret]
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["code"] == 0
    assert got["wall"] >= 5
    assert got["cpu"] < 0.25 * got["wall"], got  # spinning, it was 0.9 of it


def test_rows_held_past_a_files_bounds_are_written_as_several_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a --rotate-mb large enough held more rows than a replay reads from one file
    monkeypatch.setattr(_record_frames, "MAX_FILE_ROWS", 4)
    monkeypatch.setattr(_record_frames, "MAX_FILE_LEVELS", 8)
    market = RecordedMarket("00000000-0000-4000-8000-00000000000a", None, "Q", "11", "22")
    writer = RecordingWriter(tmp_path, [market], rotate_seconds=1e9)
    writer.write_markets()
    level = {"price": "0.48", "size": "10"}
    sizes = [0, 1, 1, 0, 0, 0, 0, 3, 3, 3, 9, 0]
    for k, n in enumerate(sizes):
        writer.add(BOOK, "11", {"bids": [level] * n, "asks": []}, 10**18 + k)
    asyncio.run(writer.flush())
    files = recording_files(tmp_path)
    # an empty side counts one level, as in the file's metadata: rows 0-3 (4 rows),
    # 4-6 (6 levels, row 7 would make 10), 7-8 (8), 9, 10 (10 levels alone), 11
    firsts = [int(f.name[5:17]) for f in files]
    assert firsts == [0, 4, 7, 9, 10, 11]
    rows = list(iter_rows(tmp_path))
    assert [r.seq for r in rows] == list(range(len(sizes)))
    assert [len(r.bids) for r in rows] == sizes
    assert writer.stats.files == len(files)
