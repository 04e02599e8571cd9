"""The sync client's methods are generated from the async ones (scripts/unasync_client.py):
each generated file is current, says so in its header, and both clients expose the same
methods with the same parameters."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from clobkit import AsyncClient, Client

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    path = ROOT / "scripts" / "unasync_client.py"
    spec = importlib.util.spec_from_file_location("unasync_client", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_file_is_current() -> None:
    texts = _script().generated()
    assert texts, "nothing generated"
    for path, text in texts.items():
        on_disk = path.read_text(encoding="utf-8")
        assert on_disk == text, f"{path.name} is stale: run python scripts/unasync_client.py"


def test_a_generated_file_says_what_it_comes_from_and_how_to_remake_it() -> None:
    script = _script()
    for source, target in script.PAIRS.items():
        head = (script.CLIENT / target).read_text(encoding="utf-8").splitlines()[:3]
        assert head[0].startswith(f"# GENERATED from {source} by scripts/unasync_client.py")
        assert "python scripts/unasync_client.py" in head[1]


def test_the_check_sees_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--check`` fails on a generated file edited by hand, and a run makes it current."""
    script = _script()
    for source, target in script.PAIRS.items():
        (tmp_path / source).write_bytes((script.CLIENT / source).read_bytes())
        text = (script.CLIENT / target).read_text(encoding="utf-8")
        (tmp_path / target).write_text(text.replace("def get_order(", "def get_0rder("))
    monkeypatch.setattr(script, "CLIENT", tmp_path)
    monkeypatch.setattr(script, "ROOT", tmp_path)
    assert script.main(["--check"]) == 1
    assert script.main([]) == 0
    assert script.main(["--check"]) == 0


def _public(cls: type) -> dict[str, list[tuple[str, object, object]]]:
    """Each public method's parameters: name, kind and default."""
    return {
        name: [(p.name, p.kind, p.default) for p in inspect.signature(member).parameters.values()]
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_") or name in ("__init__",)
    }


def test_both_clients_have_the_same_methods_and_parameters() -> None:
    assert _public(Client) == _public(AsyncClient)
    for name in ("place_raw_order", "prepare_raw_order", "get_order", "stream"):
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)) is (name != "stream")
        assert not inspect.iscoroutinefunction(getattr(Client, name))
