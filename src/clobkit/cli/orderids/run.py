"""The driver of ``clobkit order-ids``: one reader, the hashing stage, one writer, in a line.

Offline ``clob_order_id`` of every order in a CSV, JSONL or Parquet file.
``run`` checks the paths and the wallet, then runs the one line every
format takes, in overlapping stages (``stages.staged``): a reader thread
cuts the input into items (batches of lines, CSV blocks, Parquet record
batches); a pool of ``--threads`` items at once (at least 2) has the
input's reader make each an ``Orders`` (``csv_exact``, ``csv_fast``,
``jsonl``, ``parquet``), the hashing stage hash it (``hashing``) and the
output's writer make its piece (``write_csv``, ``write_jsonl``,
``write_parquet``); this thread writes the pieces in order, reports each
refused row (``line N: reason``, ``row N`` for Parquet) and moves the
progress bar. With pyarrow installed and no signing a CSV is read in byte
blocks (``csv_fast``); a block in doubt, or with a row the hashing stage
would refuse, is read again by the exact reader, its batches hashed and
written as one piece. Memory stays flat whatever the file's size. Output
rows are the input rows plus ``order_id`` (and ``signature`` when
signing); a refused row is left out. The wallet's exchange version (or
``version=``) decides the columns: V1 orders carry ``fee_rate_bps``,
``nonce``, ``expiration``; V2/V3 orders a ``timestamp`` (milliseconds) and
optional ``metadata`` / ``builder``.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import IO, Any, NamedTuple, TextIO

from ...core.jsondepth import json_too_deep
from ...core.select import IMPLEMENTATION
from ...core.wallet import wallet_data
from ...errors import OrderFieldError, ValidationError
from ...order_id import OrderHasher
from ...signing import Signer
from .convert import Tables
from .csv_exact import CsvOrders
from .csv_fast import available, blocks, engine, read_header
from .hashing import check_signer, hash_batch
from .outputs import check_dataset_target, is_dataset
from .rows import LAYOUTS, Hashed, InputError, Layout, Orders, Piece
from .stages import item_threads, staged, workers_for
from .write_csv import CsvWriter
from .write_jsonl import JsonlWriter
from .write_parquet import ParquetWriter

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
    kind, out_kind = format_of(input_path), output_kind(output_path)
    job = _job(
        wallet,
        (kind, out_kind),
        input_path,
        output_path,
        threads=threads,
        batch_size=batch_size,
        progress=progress,
        report=report,
        version=version,
        signer=signer,
    )
    return _outputs(job, kind, input_path, out_kind, output_path)


def _job(
    wallet: str,
    kinds: tuple[str, str],
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
    """The paths and the batch size checked (``kinds``: INPUT's format, OUTPUT's kind), the
    wallet loaded, the signer matched to it."""
    kind, out_kind = kinds
    if batch_size is None:
        batch_size = PARQUET_BATCH if kind == "parquet" else DEFAULT_BATCH
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
    """Every order of INPUT hashed into OUTPUT, the errors of either as ``InputError``."""
    try:
        raw = open(input_path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot read {input_path}: {exc.strerror or exc}") from None
    bar = Progress(os.fstat(raw.fileno()).st_size, job.progress, sys.stderr)
    started = time.perf_counter()
    try:
        with raw:
            source = _source(job, kind, raw, input_path, out_kind)
            written, rejected = _line(job, source, input_path, out_kind, output_path, bar)
    except UnicodeDecodeError as exc:
        raise InputError(f"{input_path} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(f"cannot write {output_path}: {exc.strerror or exc}") from None
    finally:
        bar.clear()
    return Summary(written, rejected, time.perf_counter() - started)


class _Item(NamedTuple):
    """What the reader thread hands on: the item's number (from 0), its input (a batch
    of lines, a CSV block, a record batch), its first row's number, the input's bytes
    read by its end; ``block``: a CSV block, whose lines are numbered in order, here."""

    number: int
    data: Any
    first: int
    at: int
    block: bool = False


class _Source(NamedTuple):
    """The input's reader as the line drives it: ``items`` (the reader thread), ``read``
    (an item's ``Orders``, None for a CSV block in doubt), the exact reader of such a
    block, what the writers need (the columns' names, a CSV header as written, a Parquet
    file's schema, dictionary-read columns and dictionary columns), the word of a row's
    number and the errors that make the input unreadable."""

    kind: str
    items: Iterator[_Item]
    read: Callable[[_Item], Orders | None]
    names: list[str]
    exact: CsvOrders | None = None
    header: str | None = None
    schema: Any = None
    dictionary_read: Sequence[str] = ()
    dictionaries: list[str] | None = None
    word: str = "line"
    unreadable: tuple[type[BaseException], ...] = ()


def _source(job: _Job, kind: str, raw: IO[bytes], input_path: str, out_kind: str) -> _Source:
    """The reader of INPUT's format (``csv_fast`` when it can, else ``csv_exact``; ``jsonl``;
    ``parquet``), its columns read and checked."""
    if kind == "parquet":
        from .parquet import ParquetOrders  # pyarrow: only for Parquet

        reader = ParquetOrders(input_path, job.layout)
        total = max(reader.rows, 1)
        size = max(os.fstat(raw.fileno()).st_size, 1)
        groups = (
            _Item(i, batch, first, int((first - 1 + batch.num_rows) / total * size))
            for i, (first, batch) in enumerate(reader.batches(job.batch_size))
        )
        read = lambda item: reader.orders(item.first, item.data)  # noqa: E731
        return _Source(
            kind,
            groups,
            read,
            reader.names,
            schema=reader.schema,
            dictionary_read=reader.read,
            dictionaries=reader.dictionaries,
            word="row",
            unreadable=reader.unreadable,
        )
    if kind == "jsonl":
        return _jsonl(job, _text(raw), out_kind)
    if job.signer is None and available():
        header, rest = read_header(raw)  # the text wrapper is never read
        fmt = CsvOrders(header.decode("utf-8-sig"), job.layout)
        added = _added(job)
        wanted = [] if out_kind == "csv" else [fmt.index[n] for n in fmt.names if n not in added]
        fast = engine(job.layout, fmt, wanted)
        cut = blocks(raw, rest, len(header) + len(rest))
        return _Source(
            kind,
            (_Item(i, data, 0, at, block=True) for i, (data, at) in enumerate(cut)),
            (lambda _: None) if fast is None else lambda item: fast.block(item.data),
            fmt.names,
            fmt,
            fmt.text,
        )
    text = _text(raw)  # kept open by the reader thread's batches: closing it closes raw
    fmt = CsvOrders(text.readline(), job.layout)
    items = _batches(text, text, 2, job.batch_size)
    return _Source(
        kind, items, lambda item: fmt.parse(item.first, item.data), fmt.names, None, fmt.text
    )


def _text(raw: IO[bytes]) -> TextIO:
    """INPUT as UTF-8 text (a byte-order mark skipped), its line ends as written."""
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")


def _jsonl(job: _Job, text: TextIO, out_kind: str) -> _Source:
    """The JSONL reader; into another format, the first object's keys are the columns."""
    from .jsonl import JsonlOrders, first_object  # msgspec: only for JSONL

    fmt = JsonlOrders(job.layout)
    lines: Iterator[str] | TextIO = text
    names: list[str] = []
    if out_kind != "jsonl":
        first, lines = first_object(text)
        names = [] if first is None else [str(key) for key in first]
    items = _batches(lines, text, 1, job.batch_size)
    return _Source("jsonl", items, lambda item: fmt.parse(item.first, item.data), names)


def _batches(
    lines: Iterator[str] | TextIO, text: TextIO, first: int, batch_size: int
) -> Iterator[_Item]:
    """Batches of ``batch_size`` of the ``lines`` of ``text``, the first numbered ``first``
    (the reader thread; ``text`` is held open by it)."""
    index = 0
    while batch := list(islice(lines, batch_size)):
        yield _Item(index, batch, first, text.buffer.tell())
        first += len(batch)
        index += 1


def _added(job: _Job) -> list[str]:
    """The columns every output row gets."""
    return ["order_id"] if job.signer is None else ["order_id", "signature"]


def _writer(
    job: _Job, source: _Source, out_kind: str, output_path: str
) -> CsvWriter | JsonlWriter | ParquetWriter:
    """The writer of OUTPUT's format, open."""
    added, kind = _added(job), source.kind
    tables = Tables(kind, out_kind, source.names, added, source.schema, source.dictionary_read)
    if out_kind == "csv":
        header = source.header if kind == "csv" else None
        return CsvWriter(output_path, workers_for(job.threads), source.names, added, header, tables)
    if out_kind == "jsonl":
        return JsonlWriter(output_path, workers_for(job.threads), added, kind == "jsonl", tables)
    return ParquetWriter(output_path, out_kind == "dataset", tables, source.dictionaries)


def _line(
    job: _Job, source: _Source, input_path: str, out_kind: str, output_path: str, bar: Progress
) -> tuple[int, int]:
    """Every item read, hashed and written, in stages: (written, rejected)."""
    writer = _writer(job, source, out_kind, output_path)
    per_item = item_threads(job.threads)
    counts = [0, 0, 2]  # written, rejected, a CSV block's first line

    def work(item: _Item) -> tuple[Piece, int]:
        """(an item's piece, its lines) from its reader, the hashing and its writer."""
        orders = source.read(item)
        if orders is not None:
            # a CSV block: all hashed, or read again exactly
            hashed = hash_batch(job.hasher, orders, per_item, job.layout, job.signer, item.block)
            if hashed is not None:
                # no writer reads the hash columns: their memory is free for the output
                orders.columns = {}
                return writer.piece(item.number, [(orders, hashed)]), len(orders.lines)
        assert source.exact is not None  # a CSV block in doubt: numbered from 0
        batches, count = source.exact.read_block(item.data, job.batch_size)
        done = [(o, _hashed(job, o, per_item)) for o in batches]
        return writer.piece(item.number, done), count

    def finish(item: _Item, result: tuple[Piece, int]) -> None:
        """An item's piece written, its refusals said, in the input's order."""
        piece, lines = result
        writer.put(piece.payload)
        shift = counts[2] if item.block else 0
        if piece.rejects:
            bar.clear()
            for number, reason in sorted(piece.rejects):
                job.say(f"{source.word} {number + shift}: {reason}")
        counts[0] += piece.written
        counts[1] += len(piece.rejects)
        counts[2] += lines
        bar.update(item.at, counts[0])

    ok = False
    try:
        staged(source.items, work, finish, workers_for(job.threads))
        ok = True
    except source.unreadable as exc:
        raise InputError(f"{input_path}: {exc}") from None
    finally:
        writer.close(ok)
    return counts[0], counts[1]


def _hashed(job: _Job, orders: Orders, threads: int) -> Hashed:
    """A batch of the exact reader hashed (never None: not ``whole``)."""
    hashed = hash_batch(job.hasher, orders, threads, job.layout)
    assert hashed is not None
    return hashed


def describe(summary: Summary, output_path: str) -> str:
    """The one-line summary printed after a run."""
    text = (
        f"{summary.written:,} order ids -> {output_path} in {summary.seconds:.2f} s "
        f"({summary.rate:,.0f} orders/s, {IMPLEMENTATION} core)"
    )
    if summary.rejected:
        text += f"; {summary.rejected:,} row{'' if summary.rejected == 1 else 's'} rejected"
    return text
