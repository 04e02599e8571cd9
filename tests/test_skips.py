"""A skip only for a missing optional extra; with ``CI`` set, any skip fails the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import import_extra

ROOT = Path(__file__).resolve().parent.parent


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_missing_extra_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # what clobkit.sandbox does without the extra: its import of starlette fails
    name = _module(tmp_path, monkeypatch, "needs_extra", "import starlette.not_installed_here\n")
    from clobkit.core.extras import install_hint

    with pytest.raises(pytest.skip.Exception) as info:
        import_extra(name, "sandbox")
    assert str(info.value.msg).endswith(install_hint("sandbox"))
    assert "starlette" in install_hint("sandbox")


def test_a_broken_import_of_clobkit_fails_instead_of_skipping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a bug in clobkit's own imports: never a skip
    name = _module(tmp_path, monkeypatch, "broken_import", "import clobkit.no_such_module\n")
    with pytest.raises(ModuleNotFoundError, match=r"clobkit\.no_such_module"):
        import_extra(name, "sandbox")


def test_probe_skips_when_asked() -> None:
    """The skip the next test runs in a child pytest (passes in every other run)."""
    if os.environ.get("CLOBKIT_SKIP_PROBE") == "1":
        pytest.skip("the probe of test_ci_fails_on_a_skip")


@pytest.mark.parametrize("ci", ["", "true"])
def test_ci_fails_on_a_skip(ci: str) -> None:
    env = os.environ | {"CI": ci, "CLOBKIT_SKIP_PROBE": "1"}
    env.pop("CLOBKIT_NO_EXTENSIONS", None)
    env.pop("PYTEST_ADDOPTS", None)  # CI's --cov is for the run itself, not this probe
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
