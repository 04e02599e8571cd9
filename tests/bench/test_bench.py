"""``clobkit bench`` (clobkit.bench): structure and correctness columns of a quick run, memory.

No timing assertions: timings only have to exist and be positive.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clobkit import IMPLEMENTATION
from clobkit import bench as _bench
from clobkit.bench import _timing, amounts, files, machine, order_ids, orders_v2, report, verdicts
from clobkit.core.extras import install_hint

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = [
    "order_id",
    "order_id_v2",
    "sign_v2",
    "limit_amounts",
    "market_amounts",
    "headers",
    "order_ids_files",
    "floors",
]
ROW_KEYS = {
    "implementation",
    "kind",
    "per_op_ns",
    "x_clobkit",
    "x_F",
    "x_S",
    "correctness",
    "compared",
    "mismatches",
    "expect_equal",
}
# peer row name prefix -> the module it needs
ORDER_ID_PEERS = {
    "py-order-utils": "py_order_utils",
    "eth-account": "eth_account",
    "pure Python EIP-712": "Crypto",
}


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# The --quick run below is one fixture that its tests share: one xdist worker takes them
# all (pyproject.toml's --dist loadgroup), or each worker would make it again (70 s). The
# fixture is session-scoped: the worker may run another module's tests between two of
# these, which ends a module-scoped fixture (CI's slow line made the run twice).
pytestmark = pytest.mark.xdist_group("bench_tool_quick")


@pytest.fixture(scope="session")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``--quick`` run through main(): its exit code, stdout, JSON report and PNG path."""
    out = tmp_path_factory.mktemp("bench")
    argv = ["--quick", "--json", str(out / "r.json")]
    if installed("matplotlib"):
        argv += ["--png", str(out / "r.png")]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        code = _bench.main(argv)
    return {
        "code": code,
        "stdout": stdout.getvalue(),
        "report": json.loads((out / "r.json").read_text()),
        "png": out / "r.png",
    }


def _words(text: str) -> str:
    """``text`` with every run of whitespace one space: the table wraps at 100 columns."""
    return " ".join(text.split())


def rows(report: dict[str, Any], key: str) -> list[dict[str, Any]]:
    (op,) = [op for op in report["operations"] if op["key"] == key]
    return list(op["rows"])


@pytest.mark.slow
def test_quick_run_succeeds_and_prints_the_table(quick: dict[str, Any]) -> None:
    assert quick["code"] == 0
    text = quick["stdout"]
    header = next(line for line in text.splitlines() if line.startswith("implementation"))
    for column in report.HEADERS[1:]:  # the operation: a heading over its rows
        assert column in header
    for title in ("order id", "limit amounts", "market amounts", "request headers", "floors"):
        assert any(line.startswith(title) for line in text.splitlines()), title
    assert "Amounts grid: tick 0.01" in text
    assert "peak ÷ (in + out)" in text


@pytest.mark.slow
def test_json_structure(quick: dict[str, Any]) -> None:
    report = quick["report"]
    assert {"date", "machine", "settings", "floors_ns", "operations", "amounts_grid"} <= set(report)
    assert report["seconds"] > 0
    assert len(report["load_average"]) == 2
    assert report["ok"] is True
    assert report["settings"]["batch"] == _bench.QUICK.batch
    assert [op["key"] for op in report["operations"]] == OPERATIONS
    assert report["floors_ns"]["F"] > 0
    assert report["floors_ns"]["S"] > 0
    for op in report["operations"]:
        for r in op["rows"]:
            assert set(r) == ROW_KEYS
            assert r["per_op_ns"] > 0
        if op["key"] != "floors":
            assert op["rows"][0]["kind"] == "clobkit"
            assert op["rows"][0]["x_clobkit"] == 1.0
    m = report["machine"]
    assert m["core"] == IMPLEMENTATION
    assert _words(machine.machine_line(m)) in _words(quick["stdout"])  # wrapped at 100


@pytest.mark.slow
def test_file_rows_agree_across_formats_and_with_the_peer(quick: dict[str, Any]) -> None:
    """clobkit order-ids on CSV, Parquet, JSONL: the same ids in every format and the peer's."""
    file_rows = rows(quick["report"], "order_ids_files")
    names = [r["implementation"] for r in file_rows]
    formats = ["CSV (quoted)", "JSONL"] + ["Parquet"] * installed("pyarrow")
    for fmt in formats:
        assert any(n.startswith(f"clobkit order-ids {fmt} -> {fmt}") for n in names), fmt
    for r in file_rows[1:]:
        assert r["compared"] > 0
        assert r["mismatches"] == 0
    assert any(n.startswith("Python csv + py-order-utils") for n in names) == installed(
        "py_order_utils"
    )


