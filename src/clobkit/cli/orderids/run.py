"""``clobkit order-ids``, the runner: checks the paths, streams a file in batches, reports.

Offline ``clob_order_id`` of every order in a CSV, JSONL or Parquet file. The
file is read in batches (memory stays flat whatever its size); each batch is
parsed column-wise (``_orderids.csv_exact``, ``_orderids.jsonl``,
``_orderids.parquet``) and hashed by ``hash_batch`` (``_orderids.rows``).
Reading, parsing and hashing, and writing run in overlapping stages
(``_orderids.stages``): a reader thread, ``--threads`` batches worked on at
once (at least 2), and this thread writing them in order. With pyarrow
installed a CSV is read in byte blocks instead (``_orderids.csv_fast``),
each block through pyarrow or, when in doubt, through the exact reader.
Output rows are the input rows, unchanged, plus ``order_id`` (and
``signature`` when signing). A row that cannot be hashed is reported as
``line N: reason`` (``row N`` for Parquet) and left out of the output. The
wallet's exchange version (or ``version=``) decides the columns: V1 orders
carry ``fee_rate_bps``, ``nonce``, ``expiration``; V2/V3 orders a
``timestamp`` (milliseconds) and optional ``metadata`` / ``builder``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from ...core.jsondepth import json_too_deep
from ...core.select import IMPLEMENTATION
from ...core.wallet import wallet_data
from ...errors import OrderFieldError, ValidationError
from ...order_id import OrderHasher
from ...signing import Signer
from .outputs import check_dataset_target, is_dataset
from .parquet import run_parquet
from .rows import LAYOUTS, InputError, Layout, check_signer
from .text import text_input

__all__ = ["DEFAULT_BATCH", "PARQUET_BATCH", "InputError", "describe", "output_kind", "run"]

DEFAULT_BATCH = 50_000  # rows of Python objects (CSV's exact reader, JSONL)
# Parquet's batches are Arrow columns: each is one order_ids call and one output
# row group, whose fixed costs (the hashing threads' start and tail, a token-id
# dictionary page) a larger batch spreads. Measured on 1M orders, 2 threads,
# the command's own process: 100k and 250k rows equal, ahead of 50k; 100k
# touches 50 MB less memory (docs/scale.md).
PARQUET_BATCH = 100_000
MAX_BATCH = 10_000_000  # lines per batch; more only costs memory
WALLET_MAX = 1 << 20  # bytes: a GET /wallet answer is a few hundred


def load_wallet(path: str) -> dict[str, Any]:
    """The ``GET /wallet`` data from a file: the data itself or the saved envelope."""
    try:
        with open(path, "rb") as file:
            data = file.read(WALLET_MAX + 1)
    except OSError as exc:
        raise InputError(f"cannot read the wallet {path}: {exc.strerror or exc}") from None
    if len(data) > WALLET_MAX:
        raise InputError(
            f"the wallet {path} is over {WALLET_MAX:,} bytes: not a GET /wallet answer"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"the wallet {path} is not UTF-8 text ({exc.reason})") from None
    try:
        if json_too_deep(data):
            raise RecursionError  # before the decoder can overflow the C stack
        obj = json.loads(text)
    except ValueError as exc:
        raise InputError(f"the wallet {path} is not JSON ({exc})") from None
    except RecursionError:
        raise InputError(f"the wallet {path} is not JSON (nested too deeply)") from None
    try:
        obj = wallet_data(obj)  # the envelope, read as the hashers and clobkit.dask read it
    except OrderFieldError as exc:
        raise InputError(f"the wallet {path} {exc.reason}") from None
    if not isinstance(obj, dict):
        raise InputError(f"the wallet {path} must hold the GET /wallet data or its envelope")
    return obj


def _same(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file (the same path, a symlink or a hard link)."""
    try:
        return a.samefile(b)
    except OSError:
        return False


def _check_output(output_path: str, out_kind: str, input_path: str, wallet: str) -> None:
    """OUTPUT is neither INPUT nor the wallet, and is not a read-only file; a dataset's
    directory holds neither and nothing but a previous dataset (``check_dataset_target``)."""
    if out_kind == "dataset":
        check_dataset_target(output_path, input_path, wallet)
        return
    target = Path(output_path)
    if _same(target, Path(input_path)):
        raise InputError("OUTPUT must not be INPUT (same file)")
    if _same(target, Path(wallet)):
        raise InputError("OUTPUT must not be the --wallet file (same file)")
    # root may write any file, so the mode bits count too
    if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
        raise InputError(f"OUTPUT {target} is read-only: not replaced")


def output_kind(path: str) -> str:
    """OUTPUT's kind: ``dataset`` (a directory of Parquet files: a path ending in a
    separator, or an existing directory), else its file format (``format_of``)."""
    return "dataset" if is_dataset(path) else format_of(path)


