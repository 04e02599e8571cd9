"""Shared fixtures: every core test runs over both twins."""

from __future__ import annotations

import importlib
import os
import signal
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# The fast loop (``-m "not slow"``, docs/development.md) runs every hypothesis test
# that asks ``examples(n)`` with at most FAST_EXAMPLES examples; with ``CI`` set
# (``.ci/run``: README's test line, every test) at most CI_EXAMPLES, hypothesis's
# own default, so that the whole of ``.ci/run`` keeps within its 20 minutes; any
# other run (plain ``python -m pytest``) runs each test's full count.
FAST_EXAMPLES = 25
CI_EXAMPLES = 100
_fast_loop = False


def _deselects_slow(markexpr: str) -> bool:
    """True when ``-m`` leaves out tests marked ``slow`` (``not slow`` and the like)."""
    if not markexpr:
        return False
    from _pytest.mark.expression import Expression  # pytest's own reading of ``-m``

    def slow(name: str, /, **_: str | int | bool | None) -> bool:
        return name == "slow"

    return not Expression.compile(markexpr).evaluate(slow)


def pytest_configure(config: pytest.Config) -> None:
    global _fast_loop
    _fast_loop = _deselects_slow(config.getoption("markexpr", "")) and not _ci()
    if _fast_loop and "HYPOTHESIS_PROFILE" not in os.environ:
        settings.register_profile(
            "fast", settings.get_profile("default"), max_examples=FAST_EXAMPLES
        )
        settings.load_profile("fast")


def _ci() -> bool:
    return os.environ.get("CI", "") not in ("", "0", "false")


def examples(full: int) -> int:
    """A hypothesis test's example count: ``full``, or at most FAST_EXAMPLES in the fast loop
    (at most CI_EXAMPLES in CI)."""
    if _fast_loop:
        return min(full, FAST_EXAMPLES)
    return min(full, CI_EXAMPLES) if _ci() else full


_ungrouped = pytest.StashKey[bool]()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first (a stable sort: each file's order kept), so that with
    pytest-xdist the longest start while the many short ones fill the other workers,
    rather than one long test ending the run alone. And, in an xdist worker under
    ``--dist loadgroup``, a test marked ``xdist_group`` that the worker did not group
    fails (``pytest_runtest_setup``): every worker would build that group's costly
    shared fixture again (pytest-xdist issue #1386: pytest 9.2's node ids undo it)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if getattr(config.option, "loadgroup", False):
        for item in items:
            if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid:
                item.stash[_ungrouped] = True


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.stash.get(_ungrouped, False):
        pytest.fail(
            "marked xdist_group but not grouped by --dist loadgroup (pytest-xdist issue "
            "#1386; pyproject.toml's dev extra keeps pytest below 9.2)",
            pytrace=False,
        )


# The tests' own HTTP clients of loopback servers (the sandbox, a proxy) speak plain
# HTTP, yet httpx builds each client a TLS context loading certifi's CA bundle: about
# 25 ms of CPU a client, a few hundred times a run. They share one context instead.
_LOOPBACK_TLS = httpx.create_ssl_context()


def loopback_http(**options: Any) -> httpx.Client:
    """An ``httpx.Client`` for a plain-HTTP server on loopback (``options`` as httpx's)."""
    return httpx.Client(verify=_LOOPBACK_TLS, **options)


def loopback_http_async(**options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for a plain-HTTP server on loopback."""
    return httpx.AsyncClient(verify=_LOOPBACK_TLS, **options)


NO_EXTENSIONS = os.environ.get("CLOBKIT_NO_EXTENSIONS", "") not in ("", "0")


def _twins() -> list[str]:
    # The compiled twin is expected unless the run asked for the pure one;
    # test_compiled_twin_loaded fails loudly when it is expected but missing.
    names = ["python"]
    try:
        importlib.import_module("clobkit.core._core_c")
    except ImportError:
        if not NO_EXTENSIONS:
            names.append("c")  # collected, and fails in the fixture below
    else:
        names.append("c")
    return names


@pytest.fixture(scope="session", params=_twins())
def core(request: pytest.FixtureRequest) -> ModuleType:
    """The compiled twin (``clobkit.core._core_c``) or the pure one (``clobkit.core.pure``)."""
    name = "clobkit.core._core_c" if request.param == "c" else "clobkit.core.pure"
    return importlib.import_module(name)


@pytest.fixture(scope="session")
def both() -> tuple[ModuleType, ...]:
    """Every twin available in this run (for identical-result comparisons)."""
    return tuple(
        importlib.import_module("clobkit.core._core_c" if name == "c" else "clobkit.core.pure")
        for name in _twins()
    )


# ---------------------------------------------------------------------------
# Skips: only for a missing optional extra, and never in CI, which installs them all

#: The third-party packages each optional extra installs (pyproject.toml).
EXTRAS = {
    "sandbox": ("starlette", "uvicorn"),
    "sentinel": ("starlette", "uvicorn"),
    "data": ("pyarrow",),
    "dask": ("dask", "distributed", "pyarrow"),
    "docs": ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers", "griffe"),
    # the KMS signers and their tests' emulator and stand-in
    "kms-aws": ("aiobotocore", "botocore", "ministack", "hypercorn", "cryptography"),
    "kms-gcp": ("google", "google_crc32c", "grpc", "cryptography"),
}


def import_extra(module: str, extra: str) -> ModuleType:
    """``module``, or a skip when a package of the optional ``extra`` it needs is missing.

    Any other ImportError (a bug in clobkit's own imports, a module of
    clobkit that is missing) fails: it must never turn a suite into skips.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in EXTRAS[extra]:
            raise
        from clobkit.core.extras import install_hint

        pytest.skip(
            f"needs the {extra} extra (missing {exc.name}): {install_hint(extra)}",
            allow_module_level=True,
        )


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ``CI`` set (``.ci/run``, CI services), any skip fails the run: CI installs
    every extra, so a skip there hides a failure. ``CLOBKIT_NO_EXTENSIONS=1`` runs skip
    the twin comparisons on purpose (there is no second twin) and are left alone."""
    if not _skipped or not _ci() or NO_EXTENSIONS:
        return
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller decides
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"CI: {len(_skipped)} skipped where every dependency is installed: "
            + ", ".join(_skipped[:10]),
            red=True,
        )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _ctrl_c_kept() -> Iterator[None]:
    """Every test leaves Ctrl-C's handler as it found it: a test that leaves another
    (a command's own, asyncio's, a server's) fails here, and the handler is put back, so
    that a later test in the same process which sends SIGINT still gets KeyboardInterrupt."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"the test left SIGINT's handler changed: {after!r}")


@pytest.fixture
def default_ctrl_c() -> Iterator[None]:
    """Python's own Ctrl-C handler for a test that sends itself SIGINT: a process started
    with SIGINT ignored (a background job of a non-interactive shell, nohup) has none."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
