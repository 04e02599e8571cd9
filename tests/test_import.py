"""``import clobkit`` loads the core only: no HTTP, WebSocket, server or signing stack."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "httpx",
    "websockets",
    "starlette",
    "uvicorn",
    "eth_account",
    "coincurve",
    "Crypto",
    "msgspec",
)


def _modules_after(code: str) -> list[str]:
    probe = f"{code}; import sys, json; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return list(json.loads(done.stdout))


def test_import_clobkit_is_light() -> None:
    loaded = _modules_after("import clobkit")
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    assert heavy == []


def test_compiled_twin_does_not_import_the_pure_one() -> None:
    pytest.importorskip("clobkit._core_c")
    loaded = _modules_after("import clobkit._core_c")
    assert "clobkit._core_py" not in loaded
    assert "Crypto" not in {m.split(".")[0] for m in loaded}


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("Client", "httpx"),
        ("AsyncClient", "httpx"),
        ("OrderSigner", "clobkit.signing"),
        ("SignedOrder", "clobkit.signing"),
        ("WalletInfo", "msgspec"),
    ],
)
def test_lazy_names_load_on_first_use(name: str, module: str) -> None:
    loaded = _modules_after(f"import clobkit; clobkit.{name}")
    assert module in loaded


def test_unknown_attribute_is_an_attribute_error() -> None:
    import clobkit

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        clobkit.nope  # noqa: B018
    assert {"Client", "OrderSigner"} <= set(dir(clobkit))
