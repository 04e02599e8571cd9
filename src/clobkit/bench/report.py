"""``clobkit bench`` output: a text table, Markdown (docs/benchmarks.md) and a PNG bar chart.

The text fits ``WIDTH`` (100) columns, a terminal's: prose is wrapped, each operation
is a heading over its rows, and a cell too wide for its column wraps in it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .machine import machine_line
from .orders_v2 import PUBLISHED, PUBLISHED_SOURCE
from .verdicts import verdict_text


def fmt_ns(ns: float) -> str:
    """Nanoseconds with three significant digits and a unit: ``838 ns``, ``2.41 µs``."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{_sig3(ns / scale)} {unit}"
    return f"{_sig3(ns)} ns"


def _sig3(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


HEADERS = ["operation", "implementation", "per op", "× clobkit", "× F", "× S", "correctness"]


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """The table's cells, one list per row (operation named on its first row only)."""
    rows = []
    for op in report["operations"]:
        for i, r in enumerate(op["rows"]):
            rows.append(
                [
                    op["title"] if i == 0 else "",
                    r["implementation"],
                    fmt_ns(r["per_op_ns"]),
                    "" if r["x_clobkit"] is None else _sig3(r["x_clobkit"]),
                    _sig3(r["x_F"]),
                    _sig3(r["x_S"]),
                    r["correctness"],
                ]
            )
    return rows


def _preamble(report: dict[str, Any]) -> list[str]:
    s, fl = report["settings"], report["floors_ns"]
    return [
        f"clobkit bench, {report['date']}, on {machine_line(report['machine'])}; "
        + _run_line(report),
        f"Per-operation time, best of {s['rounds']} interleaved rounds (clobkit and peers "
        "alternate). × clobkit: time ÷ the operation's first clobkit row. "
        f"F = {fmt_ns(fl['F'])}: 5 Keccak-f[1600] permutations (one order id's work), "
        f"OpenSSL via hashlib.sha3_256. S = {fmt_ns(fl['S'])}: one SHA-256 compression, "
        "hashlib.sha256.",
    ]


def _run_line(report: dict[str, Any]) -> str:
    """How long the run took and how busy the machine was (other work skews the figures)."""
    secs = report.get("seconds")
    took = f"the run took {int(secs // 60)}:{int(secs % 60):02d}" if secs is not None else ""
    loads = report.get("load_average") or []
    if len(loads) == 2 and None not in loads:
        return f"{took}, load average {loads[0]:.1f} at the start, {loads[1]:.1f} at the end"
    return took


def verdict_lines(report: dict[str, Any]) -> list[str]:
    """The verdicts, one line each (``- `` prefixed): clobkit against each peer and floor."""
    return [f"- {verdict_text(v)}" for v in report.get("verdicts", [])]


def _epilogue(report: dict[str, Any]) -> list[str]:
    g = report["amounts_grid"]
    lines = [
        f"Amounts grid: tick {g['tick']}, prices {g['prices']} × sizes {g['sizes']}, "
        f"BUY and SELL: {g['points']:,} points each for limit and market; floats go to clobkit "
        "and py-clob-client, the exact decimals they print as go to the Decimal rules."
    ]
    for kind in ("limit", "market"):
        ex = g[kind]["py_clob_client_examples"]
        if ex:
            lines.append(
                f"py-clob-client {kind} mismatches, e.g. (side price × size: its maker/taker "
                "units, then clobkit's): " + "; ".join(ex[:3])
            )
    return [*lines, _published_line()]


def _published_line() -> str:
    figures = ", ".join(f"{name} {fmt_ns(ns)}" for name, ns in PUBLISHED.values())
    return f"Published elsewhere, not measured here ({PUBLISHED_SOURCE}): {figures}."


MEMORY_HEADERS = [
    "orders",
    "threads",
    "inputs",
    "outputs",
    "peak increase",
    "peak ÷ (in + out)",
    "process peak ÷ (in + out)",
]


def memory_rows(report: dict[str, Any]) -> list[list[str]]:
    """Cells of the memory table (sizes in MB = 10**6 bytes)."""
    return [
        [
            f"{m['orders']:,}",
            str(m["threads"]),
            f"{m['inputs_bytes'] / 1e6:,.1f} MB",
            f"{m['outputs_bytes'] / 1e6:,.1f} MB",
            f"{m['peak_increase_bytes'] / 1e6:,.1f} MB",
            f"{m['ratio']:.2f}",
            f"{m['process_ratio']:.2f}",
        ]
        for m in report["memory"]
    ]


def _memory_note(report: dict[str, Any]) -> str:
    method = report["memory"][0]["method"] if report["memory"] else ""
    return (
        "Memory: one order_ids call on Python lists (distinct 77-digit token id strings, int "
        "amounts and salts), each thread count in a fresh process; inputs and outputs as "
        f"sys.getsizeof counts them; peak RSS from {method}."
    )


#: Columns of ``clobkit bench``'s text, a terminal's width.
WIDTH = 100
_NARROWEST = 10  # a wrapped column keeps at least this many characters


def _text_table(
    headers: list[str],
    rows: list[list[str]],
    right: set[int],
    headings: dict[int, str] | None = None,
) -> list[str]:
    """A table within ``WIDTH`` columns: the widest left-aligned columns narrowed until
    it fits, their cells wrapped; ``headings`` puts a line of its own before row i."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    text = [i for i in range(len(headers)) if i not in right]
    while sum(widths) + 2 * (len(widths) - 1) > WIDTH:
        i = max(text, key=lambda k: widths[k])
        if widths[i] <= _NARROWEST:
            break
        widths[i] -= 1

    def lines(cells: list[str]) -> list[str]:
        parts = [textwrap.wrap(c, w) or [""] for c, w in zip(cells, widths, strict=True)]
        out = []
        for k in range(max(map(len, parts))):
            pieces = [p[k] if k < len(p) else "" for p in parts]
            out.append(
                "  ".join(
                    c.rjust(w) if i in right else c.ljust(w)
                    for i, (c, w) in enumerate(zip(pieces, widths, strict=True))
                ).rstrip()
            )
        return out

    table = [*lines(headers), "  ".join("-" * w for w in widths)]
    for i, row in enumerate(rows):
        if headings and i in headings:
            table.append(headings[i])
        table += lines(row)
    return table


def _wrapped(paragraph: str, indent: str = "") -> list[str]:
    """A paragraph wrapped to ``WIDTH`` columns (later lines indented by ``indent``)."""
    return textwrap.wrap(paragraph, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def _md_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    align = ["---:" if i in right else "---" for i in range(len(headers))]
    return ["| " + " | ".join(r) + " |" for r in [headers, align, *rows]]


def format_text(report: dict[str, Any]) -> str:
    """The report for a terminal, within ``WIDTH`` columns: the table (each operation a
    heading over its rows), then the verdicts."""
    lines = [line for p in _preamble(report) for line in _wrapped(p)] + [""]
    rows = table_rows(report)
    headings = {i: f"{row[0]}:" for i, row in enumerate(rows) if row[0]}
    lines += _text_table(HEADERS[1:], [row[1:] for row in rows], {1, 2, 3, 4}, headings)
    lines += ["", "Verdicts (one call each; batches are in the table):"]
    lines += [line for v in verdict_lines(report) for line in _wrapped(v, "  ")]
    lines += [""] + [line for e in _epilogue(report) for line in _wrapped(e, "  ")]
    if report["memory"]:
        lines += ["", *_wrapped(_memory_note(report))]
        lines += _text_table(MEMORY_HEADERS, memory_rows(report), set(range(len(MEMORY_HEADERS))))
    lines += [line for n in report["notes"] for line in _wrapped(f"skipped: {n}", "  ")]
    return "\n".join(lines)


def format_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown (docs/benchmarks.md)."""
    lines = []
    for p in _preamble(report):
        lines += [p, ""]
    lines += _md_table(HEADERS, table_rows(report), {2, 3, 4, 5})
    lines += ["", "Verdicts (one call each; batches are in the table):", "", *verdict_lines(report)]
    lines += [""]
    for e in _epilogue(report):
        lines += [e, ""]
    if report["memory"]:
        lines += [_memory_note(report), ""]
        lines += _md_table(MEMORY_HEADERS, memory_rows(report), set(range(len(MEMORY_HEADERS))))
        lines += [""]
    lines += [f"Skipped: {n}" for n in report["notes"]]
    return "\n".join(lines).rstrip() + "\n"


COLORS = {"clobkit": "#1f6fb4", "peer": "#e07b28", "floor": "#888888"}
PUBLISHED_COLOR = "#b22222"


def write_png(report: dict[str, Any], path: str | Path) -> None:
    """Horizontal bar chart of per-operation times (log scale), floors drawn as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chart = _chart(report)
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(chart.labels) + 1.6))
    _draw_bars(ax, chart)
    floors = report["floors_ns"]
    for name, style in (("F", "--"), ("S", ":")):
        ax.axvline(floors[name], color="#444444", linestyle=style, linewidth=1)
    for y0, y1, ns in chart.published:
        ax.vlines(ns, y0, y1, color=PUBLISHED_COLOR, linestyle="-.", linewidth=1.2)
    ns_all = [b[1] for b in chart.bars]
    ax.set_xlim(min(floors["S"], *ns_all) / 2, max(ns_all) * 4)
    ax.set_xlabel("time per operation, ns (log scale; shorter is faster)", fontsize=8)
    _legend(ax, floors)
    ax.set_title(f"clobkit bench, {report['date']}\n{machine_line(report['machine'])}", fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


@dataclass
class _Chart:
    labels: list[str] = field(default_factory=list)
    headers: list[int] = field(default_factory=list)  # label indexes that name an operation
    bars: list[tuple[float, float, str]] = field(default_factory=list)  # (y, ns, color)
    published: list[tuple[float, float, float]] = field(default_factory=list)  # (y0, y1, ns)


def _chart(report: dict[str, Any]) -> _Chart:
    """The chart's rows: an operation's title, then one bar per implementation."""
    c = _Chart()
    for op in report["operations"]:
        if op["key"] == "floors":
            continue
        if op["key"] in PUBLISHED:
            y = len(c.labels)
            c.published.append((y + 0.5, y + len(op["rows"]) + 0.5, PUBLISHED[op["key"]][1]))
        c.headers.append(len(c.labels))
        c.labels.append(op["title"])
        for r in op["rows"]:
            c.bars.append((len(c.labels), r["per_op_ns"], COLORS.get(r["kind"], "#888888")))
            c.labels.append(r["implementation"])
    return c


def _draw_bars(ax: Any, c: _Chart) -> None:
    ax.barh(
        [b[0] for b in c.bars], [b[1] for b in c.bars], color=[b[2] for b in c.bars], height=0.75
    )
    ax.set_xscale("log")
    ax.set_yticks(range(len(c.labels)), c.labels, fontsize=8)
    for i, tick in enumerate(ax.get_yticklabels()):
        if i in c.headers:
            tick.set_fontweight("bold")
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(len(c.labels) - 0.4, -0.6)
    for y, ns, _ in c.bars:
        ax.text(ns * 1.08, y, fmt_ns(ns), va="center", fontsize=7)


def _legend(ax: Any, floors: dict[str, float]) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    published = "nautilus_trader (Rust), published elsewhere, not measured here"
    ax.legend(
        handles=[
            Patch(color=COLORS["clobkit"], label="clobkit"),
            Patch(color=COLORS["peer"], label="peers"),
            Patch(color=COLORS["floor"], label="E: bare ECDSA (coincurve)"),
            Line2D([], [], color=PUBLISHED_COLOR, linestyle="-.", label=published),
            Line2D([], [], color="#444444", linestyle="--", label=f"F = {fmt_ns(floors['F'])}"),
            Line2D([], [], color="#444444", linestyle=":", label=f"S = {fmt_ns(floors['S'])}"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.05),
        ncol=3,
        fontsize=7,
    )
