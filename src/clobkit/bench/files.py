"""``clobkit bench`` rows for ``clobkit order-ids`` on files: CSV, Parquet and JSONL, per order.

The same ``file_orders`` V1 orders are written to a temporary directory as a
fully quoted CSV (as pandas and pyarrow write it), Parquet (with pyarrow)
and JSONL, and each is run through ``clobkit.cli.orderids.run.run`` (the command's
work: read, hash, write; ``--threads 2``) in this process. The peer is what
a script does today: Python's ``csv`` module and py-order-utils, row by row
(timed on the first ``PEER_ROWS`` rows). Every output's ids are compared
with one another and with the peer's on the rows it hashed.
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

from ..cli.orderids.run import run as order_ids_run
from ..core.extras import install_hint
from ._timing import INSTALL_HINT, Contender, Operation, Settings, tally
from .order_ids import WALLET, OrderIdFn, make_orders, py_order_utils_order_id

__all__ = ["file_operation"]

PEER_ROWS = 2_000  # rows the row-by-row peer hashes per sample (it is ~100x slower)
HEADER = ["token_id", "maker_amount", "taker_amount", "side", "salt"]


def _write_inputs(root: Path, n: int) -> list[str]:
    """The formats written (``csv``, ``jsonl``, and ``parquet`` when pyarrow is installed)."""
    batch = make_orders(n, seed=11)
    rows = []
    for i in range(n):
        usdc, shares = 9_295_000 + i % 1000, 16_900_000  # a price in (0, 1), as the service wants
        buy = i % 2 == 0
        maker, taker = (usdc, shares) if buy else (shares, usdc)
        rows.append(
            [batch["token_ids"][i], maker, taker, "BUY" if buy else "SELL", batch["salts"][i]]
        )
    with open(root / "in.csv", "w", newline="") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(rows)
    with open(root / "in.jsonl", "w") as f:
        f.writelines(json.dumps(dict(zip(HEADER, r, strict=True))) + "\n" for r in rows)
    (root / "wallet.json").write_text(json.dumps(WALLET))
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return ["csv", "jsonl"]
    table = pa.table(
        {
            "token_id": pa.array([r[0] for r in rows], pa.string()),
            "maker_amount": pa.array([r[1] for r in rows], pa.int64()),
            "taker_amount": pa.array([r[2] for r in rows], pa.int64()),
            "side": pa.array([r[3] for r in rows], pa.string()),
            "salt": pa.array([r[4] for r in rows], pa.int64()),
        }
    )
    pq.write_table(table, root / "in.parquet")
    return ["csv", "parquet", "jsonl"]


def _ids(root: Path, fmt: str) -> list[str]:
    path = root / f"out.{fmt}"
    if fmt == "parquet":
        import pyarrow.parquet as pq

        ids: list[str] = pq.read_table(path, columns=["order_id"])["order_id"].to_pylist()
        return ids
    if fmt == "jsonl":
        return [json.loads(line)["order_id"] for line in path.read_text().splitlines()]
    with open(path, newline="") as f:
        return [row["order_id"] for row in csv.DictReader(f)]


def file_operation(s: Settings, notes: list[str], say: Callable[[str], None]) -> Operation:
    """clobkit order-ids on CSV, Parquet and JSONL files, and the row-by-row peer, per order."""
    n = s.file_orders
    root = Path(tempfile.mkdtemp(prefix="clobkit-bench-files-"))
    op = Operation("order_ids_files", f"clobkit order-ids, {n:,} orders (file to file)")
    weakref.finalize(op, shutil.rmtree, root, True)  # the files live as long as the timing
    say(f"order-ids files: writing {n:,} orders as CSV, Parquet and JSONL")
    formats = _write_inputs(root, n)
    if "parquet" not in formats:
        notes.append(f"pyarrow not installed: Parquet -> Parquet skipped; {install_hint('data')}")
    op.contenders += _clobkit_contenders(root, formats, n)
    try:
        peer_fn = py_order_utils_order_id()
    except ImportError as e:
        notes.append(
            f"py-order-utils not installed ({e.name}): the CSV peer skipped; {INSTALL_HINT}"
        )
        return op
    op.contenders.append(_peer_contender(root, peer_fn, min(PEER_ROWS, n), _ids(root, "csv")))
    return op


FORMAT_NAMES = {"csv": "CSV (quoted)", "parquet": "Parquet", "jsonl": "JSONL"}


def _clobkit_contenders(root: Path, formats: list[str], n: int) -> list[Contender]:
    """``clobkit order-ids`` on each format, run once; every output's ids against the CSV's."""
    wallet = str(root / "wallet.json")
    out: list[Contender] = []
    first: list[str] = []
    for fmt in formats:
        src, dst = str(root / f"in.{fmt}"), str(root / f"out.{fmt}")

        def whole(reps: int, src: str = src, dst: str = dst) -> None:
            for _ in range(reps):
                order_ids_run(wallet, src, dst, threads=2, progress=False)

        name = FORMAT_NAMES[fmt]
        c = Contender(f"clobkit order-ids {name} -> {name}, threads=2", "clobkit", whole, n)
        whole(1)
        ids = _ids(root, fmt)
        if not first:
            first = ids
            c.correctness = "reference"
        else:
            tally(c, n, sum(a != b for a, b in zip(ids, first, strict=True)), "ids = CSV's")
        out.append(c)
    return out


def _peer_contender(root: Path, peer_fn: OrderIdFn, m: int, expected: list[str]) -> Contender:
    """What a script does today: Python's csv module and py-order-utils on the first m rows."""
    with open(root / "in.csv", newline="") as f:
        sample = "".join(line for _, line in zip(range(m + 1), f, strict=False))
    (root / "peer-in.csv").write_text(sample)

    def peer(reps: int) -> None:
        for _ in range(reps):
            with (
                open(root / "peer-in.csv", newline="") as f,
                open(root / "peer-out.csv", "w", newline="") as out,
            ):
                writer = csv.writer(out, lineterminator="\n")
                reader = csv.reader(f)
                writer.writerow([*next(reader), "order_id"])
                for row in reader:
                    t, mk, tk, sd, sl = row
                    oid = peer_fn(t, int(mk), int(tk), 0 if sd == "BUY" else 1, int(sl), False)
                    writer.writerow([*row, oid])

    c = Contender("Python csv + py-order-utils, row by row (CSV -> CSV)", "peer", peer, m)
    peer(1)
    with open(root / "peer-out.csv", newline="") as f:
        got = [row["order_id"] for row in csv.DictReader(f)]
    tally(c, m, sum(a != b for a, b in zip(got, expected[:m], strict=True)), "ids equal")
    return c
