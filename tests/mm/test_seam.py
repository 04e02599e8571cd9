"""``clobkit.mm`` uses the client through its public seam only (issue #23): no import
of a private module or name of ``clobkit.client``, and no private attribute read off
a client (``client._x``, ``self._client._x``), so a user can build the same loop."""

from __future__ import annotations

import ast
from pathlib import Path

import clobkit.client

MM = Path(__file__).resolve().parents[2] / "src" / "clobkit" / "mm"
CLIENT = "clobkit.client"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _absolute(module: str | None, level: int, package: str) -> str:
    """The module an import names, ``package`` being the importing module's package."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - level + 1]
    return ".".join([*base, module] if module else base)


def _client_expr(node: ast.expr) -> bool:
    """An expression naming a client: ``client``, ``_client``, ``x.client``, ``x._client``."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return name in ("client", "_client")


def private_uses(source: str, package: str = "clobkit.mm") -> list[str]:
    """Every private name of ``clobkit.client`` that ``source`` reaches for."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, package)
            if module.startswith(CLIENT + "."):
                tail = module[len(CLIENT) + 1 :]
                if any(_private(part) for part in tail.split(".")):
                    found.append(f"from {module} import ...")
            if module == CLIENT:
                found += [f"{module}.{a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(CLIENT + ".") and any(
                    _private(p) for p in alias.name.split(".")
                ):
                    found.append(f"import {alias.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr) and _client_expr(node.value):
            found.append(f"{ast.unparse(node.value)}.{node.attr}")
    return found


def test_mm_uses_only_the_public_seam_of_the_client() -> None:
    files = sorted(MM.glob("*.py"))
    assert len(files) >= 8
    uses = {
        str(path.name): private_uses(path.read_text())
        for path in files
        if private_uses(path.read_text())
    }
    assert uses == {}


def test_the_check_sees_each_kind_of_private_use() -> None:
    cases = {
        "from ..client._core import UNKNOWN_OUTCOME": ["from clobkit.client._core import ..."],
        "from clobkit.client._aio import within": ["from clobkit.client._aio import ..."],
        "from ..client import _sync": ["clobkit.client._sync"],
        "import clobkit.client._stream": ["import clobkit.client._stream"],
        "x = self._client._run(op)": ["self._client._run"],
        "core = client._core": ["client._core"],
        # public names, and private names of other objects, pass
        "from ..client import AsyncClient, within\nself._client.post_raw_order(p)": [],
        "from .._core import to_units\nself._lock\nq._stale": [],
    }
    for source, expected in cases.items():
        assert private_uses(source) == expected, source


def test_the_seam_is_exported() -> None:
    for name in ("PreparedRawOrder", "MarketInfo", "UNKNOWN_OUTCOME", "within", "Stream"):
        assert name in clobkit.client.__all__
    for cls in (clobkit.client.Client, clobkit.client.AsyncClient):
        for method in (
            "prepare_raw_order",
            "prepare_raw_order_amounts",
            "post_raw_order",
            "send_raw_order",
            "market_info",
            "exchange_version",
        ):
            assert getattr(cls, method).__doc__, (cls, method)
