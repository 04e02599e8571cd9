"""``clobkit.mm`` is composed, not layered: its parts (the cache with the state
machine, the gate, the sender, the resolver, the kill switch, the router, the feed,
the quoter, the desk) talk through public methods. No module of it reads another
object's private attribute (``q._lock``, ``self.feed._task``): a test fails if one
does, and the transition table is the one home of how an order's state changes."""

from __future__ import annotations

import ast
from pathlib import Path

from clobkit.mm import TRANSITIONS, Event, State

MM = Path(__file__).resolve().parents[2] / "src" / "clobkit" / "mm"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def foreign_private_reads(source: str) -> list[str]:
    """Every ``x._name`` in ``source`` whose ``x`` is not ``self`` or ``cls`` itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{ast.unparse(owner)}.{node.attr}")
    return found


def state_assignments(source: str) -> list[str]:
    """Every ``x.state = ...`` outside ``ExecutionCache.fire`` (its one home) and a
    constructor's own first state (``self.state`` in ``__init__``)."""
    found = []
    tree = ast.parse(source)
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if func.name in ("fire", "__init__"):
            continue
        for node in ast.walk(func):
            targets = node.targets if isinstance(node, ast.Assign) else []
            found += [
                f"{func.name}: {ast.unparse(t)}"
                for t in targets
                if isinstance(t, ast.Attribute) and t.attr == "state"
            ]
    return found


def test_no_module_reads_another_objects_private_attribute() -> None:
    files = sorted(MM.glob("*.py"))
    assert len(files) >= 15
    uses = {p.name: r for p in files if (r := foreign_private_reads(p.read_text()))}
    assert uses == {}


def test_the_check_sees_each_kind_of_private_read() -> None:
    assert foreign_private_reads("q._lock") == ["q._lock"]
    assert foreign_private_reads("self.feed._task.cancel()") == ["self.feed._task"]
    assert foreign_private_reads("desk._quoters[k]") == ["desk._quoters"]
    assert foreign_private_reads("self._lock\ncls._x\nq.__aenter__()\nq.lock") == []


def test_only_the_cache_sets_an_orders_state() -> None:
    files = sorted(MM.glob("*.py"))
    found = {p.name: r for p in files if (r := state_assignments(p.read_text()))}
    assert found == {}
    assert state_assignments("def f(t):\n    t.state = 1\n") == ["f: t.state"]


def test_the_table_never_calls_a_live_order_refused() -> None:
    """From a state where the order may rest under an id we know, no event leads to
    REFUSED or to a place of unknown outcome: a live order is never called refused."""
    live = {State.OPEN, State.CANCELLING, State.CANCEL_UNKNOWN}
    for (before, event), after in TRANSITIONS.items():
        if before in live:
            assert after in live or after is State.DONE, (before, event, after)
    for event in (Event.REFUSED, Event.RULED_OUT, Event.WITHHELD):
        for state in live:
            assert (state, event) not in TRANSITIONS
    # an order called refused and then seen is tracked again, never left untracked
    assert TRANSITIONS[State.REFUSED, Event.SEEN_OPEN] is State.OPEN
