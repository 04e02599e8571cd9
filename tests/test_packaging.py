"""Packaging: one version source, and an install without a C compiler.

Without a working C compiler ``pip install .`` must still install clobkit, on
its pure-Python twin, with a warning that names the failure and the way to the
compiled core (setup.py's ``OptionalBuildExt``). ``.ci/run`` also builds a
wheel and an sdist and installs each in a fresh virtual environment.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import clobkit

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_has_one_source() -> None:
    # (tomllib is 3.11+, clobkit supports 3.10: the lines themselves)
    lines = (ROOT / "pyproject.toml").read_text().splitlines()
    assert [line for line in lines if line.startswith("version")] == [
        'version = { attr = "clobkit.__version__" }'
    ]
    assert 'dynamic = ["version"]' in lines
    # setuptools reads a literal assignment without importing clobkit (whose
    # import needs its dependencies, absent from the build environment)
    init = ast.parse((ROOT / "src" / "clobkit" / "__init__.py").read_text())
    literals = [
        node.value.value
        for node in init.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
    ]
    assert literals == [clobkit.__version__]


def _copy_tree(dest: Path) -> Path:
    """The source tree without what a build here left in it (the compiled core above all)."""
    ignore = shutil.ignore_patterns(
        ".git",
        "build",
        "dist",
        "*.egg-info",
        "*.so",
        "*.pyd",
        "__pycache__",
        ".*cache*",
        ".hypothesis",
        ".benchmarks",
        ".venv",
        "results",
        "ext/_core_c.c",
    )
    return Path(shutil.copytree(ROOT, dest, ignore=ignore))


@pytest.mark.slow
def test_a_wheel_built_without_a_compiler_runs_on_the_pure_twin(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path / "tree")
    (tree / "ext" / "_core_c.c").unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOBKIT_")}
    env |= {"CC": "/bin/false", "CXX": "/bin/false", "LDSHARED": "/bin/false"}
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-v",
            "--no-deps",
            "-w",
            str(tmp_path / "dist"),
            str(tree),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    log = built.stdout + built.stderr
    assert "clobkit: the compiled core clobkit.core._core_c could not be built" in log
    assert "install a C compiler" in log

    (wheel,) = (tmp_path / "dist").glob("clobkit-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        # no compiled core (its stub, _core_c.pyi, ships with every wheel)
        assert [n for n in names if "_core_c" in n] == ["clobkit/core/_core_c.pyi"]
        assert "clobkit/core/pure.py" in names
        metadata = zf.read(f"clobkit-{clobkit.__version__}.dist-info/METADATA").decode()
        assert f"\nVersion: {clobkit.__version__}\n" in metadata
        zf.extractall(tmp_path / "site")

    env.pop("PYTHONPATH", None)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import clobkit; "
        "print(clobkit.IMPLEMENTATION, clobkit.__file__.startswith(sys.argv[1]), "
        "clobkit.to_units('1.5'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "site")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "True", "1500000"]
