"""``clobkit order-ids`` on V2/V3 wallets, ``--exchange-version`` and ``--sign``.

Ids are held to eth-account's EIP-712 encoding of the V2 struct (an oracle
independent of clobkit) and signatures to eth-account's ``unsafe_sign_hash``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account

from clobkit import new_salts
from clobkit.core.wallet import V2_CTF_EXCHANGE, V2_NEG_RISK_EXCHANGE, V3_EXCHANGE

from ..core.oracle import eth_account_order_id_v2
from .conftest import TOKEN, WALLET, Result, one_line_error, read_rows
from .test_cli_order_ids import write_csv, write_jsonl

KEY = "0x" + "4c" * 32
SIGNER = Account.from_key(KEY).address
V2_WALLET = {
    **WALLET,
    "signer": SIGNER,
    "signature_type": 0,
    "ctf_exchange": V2_CTF_EXCHANGE,
    "neg_risk_exchange": V2_NEG_RISK_EXCHANGE,
}
V3_WALLET = {**V2_WALLET, "ctf_exchange": V3_EXCHANGE, "neg_risk_exchange": V3_EXCHANGE}


def v2_orders(n: int, *, full: bool) -> list[dict[str, Any]]:
    salts = new_salts(n)
    rows = []
    for i in range(n):
        buy = bool(i % 2)
        usdc, shares = 9_295_000 + i, 16_900_000
        row: dict[str, Any] = {
            "token_id": TOKEN if i % 3 else str(10**70 + i),
            "maker_amount": usdc if buy else shares,
            "taker_amount": shares if buy else usdc,
            "side": "BUY" if buy else "SELL",
            "salt": salts[i],
            "timestamp": 1_790_000_000_000 + i,
        }
        if full:
            row["metadata"] = "0x" + f"{i:064x}"
            row["builder"] = "0x" + "ab" * 32 if i % 2 else None  # CSV: an empty field
            row["neg_risk"] = bool(i % 5 == 0)
        rows.append(row)
    return rows


def oracle_id(wallet: dict[str, Any], version: int, row: dict[str, Any]) -> str:
    order = {
        **row,
        "side": 0 if str(row["side"]).upper() in ("BUY", "0") else 1,
        "metadata": row.get("metadata") or None,
        "builder": row.get("builder") or None,
    }
    neg = str(row.get("neg_risk", "false")).lower() in ("true", "1")
    return eth_account_order_id_v2(wallet, order, neg, version)


def wallet_file(tmp_path: Path, wallet: dict[str, Any]) -> Path:
    path = tmp_path / "wallet.json"
    path.write_text(json.dumps(wallet))
    return path


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("full", [False, True], ids=["required", "all-fields"])
@pytest.mark.parametrize(("wallet", "version"), [(V2_WALLET, 2), (V3_WALLET, 3)], ids=["v2", "v3"])
def test_v2_rows_get_the_eip712_id_and_a_signature(
    cli: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
    full: bool,
    wallet: dict[str, Any],
    version: int,
) -> None:
    rows = v2_orders(40, full=full)
    src, out = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    (write_csv if fmt == "csv" else write_jsonl)(src, rows)
    monkeypatch.setenv("CLOBKIT_PRIVATE_KEY", KEY)
    path = str(wallet_file(tmp_path, wallet))
    got = cli("order-ids", "--wallet", path, "--sign", str(src), str(out), "--batch-size", "7")
    assert got.code == 0, got.err
    written = read_rows(out)
    assert len(written) == len(rows)
    for row, done in zip(rows, written, strict=True):
        want = oracle_id(wallet, version, row)
        assert done["order_id"] == want
        signed = Account.unsafe_sign_hash(bytes.fromhex(want[2:]), KEY)
        assert done["signature"] == "0x" + bytes(signed.signature).hex()
        assert str(done["salt"]) == str(row["salt"])  # the input columns are kept


def test_exchange_version_overrides_the_wallet(cli: Callable[..., Result], tmp_path: Path) -> None:
    rows = v2_orders(5, full=False)
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    write_csv(src, rows)
    path = str(wallet_file(tmp_path, WALLET))  # V1 addresses
    got = cli("order-ids", "--wallet", path, "--exchange-version", "2", str(src), str(out))
    assert got.code == 0, got.err
    assert [r["order_id"] for r in read_rows(out)] == [oracle_id(WALLET, 2, r) for r in rows]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_other_versions_columns_are_refused(
    cli: Callable[..., Result], tmp_path: Path, fmt: str
) -> None:
    rows = v2_orders(3, full=False)
    for row in rows:
        row["nonce"] = 0  # a V1 field on a V2 wallet: never silently ignored
    src, out = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    (write_csv if fmt == "csv" else write_jsonl)(src, rows)
    got = cli("order-ids", "--wallet", str(wallet_file(tmp_path, V2_WALLET)), str(src), str(out))
    assert got.code != 0
    if fmt == "csv":
        assert "nonce" in one_line_error(got.err)
    else:
        assert got.err.count("nonce: not a field of this wallet's V2/V3 orders") == 3


NOTE = (
    "(exchange version V2/V3 orders need timestamp: the version comes from the wallet's "
    "exchange addresses unless --exchange-version sets it)"
)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_missing_timestamp_column(cli: Callable[..., Result], tmp_path: Path, fmt: str) -> None:
    """A V1 file with a V2 wallet: the error names the wallet's version and the way out."""
    rows = v2_orders(2, full=False)
    for row in rows:
        del row["timestamp"]
    src, out = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    (write_csv if fmt == "csv" else write_jsonl)(src, rows)
    got = cli("order-ids", "--wallet", str(wallet_file(tmp_path, V2_WALLET)), str(src), str(out))
    if fmt == "csv":
        assert got.code == 2
        assert f"the header lacks the column(s) timestamp {NOTE}" in one_line_error(got.err)
    else:  # each row is rejected on its own line
        assert got.code == 1
        assert got.err.count(f"missing timestamp {NOTE}") == 2