@pytest.mark.slow
def test_order_ids_agree_with_every_installed_peer(quick: dict[str, Any]) -> None:
    order_rows = rows(quick["report"], "order_id")
    names = [r["implementation"] for r in order_rows]
    assert names[:3] == [
        "clobkit order_id",
        f"clobkit order_ids ×{_bench.QUICK.batch:,}, threads=1",
        f"clobkit order_ids ×{_bench.QUICK.batch:,}, threads=2",
    ]
    for r in order_rows[1:3]:  # the batches, checked against order_id
        assert r["compared"] == _bench.QUICK.batch
        assert r["mismatches"] == 0
    for prefix, module in ORDER_ID_PEERS.items():
        found = [r for r in order_rows if r["implementation"].startswith(prefix)]
        if not installed(module):
            assert not found
            assert any(prefix.split()[0] in n for n in quick["report"]["notes"])
            continue
        (r,) = found
        assert r["compared"] == 2 * _bench.QUICK.checks  # both exchanges
        assert r["mismatches"] == 0
        assert r["correctness"].startswith("ids equal: ")


@pytest.mark.slow
def test_v2_order_ids_agree_with_every_installed_peer(quick: dict[str, Any]) -> None:
    v2_rows = rows(quick["report"], "order_id_v2")
    n = _bench.QUICK.batch_v2
    assert [r["implementation"] for r in v2_rows[:3]] == [
        "clobkit order_id (V2)",
        f"clobkit order_ids (V2) ×{n:,}, threads=1",
        f"clobkit order_ids (V2) ×{n:,}, threads=2",
    ]
    for r in v2_rows[1:3]:
        assert (r["compared"], r["mismatches"]) == (n, 0)
    for prefix, module in (
        ("py-clob-client-v2", "py_clob_client_v2"),
        ("eth-account", "eth_account"),
    ):
        found = [r for r in v2_rows if r["implementation"].startswith(prefix)]
        if not installed(module):
            assert not found
            continue
        (r,) = found
        assert r["kind"] == "peer"
        assert (r["compared"], r["mismatches"]) == (2 * _bench.QUICK.checks, 0)


@pytest.mark.slow
def test_v2_signatures_agree_with_every_installed_peer_and_the_floor(
    quick: dict[str, Any],
) -> None:
    sig_rows = rows(quick["report"], "sign_v2")
    names = [r["implementation"] for r in sig_rows]
    assert names[:3] == [
        "clobkit hasher.sign",
        f"clobkit sign_many ×{orders_v2.SIGN_BATCH:,}, threads=1",
        f"clobkit sign_many ×{orders_v2.SIGN_BATCH:,}, threads=2",
    ]
    for r in sig_rows[1:3]:
        assert (r["compared"], r["mismatches"]) == (orders_v2.SIGN_BATCH, 0)
    (floor,) = [r for r in sig_rows if r["implementation"].startswith("E: ")]
    assert floor["kind"] == "floor"
    peers = [r for r in sig_rows if r["kind"] == "peer"]
    assert len(peers) == installed("py_clob_client_v2") + installed("eth_account")
    for r in [*peers, floor]:
        assert (r["compared"], r["mismatches"]) == (_bench.QUICK.checks, 0)
        assert r["correctness"].startswith("signatures equal: ")
    (e,) = [v for v in quick["report"]["verdicts"] if v["other"].startswith("E: ")]
    assert e["ratio"] == round(floor["per_op_ns"] / sig_rows[0]["per_op_ns"], 3)
    assert "issue" not in quick["stdout"].lower()


@pytest.mark.slow
def test_verdicts_name_every_peer_and_floor_with_its_ratio(quick: dict[str, Any]) -> None:
    """A verdict per peer and floor row, its ratio from the table's rows, printed in words."""
    rep = quick["report"]
    want = {
        (op["key"], r["implementation"])
        for op in rep["operations"]
        if op["key"] != "floors"
        for r in op["rows"][1:]
        if r["kind"] != "clobkit" or op["key"] == "order_ids_files"
    }
    assert {(v["operation"], v["other"]) for v in rep["verdicts"]} == want
    lines = quick["stdout"].splitlines()
    start = lines.index("Verdicts (one call each; batches are in the table):")
    below = _words("\n".join(lines[start:]))  # a verdict wider than 100 columns is wrapped
    for v in rep["verdicts"]:
        (op,) = [op for op in rep["operations"] if op["key"] == v["operation"]]
        (r,) = [r for r in op["rows"] if r["implementation"] == v["other"]]
        assert v["ratio"] == round(r["per_op_ns"] / op["rows"][0]["per_op_ns"], 3)
        assert _words(f"- {verdicts.verdict_text(v)}") in below
    assert re.search(r"the run took \d+:\d\d", quick["stdout"])


