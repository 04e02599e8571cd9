"""Issue #44: no import circle in the sandbox, the market maker or the sentinel.

The graph is the structure test's (``tests/test_structure.py``: every import statement
read with ``ast``, inside functions and ``if TYPE_CHECKING:`` included, relative and
absolute), built over the whole package so that a circle leaving these packages and
coming back counts too. The circles this issue opened are checked one by one: each
former back edge is gone while the forward one is still there (the graph is read)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from ..test_structure import SRC, import_cycles, imports_of, module_name

PACKAGES = ("clobkit.sandbox", "clobkit.mm", "clobkit.sentinel")


@functools.cache  # read once: the parametrized test asks for it many times
def graph() -> dict[str, set[str]]:
    """Each module of clobkit and the modules of clobkit it imports."""
    paths = {module_name(p, SRC.parent): p for p in SRC.rglob("*.py")}
    known = set(paths)
    return {name: imports_of(path, name, known) for name, path in paths.items()}


def reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    """Whether ``start`` imports ``goal``, directly or through other modules."""
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges[todo.pop()] - seen:
            if nxt == goal:
                return True
            seen.add(nxt)
            todo.append(nxt)
    return False


def test_no_circle_through_sandbox_mm_or_sentinel() -> None:
    mine = [
        c for c in import_cycles(SRC.parent, "clobkit") if any(m.startswith(PACKAGES) for m in c)
    ]
    assert mine == []


@pytest.mark.parametrize(
    ("user", "used"),
    [
        ("sandbox.config", "sandbox.faults"),  # ConfigError: sandbox/errors.py
        ("sandbox.config", "sandbox.walk"),
        ("sandbox.snapshots", "sandbox.state"),  # the records: sandbox/records.py
        ("sandbox.state", "sandbox.records"),
        ("sandbox.server", "sandbox.app"),  # replay.attach takes a Started protocol
        ("sandbox.app", "sandbox.admin"),
        ("sandbox.admin", "sandbox.replay"),
        ("sandbox.context", "sandbox.replay"),
        ("mm.desk", "mm.quoter"),  # a quoter's desk is a Seat protocol
        ("mm.quoter", "mm.plan"),
        ("mm.desk", "mm.plan"),
    ],
)
def test_each_opened_circle_runs_one_way(user: str, used: str) -> None:
    edges = graph()
    assert f"clobkit.{used}" in edges[f"clobkit.{user}"]
    assert not reaches(edges, f"clobkit.{used}", f"clobkit.{user}")


def test_a_lazy_or_type_only_back_edge_is_a_circle(tmp_path: Path) -> None:
    """The check this file relies on sees the kinds of import the circles used."""
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("from .faults import FaultConfig\n")
    (pkg / "faults.py").write_text("def f():\n    from .config import ConfigError\n")
    (pkg / "desk.py").write_text("from p.quoter import Quoter\n")
    (pkg / "quoter.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .desk import Desk\n"
    )
    assert import_cycles(tmp_path, "p") == [["p.config", "p.faults"], ["p.desk", "p.quoter"]]
