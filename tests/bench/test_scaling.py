"""benchmarks/scaling.py runs end to end at tiny sizes (#20): every row, the machine's
ceiling, the floors, JSON and markdown. Its figures are not checked (no timing asserts):
only that each is there."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import clobkit

from ..conftest import NO_EXTENSIONS, import_extra

ROOT = Path(__file__).resolve().parents[2]

import_extra("dask.dataframe", "dask")
import_extra("distributed", "dask")


def _bench(script: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """benchmarks/``script`` run to its end, with the clobkit under test (src/ here, the
    installed wheel in CI) as a path relative to the checkout: the scripts make it
    absolute for their children."""
    env = os.environ | {"PYTHONPATH": os.path.relpath(Path(clobkit.__file__).parents[1], ROOT)}
    done = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_scaling_runs_every_row_at_tiny_sizes(tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "scaling.json", tmp_path / "scaling.md"
    args = ["--quick", "--max-threads", "2", "--rows", "3000", "--dask-rows", "3000"]
    args += ["--parts", "2", "--json", str(out_json), "--markdown", str(out_md)]
    args += ["--tmp", str(tmp_path), "--dask-plain"]
    done = _bench("scaling.py", args)
    data = json.loads(out_json.read_text())
    assert data["counts"] == [1, 2]
    assert data["F_seconds"] > 0
    assert data["E_seconds"] > 0
    works = [row["work"] for row in data["rows"]]
    assert len(works) == 13
    assert sum(w.startswith("machine:") for w in works) == 2  # the ceiling: no clobkit code
    assert sum("`order_ids`" in w for w in works) == 4
    assert sum("sign_many" in w for w in works) == 2
    assert any("POLY_1271" in w for w in works)
    assert sum("clobkit order-ids" in w for w in works) == 3  # CSV, Parquet, its writer
    assert sum("Dask" in w for w in works) == 2  # fused, and Dask's own unfused
    alone = [row for row in data["rows"] if "writer alone" in row["work"]]
    assert [set(row["seconds_per_order"]) for row in alone] == [{"1"}]  # one thread, always
    for row in data["rows"]:
        assert set(row["seconds_per_order"]) == ({"1"} if row in alone else {"1", "2"})
        assert all(s > 0 for s in row["seconds_per_order"].values())
    assert {g["threads"] for g in data["gil"]} == {1}  # 2 threads would leave no core to tick
    assert len(data["gil"]) == 5  # four order_ids rows and sign_many
    assert all(g["held_per_order"] >= 0 for g in data["gil"])
    assert all(g["ticker_waited_for_a_core_per_order"] >= 0 for g in data["gil"])
    for g in data["gil"]:  # the compiled core's meter: the lone part within the GIL part
        if clobkit.IMPLEMENTATION == "c":
            assert 0 <= g["cpu_alone_per_order"] <= g["cpu_held_per_order"]
            assert 1 <= g["gil_bound_at_16"] <= 16
        else:  # the pure twin has no meter: said as nan, not as a figure
            assert math.isnan(g["cpu_held_per_order"])
            assert math.isnan(g["gil_bound_at_16"])
    _check_dask_stages(data["dask_stages_seconds_per_order"])
    text = out_md.read_text()
    assert "Where the Dask workers' time goes" in text
    assert text in done.stdout
    assert "| work | rows | 1 thread | 2 threads | best |" in text
    assert text.count("\n| V") == 6 + 5  # the table's order_ids and sign_many rows, GIL rows
    assert text.count("\n| machine: ") == 2
    assert set(tmp_path.iterdir()) == {out_json, out_md}  # the inputs are removed


def test_call_cost_prints_every_row() -> None:
    """benchmarks/call_cost.py (a batch's fixed cost, neg_risk lists, a Dask partition's
    step) runs end to end; its figures are not checked, only that each row is there."""
    done = subprocess.run(
        [sys.executable, "benchmarks/call_cost.py", "--rounds", "1"],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("x order_id\n") == 5
    assert done.stdout.count("x the scalar's\n") == 2
    assert "x order_ids alone\n" in done.stdout


def test_a_row_the_workers_left_to_python_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """scaling.py refuses a row whose batch took the Python path (right ids, only slower:
    how every neg_risk list once went unseen)."""
    # a script, not typed as src/ is: imported by name, out of mypy's view
    scaling: Any = importlib.import_module("benchmarks.scaling")
    try:
        core_c: Any = importlib.import_module("clobkit.core._core_c")
    except ImportError:
        if not NO_EXTENSIONS:
            raise  # expected built, as conftest's twins are
        # a pure-only run: scaling.py has no meter, and refuses nothing
        assert scaling._core_c is None
        scaling._check_missed(scaling.Row("plain", 3, "F"))
        return
    monkeypatch.setattr(scaling, "_core_c", core_c)  # its meter, whichever twin clobkit runs

    from clobkit.core.enums import Side

    hasher = core_c.OrderHasher(scaling.V1_WALLET)  # the meter's twin, whichever clobkit runs
    cols = {"token_ids": 1, "maker_amounts": 2, "taker_amounts": 3, "salts": 4}
    hasher.order_ids(**cols, sides=[0, 1, 0])
    scaling._check_missed(scaling.Row("plain", 3, "F"))  # the workers took every row
    hasher.order_ids(**cols, sides=[0, Side.SELL, 0])  # an IntEnum: its block in Python
    with pytest.raises(SystemExit, match="odd: 3 rows of the last batch took the Python path"):
        scaling._check_missed(scaling.Row("odd", 3, "F"))


def _check_dask_stages(stages: list[dict[str, Any]]) -> None:
    """At one worker and at the most, fused and not: every stage's tasks were seen, and
    the parts add up to the workers' wall time."""
    assert [(s["job"], s["workers"]) for s in stages] == [
        ("fused", 1),
        ("fused", 2),
        ("plain", 1),
        ("plain", 2),
    ]
    kinds = ("read", "order ids", "write", "read, ids, write (one task)")
    for s in stages:  # every stage's tasks were seen, and the parts add up to the wall
        if s["job"] == "fused":  # one task a partition: read, hashed, written
            assert s["read, ids, write (one task)"] > 0
            assert s["read"] == s["order ids"] == s["write"] == 0
        else:
            assert min(s["read"], s["order ids"], s["write"]) > 0
            assert s["read, ids, write (one task)"] == 0
        parts = sum(s[k] for k in (*kinds, "other tasks", "outside tasks"))
        filled = s["wall"] * s["workers"]  # the workers' wall time: the parts fill it, no less
        assert parts >= filled * (1 - 1e-6)
        assert parts == pytest.approx(filled, rel=1e-6) or s["outside tasks"] == 0


