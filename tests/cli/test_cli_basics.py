"""``clobkit`` help, usage errors (exit 2), salts, amounts, sandbox and bench."""

from __future__ import annotations

import importlib.metadata
import re
import signal
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import clobkit
from clobkit import limit_amounts, market_amounts

from .conftest import Result, one_line_error

SUBCOMMANDS = ("demo", "order-ids", "salts", "amounts", "sign", "call", "sandbox", "bench")


def test_entry_point_is_declared() -> None:
    # The console script is the same function as ``python -m clobkit``: one process set-up.
    everything = importlib.metadata.entry_points(group="console_scripts")
    scripts = [ep for ep in everything if ep.name == "clobkit"]
    assert [ep.value for ep in scripts] == ["clobkit.__main__:command"]
    from clobkit.__main__ import command

    assert scripts[0].load() is command


def test_help_lists_every_subcommand(cli: Callable[..., Result]) -> None:
    result = cli("--help")
    assert result.code == 0
    for name in SUBCOMMANDS:
        assert re.search(rf"^\s+{name}\b", result.out, re.MULTILINE), name
    assert "clobkit demo" in result.out


@pytest.mark.parametrize("name", [n for n in SUBCOMMANDS if n != "bench"])
def test_each_subcommand_has_short_help(cli: Callable[..., Result], name: str) -> None:
    result = cli(name, "--help")
    assert result.code == 0
    assert result.out.startswith(f"usage: clobkit {name}")
    assert len(result.out.splitlines()) < 40


def test_version(cli: Callable[..., Result]) -> None:
    result = cli("--version")
    assert result.code == 0
    core = "compiled core" if clobkit.IMPLEMENTATION == "c" else "pure-Python core"
    assert result.out + result.err == f"clobkit {clobkit.__version__} ({core})\n"


def test_no_command_is_usage(cli: Callable[..., Result]) -> None:
    result = cli()
    assert result.code == 2
    assert "usage: clobkit" in result.err


@pytest.mark.parametrize(
    "argv",
    [
        ["nonsense"],
        ["salts"],
        ["salts", "-1"],
        ["salts", "ten"],
        ["salts", "3", "--extra"],
        ["amounts", "BUY", "0.55"],
        ["amounts", "HOLD", "0.55", "10"],
        ["amounts", "BUY", "0.555", "10"],
        ["amounts", "BUY", "1.5", "10"],
        ["amounts", "BUY", "0.55", "-3"],
        ["amounts", "BUY", "0.55", "10", "--tick", "0.05"],
        ["order-ids", "in.csv", "out.csv"],
        ["order-ids", "--wallet", "w.json", "in.txt", "out.txt"],
        ["sign", "GET"],
        ["sign", "GET", "/wallet"],
        ["call", "GET", "/wallet"],
        ["sandbox", "--port", "x"],
    ],
)
def test_usage_errors_exit_2_in_one_line(cli: Callable[..., Result], argv: list[str]) -> None:
    result = cli(*argv)
    assert result.code == 2, result
    line = one_line_error(result.err)
    assert line.startswith("clobkit")
    assert "error" in line


def test_salts(cli: Callable[..., Result]) -> None:
    result = cli("salts", "5")
    assert result.code == 0
    salts = [int(line) for line in result.out.split()]
    assert len(salts) == 5
    assert all(0 <= s <= 10**12 for s in salts)
    assert cli("salts", "0") == Result(0, "", "")


def test_many_salts_stream_in_chunks(cli: Callable[..., Result]) -> None:
    result = cli("salts", "70000")
    assert result.code == 0
    assert len(result.out.split()) == 70000


def test_amounts_limit_is_the_core(cli: Callable[..., Result]) -> None:
    result = cli("amounts", "BUY", "0.55", "16.90")
    assert result.code == 0
    expected = limit_amounts("BUY", "0.55", "16.90")
    assert f"maker_amount  {expected.maker_amount}" in result.out
    assert f"taker_amount {expected.taker_amount}" in result.out
    assert "9.295 USDC paid" in result.out
    assert "16.9 shares received" in result.out


