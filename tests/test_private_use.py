"""No module in src/ reads a private attribute of a dependency (issue #21).

A private name (one leading underscore, not a dunder) is ours when our own
source defines it somewhere (a function, class, argument, assignment, slot or
import alias; a dependency's private name that is also one of ours goes
unseen); any other private name read in src/ belongs to a dependency: an
``obj._name`` attribute, a ``getattr``/``setattr``/``hasattr`` with a ``"_name"``
literal, or an import from a private module or of a private name of another
package. Each use that is truly unavoidable is listed in ``ALLOWED`` with the
test guarding it; the list is checked both ways, so it cannot go stale.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "clobkit"
EXT = SRC.parent.parent / "ext"
#: a def / cpdef / cdef (any return type) of a private name in Cython source
_PYX_DEF = re.compile(r"^\s*(?:c?p?def)\b[^(=\n]*?\b(_\w+)\s*\(", re.MULTILINE)

#: (file under src/clobkit, the private name used) -> why, and what guards it.
ALLOWED = {
    # coincurve has no public handle on libsecp256k1's functions, which the compiled
    # core's workers call by address: taken only once secp.check_declarations and
    # secp.self_check pass at load, else coincurve's public API signs (with a warning;
    # tests/core/test_native_pool.py); no upper bound on coincurve is needed
    ("signing/secp.py", "coincurve._libsecp256k1"): "libsecp256k1's functions, checked at load",
    # outside the client, met by this test when it was written (issue #21) and left to
    # their owners; each dependency carries an upper bound in pyproject.toml
    ("core/arrow_compute.py", "pyarrow._compute"): "import time; falls back to pyarrow.compute",
    ("bench/order_ids.py", "_hash_eip191_message"): "oracle timing (eth-account)",
    ("bench/orders_v2.py", "_hash_eip191_message"): "oracle timing (eth-account)",
    ("bench/order_ids.py", "_create_struct_hash"): "oracle timing (py-order-utils)",
}


#: The standard library's public names that start with an underscore (namedtuple's
#: documented methods; the underscore only keeps them apart from field names).
PUBLIC = {"_asdict", "_replace", "_fields", "_field_defaults", "_make"}


def _private(name: str) -> bool:
    return (
        name.startswith("_")
        and not (name.startswith("__") and name.endswith("__"))
        and name not in PUBLIC
    )


def _modules() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(SRC)): ast.parse(path.read_text(), str(path))
        for path in sorted(SRC.rglob("*.py"))
    }


def _defined(trees: dict[str, ast.Module]) -> set[str]:
    """Every private name our own source defines."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[0])
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets)
                and isinstance(node.value, (ast.Tuple, ast.List))
            ):
                names.update(
                    e.value
                    for e in node.value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                )
    # the compiled twin's own functions and methods (ext/*.pyx, *.pxi), read through it
    for path in sorted(EXT.glob("*.px[di]")) + sorted(EXT.glob("*.pyx")):
        names.update(_PYX_DEF.findall(path.read_text()))
    return {name for name in names if _private(name)}


def _dependency_private_uses(trees: dict[str, ast.Module]) -> set[tuple[str, str]]:
    ours = _defined(trees) - _imported_private(trees)
    found: set[tuple[str, str]] = set()
    for file, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == "clobkit":
                    continue
                if any(_private(part) for part in node.module.split(".")):
                    found.add((file, node.module))
                found.update(
                    (file, f"{node.module}.{alias.name}")
                    for alias in node.names
                    if _private(alias.name)
                )
            elif isinstance(node, ast.Import):
                found.update(
                    (file, alias.name)
                    for alias in node.names
                    if alias.name.split(".")[0] != "clobkit"
                    and any(_private(part) for part in alias.name.split("."))
                )
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                if _private(node.attr) and node.attr not in ours:
                    found.add((file, node.attr))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _private(node.args[1].value)
                and node.args[1].value not in ours
            ):
                found.add((file, node.args[1].value))
    return found


def _imported_private(trees: dict[str, ast.Module]) -> set[str]:
    """Private names brought in from other packages (not ours, though bound here)."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module
                and node.module.split(".")[0] != "clobkit"
            ):
                names.update(a.name for a in node.names if _private(a.name))
    return names


def test_no_private_attribute_of_a_dependency_is_read() -> None:
    found = _dependency_private_uses(_modules())
    unexpected = sorted(found - set(ALLOWED))
    assert unexpected == [], f"private names of dependencies read in src/: {unexpected}"


def test_every_allowed_private_use_is_still_there() -> None:
    """An allowed use that is gone must leave the list (and its upper bound pyproject)."""
    found = _dependency_private_uses(_modules())
    assert sorted(set(ALLOWED) - found) == []


def test_the_check_sees_each_kind_of_private_use() -> None:
    """The scan itself: each way of reaching a dependency's private names is caught."""
    source = """
import httpx
import httpcore._backends
from coincurve._libsecp256k1 import ffi
from anyio import _core
pool = getattr(transport, "_pool", None)
stream = inner._stream
ok = self._mine
"""
    tree = ast.parse(source)
    mine = ast.parse("class X:\n    def __init__(self):\n        self._mine = 1\n")
    found = _dependency_private_uses({"a.py": tree, "b.py": mine})
    assert found == {
        ("a.py", "httpcore._backends"),
        ("a.py", "coincurve._libsecp256k1"),
        ("a.py", "anyio._core"),
        ("a.py", "_pool"),
        ("a.py", "_stream"),
    }
