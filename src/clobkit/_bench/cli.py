"""``clobkit bench`` command line: options, the run, and where the report goes."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ._timing import DEFAULT, QUICK
from .memory import measure_memory
from .report import (
    MEMORY_HEADERS,
    _md_table,
    _memory_note,
    _text_table,
    format_markdown,
    format_text,
    memory_rows,
    write_png,
)
from .run import run


def main(argv: Sequence[str] | None = None) -> int:
    """``clobkit bench``: returns 0, or 1 when clobkit disagrees with an exact reference."""
    p = argparse.ArgumentParser(
        prog="clobkit bench",
        description="clobkit against the installed peers, in one process: per-operation "
        "time, ratio to clobkit and to the floors F and S, and correctness.",
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
    args = p.parse_args(argv)
    for flag, value, low in (
        ("--rounds", args.rounds, 1),
        ("--batch", args.batch, 1),
        ("--batch-v2", args.batch_v2, 1),
        ("--memory-orders", args.memory_orders, 0),
    ):
        if value is not None and value < low:
            print(
                f"clobkit bench: error: {flag} must be at least {low} (got {value})",
                file=sys.stderr,
            )
            return 2
    if args.png:
        try:
            import matplotlib  # noqa: F401  (fail before the run, not after it)
        except ImportError:
            print(
                "clobkit bench: error: --png needs matplotlib (pip install matplotlib)",
                file=sys.stderr,
            )
            return 2
    s = QUICK if args.quick else DEFAULT
    overrides = {
        "rounds": args.rounds,
        "batch": args.batch,
        "batch_v2": args.batch_v2,
        "memory_orders": args.memory_orders,
    }
    s = dataclasses.replace(s, **{k: v for k, v in overrides.items() if v is not None})

    def say(msg: str) -> None:
        print(f"[bench] {msg}", file=sys.stderr, flush=True)

    if args.memory_only:
        report = {"memory": measure_memory(s.memory_orders or DEFAULT.memory_orders)}
        print(_memory_note(report))
        table = _md_table if args.markdown else _text_table
        cols = set(range(len(MEMORY_HEADERS)))
        print("\n".join(table(MEMORY_HEADERS, memory_rows(report), cols)))
        return 0
    report = run(s, say)
    print(format_markdown(report) if args.markdown else format_text(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        say(f"wrote {args.json}")
    if args.png:
        write_png(report, args.png)
        say(f"wrote {args.png}")
    if not report["ok"]:
        say("clobkit disagreed with an exact reference: see the correctness column")
    return 0 if report["ok"] else 1