def test_amounts_market_sell_and_tick(cli: Callable[..., Result]) -> None:
    result = cli("amounts", "SELL", "0.553", "12.34", "--market", "--tick", "0.001")
    assert result.code == 0
    expected = market_amounts("SELL", "0.553", "12.34", "0.001")
    assert str(expected.maker_amount) in result.out
    assert str(expected.taker_amount) in result.out
    assert "shares paid" in result.out
    assert "USDC received" in result.out


def test_amounts_takes_the_side_and_size_place_raw_order_takes(
    cli: Callable[..., Result],
) -> None:
    """One rule: "buy" and a size past 2 decimals are refused, as the client refuses them."""
    from clobkit import Client
    from clobkit.errors import AmountError, OrderFieldError

    result = cli("amounts", "buy", "0.55", "10")
    assert result.code == 2
    assert "SIDE must be BUY or SELL, in capitals (got 'buy')" in one_line_error(result.err)
    with (
        Client("http://127.0.0.1:9", "key", "secret") as client,  # refused before any request
        pytest.raises(OrderFieldError, match="side"),
    ):
        client.place_raw_order("market-1", "a", "buy", "0.55", "10")
    result = cli("amounts", "SELL", "0.55", "40.555")
    assert result.code == 2
    assert "size: has more than 2 decimals" in one_line_error(result.err)
    assert "rounded down it is 40.55" in result.err
    with pytest.raises(AmountError, match="more than 2 decimals"):
        limit_amounts("SELL", "0.55", "40.555")


def test_amounts_round_price(cli: Callable[..., Result]) -> None:
    result = cli("amounts", "SELL", "0.555", "10", "--round-price")
    assert result.code == 0
    assert "at 0.56 (0.555 rounded)" in result.out
    assert str(limit_amounts("SELL", "0.56", "10").taker_amount) in result.out


def test_sandbox_subcommand_serves_until_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "clobkit", "sandbox", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+)\n", first)
        assert match, first
        keys = "".join(proc.stdout.readline() for _ in range(5))
        assert "sandbox-trader-key" in keys
        answer = httpx.get(match.group(1) + "/api/ext/v1/wallet")
        assert answer.status_code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=15)
    assert proc.returncode == 0


def test_sandbox_subcommand_passes_its_options(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    import clobkit.sandbox.__main__ as sandbox_main

    def fake_main(argv: list[str]) -> int:
        seen.append(list(argv))
        return 0

    monkeypatch.setattr(sandbox_main, "main", fake_main)
    result = cli("sandbox", "--port", "0", "--config", "c.json", "--strict-query-signing")
    assert result.code == 0
    assert seen == [
        ["--host", "127.0.0.1", "--port", "0", "--config", "c.json", "--strict-query-signing"]
    ]


def test_sandbox_bad_config_is_usage(cli: Callable[..., Result], tmp_path: Any) -> None:
    result = cli("sandbox", "--port", "0", "--config", str(tmp_path / "missing.json"))
    assert result.code == 2
    one_line_error(result.err)


def test_bench_hands_every_argument_to_clobkit_bench(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("clobkit.bench")

    def fake_main(argv: list[str]) -> int:
        seen.append(list(argv))
        return 0

    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "clobkit.bench", fake)
    assert cli("bench", "--quick", "--markdown").code == 0
    assert cli("bench", "--help").code == 0
    assert seen == [["--quick", "--markdown"], ["--help"]]


def test_bench_usage_error_is_its_exit_code(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType("clobkit.bench")

    def main(argv: list[str]) -> int:
        raise SystemExit(2)

    fake.main = main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "clobkit.bench", fake)
    assert cli("bench", "--nonsense").code == 2


def test_bench_says_clearly_when_it_is_not_installed(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "clobkit.bench", None)
    result = cli("bench")
    assert result.code == 1
    assert "clobkit.bench" in one_line_error(result.err)
    assert "not part of this install" in result.err


def test_salts_into_a_closed_pipe_is_quiet() -> None:
    done = subprocess.run(
        f'"{sys.executable}" -m clobkit salts 2000000 | head -1',
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert len(done.stdout.split()) == 1
    assert done.stderr == ""
