"""``_core_c.pyi`` says what the compiled twin defines, with the pure twin's signatures.

The stub is what editors and mypy see of ``clobkit.core._core_c``; these tests fail
when a name is added to or removed from the extension without the stub, or when
the twins' contract (``_types.CORE_API``: same names, parameters, defaults) and
the stub drift apart.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from clobkit.core import pure as _core_py
from clobkit.core.types import CORE_API

SRC = Path(__file__).resolve().parents[2] / "src" / "clobkit"
STUB = SRC / "core" / "_core_c.pyi"
PYX = SRC.parent.parent / "ext" / "_core_c.pyx"

#: the parts of a signature the twins share: name, kind, default ("given": the twin's sentinel)
Param = tuple[str, str, Any]


def _stub() -> dict[str, ast.stmt]:
    """The stub's top-level definitions by name."""
    tree = ast.parse(STUB.read_text(), str(STUB))
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _public(names: Any) -> set[str]:
    return {name for name in names if not name.startswith("_")}


def _pyx_imports() -> set[str]:
    """Names the table of contents imports (they are its tools, not its exports)."""
    found = re.findall(r"^from \S+ import (.+)$", PYX.read_text(), re.MULTILINE)
    return {name.split(" as ")[-1].strip() for line in found for name in line.split(",")}


def _stub_params(fn: ast.FunctionDef) -> list[Param]:
    a = fn.args
    out: list[Param] = []
    positional = a.posonlyargs + a.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    for arg, default in zip(positional, defaults, strict=True):
        out.append((arg.arg, "POSITIONAL_OR_KEYWORD", _literal(default)))
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", inspect.Parameter.empty))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append((arg.arg, "KEYWORD_ONLY", _literal(kw_default)))
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", inspect.Parameter.empty))
    return [p for p in out if p[0] != "self"]


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return inspect.Parameter.empty
    value = ast.literal_eval(node)
    return "given" if value is Ellipsis else value  # ``...``: the twin's own sentinel


def _twin_params(fn: Any) -> list[Param]:
    out: list[Param] = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if default is not inspect.Parameter.empty and not isinstance(
            default, (str, bytes, int, bool, type(None))
        ):
            default = "given"
        out.append((p.name, p.kind.name, default))
    return [p for p in out if p[0] != "self"]


def _stub_methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {
        node.name: node
        for node in cls.body
        if isinstance(node, ast.FunctionDef)
        and not any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)
    }


def _stub_properties(cls: ast.ClassDef) -> set[str]:
    return {
        node.name
        for node in cls.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)
    }


def test_the_twins_contract_is_the_stubs_first_part() -> None:
    stub = _stub()
    assert list(CORE_API) == _core_py.__all__
    assert set(CORE_API) <= set(stub)


@pytest.mark.parametrize("name", CORE_API)
def test_stub_signatures_are_the_pure_twins(name: str) -> None:
    node = _stub()[name]
    twin = getattr(_core_py, name)
    if isinstance(node, ast.FunctionDef):
        assert _stub_params(node) == _twin_params(twin)
        return
    assert isinstance(node, ast.ClassDef)
    methods = _stub_methods(node)
    members = vars(twin)
    public = {n for n, v in members.items() if not n.startswith("_") and inspect.isfunction(v)}
    props = {n for n, v in members.items() if isinstance(v, property)}
    assert _public(methods) == public
    assert _stub_properties(node) == props | _public(getattr(twin, "__slots__", ()))
    for method in _public(methods) | {"__init__"}:
        assert _stub_params(methods[method]) == _twin_params(getattr(twin, method)), method


compiled = pytest.mark.skipif(
    importlib.util.find_spec("clobkit.core._core_c") is None,
    reason="pure-only run (CLOBKIT_NO_EXTENSIONS=1): no compiled twin to compare the stub with",
)


@compiled
def test_stub_names_are_the_compiled_twins() -> None:
    core_c = importlib.import_module("clobkit.core._core_c")
    defined = _public(vars(core_c)) - _pyx_imports()
    assert _public(_stub()) == defined
    assert core_c.__all__ == list(CORE_API)


@compiled
@pytest.mark.parametrize("name", CORE_API)
def test_compiled_signatures_are_the_stubs(name: str) -> None:
    """Where the compiled twin reports a signature (Cython's binding), it is the stub's."""
    node = _stub()[name]
    obj = getattr(importlib.import_module("clobkit.core._core_c"), name)
    pairs: list[tuple[ast.FunctionDef, Any]] = []
    if isinstance(node, ast.FunctionDef):
        pairs.append((node, obj))
    else:
        assert isinstance(node, ast.ClassDef)
        methods = _stub_methods(node)
        pairs += [(methods[m], getattr(obj, m)) for m in _public(methods)]
    for fn, live in pairs:
        stub = [(n, k) for n, k, _ in _stub_params(fn)]
        assert [(n, k) for n, k, _ in _twin_params(live)] == stub, fn.name
