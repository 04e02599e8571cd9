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

import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from .._core import IMPLEMENTATION
from .._jsondepth import json_too_deep
from .._wallet import wallet_data
from ..errors import OrderFieldError, ValidationError
from ..order_id import OrderHasher
from ..signing import Signer
from .csv_exact import CsvOrders
from .csv_fast import available, engine, read_header, run_blocks
from .parquet import _run_parquet
from .rows import LAYOUTS, Batch, InputError, Layout, Parsed, check_signer, hash_batch
from .stages import item_threads, staged, workers_for

if TYPE_CHECKING:
    from .jsonl import JsonlOrders

__all__ = ["DEFAULT_BATCH", "PARQUET_BATCH", "InputError", "describe", "run"]

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


def _check_output(target: Path, source: Path, wallet: Path) -> None:
    """OUTPUT is neither INPUT nor the wallet, and is not a read-only file."""
    if _same(target, source):
        raise InputError("OUTPUT must not be INPUT (same file)")
    if _same(target, wallet):
        raise InputError("OUTPUT must not be the --wallet file (same file)")
    if target.is_dir():
        raise InputError(f"OUTPUT {target} is a directory")
    # root may write any file, so the mode bits count too
    if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
        raise InputError(f"OUTPUT {target} is read-only: not replaced")


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
        if self.shown and now - self.last < 0.1:
            return
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
    target = Path(output_path)
    part = target.with_name(f".{target.name}.part")
    if kind == "parquet":
        return _parquet_file(job, input_path, output_path, part)
    return _text_file(job, kind, input_path, output_path, part)


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
    if format_of(output_path) != kind:
        raise InputError(f"OUTPUT must have the format of INPUT ({kind})")
    if not 1 <= batch_size <= MAX_BATCH:
        raise InputError(f"--batch-size must lie in [1, {MAX_BATCH:,}] (got {batch_size})")
    _check_output(Path(output_path), Path(input_path), Path(wallet))
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


def _parquet_file(job: _Job, input_path: str, output_path: str, part: Path) -> Summary:
    """A Parquet file by record batch (``_orderids.parquet``), written to ``part`` first."""
    try:
        size = os.stat(input_path).st_size
    except OSError as exc:
        raise InputError(f"cannot read {input_path}: {exc.strerror or exc}") from None
    bar = Progress(size, job.progress, sys.stderr)
    started = time.perf_counter()
    try:
        written, rejected = _run_parquet(
            job.hasher,
            job.layout,
            job.signer,
            input_path,
            part,
            threads=job.threads,
            batch_size=job.batch_size,
            bar=bar,
            say=job.say,
        )
        os.replace(part, output_path)
    except OSError as exc:
        raise InputError(f"cannot write {output_path}: {exc.strerror or exc}") from None
    finally:
        bar.clear()
        if part.exists():
            part.unlink()
    return Summary(written, rejected, time.perf_counter() - started)


