"""The report of examples/backtest.py: per-market results, markouts, the files and the plot.

``write_report(out, run)`` writes ``steps.csv`` (per step and market: the book without
the bot's orders, the bot's best quotes, its position, the market's cash and
mark-to-mid PnL), ``fills.csv``, ``markouts.csv``, ``summary.txt`` and, with
matplotlib, ``pnl.png`` (the PnL over all markets, then a panel per market: its mid,
the book's touch as a band, the bot's fills, and its position on the right axis).
Every file is written under a new name and renamed into place. Numbers in the
summary are formatted for people (``-83.60``, ``1,250``); the CSV files hold them
exact, without trailing zeros.
"""

from __future__ import annotations

import bisect
import csv
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from clobkit.core.safe_files import atomic_output, unsafe_directory

HORIZONS = (1, 10, 60)  # seconds after a fill at which its markout reads the mid
CENTS = Decimal(100)


@dataclass
class Run:
    """What a backtest saw: a row per regular step and market, the fills, every mid
    sampled (markouts read them), the quotes the service refused, and the markets'
    names (id -> question)."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    fills: list[dict[str, Any]] = field(default_factory=list)
    mids: dict[str, list[tuple[float, Decimal]]] = field(default_factory=dict)
    refused: int = 0
    names: dict[str, str] = field(default_factory=dict)
    interval_s: float = 0.0

    @property
    def cash(self) -> Decimal:
        """The cash of every fill (USDC): what the service's balance moved by."""
        return sum((_signed_value(f) for f in self.fills), Decimal(0))


def _signed_value(fill: dict[str, Any]) -> Decimal:
    value: Decimal = fill["value"]
    return value if fill["side"] == "SELL" else -value


def plain(number: Decimal | float | str) -> str:
    """An exact number without trailing zeros (``-83.6``, ``0``): the CSV files' form."""
    if number == "":
        return ""
    text = format(Decimal(str(number)).normalize(), "f")
    return "0" if text in ("-0", "0") else text


def usdc(number: Decimal, sign: bool = False) -> str:
    """USDC for people: two decimals and thousands separators (``+1,234.50``)."""
    return f"{number:+,.2f}" if sign else f"{number:,.2f}"


def count(number: Decimal | int) -> str:
    """Shares or a count for people: thousands separators, decimals only when there
    are any (``1,250``, ``12.5``)."""
    value = Decimal(number).normalize()
    return f"{value:,f}" if value != value.to_integral_value() else f"{int(value):,}"


# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One market's results (or all markets'): fills, shares bought and sold, USDC
    traded, shares held at the end, mark-to-mid PnL and the deepest fall of the PnL
    from an earlier peak (USDC)."""

    name: str
    fills: int
    bought: Decimal
    sold: Decimal
    volume: Decimal
    inventory: Decimal
    pnl: Decimal
    drawdown: Decimal


def drawdown(pnls: Iterable[Decimal]) -> Decimal:
    """The largest fall of a PnL series from its running peak (0 when it never fell)."""
    peak, worst = Decimal(0), Decimal(0)
    for pnl in pnls:
        peak = max(peak, pnl)
        worst = max(worst, peak - pnl)
    return worst


def results(run: Run) -> list[Result]:
    """Each market's results, then the whole book's (named ``all``)."""
    out = []
    markets = list(dict.fromkeys(s["market"] for s in run.steps))
    for market in markets:
        rows = [s for s in run.steps if s["market"] == market]
        fills = [f for f in run.fills if f["market"] == market]
        out.append(_result(market, rows, fills, [r["pnl"] for r in rows]))
    totals: dict[float, Decimal] = {}
    for s in run.steps:
        totals[s["t_s"]] = totals.get(s["t_s"], Decimal(0)) + s["pnl"]
    last = {m: [s for s in run.steps if s["market"] == m][-1] for m in markets}
    whole = _result("all", list(last.values()), run.fills, list(totals.values()))
    return [*out, whole]


def _result(
    name: str, rows: Sequence[dict[str, Any]], fills: Sequence[dict[str, Any]], pnls: list[Any]
) -> Result:
    bought = sum((f["shares"] for f in fills if f["side"] == "BUY"), Decimal(0))
    sold = sum((f["shares"] for f in fills if f["side"] == "SELL"), Decimal(0))
    held = rows[-1]["position"] if name != "all" else sum((r["position"] for r in rows), Decimal(0))
    return Result(
        name,
        len(fills),
        bought,
        sold,
        sum((f["value"] for f in fills), Decimal(0)),
        Decimal(held) if rows else Decimal(0),
        pnls[-1] if pnls else Decimal(0),
        drawdown(pnls),
    )


@dataclass(frozen=True)
class Markout:
    """The fills of one side and, per horizon, the mid's move after them: cents a share,
    share-weighted, positive when the market moved the fill's way (``None``: no fill had
    a mid that long after it before the recording ended)."""

    side: str
    fills: int
    cents: dict[int, Decimal | None]


def markouts(run: Run) -> list[Markout]:
    """BUY and SELL markouts at each of ``HORIZONS`` seconds: mid minus price for a BUY,
    price minus mid for a SELL, the mid read at the first sample at or after the fill's
    step plus the horizon."""
    out = []
    for side in ("BUY", "SELL"):
        fills = [f for f in run.fills if f["side"] == side]
        cents: dict[int, Decimal | None] = {}
        for horizon in HORIZONS:
            moved, shares = Decimal(0), Decimal(0)
            for f in fills:
                mid = _mid_at(run.mids.get(f["market"], []), f["t_s"] + horizon)
                if mid is not None:
                    move = mid - f["price"] if side == "BUY" else f["price"] - mid
                    moved += move * f["shares"]
                    shares += f["shares"]
            cents[horizon] = (moved / shares * CENTS).quantize(Decimal("0.01")) if shares else None
        out.append(Markout(side, len(fills), cents))
    return out


def _mid_at(series: list[tuple[float, Decimal]], t_s: float) -> Decimal | None:
    """The first mid sampled at or after ``t_s`` (None past the last sample)."""
    i = bisect.bisect_left(series, (t_s, Decimal(-1)))
    return series[i][1] if i < len(series) else None


# -- the summary ----------------------------------------------------------------------------


def summary(run: Run) -> str:
    """The report's text: the run, a table of results per market, the markouts."""
    steps = len({s["t_s"] for s in run.steps})
    rows = [
        [
            r.name,
            count(r.fills),
            count(r.bought),
            count(r.sold),
            usdc(r.volume),
            count(r.inventory),
            usdc(r.pnl, sign=True),
            usdc(r.drawdown),
        ]
        for r in results(run)
    ]
    head = ["market", "fills", "bought", "sold", "volume", "held", "PnL", "drawdown"]
    lines = [
        f"{len(rows) - 1} markets, {count(steps)} steps of {run.interval_s:g} recorded s; "
        f"cash {usdc(run.cash, sign=True)} USDC"
        + (f"; {count(run.refused)} quotes refused by the service's limits" if run.refused else ""),
        "",
        "results (shares; USDC for volume, mark-to-mid PnL and its max drawdown):",
        *table(head, rows),
        "",
        "markouts: the mid's move after a fill, cents a share (+: the market went the fill's",
        "way; -: against it, the adverse selection a maker pays), share-weighted per side:",
    ]
    marks = [
        [m.side, count(m.fills), *(_cents(m.cents[h]) for h in HORIZONS)] for m in markouts(run)
    ]
    lines += table(["side", "fills", *(f"{h} s" for h in HORIZONS)], marks)
    if run.names:
        lines += ["", "markets:", *(f"{m}  {name}" for m, name in run.names.items())]
    return "\n".join(lines) + "\n"


