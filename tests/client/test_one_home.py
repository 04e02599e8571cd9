"""Client rules with one home each: the pools' keep-alive, the discovery of the user id,
and no import circle among the client's modules (type-only ones included)."""

from __future__ import annotations

import ast
from pathlib import Path

from clobkit.client import _config
from clobkit.sandbox.config import LimitsConfig

from ..test_structure import import_cycles

SRC = Path(__file__).resolve().parents[2] / "src"
CLIENT = SRC / "clobkit" / "client"
KEEPALIVE_NAMES = ("keepalive_expiry", "keepalive_timeout")


def _keepalive_values(tree: ast.AST) -> list[ast.expr]:
    """Each value given to a pool's keep-alive, as a keyword or a key of an options dict."""
    values: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in KEEPALIVE_NAMES:
            values.append(node.value)
        elif isinstance(node, ast.Dict):
            values += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value in KEEPALIVE_NAMES
            ]
    return values


def test_both_pools_keep_idle_connections_for_one_constant() -> None:
    """The sync pool (httpcore) and the async one (aiohttp) read ``KEEPALIVE_EXPIRY``,
    under the sandbox server's keep-alive (a connection kept as long as the server
    keeps it races its close)."""
    uses = {}
    for path in sorted(CLIENT.glob("*.py")):
        for value in _keepalive_values(ast.parse(path.read_text())):
            uses[path.name] = ast.unparse(value)
    assert uses == {"_session.py": "KEEPALIVE_EXPIRY", "_transport.py": "KEEPALIVE_EXPIRY"}
    assert 0 < _config.KEEPALIVE_EXPIRY < LimitsConfig().keep_alive_seconds


def test_the_keepalive_check_sees_a_literal() -> None:
    tree = ast.parse('make(keepalive_timeout=5.0)\nopts = {"keepalive_expiry": 5.0}')
    assert [ast.unparse(v) for v in _keepalive_values(tree)] == ["5.0", "5.0"]


def _user_id_reads(tree: ast.AST) -> int:
    """How often ``<page>.orders[0].user_id`` (the user id read from a listing) occurs."""
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "user_id"
        and isinstance(node.value, ast.Subscript)
        and isinstance(node.value.value, ast.Attribute)
        and node.value.value.attr == "orders"
    )


def test_the_user_id_is_discovered_in_one_place() -> None:
    found = {}
    for path in sorted((SRC / "clobkit").rglob("*.py")):
        count = _user_id_reads(ast.parse(path.read_text()))
        if count:
            found[path.relative_to(SRC / "clobkit").as_posix()] = count
    assert found == {"client/_endpoints.py": 1}


def test_the_user_id_check_sees_a_copy() -> None:
    tree = ast.parse("page = get()\nif page.orders:\n    uid = page.orders[0].user_id\n")
    assert _user_id_reads(tree) == 1
    assert _user_id_reads(ast.parse("uid = order.user_id")) == 0


def test_no_import_circle_in_the_client() -> None:
    cycles = import_cycles(SRC, "clobkit")
    assert [c for c in cycles if any(m.startswith("clobkit.client") for m in c)] == []
