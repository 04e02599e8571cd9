"""Fixtures of the CLI tests: one sandbox on loopback, the CLOBKIT_* environment, runners.

``cli(*argv)`` runs ``clobkit.cli.main`` in process and returns the exit code
with captured stdout and stderr; ``proc(*argv)`` runs ``python -m clobkit`` in
a subprocess (the real entry point, the real exit code).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from clobkit.cli import main
from clobkit.sandbox import Sandbox, serve_in_thread

TRADER_KEY = "sandbox-trader-key"
TRADER_SECRET = "sandbox-trader-secret"
READER_KEY = "sandbox-reader-key"
READER_SECRET = "sandbox-reader-secret"
ENV_NAMES = ("CLOBKIT_BASE_URL", "CLOBKIT_API_KEY", "CLOBKIT_API_SECRET", "CLOBKIT_CLOB_URL")
WALLET = {
    "maker": "0x1111111111111111111111111111111111111111",
    "signer": "0x2222222222222222222222222222222222222222",
    "chain_id": 137,
    "signature_type": 2,
    "ctf_exchange": "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E",
    "neg_risk_exchange": "0xC5d563A36AE78145C45a50134d48A1215220f80a",
}
TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"


class Result(NamedTuple):
    code: int
    out: str
    err: str


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CLOBKIT_* settings leak in from the developer's shell."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A sandbox shared by a module: its prices still (an order near the touch stays)."""
    with serve_in_thread({"walk": None}) as sb:
        yield sb


@pytest.fixture
def env(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """CLOBKIT_* pointing at the sandbox as the trader."""
    values = {
        "CLOBKIT_BASE_URL": sandbox.base_url,
        "CLOBKIT_API_KEY": TRADER_KEY,
        "CLOBKIT_API_SECRET": TRADER_SECRET,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    def run(*argv: str) -> Result:
        code = main(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def proc() -> Callable[..., Result]:
    def run(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
        environ = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
        environ.update(env or {})
        done = subprocess.run(
            [sys.executable, "-m", "clobkit", *argv],
            capture_output=True,
            text=True,
            env=environ,
            cwd=cwd,
            timeout=120,
            check=False,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def wallet_files(tmp_path: Path) -> dict[str, Path]:
    """The same wallet saved as bare ``data`` and as the whole ``GET /wallet`` envelope."""
    data = tmp_path / "wallet-data.json"
    data.write_text(json.dumps(WALLET))
    envelope = tmp_path / "wallet-envelope.json"
    envelope.write_text(json.dumps({"success": True, "data": WALLET}, indent=2))
    return {"data": data, "envelope": envelope}


def one_line_error(err: str) -> str:
    """The single stderr line of an expected failure (and no traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def read_rows(path: Path) -> Any:
    """Rows of a CSV (as dicts) or JSONL output file."""
    import csv

    if path.suffix == ".csv":
        with path.open(newline="") as f:
            return list(csv.DictReader(f))
    return [json.loads(line) for line in path.read_text().splitlines()]
