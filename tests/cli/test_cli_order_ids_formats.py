"""``clobkit order-ids`` from any format to any format, and into a Parquet dataset (#45).

Every output holds the rows the input holds, in order, with the ids of the
same-format run (whose ids are checked against the core row by row in
test_cli_order_ids.py); a dataset read in its documented order (the
manifest's, the names') holds the single file's rows; every output is
written where no planted link can send it.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import clobkit.cli.orderids.csv_fast as csvfast
from clobkit.cli.orderids.outputs import MANIFEST

from .conftest import WALLET, Result
from .test_cli_order_ids import expected_id, orders, write_csv, write_jsonl
from .test_cli_order_ids_stages import _parquet
from .test_cli_order_ids_v2 import wallet_file

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

FORMATS = ("csv", "jsonl", "parquet")
OUTPUTS = ("csv", "jsonl", "parquet", "dataset")


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    _parquet(path, rows, group=400)  # typed columns, and a "note" column kept as it is


def write_input(path: Path, rows: list[dict[str, Any]]) -> None:
    {".csv": write_csv, ".jsonl": write_jsonl, ".parquet": write_parquet}[path.suffix](path, rows)


def dataset_table(path: Path) -> Any:
    """A dataset's rows in its documented order: the manifest's list of files."""
    manifest = json.loads((path / MANIFEST).read_text())
    names = [entry["path"] for entry in manifest["files"]]
    assert names == sorted(names)  # the names sort in the same order
    tables = [pq.read_table(path / name) for name in names]
    assert [t.num_rows for t in tables] == [entry["rows"] for entry in manifest["files"]]
    table = pa.concat_tables(tables)
    assert table.num_rows == manifest["rows"]
    return table


def read_output(path: Path) -> list[dict[str, Any]]:
    """Any output's rows as dicts."""
    if path.is_dir():
        return dataset_table(path).to_pylist()  # type: ignore[no-any-return]
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()  # type: ignore[no-any-return]
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            return list(csv.DictReader(f))
    return [json.loads(line) for line in path.read_text().splitlines()]


def target(tmp_path: Path, src: str, out: str, tag: str = "") -> Path:
    name = f"out-{src}-{out}{tag}"
    return tmp_path / (name if out == "dataset" else f"{name}.{out}")


def run(cli: Callable[..., Result], wallet: Path, src: Path, dst: Path, *extra: str) -> Result:
    where = str(dst) + ("/" if dst.suffix == "" else "")
    return cli("order-ids", "--wallet", str(wallet), str(src), where, *extra)


