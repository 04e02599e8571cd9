"""``clobkit order-ids``: CSV and JSONL, bad rows, batches, both wallet forms, a subprocess."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clobkit import OrderHasher, new_salts

from .conftest import TOKEN, WALLET, Result, one_line_error, read_rows

HASHER = OrderHasher(WALLET)
SUMMARY = re.compile(r"^([\d,]+) order ids -> .* in [\d.]+ s \(([\d,]+) orders/s, \w+ core\)")


def expected_id(row: dict[str, Any]) -> str:
    """The id the core gives a row (CSV strings or JSON values)."""
    side = str(row["side"]).upper()
    neg = str(row.get("neg_risk", "false")).lower() in ("true", "1")
    return HASHER.order_id(
        token_id=str(row["token_id"]),
        maker_amount=str(row["maker_amount"]),
        taker_amount=str(row["taker_amount"]),
        side={"BUY": 0, "SELL": 1, "0": 0, "1": 1}[side],
        salt=str(row["salt"]),
        fee_rate_bps=str(row.get("fee_rate_bps") or 0),
        nonce=str(row.get("nonce") or 0),
        expiration=str(row.get("expiration") or 0),
        neg_risk=neg,
    )


def orders(n: int, *, full: bool = False) -> list[dict[str, Any]]:
    salts = new_salts(n)
    rows = []
    for i in range(n):
        usdc, shares = 9_295_000 + i, 16_900_000  # a price in (0, 1), as the service wants
        buy = bool(i % 2)
        row: dict[str, Any] = {
            "token_id": TOKEN if i % 3 else str(10**70 + i),
            "maker_amount": usdc if buy else shares,
            "taker_amount": shares if buy else usdc,
            "side": "BUY" if buy else "SELL",
            "salt": salts[i],
        }
        if full:
            row.update(fee_rate_bps=i % 300, nonce=i % 7, expiration=1_900_000_000 + i)
            row["neg_risk"] = bool(i % 5 == 0)
        rows.append(row)
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {k: str(v).lower() if isinstance(v, bool) else v for k, v in row.items()}
            )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("wallet", ["data", "envelope"])
@pytest.mark.parametrize("full", [False, True], ids=["required", "all-fields"])
def test_every_row_gets_the_core_id(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    fmt: str,
    wallet: str,
    full: bool,
) -> None:
    rows = orders(50, full=full)
    src, dst = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    (write_csv if fmt == "csv" else write_jsonl)(src, rows)
    result = cli("order-ids", "--wallet", str(wallet_files[wallet]), str(src), str(dst))
    assert result.code == 0, result.err
    assert result.err == ""
    match = SUMMARY.match(result.out)
    assert match
    assert match.group(1) == "50"
    written = read_rows(dst)
    assert len(written) == 50
    for original, out in zip(rows, written, strict=True):
        assert out["order_id"] == expected_id(original)
        assert {k: out[k] for k in original} == (
            original
            if fmt == "jsonl"
            else {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in original.items()}
        )


def test_csv_output_keeps_input_lines_byte_for_byte(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(
        "note,token_id,maker_amount,taker_amount,side,salt\n"
        f'"a, quoted ""note""",{TOKEN},1000000,2000000,BUY,1\n'
        f"plain,{TOKEN},2000000,1000000,sell,2\n"
    )
    assert cli("order-ids", "--wallet", str(wallet_files["data"]), str(src), str(dst)).code == 0
    lines = dst.read_text().splitlines()
    original = src.read_text().splitlines()
    assert lines[0] == original[0] + ",order_id"
    for before, after in zip(original[1:], lines[1:], strict=True):
        assert after.startswith(before + ",0x")
    rows = read_rows(dst)
    assert rows[0]["note"] == 'a, quoted "note"'
    assert rows[1]["order_id"] == HASHER.order_id(
        token_id=TOKEN, maker_amount=2000000, taker_amount=1000000, side=1, salt=2
    )


