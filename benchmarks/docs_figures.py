"""The speed figures of README.md and docs/, generated from one ``clobkit bench`` report.

Every figure of clobkit against its peers that the user docs quote sits in a
generated block, ``<!-- bench:NAME -->`` ... ``<!-- /bench:NAME -->``, whose
text this module renders from ``docs/bench.json`` (the JSON of one full run,
written with the chart by the same command). After a new run:

    clobkit bench --json docs/bench.json --png docs/bench.png
    python -m benchmarks.docs_figures          # rewrites the blocks

``tests/test_docs_figures.py`` renders the blocks again and fails when a
file's block differs, so a figure cannot drift from the run it came from.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from clobkit.bench.machine import machine_line
from clobkit.bench.report import _run_line, fmt_ns, format_markdown, verdict_lines
from clobkit.bench.verdicts import headline

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "bench.json"
# file -> the blocks it holds
FILES = {
    "README.md": ["headline", "source"],
    "docs/benchmarks.md": ["verdicts", "table"],
    "docs/scale.md": ["files"],
}
BLOCK = re.compile(r"(<!-- bench:(\w+) -->)(.*?)(<!-- /bench:\2 -->)", re.DOTALL)


def _x(ratio: float) -> str:
    return f"{ratio:.0f}" if ratio >= 10 else f"{ratio:.1f}"


def source(report: dict[str, Any]) -> str:
    """Where the figures come from: the run's date and machine, and how busy it was."""
    return (
        f"`clobkit bench`, {report['date']}, on {machine_line(report['machine'])}; "
        f"{_run_line(report)}"
    )


def render(report: dict[str, Any]) -> dict[str, str]:
    """Each block's text (between its markers), from one report."""
    h = headline(report)
    files = next(op for op in report["operations"] if op["key"] == "order_ids_files")
    per_order = "; ".join(
        f"{r['implementation'].removeprefix('clobkit order-ids ')}: {fmt_ns(r['per_op_ns'])}"
        f" per order ({r['x_clobkit']:.2f}× the CSV's time)"
        for r in files["rows"]
    )
    return {
        "headline": (
            f"{_x(h['order_id_low'])} to {_x(h['order_id_high'])} times faster than "
            "py-order-utils and eth-account at order ids, "
            f"{_x(h['amounts_low'])} to {_x(h['amounts_high'])} times faster than "
            "py-clob-client at amounts (and without its float rounding errors), "
            f"{_x(h['sign_v2'])} times faster than py-clob-client-v2 at signed V2 orders and "
            f"{_x(h['headers'])} times faster than the standard library at request signing"
        ),
        "source": source(report),
        "verdicts": "\n" + source(report) + ":\n\n" + "\n".join(verdict_lines(report)) + "\n\n",
        "table": "\n" + format_markdown(report) + "\n",
        "files": f"\nWall time of the whole command, read, hash and write, `--threads 2`, "
        f"{files['title'].split(', ', 1)[1]}: {per_order}. From {source(report)}.\n",
    }


def update(text: str, blocks: dict[str, str]) -> str:
    """``text`` with every generated block's content replaced by ``blocks``' text."""
    return BLOCK.sub(lambda m: m.group(1) + blocks[m.group(2)] + m.group(4), text)


def found(text: str) -> list[str]:
    """The names of the generated blocks in ``text``, in order."""
    return [m.group(2) for m in BLOCK.finditer(text)]


def main() -> int:
    blocks = render(json.loads(REPORT.read_text()))
    for name in FILES:
        path = ROOT / name
        path.write_text(update(path.read_text(), blocks))
        print(f"updated {name}: {', '.join(found(path.read_text()))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
