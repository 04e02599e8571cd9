"""Issue #44: the plan check of a requote has one home, ``mm/plan.py``.

Before a requote sends anything its quoters must hear their fills, the desk must not be
halted, the markets' minimums must be known and every ladder must pass the gate's
``plan`` (each quoter's limits and the desk's). A desk's requote and a quoter's own both
run ``plan.check_plan``; this test reads every module of ``mm/`` with ``ast`` and fails
when any of those steps is called anywhere else (a second copy of the check)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MM = Path(__file__).resolve().parents[2] / "src" / "clobkit" / "mm"
#: The steps of the plan check, each called in its home only: (method, home function).
STEPS = {
    "check_hearing": "check_plan",
    "learn_minimum": "check_plan",
    "plan": "check_ladders",  # Gate.plan
}


def calls_outside_home(source: str, module: str) -> list[str]:
    """``module:line: method`` for each call of a plan-check step outside its home."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                continue
            home = STEPS.get(call.func.attr)
            if home is not None and (module, node.name) != ("plan.py", home):
                found.append(f"{module}:{call.lineno}: {call.func.attr}")
    return found


def test_the_plan_check_has_one_home() -> None:
    found = [
        hit
        for path in sorted(MM.glob("*.py"))
        for hit in calls_outside_home(path.read_text(encoding="utf-8"), path.name)
    ]
    assert found == []


def test_each_step_is_called_at_home() -> None:
    source = (MM / "plan.py").read_text(encoding="utf-8")
    called = {
        (fn.name, call.func.attr)
        for fn in ast.walk(ast.parse(source))
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for call in ast.walk(fn)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    }
    assert {(home, step) for step, home in STEPS.items()} <= called


@pytest.mark.parametrize(
    "source",
    [
        "async def requote(self, w):\n    self.gate.plan({q.owner: (w, 0)})\n",
        "async def requote(self, w):\n    if w:\n        self.check_hearing()\n",
        "async def requote(self, w):\n    await self.feed.learn_minimum()\n",
    ],
)
def test_a_second_copy_is_found(source: str) -> None:
    assert len(calls_outside_home(source, "desk.py")) == 1
