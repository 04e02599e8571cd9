"""examples/backtest.py: the Desk against a replayed recording gives the same report on
every run, at every speed, on V1, V2 and V3 wallets; the report's results per market,
markouts and numbers for people (the journeys through its command line are in
tests/test_examples.py)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from .conftest import VERSIONS, example

FILES = ("steps.csv", "fills.csv", "markouts.csv", "summary.txt")
D = Decimal


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_two_runs_give_the_same_report(tmp_path: Path, version: int) -> None:
    backtest = example("backtest")
    day = backtest.synthetic_day(tmp_path / "day", markets=2, hours=0.5, seed=3)
    one = backtest.backtest(
        day, tmp_path / "one", exchange_version=version, interval=60, plot=False
    )
    two = backtest.backtest(
        day, tmp_path / "two", exchange_version=version, interval=60, speed=3600, plot=version == 1
    )
    assert one == two
    for name in FILES:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    fills = (tmp_path / "one" / "fills.csv").read_text()
    assert ",BUY," in fills  # the bot traded with the recorded liquidity, both ways
    assert ",SELL," in fills
    steps = (tmp_path / "one" / "steps.csv").read_text().splitlines()
    assert steps[0] == "t_s,market,bid,ask,mid,our_bid,our_ask,position,cash,pnl"
    assert len(steps) == 1 + 2 * 30  # a row per market every recorded minute
    assert "markouts" in one
    assert "000000" not in one  # numbers for people, not -83.600000
    if version == 1:
        assert (tmp_path / "two" / "pnl.png").read_bytes().startswith(b"\x89PNG")


def test_ladder_keeps_to_the_grid_and_the_minimum() -> None:
    backtest = example("backtest")
    quotes = backtest.ladder(D("0.455"), D(25), D(1))
    assert [(q.side, str(q.price)) for q in quotes] == [
        ("BUY", "0.43"),
        ("BUY", "0.42"),
        ("BUY", "0.41"),
        ("SELL", "0.48"),
        ("SELL", "0.49"),
    ]
    assert [str(q.price) for q in backtest.ladder(D("0.12"), D(0), D(1))] == ["0.10"]
    assert backtest.ladder(D("0.12"), D(0), D(5)) == []  # 10 shares under 0.50: < 5 USDC


def test_the_default_interval_follows_the_recordings_span() -> None:
    backtest = example("backtest")

    def interval(seconds: float) -> int:
        return int(backtest.default_interval({"now_ms": 0, "stop_ms": int(seconds * 1000)}))

    assert interval(60) == 1_000  # a minute's recording: 60 steps of a second
    assert interval(3_600) == 15_000  # an hour's: 240 steps
    assert interval(86_400) == 60_000  # a day's: 1,440 steps of a minute
    assert interval(0) == 1_000


def run_of(report: Any) -> Any:
    """A hand-made run: one market, a BUY then a SELL, the mid sampled after each."""
    r = report.Run(interval_s=60)
    r.names = {"m1": "A vs. B"}
    for t, pnl, held in ((0.0, D(0), D(0)), (60.0, D("-2.5"), D(10)), (120.0, D(1), D(0))):
        r.steps.append(
            {
                "t_s": t, "market": "m1", "bid": D("0.40"), "ask": D("0.44"), "mid": D("0.42"),
                "our_bid": "", "our_ask": "", "position": held, "cash": D(0), "pnl": pnl,
            }
        )  # fmt: skip
    r.fills = [
        {"t_s": 60.0, "market": "m1", "side": "BUY", "price": D("0.40"), "shares": D(10),
         "value": D(4)},
        {"t_s": 120.0, "market": "m1", "side": "SELL", "price": D("0.45"), "shares": D(10),
         "value": D("4.5")},
    ]  # fmt: skip
    r.mids = {"m1": [(60.0, D("0.39")), (61.0, D("0.38")), (70.0, D("0.41")), (120.0, D("0.44"))]}
    return r


def test_results_and_markouts_of_a_hand_made_run() -> None:
    report = example("backtest_report")
    run = run_of(report)
    one, whole = report.results(run)
    assert (one.name, one.fills, one.bought, one.sold) == ("m1", 2, D(10), D(10))
    assert (one.volume, one.inventory, one.pnl) == (D("8.5"), D(0), D(1))
    assert one.drawdown == D("2.5")  # from the peak 0 down to -2.5
    assert whole.pnl == D(1)
    buy, sell = report.markouts(run)
    # BUY at 0.40: the mid 1 s later 0.38 (-2 cents), 10 s later 0.41 (+1), 60 s 0.44 (+4)
    assert (buy.side, buy.fills, buy.cents) == ("BUY", 1, {1: D("-2"), 10: D("1"), 60: D("4")})
    # SELL at 0.45: its mid 0.44 at 120 s; nothing sampled 1 s or more after it
    assert sell.cents == {1: None, 10: None, 60: None}
    text = report.summary(run)
    assert "m1  A vs. B" in text
    assert "+1.00" in text  # the PnL, for people
    assert "-2.00" in text  # the BUY's 1 s markout, cents a share
    assert report.plain(D("-83.600000")) == "-83.6"
    assert report.count(D("1250.00")) == "1,250"
    assert report.usdc(D("-83.6"), sign=True) == "-83.60"


def test_the_report_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    # open(out / name, "w") followed a link another user planted in the report directory
    report = example("backtest_report")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "report"
    out.mkdir()
    for name in FILES:
        (out / name).symlink_to(victim)
    summary = report.write_report(out, report.Run(), plot=False)
    assert victim.read_text() == "precious"
    for name in FILES:
        assert not (out / name).is_symlink()
    assert (out / "summary.txt").read_text() == summary
    assert (out / "fills.csv").read_text() == "t_s,market,side,price,shares\n"
