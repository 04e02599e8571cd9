"""``clobkit order-ids --sign --kms aws:KEY_ID``: the file's orders signed by the KMS
key (ministack on loopback, found through the AWS chain's endpoint variable), each
signature recovering to the key's address; a key that is not the wallet's signer
and the options' misuses refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from clobkit import cli
from clobkit.signing import AwsKmsSigner

from ..cli.conftest import read_rows
from ..cli.test_cli_order_ids import write_csv
from ..cli.test_cli_order_ids_v2 import V2_WALLET, oracle_id, v2_orders, wallet_file
from .oracle import low_s, recovered


def test_order_ids_signed_by_an_aws_kms_key(
    aws_url: str,
    aws_key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", aws_url)  # the usual chain's endpoint
    with AwsKmsSigner(aws_key) as signer:
        address = signer.address
    wallet = {**V2_WALLET, "signer": address}
    rows = v2_orders(6, full=False)
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    write_csv(src, rows)
    other = str(wallet_file(tmp_path, V2_WALLET))  # another signer's wallet: refused
    args = ["order-ids", "--wallet", other, "--sign", "--kms", f"aws:{aws_key}", str(src), str(out)]
    assert cli.main(args) == 2
    assert "is not this wallet's signer" in capsys.readouterr().err
    args[2] = str(wallet_file(tmp_path, wallet))
    assert cli.main(args) == 0, capsys.readouterr().err
    for row, done in zip(rows, read_rows(out), strict=True):
        order_id = oracle_id(wallet, 2, row)
        assert done["order_id"] == order_id
        assert recovered(bytes.fromhex(order_id[2:]), done["signature"]) == address
        assert low_s(done["signature"])


def test_kms_options_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    write_csv(src, v2_orders(1, full=False))
    path = str(wallet_file(tmp_path, V2_WALLET))
    base = ["order-ids", "--wallet", path, str(src), str(out)]
    assert cli.main([*base, "--kms", "aws:k"]) == 2
    assert "--kms goes with --sign" in capsys.readouterr().err
    assert cli.main([*base, "--sign", "--kms", "aws:k", "--key-file", path]) == 2
    assert "give one of --key-file, --kms" in capsys.readouterr().err
    for bad in ("k", "azure:k", "gcp:"):
        assert cli.main([*base, "--sign", "--kms", bad]) == 2
        assert f"argument --kms: {bad!r}: expected aws:KEY_ID or gcp:KEY_VERSION" in (
            capsys.readouterr().err
        )