def test_an_existing_order_id_column_is_replaced(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(
        f"token_id,maker_amount,taker_amount,side,salt,order_id\n{TOKEN},1,2,BUY,3,old\n"
    )
    assert cli("order-ids", "--wallet", str(wallet_files["data"]), str(src), str(dst)).code == 0
    rows = read_rows(dst)
    assert list(rows[0]) == ["token_id", "maker_amount", "taker_amount", "side", "salt", "order_id"]
    assert rows[0]["order_id"] == expected_id(rows[0] | {"side": "BUY"})
    src_j, dst_j = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(src_j, [{**orders(1)[0], "order_id": "old"}])
    assert cli("order-ids", "--wallet", str(wallet_files["data"]), str(src_j), str(dst_j)).code == 0
    (row,) = read_rows(dst_j)
    assert row["order_id"] == expected_id(row)


BAD_CSV = f"""token_id,maker_amount,taker_amount,side,salt,neg_risk
{TOKEN},9295000,16900000,BUY,1,false

{TOKEN},-5,16900000,BUY,2,false
{TOKEN},9295000,16900000,HOLD,3,false
{TOKEN},9295000,16900000,SELL,4
"{TOKEN}","16900000","9295000","SELL","5","true"
{TOKEN},9295000,16900000,0,7,maybe
{TOKEN},9295000,,BUY,8,false
0x12,9295000,16900000,BUY,10,false
"{TOKEN},9295000,16900000,BUY,9,false
{TOKEN},2,1,1,10,TRUE
"""

BAD_JSONL = "\n".join(
    [
        json.dumps(
            {"token_id": TOKEN, "maker_amount": 1, "taker_amount": 2, "side": "BUY", "salt": 1}
        ),
        json.dumps(
            {"token_id": TOKEN, "maker_amount": 1.5, "taker_amount": 2, "side": 0, "salt": 2}
        ),
        "",
        "not json",
        "[1, 2]",
        json.dumps({"token_id": TOKEN, "maker_amount": 1, "side": "BUY", "salt": 3}),
        json.dumps(
            {"token_id": TOKEN, "maker_amount": 2, "taker_amount": 1, "side": 1, "salt": 4}
            | {"neg_risk": True, "fee_rate_bps": 200}
        ),
        json.dumps(
            {"token_id": TOKEN, "maker_amount": 1, "taker_amount": 2, "side": True, "salt": 5}
        ),
        json.dumps(
            {"token_id": -1, "maker_amount": 1, "taker_amount": 2, "side": "SELL", "salt": 6}
        ),
        json.dumps(
            {"token_id": TOKEN, "maker_amount": 2, "taker_amount": 1, "side": "sell", "salt": 7}
        ),
    ]
)


@pytest.mark.parametrize(
    ("fmt", "text", "good", "bad"),
    [
        (
            "csv",
            BAD_CSV,
            [2, 7, 12],
            {
                4: "maker_amount",
                5: "side",
                6: "expected 6 fields, got 5",
                8: "neg_risk",
                9: "taker_amount",
                10: "token_id",
                11: "malformed CSV",
            },
        ),
        (
            "jsonl",
            BAD_JSONL,
            [1, 7, 10],
            {
                2: "maker_amount",
                4: "invalid JSON",
                5: "not a JSON object",
                6: "missing taker_amount",
                8: "side",
                9: "token_id",
            },
        ),
    ],
)
@pytest.mark.parametrize("batch", ["1", "3", "50000"])
def test_bad_rows_are_reported_by_line_and_exit_1(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    fmt: str,
    text: str,
    good: list[int],
    bad: dict[int, str],
    batch: str,
) -> None:
    src, dst = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    src.write_text(text)
    wallet = str(wallet_files["envelope"])
    result = cli("order-ids", "--wallet", wallet, str(src), str(dst), "--batch-size", batch)
    assert result.code == 1
    err = result.err.strip().splitlines()
    assert "Traceback" not in result.err
    assert (
        err[-1] == f"clobkit order-ids: {len(bad)} rows rejected (listed above as line N: reason)"
    )
    reported = {
        int(m.group(1)): m.group(2)
        for m in map(re.compile(r"line (\d+): (.*)").match, err[:-1])
        if m
    }
    assert len(reported) == len(err) - 1, err
    assert sorted(reported) == sorted(bad)
    for line, fragment in bad.items():
        assert fragment in reported[line], (line, reported[line])
    assert f"; {len(bad)} rows rejected" in result.out
    # the good rows are all written, in order, with their ids
    source_lines = text.split("\n")
    written = dst.read_text().splitlines()
    body = written[1:] if fmt == "csv" else written
    assert len(body) == len(good)
    for line, out in zip(good, body, strict=True):
        assert out.startswith(source_lines[line - 1].rstrip("}"))
    rows = read_rows(dst)
    for row in rows:
        assert row["order_id"] == expected_id(row)


def test_a_file_larger_than_one_batch_streams(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    rows = orders(2_500, full=True)
    for fmt, write in (("csv", write_csv), ("jsonl", write_jsonl)):
        src, dst = tmp_path / f"big.{fmt}", tmp_path / f"big-out.{fmt}"
        write(src, rows)
        result = cli(
            "order-ids", "--wallet", str(wallet_files["data"]), str(src), str(dst),
            "--batch-size", "300", "--threads", "2", "--progress",
        )  # fmt: skip
        assert result.code == 0, result.err
        assert SUMMARY.match(result.out).group(1) == "2,500"  # type: ignore[union-attr]
        assert "orders/s" in result.out
        assert "[####" in result.err  # the progress bar
        written = read_rows(dst)
        assert [w["order_id"] for w in written] == [expected_id(r) for r in rows]


def test_default_batch_is_smaller_than_a_big_file(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import clobkit.cli.orderids.csv_fast as csvfast
    import clobkit.cli.orderids.run as text_input

    # the exact reader's batches; the pyarrow path's blocks are bounded in bytes
    # (test_cli_order_ids_csvfast.py::test_blocks_are_bounded)
    monkeypatch.setattr(csvfast, "ENABLED", False)
    calls: list[int] = []
    from clobkit.cli.orderids.hashing import hash_batch as real

    def spy(hasher: Any, parsed: Any, *rest: Any) -> Any:
        calls.append(len(parsed.lines))
        return real(hasher, parsed, *rest)

    monkeypatch.setattr(text_input, "hash_batch", spy)
    rows = orders(1)
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    with src.open("w") as f:
        f.write("token_id,maker_amount,taker_amount,side,salt\n")
        f.write(f"{TOKEN},1,2,BUY,3\n" * 120_000)
    result = cli("order-ids", "--wallet", str(wallet_files["data"]), str(src), str(dst))
    assert result.code == 0
    assert calls == [50_000, 50_000, 20_000]
    assert len(dst.read_text().splitlines()) == 120_001
    assert rows  # the helper stays exercised


def test_help_says_when_the_progress_bar_shows(cli: Callable[..., Result]) -> None:
    """Only on a terminal by default (logs and pipes stay clean): --help and
    docs/raw-orders.md say so."""
    result = cli("order-ids", "--help")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert (
        "--progress, --no-progress progress bar on stderr (default: when stderr is a terminal)"
        in text
    )


def test_no_progress_bar_when_not_a_terminal(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(src, orders(10))
    result = cli("order-ids", "--wallet", str(wallet_files["data"]), str(src), str(dst))
    assert result.code == 0
    assert result.err == ""


@pytest.mark.parametrize(
    ("setup", "argv", "message"),
    [
        ("", ["in.csv", "out.txt"], "out.txt: unknown format"),
        ("", ["in.csv", "in.csv"], "must not be INPUT"),
        ("", ["missing.csv", "out.csv"], "cannot read missing.csv"),
        ("token_id,maker_amount,side\n1,2,BUY\n", ["in.csv", "out.csv"], "taker_amount, salt"),
        ("a,a,token_id\n", ["in.csv", "out.csv"], "duplicate"),
        ("\n", ["in.csv", "out.csv"], "no header"),
        ("", ["in.csv", "out.csv", "--threads", "0"], "--threads"),
        ("", ["in.csv", "out.csv", "--batch-size", "0"], "--batch-size"),
    ],
)
def test_unusable_input_is_usage(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.csv").write_text(setup or "token_id,maker_amount,taker_amount,side,salt\n")
    result = cli("order-ids", "--wallet", str(wallet_files["data"]), *argv)
    assert result.code == 2
    assert message in one_line_error(result.err)
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("fast", [True, False], ids=["csvfast", "csv"])
@pytest.mark.parametrize(("sep", "what"), [(";", "semicolon"), ("\t", "tab")])
def test_a_csv_with_another_separator_is_named(
    cli: Callable[..., Result],
    tmp_path: Path,
    wallet_files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    fast: bool,
    sep: str,
    what: str,
) -> None:
    """A spreadsheet's semicolon CSV once read as "lacks every column"."""
    import clobkit.cli.orderids.csv_fast as csvfast

    monkeypatch.setattr(csvfast, "ENABLED", fast)
    src = tmp_path / "in.csv"
    src.write_text(
        f"token_id{sep}maker_amount{sep}taker_amount{sep}side{sep}salt\n1{sep}2{sep}3{sep}BUY{sep}4\n"
    )
    result = cli(
        "order-ids", "--wallet", str(wallet_files["data"]), str(src), str(tmp_path / "o.csv")
    )
    assert result.code == 2
    line = one_line_error(result.err)
    assert "line 1: the header lacks the column(s)" in line
    assert f"({what}-separated? clobkit reads comma-separated CSV" in line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the wallet"),
        ("{not json", "is not JSON"),
        ("[1]", "must hold the GET /wallet data"),
        ('{"success": false, "error": "unauthorized"}', "failed response: unauthorized"),
        ('{"success": true, "data": [1]}', "must hold"),
        (json.dumps({**WALLET, "maker": "0x12"}), "wallet.maker"),
        ('{"maker": "0x12"}', "is missing"),
        (json.dumps({**WALLET, "chain_id": "x"}), "wallet.chain_id"),
    ],
)
def test_bad_wallet_is_usage(
    cli: Callable[..., Result], tmp_path: Path, content: str | None, message: str
) -> None:
    wallet = tmp_path / "wallet.json"
    if content is not None:
        wallet.write_text(content)
    src = tmp_path / "in.csv"
    write_csv(src, orders(2))
    result = cli("order-ids", "--wallet", str(wallet), str(src), str(tmp_path / "out.csv"))
    assert result.code == 2
    assert message in one_line_error(result.err)


def test_through_a_real_process(
    proc: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    rows = orders(1_000)
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(src, rows)
    with src.open("a") as f:
        f.write('{"token_id": "1", "maker_amount": "x", "taker_amount": 1, "side": 0, "salt": 1}\n')
    result = proc(
        "order-ids", "--wallet", str(wallet_files["envelope"]), str(src), str(dst),
        "--batch-size", "256",
    )  # fmt: skip
    assert result.code == 1
    assert SUMMARY.match(result.out).group(1) == "1,000"  # type: ignore[union-attr]
    assert result.err.splitlines() == [
        "line 1001: maker_amount: must be a non-negative decimal integer string (got 'x')",
        "clobkit order-ids: 1 row rejected (listed above as line N: reason)",
    ]
    assert [r["order_id"] for r in read_rows(dst)] == [expected_id(r) for r in rows]
    ok = proc(
        "order-ids", "--wallet", str(wallet_files["data"]), str(dst), str(tmp_path / "again.jsonl")
    )
    assert ok.code == 0
    assert ok.err == ""


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_line_ends_and_trailing_spaces(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path], eol: str
) -> None:
    rows = orders(4)
    wallet = str(wallet_files["data"])
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes("".join(json.dumps(r) + "  " + eol for r in rows).encode())
    assert cli("order-ids", "--wallet", wallet, str(src), str(dst)).code == 0
    assert [r["order_id"] for r in read_rows(dst)] == [expected_id(r) for r in rows]
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_bytes(
        eol.join(
            ["token_id,maker_amount,taker_amount,side,salt"]
            + [
                f"{r['token_id']},{r['maker_amount']},{r['taker_amount']},{r['side']},{r['salt']}"
                for r in rows
            ]
        ).encode()
        + eol.encode()
    )
    assert cli("order-ids", "--wallet", wallet, str(src), str(dst)).code == 0
    assert [r["order_id"] for r in read_rows(dst)] == [expected_id(r) for r in rows]


def test_unwritable_output_is_one_line(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path]
) -> None:
    src = tmp_path / "in.csv"
    write_csv(src, orders(2))
    out = tmp_path / "no" / "such" / "dir" / "out.csv"
    result = cli("order-ids", "--wallet", str(wallet_files["data"]), str(src), str(out))
    assert result.code == 2
    assert "cannot write" in one_line_error(result.err)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("batch", ["1", "50000"])
def test_salts_the_service_refuses_are_rejected(
    cli: Callable[..., Result], tmp_path: Path, wallet_files: dict[str, Path], fmt: str, batch: str
) -> None:
    """The core hashes any uint256 salt; a raw order's salt must lie in [0, 10**12]."""
    rows = orders(5)
    rows[1]["salt"] = 10**12  # the largest the service takes
    rows[2]["salt"] = 10**12 + 1
    rows[3]["salt"] = "0" * 20 + "7"  # leading zeros: still 7
    rows[4]["salt"] = str(2**255)
    src, dst = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    (write_csv if fmt == "csv" else write_jsonl)(src, rows)
    result = cli(
        "order-ids",
        "--wallet",
        str(wallet_files["data"]),
        str(src),
        str(dst),
        "--batch-size",
        batch,
    )
    assert result.code == 1
    first = 2 if fmt == "csv" else 1  # the line of rows[0]
    reported = re.findall(r"line (\d+): salt: must lie in \[0, 10\*\*12\]", result.err)
    assert sorted(map(int, reported)) == [first + 2, first + 4]
    written = read_rows(dst)
    assert [str(r["salt"]) for r in written] == [str(rows[i]["salt"]) for i in (0, 1, 3)]
    for row in written:
        assert row["order_id"] == expected_id(row)
