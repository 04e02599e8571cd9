"""``clobkit order-ids`` in its own process: a lighter start, the same output (#14).

The command's process imports neither numpy (pyarrow loads it when it can,
but a file-to-file run never uses it) nor ``pyarrow.compute`` (clobkit calls
the kernels through ``clobkit.core.arrow_compute``); each run's files and lines
are checked against the same run in the test process, where both are loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import ENV_NAMES, WALLET, Result
from .test_cli_order_ids import orders, write_csv
from .test_cli_order_ids_v2 import wallet_file

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")

UNWANTED = ("numpy", "pyarrow.compute", "pandas")


def _child(*argv: str) -> tuple[Result, set[str]]:
    """``python -X importtime -m clobkit *argv``: its result and the modules it imported."""
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "clobkit", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    err = "".join(line + "\n" for line in done.stderr.splitlines() if "import time:" not in line)
    return Result(done.returncode, done.stdout, err), modules


def _rows() -> list[dict[str, object]]:
    """Orders with every kind of trouble the file paths handle column-wise or row by row."""
    rows = orders(3_000, full=True)
    for row in rows[::3]:
        row["nonce"] = None  # an empty cell / a null: its default
    rows[7]["salt"] = -1  # the core refuses it
    rows[1_500]["side"] = "HOLD"
    rows[2_999]["salt"] = 10**12 + 1  # hashable, but the service refuses it
    rows[10]["side"] = "Sell"  # mapped as the exact reader maps it (a SELL row)
    return rows


def _parquet(path: Path, rows: list[dict[str, object]]) -> None:
    ints = ("maker_amount", "taker_amount", "salt", "timestamp", "fee_rate_bps", "expiration")
    cols = {}
    for name in rows[0]:
        values = [row[name] for row in rows]
        if name in ints:
            cols[name] = pa.array(values, pa.int64())
        elif name == "neg_risk":
            cols[name] = pa.array(values, pa.bool_())
        else:  # nonce: strings with nulls; side: few values, dictionary pages
            cols[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    table = pa.table(cols)
    i = table.schema.get_field_index("side")
    table = table.set_column(i, "side", pc.dictionary_encode(table["side"]))  # a categorical
    pq.write_table(table, path, row_group_size=1_024)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_the_commands_process_skips_numpy_and_pyarrow_compute(
    cli: Callable[..., Result], tmp_path: Path, fmt: str
) -> None:
    rows = _rows()
    src = tmp_path / f"in.{fmt}"
    if fmt == "csv":
        write_csv(src, rows)
    else:
        _parquet(src, rows)
    wallet = str(wallet_file(tmp_path, WALLET))
    args = ["--batch-size", "700", "--threads", "2", "--no-progress"]
    here = cli("order-ids", "--wallet", wallet, str(src), str(tmp_path / f"here.{fmt}"), *args)
    there, modules = _child(
        "order-ids", "--wallet", wallet, str(src), str(tmp_path / f"there.{fmt}"), *args
    )
    assert "clobkit.cli" in modules  # the list is real
    assert not {m for m in modules if m in UNWANTED or m.startswith("numpy.")}
    assert there.code == here.code == 1
    reported = [line for line in there.err.splitlines() if line.startswith(("row ", "line "))]
    assert len(reported) == 3
    assert reported == [line for line in here.err.splitlines() if line.startswith(reported[0][:3])]
    assert there.out.startswith("2,997 order ids -> ")
    assert here.out.startswith("2,997 order ids")
    if fmt == "csv":
        assert (tmp_path / "there.csv").read_bytes() == (tmp_path / "here.csv").read_bytes()
    else:
        got, want = (pq.read_table(tmp_path / f"{name}.parquet") for name in ("there", "here"))
        assert got.num_rows == 2_997
        assert got.equals(want)
        assert got.schema == want.schema


def _fake_pyarrow(root: Path, needs_numpy: bool) -> None:
    """A stand-in ``pyarrow`` that, like releases before numpy became optional, may need numpy."""
    (root / "pyarrow").mkdir()
    body = "import sys\n" + ("import numpy\n" if needs_numpy else "")
    body += "loaded_with_numpy = sys.modules.get('numpy') is not None\n"
    (root / "pyarrow" / "__init__.py").write_text(body)
    (root / "numpy").mkdir()
    (root / "numpy" / "__init__.py").write_text("")


@pytest.mark.parametrize("needs_numpy", [False, True], ids=["numpy-optional", "numpy-needed"])
def test_import_pyarrow_lifts_the_block_only_for_a_pyarrow_that_needs_numpy(
    tmp_path: Path, needs_numpy: bool
) -> None:
    _fake_pyarrow(tmp_path, needs_numpy)
    code = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[1])
        from clobkit.cli.orderids.process import block_numpy, import_pyarrow
        block_numpy()
        pa = import_pyarrow()
        print(pa.loaded_with_numpy, sys.modules.get("numpy", "absent") is None)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # numpy-optional: loaded without it and still blocked; numpy-needed: block lifted
    assert done.stdout.split() == (["True", "False"] if needs_numpy else ["False", "True"])


def test_block_numpy_leaves_a_process_that_already_has_numpy_or_pyarrow() -> None:
    code = (
        "import pyarrow\nfrom clobkit.cli.orderids.process import block_numpy\nblock_numpy()\n"
        "import numpy"
    )
    subprocess.run([sys.executable, "-c", code], timeout=60, check=True)  # numpy still imports


def _built(backend: str) -> bool:
    """Whether this pyarrow was built with the allocator ``backend``."""
    try:
        getattr(pa, f"{backend}_memory_pool")()
    except NotImplementedError:
        return False
    return True


@pytest.mark.parametrize("chosen", [None, "mimalloc", "jemalloc"])
def test_the_commands_process_takes_the_c_allocator_unless_the_user_chose(
    tmp_path: Path, chosen: str | None
) -> None:
    write_csv(tmp_path / "in.csv", orders(20))
    wallet = str(wallet_file(tmp_path, WALLET))
    argv = ["clobkit", "order-ids", "--wallet", wallet, str(tmp_path / "in.csv")]
    argv.append(str(tmp_path / "out.csv"))
    code = (
        f"import os, sys\nsys.argv = {argv!r}\nfrom clobkit.__main__ import command\n"
        "code = command()\nimport pyarrow\n"
        "pool = pyarrow.default_memory_pool().backend_name\n"
        "print(os.environ['ARROW_DEFAULT_MEMORY_POOL'], pool)\nsys.exit(code)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    if chosen is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "20 order ids" in done.stdout
    setting, backend = done.stdout.split()[-2:]
    assert setting == (chosen or "system")  # the user's setting is kept as given
    # Arrow follows it where that allocator is built (else it warns and keeps its default)
    if chosen is None or _built(chosen):
        assert backend == setting


def test_for_command_leaves_a_process_that_already_has_pyarrow() -> None:
    code = (
        "import os, pyarrow\nos.environ.pop('ARROW_DEFAULT_MEMORY_POOL', None)\n"
        "from clobkit.cli.orderids.process import for_command\nfor_command()\n"
        "print('ARROW_DEFAULT_MEMORY_POOL' in os.environ)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_the_commands_process_keeps_freed_memory_where_glibc_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """glibc's malloc is told to keep what the pipeline frees (its next items reuse the
    pages), unless the user set its tunables; elsewhere nothing is changed."""
    from clobkit.cli.orderids.process import keep_freed_memory

    script = "from clobkit.cli.orderids.process import keep_freed_memory as k; print(k())"
    env = {
        k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_")
    }
    glibc = sys.platform.startswith("linux") and bool(os.confstr("CS_GNU_LIBC_VERSION") or "")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(glibc)
    env["GLIBC_TUNABLES"] = "glibc.malloc.trim_threshold=0"  # the user's: kept
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert keep_freed_memory() is False
