"""``clobkit order-ids`` in stages (#20): the same bytes and messages for every ``--threads``.

The command reads, hashes and writes in overlapping stages
(``_orderids.stages.staged``); however many items are in flight, each
output file, each ``line N`` / ``row N`` message and the exit code equal
those of one thread, bad rows and mixed fast and exact CSV blocks included.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pytest

import clobkit.cli.orderids.csv_fast as csvfast
from clobkit.cli.orderids.stages import item_threads, staged, workers_for
from clobkit.order_id import OrderHasher

from .conftest import WALLET, Result
from .test_cli_order_ids import orders, write_csv, write_jsonl
from .test_cli_order_ids_v2 import KEY, V2_WALLET, v2_orders, wallet_file

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

THREADS = (1, 2, 3, 4, 8, 32)  # 32: more than this machine's cores


@pytest.fixture(autouse=True)
def sixteen_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """As many items in flight as on a 16-core machine: up to 16, whatever this one has."""
    monkeypatch.setattr("os.cpu_count", lambda: 16)


def _rows(n: int) -> list[dict[str, Any]]:
    """Orders with a few bad ones: refused by the core, and by POST /orders/raw's rules."""
    rows = orders(n, full=True)
    rows[7]["salt"] = -1
    rows[1_203]["side"] = "HOLD"
    rows[1_204]["salt"] = 10**12 + 1
    rows[n - 1]["maker_amount"] = 0
    return rows


def _parquet(path: Path, rows: list[dict[str, Any]], group: int) -> None:
    cols: dict[str, Any] = {}
    for name in rows[0]:
        values = [row[name] for row in rows]
        if name == "neg_risk":
            cols[name] = pa.array(values, pa.bool_())
        elif name != "token_id" and all(type(v) is int for v in values):
            cols[name] = pa.array(values, pa.int64())
        else:
            cols[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    cols["note"] = pa.array([f"kept {i}" for i in range(len(rows))])
    pq.write_table(pa.table(cols), path, row_group_size=group)


def _bytes(path: Path) -> bytes:
    """A file's bytes, or a dataset's: each file's name and bytes, in name order."""
    if not path.is_dir():
        return path.read_bytes()
    return b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in sorted(path.iterdir()))


def _every_thread_count(
    cli: Callable[..., Result], src: Path, wallet: Path, *extra: str, out: str = ""
) -> tuple[bytes, Result]:
    """Run at each of ``THREADS``: every run's output bytes, stderr and exit code equal
    (``out``: the output's suffix, ``/`` a dataset; INPUT's format unless given)."""
    first: tuple[bytes, Result] | None = None
    for threads in THREADS:
        dataset = out == "/"
        dst = src.with_name(f"out-{threads}{'' if dataset else out or src.suffix}")
        got = cli("order-ids", "--wallet", str(wallet), str(src), str(dst) + "/" * dataset,
                  *extra, "--threads", str(threads))  # fmt: skip
        assert got.code in (0, 1), got.err
        done = (_bytes(dst), got)
        if first is None:
            first = done
            continue
        assert done[0] == first[0], f"--threads {threads}: other output bytes"
        assert (got.code, got.err) == (first[1].code, first[1].err), f"--threads {threads}"
    assert first is not None
    return first


