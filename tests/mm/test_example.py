"""examples/market_maker.py runs on the embedded sandbox and ends by itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "market_maker.py"


def test_market_maker_example_runs() -> None:
    src = str(EXAMPLE.parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("round ") == 6
    assert "fill: " in out
    assert "position " in out
    assert "sandbox invariants: hold" in out
