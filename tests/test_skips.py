"""A skip only for a missing optional extra; with ``CI`` set, any skip fails the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import import_extra

ROOT = Path(__file__).resolve().parent.parent


def test_a_missing_extra_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "starlette", None)  # the import system's "not there"
    monkeypatch.delitem(sys.modules, "clobkit.sandbox", raising=False)
    monkeypatch.delitem(sys.modules, "clobkit.sandbox.app", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"pip install 'clobkit\[sandbox\]'"):
        import_extra("clobkit.sandbox.app", "sandbox")


def test_a_broken_import_of_clobkit_fails_instead_of_skipping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "clobkit.sandbox.engine", None)  # a bug, not an extra
    monkeypatch.delitem(sys.modules, "clobkit.sandbox", raising=False)
    monkeypatch.delitem(sys.modules, "clobkit.sandbox.app", raising=False)
    with pytest.raises(ModuleNotFoundError):
        import_extra("clobkit.sandbox.app", "sandbox")


def test_probe_skips_when_asked() -> None:
    """The skip the next test runs in a child pytest (passes in every other run)."""
    if os.environ.get("CLOBKIT_SKIP_PROBE") == "1":
        pytest.skip("the probe of test_ci_fails_on_a_skip")


@pytest.mark.parametrize("ci", ["", "true"])
def test_ci_fails_on_a_skip(ci: str) -> None:
    env = os.environ | {"CI": ci, "CLOBKIT_SKIP_PROBE": "1"}
    env.pop("CLOBKIT_NO_EXTENSIONS", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_skips.py::test_probe_skips_when_asked",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert "1 skipped" in done.stdout, done.stdout + done.stderr
    if ci:
        assert done.returncode == 1
        assert "CI: 1 skipped where every dependency is installed" in done.stdout
    else:
        assert done.returncode == 0
