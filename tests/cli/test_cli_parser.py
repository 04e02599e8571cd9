"""The command line (``cli/parser.py``: a failure mapped to its exit code and one line): no
traceback for any input: hostile files, flags out of range, Ctrl-C, refused rows."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import TOKEN, Result, one_line_error, read_rows

GOOD = {"token_id": TOKEN, "maker_amount": 9_295_000, "taker_amount": 16_900_000}


def row(**fields: object) -> str:
    return json.dumps({**GOOD, "side": "BUY", "salt": 1, **fields})


def order_ids(cli: Callable[..., Result], wallet: Path, src: Path, dst: Path) -> Result:
    return cli("order-ids", "--wallet", str(wallet), str(src), str(dst))


def reports(result: Result) -> dict[int, str]:
    """``line N: reason`` lines of stderr, by N."""
    assert "Traceback" not in result.err
    out = {}
    for line in result.err.splitlines():
        if line.startswith("line "):
            number, _, reason = line[5:].partition(": ")
            out[int(number)] = reason
    return out


# ---------------------------------------------------------------------------
# order-ids: hostile input


def test_deeply_nested_and_null_lines_are_reported(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    deep = "[" * 5000 + "]" * 5000
    deep_field = row(token_id=json.loads("[" * 500 + "]" * 500))
    src.write_text("\n".join([row(salt=1), deep, "null", deep_field, row(salt=2), ""]) + "\n")
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 1
    bad = reports(result)
    assert set(bad) == {2, 3, 4}, result.err
    assert "nested too deeply" in bad[2]
    assert "not a JSON object" in bad[3]
    assert [r["salt"] for r in read_rows(dst)] == [1, 2]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"maker_amount": 0}, "outside (0, 1)"),
        ({"taker_amount": 0}, "outside (0, 1)"),
        ({"maker_amount": 16_900_000}, "outside (0, 1)"),  # price exactly 1
        ({"maker_amount": 20_000_000}, "outside (0, 1)"),  # price above 1
        ({"side": "SELL"}, "outside (0, 1)"),  # the same amounts sell at 1.8
        ({"maker_amount": 50_000_000_001, "taker_amount": 10**12}, "single-order maximum"),
    ],
)
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_rows_the_service_refuses_get_no_id(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    fields: dict[str, object],
    reason: str,
    fmt: str,
) -> None:
    src, dst = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    rows = [json.loads(row(salt=1)), json.loads(row(salt=2, **fields))]
    if fmt == "jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        bad_line = 2
    else:
        names = list(rows[0])
        src.write_text(
            ",".join(names)
            + "\n"
            + "".join(",".join(str(r[n]) for n in names) + "\n" for r in rows)
        )
        bad_line = 3
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 1
    bad = reports(result)
    assert list(bad) == [bad_line]
    assert reason in bad[bad_line]
    assert [str(r["salt"]) for r in read_rows(dst)] == ["1"]


@pytest.mark.parametrize(
    "content",
    [bytes(range(256)), b"\xff\xfe{}", b"[" * 100_000, b"{" + b'"a":' * 1 + b"1" * (2 << 20)],
    ids=["binary", "utf16-bom", "nested", "huge"],
)
def test_a_hostile_wallet_file_is_one_line(
    cli: Callable[..., Result], tmp_path: Path, content: bytes
) -> None:
    wallet = tmp_path / "wallet.json"
    wallet.write_bytes(content)
    src = tmp_path / "in.jsonl"
    src.write_text(row() + "\n")
    result = order_ids(cli, wallet, src, tmp_path / "out.jsonl")
    assert result.code == 2
    assert "wallet" in one_line_error(result.err)


@pytest.mark.parametrize("size", ["0", "-3", str(10**7 + 1), str(10**20)])
def test_batch_size_out_of_range_is_one_line(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path], size: str
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(row() + "\n")
    wallet = str(wallet_files["data"])
    result = cli(
        "order-ids", "--wallet", wallet, str(src), str(tmp_path / "o.jsonl"), "--batch-size", size
    )
    assert result.code == 2
    assert "--batch-size" in one_line_error(result.err)


# ---------------------------------------------------------------------------
# order-ids: OUTPUT


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("victim", ["input", "wallet"])
def test_output_may_not_be_input_or_wallet(
    cli: Callable[..., Result], tmp_path: Path, how: str, victim: str
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(row() + "\n")
    wallet = tmp_path / "wallet.jsonl"  # a wallet named like an output, to reach the check
    wallet.write_text(json.dumps({"success": True, "data": {}}))
    target = src if victim == "input" else wallet
    before = target.read_bytes()
    if how == "same":
        out = target
    elif how == "symlink":
        out = tmp_path / "link.jsonl"
        out.symlink_to(target)
    else:
        out = tmp_path / "hard.jsonl"
        os.link(target, out)
    result = order_ids(cli, wallet, src, out)
    assert result.code == 2
    assert "OUTPUT must not be" in one_line_error(result.err)
    assert target.read_bytes() == before


def test_read_only_output_is_not_replaced(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    # (root may write any file, so os.access alone says yes: the mode bits decide)
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(row() + "\n")
    dst.write_text("keep me\n")
    dst.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 2
    assert "read-only" in one_line_error(result.err)
    assert dst.read_text() == "keep me\n"


# ---------------------------------------------------------------------------
# Other commands


def test_an_unknown_flag_before_any_command_is_named(cli: Callable[..., Result]) -> None:
    result = cli("--bogus-flag")
    assert result.code == 2
    assert "--bogus-flag" in one_line_error(result.err)
    bare = cli()  # no command at all: the help, on stderr
    assert bare.code == 2
    assert "usage: clobkit" in bare.err


def test_sandbox_port_out_of_range(cli: Callable[..., Result]) -> None:
    for port in ("99999", "-1", "65536"):
        result = cli("sandbox", "--port", port)
        assert result.code == 2
        assert "--port" in one_line_error(result.err)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--batch", "0"], "--batch"),
        (["--batch-v2", "0"], "--batch-v2"),
        (["--rounds", "0"], "--rounds"),
        (["--memory-orders", "-1"], "--memory-orders"),
    ],
)
def test_bench_bad_numbers_are_one_line(
    cli: Callable[..., Result], argv: list[str], flag: str
) -> None:
    result = cli("bench", "--quick", *argv)
    assert result.code == 2
    assert flag in one_line_error(result.err)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--quick", "--json", "/nonexistent/dir/x.json"], "--json: no directory"),
        (["--quick", "--png", "/nonexistent/dir/x.png"], "--png: no directory"),
        (["--memory-only", "--json", "x.json"], "--memory-only writes no --json"),
    ],
)
def test_bench_files_it_cannot_write_are_refused_before_the_run(
    cli: Callable[..., Result], argv: list[str], said: str
) -> None:
    # a missing directory was found only after the whole run (2 minutes); --memory-only
    # left --json unwritten without a word
    result = cli("bench", *argv)
    assert result.code == 2
    assert said in one_line_error(result.err)


def test_bench_png_without_matplotlib(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    result = cli("bench", "--quick", "--png", str(tmp_path / "chart.png"))
    assert result.code == 2
    assert "matplotlib" in one_line_error(result.err)


def test_ctrl_c_while_parsing(cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    from clobkit.cli import parser as cli_module

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "build_parser", interrupted)
    result = cli("salts", "1")
    assert result.code == 130
    assert "interrupted" in one_line_error(result.err)


def test_ctrl_c_while_importing() -> None:
    # Ctrl-C lands while `python -m clobkit` imports the CLI
    code = (
        "import builtins, runpy, sys\n"
        "real = builtins.__import__\n"
        "def hook(name, *a, **k):\n"
        "    if name in ('cli', 'cli.parser') or name.endswith('.cli'):\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = hook\n"
        "sys.argv = ['clobkit', 'salts', '1']\n"
        "runpy.run_module('clobkit', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 130
    assert "interrupted" in one_line_error(done.stderr)


def test_amounts_prints_the_size_used_and_names_the_flag(cli: Callable[..., Result]) -> None:
    # a size past 2 decimals is refused as the core refuses it (it was floored)
    result = cli("amounts", "BUY", "0.55", "10.12345")
    assert result.code == 2
    assert "size: has more than 2 decimals" in one_line_error(result.err)
    result = cli("amounts", "SELL", "0.55", "10.123", "--market")
    assert "amount: has more than 2 decimals" in one_line_error(result.err)
    result = cli("amounts", "SELL", "0.55", "10.12", "--market")
    assert result.out.splitlines()[0].startswith("SELL 10.12 shares at 0.55")
    result = cli("amounts", "BUY", "0.55", "10")
    assert result.out.splitlines()[0].startswith("BUY 10 shares at 0.55")
    result = cli("amounts", "BUY", "0.555", "10")
    assert result.code == 2
    line = one_line_error(result.err)
    assert "--round-price" in line
    assert "round_price" not in line


def test_api_error_line_carries_the_detail(
    cli: Callable[..., Result], env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOBKIT_API_SECRET", "not-the-secret")
    result = cli("call", "GET", "/wallet")
    assert result.code == 1
    assert result.err.strip().splitlines()[-1].endswith("unauthorized: signature mismatch")


@pytest.mark.slow
def test_deep_input_is_refused_under_a_raised_recursion_limit(
    tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    # eth-account, imported next to clobkit, raises the limit to 100,000: the
    # decoders would then recurse until the C stack overflows (a subprocess
    # contains the crash)
    src, deep_wallet = tmp_path / "in.jsonl", tmp_path / "deep.json"
    src.write_text(row() + "\n" + "[" * 200_000 + "]" * 200_000 + "\n")
    deep_wallet.write_text("[" * 200_000 + "]" * 200_000)
    code = (
        "import sys\n"
        "sys.setrecursionlimit(100_000)\n"
        "from clobkit.cli import main\n"
        "a, b, c, d = sys.argv[1:]\n"
        "codes = [main(['order-ids', '--wallet', w, c, d]) for w in (a, b)]\n"
        "print(*codes)\n"
    )
    argv = [str(wallet_files["data"]), str(deep_wallet), str(src), str(tmp_path / "o.jsonl")]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["1", "2"]
    assert "line 2: invalid JSON (nested too deeply)" in done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------------
# order-ids: numbers past Python's digit limit, spaces, repeated keys, sides,
# whole-file problems (issue 22)

HUGE = "9" * 5000  # past Python's 4,300-digit limit for int <-> str
PADDED = "0" * 5000 + "1"  # the value 1


def _csv(path: Path, rows: list[dict[str, object]]) -> None:
    names = ["token_id", "maker_amount", "taker_amount", "side", "salt"]
    path.write_text(
        ",".join(names) + "\n" + "".join(",".join(str(r[n]) for n in names) + "\n" for r in rows)
    )


def _rows_with(field: str, value: str) -> list[dict[str, object]]:
    good = {**GOOD, "side": "BUY", "salt": 1}
    return [good, {**good, field: value}, good]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("field", ["token_id", "maker_amount", "taker_amount", "salt"])
def test_huge_numbers_are_a_row_error(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path], fmt: str, field: str
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    src, dst = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    rows = _rows_with(field, HUGE)
    if fmt == "csv":
        _csv(src, rows)
    elif fmt == "jsonl":
        src.write_text("".join(json.dumps({k: str(v) for k, v in r.items()}) + "\n" for r in rows))
    else:
        pa = pytest.importorskip("pyarrow")
        table = {k: pa.array([str(r[k]) for r in rows]) for k in rows[0]}
        pq.write_table(pa.table(table), src)
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert "Traceback" not in result.err
    assert result.code == 1, result.err
    word = "row" if fmt == "parquet" else "line"
    number = 2 if fmt == "parquet" else (3 if fmt == "csv" else 2)
    lines = result.err.splitlines()
    assert lines[0].startswith(f"{word} {number}: {field}: ")
    assert lines[-1].endswith(f"(listed above as {word} N: reason)")
    if fmt == "parquet":
        assert pq.read_table(dst).num_rows == 2
    else:
        assert len(read_rows(dst)) == 2


@pytest.mark.parametrize("fmt", ["csv", "csv-exact", "jsonl"])
def test_zero_padded_numbers_are_their_value(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
) -> None:
    """The CSV fast path and the exact readers read them alike: as their value."""
    from clobkit import OrderHasher
    from clobkit.cli.orderids import csv_fast

    if fmt == "csv-exact":
        monkeypatch.setattr(csv_fast, "ENABLED", False)
        fmt = "csv"
    src, dst = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    rows = [{**GOOD, "side": "BUY", "salt": PADDED, "maker_amount": "0" * 4999 + "9295000"}]
    if fmt == "csv":
        _csv(src, rows)
    else:
        src.write_text(json.dumps(rows[0]) + "\n")
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 0, result.err
    from .conftest import WALLET

    want = OrderHasher(WALLET).order_id(**{**GOOD, "side": "BUY", "salt": 1})
    assert [r["order_id"] for r in read_rows(dst)] == [want]


@pytest.mark.parametrize("fast", [True, False])
def test_csv_values_with_spaces_around_are_refused(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    fast: bool,
) -> None:
    """As the service refuses " 5": no value is stripped, on either CSV reader."""
    from clobkit.cli.orderids import csv_fast

    monkeypatch.setattr(csv_fast, "ENABLED", fast)
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(
        "token_id,maker_amount,taker_amount,side,salt\n"
        f"{TOKEN},9295000,16900000,BUY,1\n"
        f"{TOKEN}, 9295000,16900000,BUY,2\n"
        f"{TOKEN},9295000,16900000, BUY ,3\n"
        f"{TOKEN},9295000,16900000,BUY,4\t\n"
        f"{TOKEN},9295000,16900000,buy,5\n"
    )
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 1
    bad = reports(result)
    assert bad == {
        3: "maker_amount: must be a non-negative decimal integer string (got ' 9295000')",
        4: 'side: must be "BUY", "SELL", 0 or 1 (got \' BUY \')',
        5: "salt: must be a non-negative decimal integer string (got '4\\t')",
    }
    assert [r["salt"] for r in read_rows(dst)] == ["1", "5"]


def test_jsonl_repeated_keys_and_odd_sides_are_refused(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    base = json.dumps({**GOOD, "side": "BUY"})[:-1]
    src.write_text(
        "\n".join(
            [
                base + ', "salt": 1}',
                base + ', "salt": 1, "salt": 2}',
                base + ', "s\\u0061lt": 1, "salt": 2}',  # the same key, spelled twice
                base + ', "salt": 3, "note": "salt"}',  # a value that is a key's name
                base + ', "salt": 4, "x": {"salt": 1}}',  # a key of a nested object
                row(side=True, salt=5),
                row(side=" BUY", salt=6),
                base + ', "salt": 7, "salt" : 8}',  # a space before the colon
            ]
        )
        + "\n"
    )
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 1
    bad = reports(result)
    assert bad == {
        2: 'duplicate key "salt" (which value is meant is unclear)',
        3: 'duplicate key "salt" (which value is meant is unclear)',
        6: 'side: must be "BUY", "SELL", 0 or 1 (got True)',
        7: 'side: must be "BUY", "SELL", 0 or 1 (got \' BUY\')',
        8: 'duplicate key "salt" (which value is meant is unclear)',
    }
    assert [r["salt"] for r in read_rows(dst)] == [1, 3, 4]


def _parquet(path: Path, **columns: object) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = 4
    cols: dict[str, object] = {
        "token_id": [TOKEN] * n,
        "maker_amount": [9_295_000] * n,
        "taker_amount": [16_900_000] * n,
        "side": ["BUY"] * n,
        "salt": list(range(n)),
    }
    pq.write_table(pa.table(cols | columns), path)


def test_parquet_column_types_are_checked_once_before_any_row(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    pa = pytest.importorskip("pyarrow")
    src, dst = tmp_path / "in.parquet", tmp_path / "out.parquet"
    # what pandas writes after a NaN: float64
    _parquet(src, maker_amount=pa.array([9_295_000.0, None, 1.0, 2.0]))
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 2
    assert one_line_error(result.err).startswith(
        f"clobkit order-ids: error: {src}: maker_amount: must be a column of integers"
    )
    assert "'<double column>'" in result.err
    assert not dst.exists()
    _parquet(src, side=[True, False, True, False])  # a bool side: refused as order_id does
    result = order_ids(cli, wallet_files["data"], src, dst)
    assert result.code == 2
    assert "side: must be a column of integers (0/1) or strings" in one_line_error(result.err)
    # a column of nulls only in an optional field is its default
    _parquet(src, nonce=pa.array([None] * 4, pa.null()))
    assert order_ids(cli, wallet_files["data"], src, dst).code == 0


def test_parquet_sides_read_as_every_path_reads_them(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    src, dst = tmp_path / "in.parquet", tmp_path / "out.parquet"
    _parquet(src, side=["BUY", None, " BUY", "sell"])
    result = cli("order-ids", "--wallet", str(wallet_files["data"]), str(src), str(dst))
    assert result.code == 1
    assert result.err.splitlines() == [
        'row 2: side: must be "BUY", "SELL", 0 or 1 (got None)',
        'row 3: side: must be "BUY", "SELL", 0 or 1 (got \' BUY\')',
        "row 4: taker_amount: implies a price outside (0, 1) with 9295000 share units "
        "(got 16900000) (POST /orders/raw refuses it)",
        "clobkit order-ids: 3 rows rejected (listed above as row N: reason)",
    ]


# ---------------------------------------------------------------------------
# cli.main changes nothing of the process that calls it


def test_main_leaves_the_calling_process_alone(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from clobkit.cli import main

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(row(salt=1) + "\n")
    assert order_ids(cli, wallet_files["data"], src, dst).code == 0
    assert "OPENBLAS_NUM_THREADS" not in os.environ

    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    before = os.fstat(1)
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["salts", "10"]) == 0
    after = os.fstat(1)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)  # fd 1 untouched


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "0"])
def test_call_timeout_must_be_a_positive_number(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # NaN, negative or infinite timeouts escaped from httpx as ValueError or OverflowError
    for name, given in (("BASE_URL", "http://127.0.0.1:9"), ("API_KEY", "k"), ("API_SECRET", "s")):
        monkeypatch.setenv(f"CLOBKIT_{name}", given)
    got = cli("call", "GET", "/wallet", "--timeout", value)
    assert got.code == 2
    assert got.err.strip().endswith(
        f"--timeout: must be a positive finite number (got {float(value)})"
    )


@pytest.mark.parametrize(
    "command", [("sign", "POST", "/orders", "--body"), ("call", "POST", "/orders", "--json")]
)
def test_a_body_argument_that_is_no_utf8_is_one_line(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    # a byte of argv that is no UTF-8 reaches Python as a lone surrogate: encoding it
    # raised UnicodeEncodeError
    for name, given in (("BASE_URL", "http://127.0.0.1:9"), ("API_KEY", "k"), ("API_SECRET", "s")):
        monkeypatch.setenv(f"CLOBKIT_{name}", given)
    got = cli(*command, "a\udcffb")
    assert got.code == 2
    assert "the body is not UTF-8 text" in got.err
