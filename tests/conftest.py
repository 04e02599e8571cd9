"""Shared fixtures: every core test runs over both twins."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# The fast loop (``-m "not slow"``, docs/development.md) runs every hypothesis
# test with at most FAST_EXAMPLES examples; a run that includes the slow tests
# (CI, plain ``pytest``) runs each test's full count. ``examples(n)`` is that
# count for a test's own ``@settings(max_examples=...)``.
FAST_EXAMPLES = 25
_fast_loop = False


def _deselects_slow(markexpr: str) -> bool:
    """True when ``-m`` leaves out tests marked ``slow`` (``not slow`` and the like)."""
    if not markexpr:
        return False
    from _pytest.mark.expression import Expression  # pytest's own reading of ``-m``

    return not Expression.compile(markexpr).evaluate(lambda name, **_: name == "slow")


def pytest_configure(config: pytest.Config) -> None:
    global _fast_loop
    _fast_loop = _deselects_slow(config.getoption("markexpr", ""))
    if _fast_loop and "HYPOTHESIS_PROFILE" not in os.environ:
        settings.register_profile(
            "fast", settings.get_profile("default"), max_examples=FAST_EXAMPLES
        )
        settings.load_profile("fast")


def examples(full: int) -> int:
    """A hypothesis test's example count: ``full``, or at most FAST_EXAMPLES in the fast loop."""
    return min(full, FAST_EXAMPLES) if _fast_loop else full


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