def _cents(value: Decimal | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A text table: the first column left, the others right aligned."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(head), *map(line, rows)]


# -- the files ------------------------------------------------------------------------------

STEP_FIELDS = [
    "t_s",
    "market",
    "bid",
    "ask",
    "mid",
    "our_bid",
    "our_ask",
    "position",
    "cash",
    "pnl",
]
FILL_FIELDS = ["t_s", "market", "side", "price", "shares"]


def write_report(out: Path, run: Run, plot: bool) -> str:
    """steps.csv, fills.csv, markouts.csv, summary.txt (and pnl.png); the summary's text.
    A directory other users can write is warned about."""
    unsafe = unsafe_directory(out)
    if unsafe is not None:
        print(f"warning: writing the report into an unsafe directory: {unsafe}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    marks = [
        {"side": m.side, "fills": m.fills, **{f"{h}s_cents": _cents(m.cents[h]) for h in HORIZONS}}
        for m in markouts(run)
    ]
    for name, rows, fields in (
        ("steps.csv", run.steps, STEP_FIELDS),
        ("fills.csv", run.fills, FILL_FIELDS),
        ("markouts.csv", marks, ["side", "fills", *(f"{h}s_cents" for h in HORIZONS)]),
    ):
        with atomic_output(out / name, "w") as fh:
            writer = csv.DictWriter(
                fh, fieldnames=fields, lineterminator="\n", extrasaction="ignore"
            )
            writer.writeheader()
            writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    text = summary(run)
    with atomic_output(out / "summary.txt", "w") as fh:
        fh.write(text)
    if plot:
        draw(out / "pnl.png", run)
    return text


def _cell(value: Any) -> Any:
    return plain(value) if isinstance(value, (Decimal, float)) else value


# -- the plot -------------------------------------------------------------------------------


def draw(path: Path, run: Run) -> None:
    """The PnL over all markets, then one panel per market (price and position)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        print("no matplotlib: no pnl.png (pip install matplotlib)", file=sys.stderr)
        return
    markets = list(dict.fromkeys(s["market"] for s in run.steps))
    span = max((s["t_s"] for s in run.steps), default=0.0)
    unit, scale = ("hours", 3600.0) if span >= 7200 else ("minutes", 60.0)
    fig, axes = plt.subplots(
        1 + len(markets), 1, figsize=(9, 2.4 + 2.2 * len(markets)), sharex=True, squeeze=False
    )
    totals: dict[float, float] = {}
    for s in run.steps:
        totals[s["t_s"]] = totals.get(s["t_s"], 0.0) + float(s["pnl"])
    top = axes[0][0]
    top.plot([t / scale for t in totals], list(totals.values()), color="C2")
    top.set_ylabel("PnL, all (USDC)")
    top.grid(alpha=0.3)
    for i, (ax, market) in enumerate(zip((row[0] for row in axes[1:]), markets, strict=True)):
        _market_panel(ax, run, market, scale, legend=i == 0)
    axes[-1][0].set_xlabel(f"recorded {unit}")
    fig.tight_layout()
    with atomic_output(path) as png:
        fig.savefig(png, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)


def _market_panel(ax: Any, run: Run, market: str, scale: float, legend: bool) -> None:
    """One market: the book's touch as a band, its mid, the bot's fills as markers, and
    its position (shares) as a step line on the right axis."""
    rows = [s for s in run.steps if s["market"] == market and s["bid"] != "" and s["ask"] != ""]
    times = [s["t_s"] / scale for s in rows]
    ax.fill_between(
        times,
        [float(s["bid"]) for s in rows],
        [float(s["ask"]) for s in rows],
        color="C0",
        alpha=0.15,
        step="post",
        label="touch",
    )
    ax.plot(times, [float(s["mid"]) for s in rows], color="C0", lw=0.8, label="mid")
    for side, marker, color in (("BUY", "^", "C2"), ("SELL", "v", "C3")):
        fills = [f for f in run.fills if f["market"] == market and f["side"] == side]
        ax.scatter(
            [f["t_s"] / scale for f in fills],
            [float(f["price"]) for f in fills],
            marker=marker,
            color=color,
            s=14,
            zorder=3,
            label=f"{side.lower()} fills",
        )
    ax.set_ylabel("price")
    ax.set_title(f"{market} {run.names.get(market, '')}"[:90], fontsize=9, loc="left")
    ax.grid(alpha=0.3)
    held = ax.twinx()
    every = [s for s in run.steps if s["market"] == market]
    held.step(
        [s["t_s"] / scale for s in every],
        [float(s["position"]) for s in every],
        where="post",
        color="0.4",
        lw=0.9,
        label="position",
    )
    held.set_ylabel("shares held")
    if legend:  # the first market's panel explains them all
        handles, labels = ax.get_legend_handles_labels()
        more, also = held.get_legend_handles_labels()
        ax.legend(handles + more, labels + also, loc="best", fontsize=7, ncol=5, framealpha=0.8)
