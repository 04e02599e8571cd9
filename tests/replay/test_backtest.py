"""examples/backtest.py: the Quoter against a replayed recording gives the same report on
every run, at every speed, on V1, V2 and V3 wallets."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import VERSIONS, example

FILES = ("steps.csv", "fills.csv", "summary.txt")


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_two_runs_give_the_same_report(tmp_path: Path, version: int) -> None:
    backtest = example("backtest")
    day = backtest.synthetic_day(tmp_path / "day", markets=2, hours=0.5, seed=3)
    one = backtest.backtest(day, tmp_path / "one", exchange_version=version, plot=False)
    two = backtest.backtest(
        day, tmp_path / "two", exchange_version=version, speed=3600, plot=version == 1
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
    if version == 1:
        assert (tmp_path / "two" / "pnl.png").read_bytes().startswith(b"\x89PNG")


def test_ladder_keeps_to_the_grid_and_the_minimum() -> None:
    backtest = example("backtest")
    from decimal import Decimal

    quotes = backtest.ladder(Decimal("0.455"), Decimal(25), Decimal(1))
    assert [(q.side, str(q.price)) for q in quotes] == [
        ("BUY", "0.43"),
        ("BUY", "0.42"),
        ("BUY", "0.41"),
        ("SELL", "0.48"),
        ("SELL", "0.49"),
    ]
    assert [str(q.price) for q in backtest.ladder(Decimal("0.12"), Decimal(0), Decimal(1))] == [
        "0.10"
    ]


def test_the_report_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    # open(out / name, "w") followed a link another user planted in the report directory
    backtest = example("backtest")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "report"
    out.mkdir()
    for name in FILES:
        (out / name).symlink_to(victim)
    summary = backtest.write_report(out, [], [], plot=False)
    assert victim.read_text() == "precious"
    for name in FILES:
        assert not (out / name).is_symlink()
    assert (out / "summary.txt").read_text() == summary
    assert (out / "fills.csv").read_text() == "t_s,market,side,price,shares\n"