@pytest.mark.parametrize("out", OUTPUTS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_into_every_format(
    cli: Callable[..., Result], tmp_path: Path, fmt: str, out: str
) -> None:
    rows = orders(900, full=True)
    wallet = wallet_file(tmp_path, WALLET)
    src = tmp_path / f"in.{fmt}"
    write_input(src, rows)
    dst = target(tmp_path, fmt, out)
    got = run(cli, wallet, src, dst, "--batch-size", "250", "--threads", "2")
    assert got.code == 0, got.err
    written = read_output(dst)
    assert [w["order_id"] for w in written] == [expected_id(r) for r in rows]
    # every input value is kept: as its text from CSV and JSONL, as its type from Parquet
    for original, row in zip(rows, written, strict=True):
        for name, value in original.items():
            assert _same_value(value, row[name], fmt, out), (name, value, row[name])
    if fmt == "parquet":
        assert written[7]["note"] == "kept 7"


def _same_value(value: Any, got: Any, fmt: str, out: str) -> bool:
    """An input value as the output holds it: a typed Parquet value stays itself where the
    output has types (Parquet, JSONL), and any other is its text."""
    if fmt == "parquet" and out in ("parquet", "dataset", "jsonl"):
        return bool(got == value)
    if fmt == "jsonl" and out == "jsonl":
        return bool(got == value)
    text = json.dumps(value) if fmt == "jsonl" and type(value) is not str else str(value)
    if isinstance(value, bool):
        text = str(value).lower()
    return bool(got == text)


def test_dataset_read_in_order_is_the_single_file(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(csvfast, "BLOCK", 32_768)  # a CSV's part a block: several
    rows = orders(2_000, full=True)
    wallet = wallet_file(tmp_path, WALLET)
    for fmt in FORMATS:
        src = tmp_path / f"in.{fmt}"
        write_input(src, rows)
        single, dataset = target(tmp_path, fmt, "parquet"), target(tmp_path, fmt, "dataset")
        for dst in (single, dataset):
            got = run(cli, wallet, src, dst, "--batch-size", "300", "--threads", "3")
            assert got.code == 0, got.err
        files = json.loads((dataset / MANIFEST).read_text())["files"]
        assert len(files) > 1, fmt  # several parts, written at once
        assert dataset_table(dataset).equals(pq.read_table(single)), fmt
        # a dataset reader reads the files in the names' order: the input's
        assert pq.read_table(dataset).equals(pq.read_table(single)), fmt


def test_a_refused_row_is_left_out_of_every_output(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    rows = orders(600, full=True)
    rows[5]["salt"] = -1
    rows[400]["side"] = "HOLD"
    wallet = wallet_file(tmp_path, WALLET)
    kept = [expected_id(r) for i, r in enumerate(rows) if i not in (5, 400)]
    for fmt in FORMATS:
        src = tmp_path / f"in.{fmt}"
        write_input(src, rows)
        for out in OUTPUTS:
            dst = target(tmp_path, fmt, out)
            got = run(cli, wallet, src, dst, "--batch-size", "100")
            assert got.code == 1, (fmt, out, got.err)
            where = "row" if fmt == "parquet" else "line"
            first = 1 if fmt != "csv" else 2
            said = [line.split(":")[0] for line in got.err.splitlines() if line.startswith(where)]
            assert said == [f"{where} {5 + first}", f"{where} {400 + first}"], (fmt, out)
            assert [w["order_id"] for w in read_output(dst)] == kept, (fmt, out)


def test_a_jsonl_key_outside_the_first_objects_is_refused_by_row(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    rows = orders(20)
    rows[9]["extra"] = "x"
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    got = run(cli, wallet_file(tmp_path, WALLET), src, tmp_path / "out.parquet")
    assert got.code == 1
    assert got.err.splitlines()[0] == (
        "line 10: key 'extra' is not a column of OUTPUT (its columns are the keys of the "
        "first object)"
    )
    assert len(pq.read_table(tmp_path / "out.parquet")) == 19


# ---------------------------------------------------------------------------
# where the output goes


@pytest.mark.parametrize("out", OUTPUTS)
def test_a_planted_link_at_output_is_replaced_not_followed(
    cli: Callable[..., Result], tmp_path: Path, out: str
) -> None:
    rows = orders(50)
    src = tmp_path / "in.csv"
    write_csv(src, rows)
    victim = tmp_path / ("victim-dir" if out == "dataset" else "victim.txt")
    if out == "dataset":
        victim.mkdir()
        (victim / "keep.txt").write_text("mine")
    else:
        victim.write_text("mine")
    dst = target(tmp_path, "csv", out)
    dst.symlink_to(victim)
    got = run(cli, wallet_file(tmp_path, WALLET), src, dst)
    assert got.code == 0, got.err
    assert not dst.is_symlink()
    assert [w["order_id"] for w in read_output(dst)] == [expected_id(r) for r in rows]
    if out == "dataset":
        assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]
        assert (victim / "keep.txt").read_text() == "mine"
    else:
        assert victim.read_text() == "mine"


def test_a_dataset_replaces_a_previous_one_and_nothing_else(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    rows = orders(300)
    wallet = wallet_file(tmp_path, WALLET)
    src = tmp_path / "in.csv"
    write_csv(src, rows)
    dst = tmp_path / "ds"
    for _ in range(2):  # the second run replaces the first's dataset
        got = run(cli, wallet, src, dst, "--batch-size", "50")
        assert got.code == 0, got.err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.csv").write_text("x")
    got = run(cli, wallet, src, other)
    assert got.code == 2
    assert "holds other files than a dataset of clobkit order-ids: not replaced" in got.err
    assert (other / "data.csv").read_text() == "x"
    inside = dst / "in.csv"
    inside.write_bytes(src.read_bytes())
    got = run(cli, wallet, inside, dst)
    assert got.code == 2
    assert f"OUTPUT {dst} holds {inside}: not replaced" in got.err
    (tmp_path / "file").write_text("x")
    assert (
        "is a file: a Parquet dataset is a directory"
        in run(cli, wallet, src, tmp_path / "file/").err
    )


@pytest.mark.parametrize("out", OUTPUTS)
def test_a_failed_run_leaves_output_as_it_was(
    cli: Callable[..., Result], tmp_path: Path, out: str
) -> None:
    rows = orders(400)
    src = tmp_path / "in.csv"
    write_csv(src, rows)
    with src.open("ab") as f:
        f.write(b"\xff\xfe,1,2,BUY,3\n")  # not UTF-8, after every good row
    dst = target(tmp_path, "csv", out)
    got = run(cli, wallet_file(tmp_path, WALLET), src, dst, "--batch-size", "100", "--threads", "2")
    assert got.code == 2
    assert "is not UTF-8 text" in got.err
    assert not dst.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_dataset_directory_gets_the_mode_a_new_directory_would(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    src = tmp_path / "in.csv"
    write_csv(src, orders(10))
    mask = os.umask(0o027)
    try:
        got = run(cli, wallet_file(tmp_path, WALLET), src, tmp_path / "ds")
    finally:
        os.umask(mask)
    assert got.code == 0, got.err
    assert (tmp_path / "ds").stat().st_mode & 0o777 == 0o750


def test_a_parquet_file_is_the_same_bytes_without_proc(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow writes the file ``atomic_output`` opened through ``/proc/self/fd/N`` where
    Linux has it, else through the file's Python methods: the same bytes either way."""
    from clobkit.cli.orderids import outputs

    src = tmp_path / "in.parquet"
    write_parquet(src, orders(700, full=True))
    wallet = wallet_file(tmp_path, WALLET)
    assert run(cli, wallet, src, tmp_path / "native.parquet", "--batch-size", "200").code == 0
    monkeypatch.setattr(outputs, "PROC_FD", str(tmp_path / "no-proc"))
    assert run(cli, wallet, src, tmp_path / "python.parquet", "--batch-size", "200").code == 0
    native = (tmp_path / "native.parquet").read_bytes()
    assert native == (tmp_path / "python.parquet").read_bytes()
    assert pq.ParquetFile(tmp_path / "native.parquet").metadata.num_row_groups == 4