def test_sign_key_sources(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = v2_orders(3, full=False)
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    write_csv(src, rows)
    wallet = str(wallet_file(tmp_path, V2_WALLET))
    monkeypatch.delenv("CLOBKIT_PRIVATE_KEY", raising=False)
    got = cli("order-ids", "--wallet", wallet, "--sign", str(src), str(out))
    assert got.code == 2
    assert "CLOBKIT_PRIVATE_KEY" in one_line_error(got.err)
    key_file = tmp_path / "key.txt"
    key_file.write_text(KEY + "\n")
    got = cli(
        "order-ids", "--wallet", wallet, "--sign", "--key-file", str(key_file), str(src), str(out)
    )
    assert got.code == 0, got.err
    assert all(len(r["signature"]) == 132 for r in read_rows(out))
    key_file.write_text("0x" + "zz" * 32)
    got = cli(
        "order-ids", "--wallet", wallet, "--sign", "--key-file", str(key_file), str(src), str(out)
    )
    assert got.code == 2
    assert "zz" not in got.err  # the key never shows
    assert "not a secp256k1 private key" in one_line_error(got.err)


def test_sign_with_a_key_that_is_not_the_wallets_signer(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = v2_orders(2, full=False)
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(src, rows)
    monkeypatch.setenv("CLOBKIT_PRIVATE_KEY", "0x" + "11" * 32)
    got = cli(
        "order-ids", "--wallet", str(wallet_file(tmp_path, V2_WALLET)), "--sign", str(src), str(out)
    )
    # a problem of the command's arguments: one error before any row, a usage error
    assert got.code == 2
    assert "is not this wallet's signer" in one_line_error(got.err)
    assert one_line_error(got.err).startswith("clobkit order-ids: error: --sign: signer: ")
    assert not out.exists()