def _text_file(job: _Job, kind: str, input_path: str, output_path: str, part: Path) -> Summary:
    """A CSV or JSONL file: in byte blocks (CSV with pyarrow, not signing) or in batches
    of lines, written to ``part`` first."""
    try:
        raw = open(input_path, "rb")  # noqa: SIM115 - closed through source
        source = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot read {input_path}: {exc.strerror or exc}") from None
    bar = Progress(os.fstat(raw.fileno()).st_size, job.progress, sys.stderr)
    try:
        out = open(part, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        source.close()
        raise InputError(f"cannot write {output_path}: {exc.strerror or exc}") from None
    started = time.perf_counter()
    sink = _Sink(out, bar, job.say, raw)
    try:
        with source, out:
            if kind == "csv" and job.signer is None and available():
                _csv_blocks(job, raw, sink)  # the text wrapper is never read
            else:
                _line_batches(job, kind, source, sink)
        os.replace(part, output_path)
    except UnicodeDecodeError as exc:
        raise InputError(f"{input_path} is not UTF-8 text ({exc.reason})") from None
    finally:
        bar.clear()
        if part.exists():
            part.unlink()
    return Summary(sink.written, sink.rejected, time.perf_counter() - started)


class _Sink:
    """Where the hashed batches of a text file go: the output, the counts, the bar and
    the rejections (reported in line order within a batch)."""

    __slots__ = ("bar", "out", "raw", "rejected", "say", "written")

    def __init__(self, out: TextIO, bar: Progress, say: Callable[[str], None], raw: Any) -> None:
        self.out, self.bar, self.say, self.raw = out, bar, say, raw
        self.written = self.rejected = 0

    def emit(
        self, fmt: CsvOrders | JsonlOrders, parsed: Parsed, result: Batch, at: int | None = None
    ) -> None:
        """A batch's rows written; ``at``: the input's bytes read by now (default: the file's
        position)."""
        ids, sigs, late = result
        self.out.write(fmt.render(parsed, ids, sigs))
        rejects = sorted(parsed.rejects + late)
        if rejects:
            self.bar.clear()
            for number, reason in rejects:
                self.say(f"line {number}: {reason}")
        self.written += len(ids) - len(late)
        self.rejected += len(rejects)
        self.bar.update(self.raw.tell() if at is None else at, self.written)

    def done(self, at: int, rows: int) -> None:
        """``rows`` written by the fast path itself."""
        self.written += rows
        self.bar.update(at, self.written)


def _csv_blocks(job: _Job, raw: Any, sink: _Sink) -> None:
    """A CSV in byte blocks through pyarrow (``_orderids.csv_fast``); a block in doubt
    through the exact reader, a batch at a time."""
    header, rest = read_header(raw)
    fmt = CsvOrders(header.decode("utf-8-sig"), job.layout, False)
    per_item = item_threads(job.threads)
    fast = engine(job.hasher, job.layout, fmt, per_item)
    sink.out.write(fmt.header + "\n")

    def exact(block: bytes) -> tuple[list[tuple[Parsed, Batch]], int]:
        """(its batches parsed and hashed, its line count), lines numbered from 0 (a pool
        thread: a block in doubt hashes among the other items, within --threads)."""
        lines = io.StringIO(block.decode("utf-8"), newline="")
        done: list[tuple[Parsed, Batch]] = []
        count = 0
        while batch := list(islice(lines, job.batch_size)):
            parsed = fmt.parse(count, batch)
            count += len(batch)
            done.append((parsed, hash_batch(job.hasher, parsed, per_item, job.layout)))
        return done, count

    def emit(first: int, done: list[tuple[Parsed, Batch]], at: int) -> None:
        """Those batches written, their lines numbered from ``first`` (this thread)."""
        for parsed, (ids, sigs, late) in done:
            parsed.rejects = [(line + first, reason) for line, reason in parsed.rejects]
            late = [(line + first, reason) for line, reason in late]
            sink.emit(fmt, parsed, (ids, sigs, late), at)

    def write(data: Any) -> None:
        sink.out.flush()
        sink.out.buffer.write(data)

    start = len(header) + len(rest)
    run_blocks(
        fast,
        raw,
        rest,
        start,
        2,
        write=write,
        exact=exact,
        emit=emit,
        done=sink.done,
        workers=workers_for(job.threads),
    )


def _line_batches(job: _Job, kind: str, source: TextIO, sink: _Sink) -> None:
    """A CSV (exact reader) or JSONL in batches of lines: read on a thread, parsed and
    hashed in a pool, written here in order (``_orderids.stages``)."""
    fmt: CsvOrders | JsonlOrders
    signed = job.signer is not None
    if kind == "csv":
        fmt = CsvOrders(source.readline(), job.layout, signed)
        sink.out.write(fmt.header + "\n")
        line = 2
    else:
        from .jsonl import JsonlOrders  # msgspec: only for JSONL

        fmt = JsonlOrders(job.layout, signed)
        line = 1
    per_item = item_threads(job.threads)

    def batches() -> Iterator[tuple[int, list[str]]]:
        """(first line number, lines) of each batch (the reader thread)."""
        first = line
        while lines := list(islice(source, job.batch_size)):
            yield first, lines
            first += len(lines)

    def work(entry: tuple[int, list[str]]) -> tuple[Parsed, Batch]:
        parsed = fmt.parse(*entry)
        return parsed, hash_batch(job.hasher, parsed, per_item, job.layout, job.signer)

    def finish(entry: tuple[int, list[str]], result: tuple[Parsed, Batch]) -> None:
        sink.emit(fmt, *result)  # the bar: the share of the input read by now

    staged(batches(), work, finish, workers_for(job.threads))


def describe(summary: Summary, output_path: str) -> str:
    """The one-line summary printed after a run."""
    text = (
        f"{summary.written:,} order ids -> {output_path} in {summary.seconds:.2f} s "
        f"({summary.rate:,.0f} orders/s, {IMPLEMENTATION} core)"
    )
    if summary.rejected:
        text += f"; {summary.rejected:,} row{'' if summary.rejected == 1 else 's'} rejected"
    return text