def test_the_text_fits_a_terminal_of_100_columns() -> None:
    """The last full run (docs/bench.json) printed lines up to 285 columns wide."""
    full = json.loads((ROOT / "docs" / "bench.json").read_text(encoding="utf-8"))
    text = report.format_text(full)
    assert max(map(len, text.splitlines())) <= report.WIDTH == 100
    words = text.split()
    for op in full["operations"]:  # every row is there, its name wrapped at most
        assert f"{op['title']}:" in text.splitlines()
        for row in op["rows"]:
            assert " ".join(words).count(row["implementation"].split()[0]) > 0
    wide = report.format_markdown(full)  # the Markdown page keeps its rows whole
    assert any(len(line) > 100 for line in wide.splitlines())


def test_verdict_words() -> None:
    base = {"title": "order id", "clobkit": "clobkit order_id", "other": "peer x", "kind": "peer"}
    assert verdicts.verdict_text(base | {"ratio": 52.6}) == (
        "order id: clobkit order_id is 52.6× faster than peer x"
    )
    assert verdicts.verdict_text(base | {"ratio": 0.5}).endswith("is 2× slower than peer x")
    assert verdicts.verdict_text(base | {"ratio": 125.4}).endswith("is 125× faster than peer x")
    floor = base | {"kind": "floor", "other": "E", "ratio": 0.917}
    assert verdicts.verdict_text(floor) == "order id: clobkit order_id costs 1.09× the floor E"
    fmt = base | {"kind": "format", "other": "Parquet", "ratio": 1.12}
    assert (
        verdicts.verdict_text(fmt) == "order id: Parquet takes 1.12× the time of clobkit order_id"
    )


def test_the_parquet_skip_names_the_data_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyarrow comes with the data extra (the bench extra does not bring it)."""
    monkeypatch.setattr(files, "_write_inputs", lambda root, n: ["csv", "jsonl"])
    monkeypatch.setattr(files, "_clobkit_contenders", lambda root, formats, n: [])
    monkeypatch.setattr(files, "py_order_utils_order_id", _missing)
    notes: list[str] = []
    files.file_operation(_bench.QUICK, notes, lambda _: None)
    assert notes[0].startswith("pyarrow not installed: Parquet -> Parquet skipped; ")
    assert notes[0].endswith(install_hint("data"))


def _missing() -> Any:
    raise ModuleNotFoundError("No module named 'nope'", name="nope")


def test_a_wrong_v2_peer_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The V2 correctness columns can fail: a peer that flips one hex digit is caught."""

    def wrong() -> Any:
        def flip(*row: Any) -> str:
            return "0x" + "0" * 64

        return flip, flip

    monkeypatch.setattr(orders_v2, "V2_PEERS", [("wrong", "wrong", wrong)])
    monkeypatch.setitem(orders_v2.PEER_CALLS, "wrong", ("id", "sign"))
    tiny = _bench.Settings(1, 0.1, 100, 3, 1 << 12, 0, 4, batch_v2=50)
    ids, sig = orders_v2.v2_operations(tiny, [], lambda _: None)
    (peer_id,) = [c for c in ids.contenders if c.kind == "peer"]
    (peer_sig,) = [c for c in sig.contenders if c.kind == "peer"]
    assert (peer_id.compared, peer_id.mismatches) == (8, 8)
    assert (peer_sig.compared, peer_sig.mismatches) == (4, 4)
    assert "DIFFER" in peer_sig.correctness


@pytest.mark.slow
def test_amounts_grid_counts(quick: dict[str, Any]) -> None:
    grid = quick["report"]["amounts_grid"]
    assert grid["points"] == 99 * _bench.QUICK.sizes_max_cents * 2
    for kind in ("limit", "market"):
        assert grid[kind]["clobkit_vs_decimal"] == 0
        amount_rows = rows(quick["report"], f"{kind}_amounts")
        assert amount_rows[0]["mismatches"] == 0
        assert amount_rows[0]["compared"] == grid["points"]
        if installed("py_clob_client"):
            bad = grid[kind]["py_clob_client_vs_clobkit"]
            assert bad > 0  # its float rounding loses a cent on sizes such as 0.29
            assert bad == grid[kind]["py_clob_client_vs_decimal"]
            (peer,) = [r for r in amount_rows if r["implementation"].startswith("py-clob-client")]
            assert peer["mismatches"] == bad
            assert peer["expect_equal"] is False
            assert f"≠ clobkit: {bad:,} of" in peer["correctness"]
            assert grid[kind]["py_clob_client_examples"]


