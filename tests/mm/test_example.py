"""examples/market_maker.py runs on the embedded sandbox on every exchange version and
ends by itself, and runs against a running sandbox given by --base-url."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import VERSIONS, config, sandbox_module

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "market_maker.py"


def run_example(*args: str, **env: str) -> str:
    src = str(EXAMPLE.parents[1] / "src")
    path = os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path, **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_market_maker_example_runs(version: int) -> None:
    out = run_example("--exchange-version", str(version))
    assert f"exchange V{version}" in out
    assert out.count("round ") == 6
    assert "fill: " in out
    assert "position " in out
    assert "sandbox invariants: hold" in out


@pytest.mark.slow
def test_market_maker_example_on_a_running_service() -> None:
    """--base-url with the keys in the environment; --duration bounds the rounds."""
    with sandbox_module.serve_in_thread(config(2)) as sb:
        user: Any = sb.users[1]
        out = run_example(
            "--base-url",
            sb.base_url,
            "--duration",
            "1.5",
            "--exchange-version",
            "2",
            CLOBKIT_API_KEY=user.api_key,
            CLOBKIT_API_SECRET=user.api_secret,
        )
        assert "exchange V2" in out
        assert "round 1:" in out
        assert "left the quoter" in out
        open_left = [
            r
            for r in sb.engine.list_orders(user.user_id, page_size=100).items
            if r.status in ("pending", "signing", "submitted", "live")
        ]
        assert open_left == []  # the quoter cancelled its orders on exit
        assert sb.engine.check_invariants() == []


DESK = EXAMPLE.parent / "desk.py"


@pytest.mark.parametrize(
    "version",
    [
        pytest.param(1, id="V1"),
        *(pytest.param(v, id=f"V{v}", marks=pytest.mark.slow) for v in (2, 3)),
    ],
)
def test_desk_example_runs(version: int) -> None:
    src = str(DESK.parents[1] / "src")
    path = os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(DESK), "--exchange-version", str(version), "--duration", "2.5"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"exchange V{version}" in out
    assert "markets, 92 quoters" in out  # every market with a book, both outcomes
    assert out.count("] 46 markets,") >= 2  # the summaries
    assert "(0 answered 429" in out
    assert "halted: " in out
    # a quote the moving house filled just as its cancel went out: refused, swept on exit
    assert " orders cancelled, 0 open" in out or "halted: a cancel was refused" in out
    assert "sandbox invariants: hold" in out