@pytest.mark.parametrize("fast", [True, False], ids=["blocks", "exact"])
def test_csv_bytes_equal_across_threads(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    # small blocks: fast blocks and blocks sent to the exact reader mix, many in flight
    monkeypatch.setattr(csvfast, "BLOCK", 16_384)
    monkeypatch.setattr(csvfast, "ENABLED", fast)
    src = tmp_path / "in.csv"
    write_csv(src, _rows(3_000))
    out, got = _every_thread_count(cli, src, wallet_file(tmp_path, WALLET), "--batch-size", "200")
    assert got.code == 1
    said = [line for line in got.err.splitlines() if line.startswith("line ")]
    assert [line.split(":")[0] for line in said] == [
        "line 9",
        "line 1205",
        "line 1206",
        "line 3001",
    ]
    assert out.count(b"\n") == 1 + 3_000 - 4


def test_jsonl_bytes_equal_across_threads(cli: Callable[..., Result], tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    write_jsonl(src, _rows(3_000))
    out, got = _every_thread_count(cli, src, wallet_file(tmp_path, WALLET), "--batch-size", "300")
    assert got.code == 1
    assert got.err.count("\nline ") + got.err.startswith("line ") == 4
    assert out.count(b"\n") == 3_000 - 4


def test_parquet_bytes_equal_across_threads(cli: Callable[..., Result], tmp_path: Path) -> None:
    src = tmp_path / "in.parquet"
    _parquet(src, _rows(3_000), group=700)
    out, got = _every_thread_count(cli, src, wallet_file(tmp_path, WALLET), "--batch-size", "250")
    assert got.code == 1
    said = [line.split(":")[0] for line in got.err.splitlines() if line.startswith("row ")]
    assert said == ["row 8", "row 1204", "row 1205", "row 3000"]
    table = pq.read_table(src.with_name("out-1.parquet"))
    assert table.num_rows == 3_000 - 4
    assert (
        pq.ParquetFile(src.with_name("out-1.parquet")).metadata.num_row_groups == 13
    )  # 250, 250, 200 rows of each group of 700
    assert out[:4] == b"PAR1"


def test_signed_parquet_and_csv_equal_across_threads(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOBKIT_PRIVATE_KEY", KEY)
    rows = v2_orders(1_200, full=True)
    wallet = wallet_file(tmp_path, V2_WALLET)
    _parquet(tmp_path / "in.parquet", rows, group=500)
    _, got = _every_thread_count(cli, tmp_path / "in.parquet", wallet, "--sign",
                                 "--batch-size", "300")  # fmt: skip
    assert got.code == 0, got.err
    write_csv(tmp_path / "in.csv", rows)
    _, got = _every_thread_count(cli, tmp_path / "in.csv", wallet, "--sign",
                                 "--batch-size", "300")  # fmt: skip
    assert got.code == 0, got.err


@pytest.mark.parametrize(
    ("fmt", "out"),
    [("csv", ".parquet"), ("csv", "/"), ("csv", ".jsonl"), ("parquet", "/"),
     ("parquet", ".csv"), ("parquet", ".jsonl"), ("jsonl", "/"), ("jsonl", ".csv")],
)  # fmt: skip
def test_other_formats_and_datasets_equal_across_threads(
    cli: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
    out: str,
) -> None:
    """Across formats and into a dataset (its files written by the pool threads, several at
    once): the same files, bytes, messages and exit code at every ``--threads``."""
    monkeypatch.setattr(csvfast, "BLOCK", 16_384)  # fast and exact CSV blocks mixed
    src = tmp_path / f"in.{fmt}"
    rows = _rows(2_000)
    {"csv": write_csv, "jsonl": write_jsonl}.get(fmt, partial(_parquet, group=700))(src, rows)
    got_bytes, got = _every_thread_count(
        cli, src, wallet_file(tmp_path, WALLET), "--batch-size", "250", out=out
    )
    assert got.code == 1
    assert (
        sum(line.split(":")[0].split()[0] in ("line", "row") for line in got.err.splitlines()) == 4
    )
    if out == "/":
        assert got_bytes.count(b"part-") > 3  # several files


# ---------------------------------------------------------------------------
# staged itself


def _slow_work(item: int) -> int:
    time.sleep(0.001 * (item % 3))  # later items often done first
    return item * item


def test_threads_is_the_most_hashing_threads_at_once() -> None:
    """``--threads N``: N items at once hashing on one thread each up to the cores (16
    here), the pool's item getting the rest beyond them; never more than N in all."""
    for threads in (None, *THREADS, 17, 64):
        n = threads or 1
        workers, per_item = workers_for(threads), item_threads(threads)
        assert workers - 1 + per_item == n, threads
        assert (workers, per_item) == ((n, 1) if n <= 16 else (16, n - 15)), threads


class _Counting(OrderHasher):
    """An OrderHasher that notes the most hashing threads its calls took at once.

    The native pool serves one call at a time and a concurrent call runs on
    its caller's thread alone: calls at once take one thread each, and the
    one with the pool its ``threads`` (the most asked, at the most).
    """

    lock = threading.Lock()
    now: ClassVar[list[int]] = []
    most = calls = 0

    def _counted(self, call: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        cls = type(self)
        asked = kwargs.get("threads") or 1
        with cls.lock:
            cls.now.append(asked)
            cls.most = max(cls.most, len(cls.now) - 1 + max(cls.now))
            cls.calls += 1
        try:
            time.sleep(0.005)  # long enough for calls that may overlap to overlap
            return call(**kwargs)
        finally:
            with cls.lock:
                cls.now.remove(asked)

    def order_ids(self, **kwargs: Any) -> Any:
        return self._counted(super().order_ids, kwargs)

    def sign_many(self, signer: Any, **kwargs: Any) -> Any:
        return self._counted(partial(super().sign_many, signer), kwargs)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet", "signed"])
def test_the_command_hashes_on_at_most_threads_at_once(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    monkeypatch.setattr("clobkit.cli.orderids.run.OrderHasher", _Counting)
    monkeypatch.setattr(csvfast, "BLOCK", 16_384)  # many CSV blocks
    monkeypatch.setenv("CLOBKIT_PRIVATE_KEY", KEY)
    rows = v2_orders(1_200, full=True)
    src = tmp_path / f"in.{'parquet' if fmt == 'signed' else fmt}"
    {"csv": write_csv, "jsonl": write_jsonl}.get(src.suffix[1:], partial(_parquet, group=600))(
        src, rows
    )
    extra = ["--sign"] if fmt == "signed" else []
    seen = 0
    for threads in (1, 2, 3, 8, 20):
        _Counting.most = _Counting.calls = 0
        got = cli("order-ids", "--wallet", str(wallet_file(tmp_path, V2_WALLET)), str(src),
                  str(tmp_path / f"out-{threads}{src.suffix}"), "--batch-size", "50",
                  "--threads", str(threads), *extra)  # fmt: skip
        assert got.code == 0, got.err
        assert _Counting.calls >= 4, fmt
        assert _Counting.most <= threads, (fmt, threads, _Counting.most)
        seen = max(seen, _Counting.most)
    assert seen > 1, fmt  # items were hashed at once: the count can see too many


def test_items_are_finished_in_order_whatever_the_workers() -> None:
    for workers in (1, 2, 5, 16):
        seen: list[tuple[int, int]] = []

        def finish(item: int, result: int, seen: list[tuple[int, int]] = seen) -> None:
            seen.append((item, result))

        staged(range(40), _slow_work, finish, workers)
        assert seen == [(i, i * i) for i in range(40)]


def test_a_read_error_is_raised_at_its_turn_after_every_earlier_item() -> None:
    def source() -> Iterator[int]:
        yield from range(5)
        raise OSError("disk gone")

    seen: list[int] = []
    with pytest.raises(OSError, match="disk gone"):
        staged(source(), _slow_work, lambda item, _: seen.append(item), 3)
    assert seen == [0, 1, 2, 3, 4]


def test_a_work_error_is_raised_at_its_turn() -> None:
    def work(item: int) -> int:
        if item == 6:
            raise ValueError("bad item 6")
        return item

    seen: list[int] = []
    with pytest.raises(ValueError, match="bad item 6"):
        staged(range(20), work, lambda item, _: seen.append(item), 4)
    assert seen == list(range(6))


def test_a_finish_error_stops_the_reader_of_an_endless_source() -> None:
    read: list[int] = []

    def endless() -> Iterator[int]:
        i = 0
        while True:
            read.append(i)
            yield i
            i += 1

    def finish(item: int, _: int) -> None:
        if item == 3:
            raise RuntimeError("disk full")

    before = threading.active_count()
    with pytest.raises(RuntimeError, match="disk full"):
        staged(endless(), _slow_work, finish, 2)
    assert len(read) <= 3 + 2 + 3  # the hand-off bounds what was read ahead
    assert threading.active_count() == before  # the reader and the pool are gone


def test_workers_follow_threads_up_to_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert [workers_for(t) for t in (None, 1, 2, 3, 16, 64)] == [1, 1, 2, 3, 16, 16]
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert (workers_for(8), item_threads(8)) == (1, 8)
