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
