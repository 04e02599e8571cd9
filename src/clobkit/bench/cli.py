"""``clobkit bench`` command line: options, the run, and where the report goes."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._timing import DEFAULT, INSTALL_HINT, QUICK, Settings
from .memory import measure_memory
from .report import (
    MEMORY_HEADERS,
    _md_table,
    _memory_note,
    _text_table,
    _wrapped,
    format_markdown,
    format_text,
    memory_rows,
    write_png,
)
from .run import run

# Measured with `time clobkit bench` on the project's 2-core machine, shared with other
# work (docs/benchmarks.md): full runs took 1:39 and 2:27 (and 2:22 in issue #25's run),
# --quick 9 s.
DURATION = {False: "about 2 to 2.5 minutes on 2 cores", True: "about 10 seconds"}


def main(argv: Sequence[str] | None = None) -> int:
    """``clobkit bench``: returns 0, or 1 when clobkit disagrees with an exact reference.

    ``clobkit bench --scaling [options]``: threads against processes on this machine
    (``clobkit.bench.scaling``, its own options)."""
    given = list(sys.argv[1:] if argv is None else argv)
    if "--scaling" in given:
        from .scaling import main as scaling

        rest = [a for a in given if a != "--scaling"]
        return scaling(rest, prog="clobkit bench --scaling")
    args = _parser().parse_args(given)
    error = _check(args)
    if error:
        print(f"clobkit bench: error: {error}", file=sys.stderr)
        return 2
    s = _settings(args)
    if args.memory_only:
        _print_memory(measure_memory(s.memory_orders or DEFAULT.memory_orders), args.markdown)
        return 0
    _say(f"a {'quick' if args.quick else 'full'} run takes {DURATION[args.quick]}")
    report = run(s, _say)
    print(format_markdown(report) if args.markdown else format_text(report))
    _write_files(report, args)
    if not report["ok"]:
        _say("clobkit disagreed with an exact reference: see the correctness column")
    return 0 if report["ok"] else 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="clobkit bench",
        description="clobkit against the installed peers, in one process: per-operation "
        "time, ratio to clobkit and to the floors F and S, correctness, and verdicts. "
        f"The peers: {INSTALL_HINT}.",
    )
    p.add_argument("--quick", action="store_true", help="a short run (tests, CI)")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.add_argument("--png", metavar="PATH", help="also write a bar chart (needs matplotlib)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--rounds", type=int, help="interleaved rounds per operation")
    p.add_argument("--batch", type=int, help="orders per V1 order_ids call")
    p.add_argument("--batch-v2", type=int, help="orders per V2 order_ids call")
    p.add_argument("--memory-orders", type=int, help="orders in the memory check (0 skips it)")
    p.add_argument("--memory-only", action="store_true", help="only the memory check")
    p.add_argument(
        "--scaling",
        action="store_true",
        help="instead: threads against processes at 2, 4, 8, 16 workers, every batch kind "
        "and the command (clobkit bench --scaling --help)",
    )
    return p


def _check(args: argparse.Namespace) -> str:
    """The first problem with the options, or ``""``; checked before the run, not after it."""
    for flag, value, low in (
        ("--rounds", args.rounds, 1),
        ("--batch", args.batch, 1),
        ("--batch-v2", args.batch_v2, 1),
        ("--memory-orders", args.memory_orders, 0),
    ):
        if value is not None and value < low:
            return f"{flag} must be at least {low} (got {value})"
    if args.memory_only and (args.json or args.png):
        return "--memory-only writes no --json or --png (it prints its table)"
    for flag, path in (("--json", args.json), ("--png", args.png)):
        if path and not Path(path).resolve().parent.is_dir():  # found before, not after, a run
            return f"{flag}: no directory {str(Path(path).resolve().parent)!r} to write it in"
    if args.png:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return f"--png needs matplotlib ({INSTALL_HINT})"
    return ""


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        "rounds": args.rounds,
        "batch": args.batch,
        "batch_v2": args.batch_v2,
        "memory_orders": args.memory_orders,
    }
    base = QUICK if args.quick else DEFAULT
    return dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})


def _say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _print_memory(memory: list[dict[str, Any]], markdown: bool) -> None:
    report = {"memory": memory}
    print(_memory_note(report) if markdown else "\n".join(_wrapped(_memory_note(report))))
    table = _md_table if markdown else _text_table
    print("\n".join(table(MEMORY_HEADERS, memory_rows(report), set(range(len(MEMORY_HEADERS))))))


def _write_files(report: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        _say(f"wrote {args.json}")
    if args.png:
        write_png(report, args.png)
        _say(f"wrote {args.png}")