@pytest.mark.slow
def test_signatures_agree_with_stdlib(quick: dict[str, Any]) -> None:
    sign_rows = rows(quick["report"], "headers")
    assert [r["kind"] for r in sign_rows] == ["clobkit", "clobkit", "peer"]
    for r in sign_rows:
        assert r["compared"] == _bench.QUICK.checks
        assert r["mismatches"] == 0


@pytest.mark.slow
def test_png_written(quick: dict[str, Any]) -> None:
    if not installed("matplotlib"):
        pytest.skip("matplotlib is not installed (the bench extra installs it)")
    assert quick["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_markdown_table(quick: dict[str, Any]) -> None:
    md = _bench.format_markdown(quick["report"])
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table[0] == "| " + " | ".join(report.HEADERS) + " |"
    assert all(line.count(" | ") == len(report.HEADERS) - 1 for line in table[:3])
    body_rows = sum(len(op["rows"]) for op in quick["report"]["operations"])
    assert len(table) >= 2 + body_rows  # header, alignment, rows (+ the memory table)
    assert quick["report"]["date"] in md


@pytest.mark.slow
def test_missing_peers_are_skipped_with_a_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Any:
        raise ModuleNotFoundError("No module named 'nope'", name="nope")

    monkeypatch.setattr(order_ids, "ORDER_ID_PEERS", [("nope-utils", "nope order id", missing)])
    monkeypatch.setattr(amounts, "py_clob_client_amount_fns", missing)
    monkeypatch.setattr(orders_v2, "V2_PEERS", [("nope-v2", "nope v2", missing)])
    tiny = _bench.Settings(1, 0.1, 100, 3, 1 << 12, 0, 4)
    notes: list[str] = []
    op = order_ids.order_id_operation(tiny, notes, lambda _: None)
    ops, grid = amounts.amounts_operations(tiny, notes, lambda _: None)
    v2_ids, v2_sig = orders_v2.v2_operations(tiny, notes, lambda _: None)
    assert [c.kind for c in v2_ids.contenders] == ["clobkit"] * 3
    assert [c.kind for c in v2_sig.contenders] == ["clobkit"] * 3 + ["floor"]
    assert [c.kind for c in op.contenders] == ["clobkit"] * 3
    assert grid["limit"]["py_clob_client_vs_clobkit"] is None
    assert [c.name for c in ops[0].contenders] == [
        "clobkit limit_amounts",
        "Decimal rules, hand-written",
    ]
    assert len(notes) == 3
    assert all("not installed (nope)" in n and install_hint("bench") in n for n in notes)


def test_compare_wrapper_runs_from_the_repository() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.compare", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--markdown" in done.stdout


@pytest.mark.slow
def test_memory_peak_within_twice_inputs_and_outputs() -> None:
    """Issue #5: a 1,000,000-order batch peaks at no more than 2 × its inputs + outputs."""
    orders = 1_000_000 if IMPLEMENTATION == "c" else 50_000  # the pure twin is ~20x slower
    results = _bench.measure_memory(orders, threads=(1, 2))
    assert [r["threads"] for r in results] == [1, 2]
    for r in results:
        assert r["orders"] == orders
        assert r["inputs_bytes"] > 0
        assert r["outputs_bytes"] >= orders * 66
        assert r["peak_increase_bytes"] > 0
        assert r["ratio"] <= 2, r


def test_gil_bound() -> None:
    """The GIL's bound the scaling benchmarks print (docs/scale.md): no GIL part leaves
    every thread's share; a GIL part the workers overlap caps at one over its share; a
    lone part adds to every thread count's time."""
    assert _timing.gil_bound(100.0, 0.0, 0.0, 16) == 16
    assert _timing.gil_bound(100.0, 25.0, 0.0, 16) == 4  # 25 a round on the calling thread
    assert _timing.gil_bound(100.0, 25.0, 0.0, 2) == 2  # 50 each: the GIL part fits beside
    assert _timing.gil_bound(100.0, 10.0, 10.0, 16) == pytest.approx(100 / (10 + 90 / 16))
    assert _timing.gil_bound(100.0, 30.0, 30.0, 1) == 1