def format_of(path: str) -> str:
    """``csv``, ``jsonl`` or ``parquet``, from the file name."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise InputError(f"{path}: unknown format (use a .csv, .jsonl, .ndjson or .parquet file)")


class Progress:
    """A progress bar on stderr: share of the input read, orders done, rate."""

    def __init__(self, total: int, enabled: bool, stream: TextIO) -> None:
        self.total = max(total, 1)
        self.enabled = enabled
        self.stream = stream
        self.start = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def update(self, done_bytes: int, orders: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.shown and now - self.last < 0.1 and done_bytes < self.total:
            return  # (the end is always shown)
        self.last = now
        fraction = min(1.0, done_bytes / self.total)
        filled = int(fraction * 30)
        rate = orders / max(now - self.start, 1e-9)
        bar = "#" * filled + "." * (30 - filled)
        self.stream.write(f"\r[{bar}] {fraction:4.0%}  {orders:,} orders  {rate:,.0f}/s ")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()
            self.shown = False


class Summary(NamedTuple):  # not a dataclass: dataclasses costs the command 9 ms to import
    """What a run did."""

    written: int
    rejected: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.written / self.seconds if self.seconds > 0 else 0.0


class _Job(NamedTuple):
    """One run's checked settings: ``run``'s arguments with the wallet loaded."""

    hasher: OrderHasher
    layout: Layout
    signer: Signer | None
    threads: int | None
    batch_size: int
    progress: bool
    say: Callable[[str], None]


def run(
    wallet: str,
    input_path: str,
    output_path: str,
    *,
    threads: int | None = None,
    batch_size: int | None = None,
    progress: bool | None = None,
    report: Callable[[str], None] | None = None,
    version: int | None = None,
    signer: Signer | None = None,
) -> Summary:
    """Hash every order of ``input_path`` into ``output_path``; ``report`` gets each rejection.

    ``version`` (1, 2 or 3) overrides the order version the wallet's exchange
    addresses imply; with ``signer`` each row also gets its ``signature``.
    ``batch_size`` (rows) defaults to ``DEFAULT_BATCH``, ``PARQUET_BATCH`` for
    Parquet. Raises ``InputError`` when the input as a whole cannot be used.
    """
    kind = format_of(input_path)
    job = _job(
        wallet,
        kind,
        input_path,
        output_path,
        threads=threads,
        batch_size=batch_size,
        progress=progress,
        report=report,
        version=version,
        signer=signer,
    )
    return _outputs(job, kind, input_path, output_kind(output_path), output_path)


def _job(
    wallet: str,
    kind: str,
    input_path: str,
    output_path: str,
    *,
    threads: int | None,
    batch_size: int | None,
    progress: bool | None,
    report: Callable[[str], None] | None,
    version: int | None,
    signer: Signer | None,
) -> _Job:
    """The paths and the batch size checked, the wallet loaded, the signer matched to it."""
    if batch_size is None:
        batch_size = PARQUET_BATCH if kind == "parquet" else DEFAULT_BATCH
    out_kind = output_kind(output_path)
    if not 1 <= batch_size <= MAX_BATCH:
        raise InputError(f"--batch-size must lie in [1, {MAX_BATCH:,}] (got {batch_size})")
    _check_output(output_path, out_kind, input_path, wallet)
    try:
        hasher = OrderHasher(load_wallet(wallet), version=version)
    except ValidationError as exc:
        raise InputError(f"the wallet {wallet}: {exc}") from None
    layout = LAYOUTS[1 if hasher.version == 1 else 2]
    if signer is not None:
        check_signer(hasher, signer, layout)
    shown = sys.stderr.isatty() if progress is None else progress
    say = report or (lambda text: print(text, file=sys.stderr))
    return _Job(hasher, layout, signer, threads, batch_size, shown, say)


def _outputs(job: _Job, kind: str, input_path: str, out_kind: str, output_path: str) -> Summary:
    """Every order of INPUT hashed into OUTPUT (``_orderids.parquet`` or ``.text``)."""
    try:
        raw = open(input_path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot read {input_path}: {exc.strerror or exc}") from None
    bar = Progress(os.fstat(raw.fileno()).st_size, job.progress, sys.stderr)
    started = time.perf_counter()
    try:
        with raw:
            if kind == "parquet":
                written, rejected = run_parquet(
                    job.hasher,
                    job.layout,
                    job.signer,
                    input_path,
                    out_kind,
                    output_path,
                    threads=job.threads,
                    batch_size=job.batch_size,
                    bar=bar,
                    say=job.say,
                )
            else:
                written, rejected = text_input(job, kind, raw, out_kind, output_path, bar)
    except UnicodeDecodeError as exc:
        raise InputError(f"{input_path} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(f"cannot write {output_path}: {exc.strerror or exc}") from None
    finally:
        bar.clear()
    return Summary(written, rejected, time.perf_counter() - started)


def describe(summary: Summary, output_path: str) -> str:
    """The one-line summary printed after a run."""
    text = (
        f"{summary.written:,} order ids -> {output_path} in {summary.seconds:.2f} s "
        f"({summary.rate:,.0f} orders/s, {IMPLEMENTATION} core)"
    )
    if summary.rejected:
        text += f"; {summary.rejected:,} row{'' if summary.rejected == 1 else 's'} rejected"
    return text
