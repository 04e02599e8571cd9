"""Issue #23's bounds, held for the whole package: no Python file over 600 lines, no
function over 60, and the compiled twin's ``_core_c.pyx`` a table of contents of
included parts, none over 500 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "clobkit"
EXT = ROOT / "ext"
FILE_MAX, FUNCTION_MAX, PART_MAX = 600, 60, 500


def too_long(path: Path, name: str) -> list[str]:
    """What in one Python file breaks the bounds (file lines, function lines)."""
    text = path.read_text(encoding="utf-8")
    found = []
    if (lines := text.count("\n")) > FILE_MAX:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > FUNCTION_MAX:
                found.append(f"{name}:{node.lineno}: {node.name} {size} lines")
    return found


def test_no_file_or_function_too_long() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert [f for p in files for f in too_long(p, p.relative_to(ROOT).as_posix())] == []


def test_the_bounds_can_fail(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_MAX))
    long = tmp_path / "long.py"
    long.write_text(f"def f():\n{body}\n" + "\n" * FILE_MAX)
    assert too_long(long, "long.py") == [
        f"long.py: {FILE_MAX + FUNCTION_MAX + 1} lines",
        f"long.py:1: f {FUNCTION_MAX + 1} lines",
    ]


def test_the_compiled_twin_is_a_table_of_contents() -> None:
    """``_core_c.pyx`` holds the shared declarations and ``include`` lines (no Python
    function, no class, short); every part it includes exists and is at most PART_MAX
    lines, and every part in ext/ is included."""
    pyx = (EXT / "_core_c.pyx").read_text(encoding="utf-8")
    parts = re.findall(r'^include "([^"]+)"', pyx, re.M)
    assert parts, "no include lines"
    assert not re.search(r"^(def|cpdef|cdef class|class) ", pyx, re.M)
    assert pyx.count("\n") <= 120
    sizes = {p: (EXT / p).read_text(encoding="utf-8").count("\n") for p in parts}
    assert {p: n for p, n in sizes.items() if n > PART_MAX} == {}
    assert sorted(sizes) == sorted(p.name for p in EXT.glob("*.pxi"))


# Issue #44: the folders are the architecture. Top level: the public modules and the
# packages, each one part (docs/architecture.md draws them); a private helper lives in the
# package of the part that owns it.
PUBLIC_MODULES = {
    "__init__",
    "__main__",
    "amounts",
    "auth",
    "dask",
    "errors",
    "models",
    "order_id",
    "salt",
}
PACKAGES = {
    "bench",
    "cli",
    "client",
    "core",
    "mm",
    "record",
    "sandbox",
    "sentinel",
    "signing",
}


def test_top_level_is_public_modules_and_packages() -> None:
    modules = {p.stem for p in SRC.glob("*.py")}
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")}
    assert modules == PUBLIC_MODULES
    assert packages == PACKAGES
    # no folder of modules without an __init__ (a namespace package by accident)
    folders = {p.parent.name for p in SRC.glob("*/*.py")}
    assert folders == PACKAGES


def module_name(path: Path, src: Path) -> str:
    """The dotted name of the module at ``path`` under the source root ``src``."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Every module of ``known`` that the module ``name`` at ``path`` imports: all import
    statements, inside functions and ``if TYPE_CHECKING:`` included, relative or
    absolute; ``from package import module`` counts as the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # ``from package import module`` imports the module; a name imports its module
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_cycles(src: Path, top: str) -> list[list[str]]:
    """The import circles among the modules of the package ``top`` under ``src``: each
    strongly connected component of more than one module, sorted (Tarjan's algorithm)."""
    paths = {module_name(p, src): p for p in (src / top).rglob("*.py")}
    known = set(paths)
    edges = {name: sorted(imports_of(path, name, known)) for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(cycles)


def test_no_import_cycle() -> None:
    """No module of clobkit imports, directly or through others, one that imports it:
    lazy imports inside functions and type-only imports count (a circle of knowledge)."""
    assert import_cycles(SRC.parent, "clobkit") == []


def test_the_cycle_check_can_fail(tmp_path: Path) -> None:
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n"
    )
    (pkg / "c.py").write_text("def f():\n    from p import a\n")
    (pkg / "d.py").write_text("import p.a\n")
    assert import_cycles(tmp_path, "p") == [["p.a", "p.c", "p.sub.b"]]


def test_test_folders_mirror_the_package() -> None:
    """Each folder of tests/ is named after the package or public module it tests; fuzz/
    holds the property tests that cross parts (any bytes into every reader)."""
    tests = Path(__file__).resolve().parent
    folders = {p.parent.name for p in tests.glob("*/__init__.py")}
    assert folders - {"fuzz"} <= PACKAGES | PUBLIC_MODULES
