"""Shared fixtures: every core test runs over both twins."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

NO_EXTENSIONS = os.environ.get("CLOBKIT_NO_EXTENSIONS", "") not in ("", "0")


def _twins() -> list[str]:
    # The compiled twin is expected unless the run asked for the pure one;
    # test_compiled_twin_loaded fails loudly when it is expected but missing.
    names = ["python"]
    try:
        importlib.import_module("clobkit._core_c")
    except ImportError:
        if not NO_EXTENSIONS:
            names.append("c")  # collected, and fails in the fixture below
    else:
        names.append("c")
    return names


@pytest.fixture(scope="session", params=_twins())
def core(request: pytest.FixtureRequest) -> ModuleType:
    """The compiled twin (``clobkit._core_c``) or the pure one (``clobkit._core_py``)."""
    name = "clobkit._core_c" if request.param == "c" else "clobkit._core_py"
    return importlib.import_module(name)


@pytest.fixture(scope="session")
def both() -> tuple[ModuleType, ...]:
    """Every twin available in this run (for identical-result comparisons)."""
    return tuple(
        importlib.import_module("clobkit._core_c" if name == "c" else "clobkit._core_py")
        for name in _twins()
    )
