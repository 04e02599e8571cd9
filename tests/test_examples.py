"""Every example is a tested journey (issue 46): each runs through its real command line
with its documented flags, as a new user would, to the end, and its output and exit
status are checked. ``--base-url`` runs go against a separately started
``clobkit sandbox`` (a process of its own, its default limits, its prices walking);
``--recording`` runs replay a recording made by ``clobkit record --league ...``.

Kept short for CI: durations of a few seconds where a flag sets one, one exchange
version per journey where the run is long (every version of the embedded runs is in
tests/mm/test_example.py and tests/record/test_backtest.py), a quarter of a synthetic
hour for the backtest's own day (its default, 24 hours, is the same code for longer).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import import_extra

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TRADER = ("sandbox-trader-key", "sandbox-trader-secret")  # the default users' keys
MAKER = ("sandbox-maker-key", "sandbox-maker-secret")


def environ(keys: tuple[str, str] | None = None, base_url: str | None = None) -> dict[str, str]:
    """The process environment of a run: this checkout's clobkit, the keys when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOBKIT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    if keys is not None:
        env["CLOBKIT_API_KEY"], env["CLOBKIT_API_SECRET"] = keys
    if base_url is not None:
        env["CLOBKIT_BASE_URL"] = base_url
    return env


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """Run a command to its end; its stdout (a failure shows both streams)."""
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=env or environ(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def example(name: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return run([sys.executable, str(EXAMPLES / f"{name}.py"), *args], cwd, env)


def clobkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return run([sys.executable, "-m", "clobkit", *args], cwd, env)


@contextlib.contextmanager
def sandbox(*args: str, cwd: Path) -> Iterator[str]:
    """``clobkit sandbox --port 0 ARGS`` in a process of its own; its base URL."""
    import_extra("clobkit.sandbox", "sandbox")
    server = subprocess.Popen(
        [sys.executable, "-m", "clobkit", "sandbox", "--port", "0", *args],
        cwd=cwd,
        env=environ(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith("listening on "), first + server.communicate(timeout=30)[1]
        yield first.split()[-1]
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
        assert server.returncode == 0, err


def test_order_id_example(tmp_path: Path) -> None:
    out = example("order_id", cwd=tmp_path)
    assert "core: " in out
    assert "clob_order_id=0x" in out


# -- examples/market_maker.py -------------------------------------------------------------------


@pytest.mark.slow
def test_market_maker_for_a_duration(tmp_path: Path) -> None:
    import_extra("clobkit.sandbox", "sandbox")
    # half a second: past 50 places the pace (300 a minute, a sixth every 10 s) holds the
    # next round back ~10 s, which proves nothing more
    out = example("market_maker", "--duration", "0.5", "--exchange-version", "3", cwd=tmp_path)
    assert "exchange V3" in out
    assert "round 1:" in out
    assert "sandbox invariants: hold" in out
    assert "done in " in out


@pytest.mark.slow
def test_market_maker_against_a_running_sandbox(tmp_path: Path) -> None:
    """--base-url: a sandbox started on its own, default limits, its price walking."""
    with sandbox(cwd=tmp_path) as url:
        out = example(
            "market_maker",
            "--base-url",
            url,
            "--duration",
            "2",
            "--exchange-version",
            "1",
            cwd=tmp_path,
            env=environ(MAKER),
        )
    assert "exchange V1" in out
    assert "round 1:" in out
    assert "left the quoter: its orders are cancelled" in out


# -- examples/desk.py ---------------------------------------------------------------------------


@pytest.mark.slow
def test_desk_with_its_default_options(tmp_path: Path) -> None:
    """No flag at all: the embedded sandbox, V1, 6 s."""
    import_extra("clobkit.sandbox", "sandbox")
    out = example("desk", cwd=tmp_path)
    assert "desk: 46 markets, 92 quoters, exchange V1" in out
    assert "halted: " in out
    assert "sandbox invariants: hold" in out


@pytest.mark.slow
def test_desk_against_a_running_sandbox_keeps_to_its_own_cap(tmp_path: Path) -> None:
    """--base-url with default options: it refused its own first ladder (about 56 USDC
    against its own 50 USDC cap); now each quote is sized to its share of the cap."""
    with sandbox(cwd=tmp_path) as url:
        out = example(
            "desk", "--base-url", url, "--duration", "1", cwd=tmp_path, env=environ(MAKER)
        )
        backtest_refuses(url, tmp_path)  # the same sandbox: it serves no replay
    assert "desk: 5 markets, 10 quoters" in out
    # a quote the walking house filled just as its cancel went out: refused, swept on exit
    assert " orders cancelled, 0 open" in out or "halted: a cancel was refused" in out
    assert "left the desk" in out
    at_risk = [line.split(" USDC at risk")[0].rsplit(", ", 1)[-1] for line in out.splitlines()]
    assert all(float(n) <= 50 for n in at_risk if n.replace(".", "").isdigit())


# -- examples/backtest.py -----------------------------------------------------------------------


def report_of(out: Path) -> str:
    summary = (out / "summary.txt").read_text()
    assert summary.startswith(tuple("0123456789"))
    assert "markouts" in summary
    for name in ("steps.csv", "fills.csv", "markouts.csv"):
        assert (out / name).stat().st_size > 0
    return summary


@pytest.mark.slow
def test_backtest_of_a_synthetic_day(tmp_path: Path) -> None:
    import_extra("pyarrow", "data")
    out = example(
        "backtest",
        "--synthetic-hours",
        "0.1",
        "--interval",
        "30",
        "--markets",
        "2",
        "--seed",
        "3",
        "--exchange-version",
        "2",
        "--speed",
        "0",
        "--out",
        "report",
        cwd=tmp_path,
    )
    assert "synthetic day: 2 markets, 0.1 h" in out
    assert "2 markets, " in out
    assert " steps of 30 recorded s" in out
    assert "report in report" in out
    report_of(tmp_path / "report")
    assert (tmp_path / "report" / "pnl.png").read_bytes().startswith(b"\x89PNG")


def has_book(client: Any, token_id: str) -> bool:
    from clobkit.errors import OrderBookNotFound

    try:
        client.get_orderbook(token_id)
    except OrderBookNotFound:
        return False
    return True


def record_the_league(tmp_path: Path, url: str) -> Path:
    """``clobkit record --league nba`` of a running sandbox for a few seconds, and a
    futures market named by id, which gets a book (someone's bid and ask) while it runs."""
    from clobkit import Client

    rec = tmp_path / "rec"
    env = environ(TRADER, url)
    with Client(url, *TRADER) as client:
        futures = next(
            m
            for e in client.list_events(league="nba", limit=50).events
            if e.is_future
            for m in client.get_event_markets(e.id)
            if not has_book(client, m.token_id_a or "")
        )
        command = ["record", "--league", "nba", "--market", futures.id, "--duration", "4"]
        recorder = subprocess.Popen(
            [sys.executable, "-m", "clobkit", *command, "--out", str(rec)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not (rec / "markets.json").exists():
            assert recorder.poll() is None, recorder.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        for option, price in (("yes", "0.05"), ("no", "0.90")):  # a book of 0.05 / 0.10
            client.place_order(
                futures.id, amount=10, order_type="GTC", limit_price=price, token_option=option
            )
        out, err = recorder.communicate(timeout=120)
    assert recorder.returncode == 0, err
    assert "recorded: markets 10," in out  # the league's 9 with a book, and that futures
    return rec


@pytest.mark.slow
def test_backtest_of_a_recorded_league_alone_and_against_its_replay(tmp_path: Path) -> None:
    """A recording of ``clobkit record --league nba`` (futures had no book: the backtest
    died with OrderBookNotFound; one whose book came late had no minimum known, and
    ``--interval 1`` or ``5`` died on the service's 400), backtested on its own and,
    as README pairs them, against ``clobkit sandbox --replay DIR --step``."""
    import_extra("pyarrow", "data")
    with sandbox(cwd=tmp_path) as url:
        rec = record_the_league(tmp_path, url)
    out = example(
        "backtest", "--recording", str(rec), "--interval", "1", "--no-plot", "--out", "alone",
        cwd=tmp_path,
    )  # fmt: skip
    assert "10 markets, " in out
    assert "steps of 1 recorded s" in out
    report_of(tmp_path / "alone")
    with sandbox("--replay", str(rec), "--step", cwd=tmp_path) as replay:
        # the plot is the synthetic day's to prove: 10 panels cost seconds here
        out = example(
            "backtest", "--base-url", replay, "--no-plot", "--out", "paired", cwd=tmp_path
        )
    assert "steps of 1 recorded s" in out  # a few seconds' recording: 1 s steps
    report_of(tmp_path / "paired")


def backtest_refuses(url: str, cwd: Path) -> None:
    """``examples/backtest.py --base-url`` of a sandbox that serves no replay: one line
    saying what to start, exit status 2."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "backtest.py"), "--base-url", url],
        cwd=cwd,
        env=environ(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr == f"error: {url} serves no replay: start clobkit sandbox --replay DIR --step\n"
    )
