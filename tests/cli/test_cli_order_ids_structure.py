"""``clobkit order-ids`` is one straight line (#44): readers, hashing, writers, one driver.

Read from the modules' import statements (``ast``: lazy imports inside
functions and type-only ones count): no import circle inside
``clobkit.cli.orderids``; no reader reaches a writer, directly or through
other modules, and no writer a reader; the hashing stage reaches neither;
only the driver (``run``) reaches both.
"""

from __future__ import annotations

from pathlib import Path

from ..test_structure import SRC, import_cycles, imports_of, module_name

PACKAGE = "clobkit.cli.orderids"
READERS = {"csv_exact", "csv_fast", "jsonl", "parquet"}
WRITERS = {"write_csv", "write_jsonl", "write_parquet", "write_text", "convert", "outputs"}


def reached(src: Path, package: str) -> dict[str, set[str]]:
    """Each module of ``package`` (under the source root ``src``) by its last name, with
    every module of the package it imports, directly or through others."""
    paths = {module_name(p, src): p for p in (src / package.replace(".", "/")).glob("*.py")}
    known = set(paths)
    direct = {name: imports_of(path, name, known) for name, path in paths.items()}
    found: dict[str, set[str]] = {}
    for name in direct:
        seen: set[str] = set()
        todo = list(direct[name])
        while todo:
            nxt = todo.pop()
            if nxt not in seen:
                seen.add(nxt)
                todo.extend(direct[nxt])
        found[name.rpartition(".")[2]] = {m.rpartition(".")[2] for m in seen}
    return found


def crossings(graph: dict[str, set[str]]) -> list[str]:
    """Every import (direct or through others) that breaks the straight line."""
    wrong = []
    for name, reach in sorted(graph.items()):
        if name in READERS and reach & WRITERS:
            wrong.append(f"reader {name} reaches {sorted(reach & WRITERS)}")
        if name in WRITERS and reach & READERS:
            wrong.append(f"writer {name} reaches {sorted(reach & READERS)}")
        if name == "hashing" and reach & (READERS | WRITERS):
            wrong.append(f"hashing reaches {sorted(reach & (READERS | WRITERS))}")
    return wrong


def test_the_pipeline_has_no_import_circle() -> None:
    assert import_cycles(SRC.parent, PACKAGE.replace(".", "/")) == []


def test_readers_and_writers_meet_only_in_the_driver() -> None:
    graph = reached(SRC.parent, PACKAGE)
    assert READERS | WRITERS | {"hashing", "run"} <= set(graph)
    assert crossings(graph) == []
    assert graph["run"] >= READERS | WRITERS | {"hashing"}


def test_the_check_can_fail(tmp_path: Path) -> None:
    """A reader that reaches a writer through a shared module is found; so is a circle."""
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "jsonl.py").write_text("from . import rows\n")
    (pkg / "rows.py").write_text("def f():\n    from .write_csv import g\n")
    (pkg / "write_csv.py").write_text("from .rows import f\n")
    (pkg / "hashing.py").write_text("")
    graph = reached(tmp_path, "p")
    assert crossings(graph) == ["reader jsonl reaches ['write_csv']"]
    assert import_cycles(tmp_path, "p") == [["p.rows", "p.write_csv"]]