TVP_ARGS = ["--quick", "--max", "2", "--rounds", "1"]
KINDS = ["sign", "ids", "lists", "lists-arrow", "arrow", "command", "dask"]


@pytest.mark.slow
def test_threads_vs_processes_runs_every_kind_at_tiny_sizes(tmp_path: Path) -> None:
    out = tmp_path / "tvp.json"
    done = _bench("threads_vs_processes.py", [*TVP_ARGS, "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["counts"] == [2]
    assert list(data["kinds"]) == KINDS
    for kind, row in data["kinds"].items():
        assert min(row["orders"], row["one"]) > 0, kind
        assert min(row["2"]["threads"], row["2"]["processes"]) > 0, kind
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 100  # a terminal's width
    assert (
        sum(line.startswith(("sign_many", "order_ids", "order-ids", "dask")) for line in lines) == 6
    )
    assert "the command's rate over the in-memory Arrow rate: 2: " in done.stdout


@pytest.mark.slow
def test_clobkit_bench_scaling_prints_the_table(tmp_path: Path) -> None:
    """``clobkit bench --scaling`` is the same table, from the installed package."""
    env = os.environ | {"PYTHONPATH": str(Path(clobkit.__file__).parents[1])}
    args = [
        sys.executable,
        "-m",
        "clobkit",
        "bench",
        "--scaling",
        *TVP_ARGS,
        "--kinds",
        "arrow,command",
    ]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "threads / processes at N" in done.stdout
    assert "order_ids arrow->arrow" in done.stdout
    assert "order-ids CSV->dataset" in done.stdout
    bad = subprocess.run(
        [*args[:5], "--kinds", "nope"], env=env, capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert "unknown kind(s) nope" in bad.stderr
