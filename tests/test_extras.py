"""Hints for a missing extra name a command that works where the user is (issue 46): the
extra's packages by name, from clobkit's own metadata. ``pip install 'clobkit[data]'``
needed clobkit on an index (no index has it), and ``pip install '.[data]'`` in a
checkout built the compiled core again (72-78 s)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from clobkit.cli import main
from clobkit.core import extras as _extras

ROOT = Path(__file__).resolve().parent.parent


def declared() -> dict[str, list[str]]:
    """pyproject.toml's extras (the one home of what each brings), read as TOML."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as fh:
        extras: dict[str, list[str]] = tomllib.load(fh)["project"]["optional-dependencies"]
    return extras


def name(requirement: str) -> str:
    return re.split(r"[<>=!~\[;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_each_extra_brings_what_pyproject_declares() -> None:
    extras = declared()
    assert _extras.extras() == list(extras)
    for extra, wanted in extras.items():
        if extra == "dev":
            continue
        assert sorted(map(name, _extras.requirements(extra))) == sorted(map(name, wanted))
    # dev names clobkit's own extras: theirs come with it, each package once
    dev = _extras.requirements("dev")
    assert len(dev) == len(set(dev))
    assert {"pyarrow", "starlette", "mkdocs", "pytest"} <= set(map(name, dev))
    assert not any(name(r) == "clobkit" for r in dev)


def test_the_hint_names_the_packages_and_no_index_name() -> None:
    hint = _extras.install_hint("data")
    assert hint == "pip install " + " ".join(f"'{r}'" for r in _extras.requirements("data"))
    assert "clobkit[" not in hint
    assert "'.[" not in hint  # nothing that builds the core again
    sandbox = _extras.install_hint("sandbox")
    assert "'starlette>=0.40'" in sandbox
    assert "uvicorn" in sandbox


def test_without_metadata_the_hint_is_the_checkouts(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(distribution: str) -> None:
        raise importlib.metadata.PackageNotFoundError(distribution)

    monkeypatch.setattr(importlib.metadata, "requires", missing)
    assert _extras.extras() == []
    from_source = Path(_extras.__file__).resolve().is_relative_to(ROOT / "src")
    expected = f"pip install '.[data]' in {ROOT}" if from_source else "pip install 'clobkit[data]'"
    assert _extras.install_hint("data") == expected


def test_clobkit_extras_prints_each_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extras", "data"]) == 0
    assert capsys.readouterr().out == _extras.install_hint("data") + "\n"
    assert main(["extras"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == _extras.extras()
    assert main(["extras", "nope"]) == 2
    assert f"no extra 'nope': {', '.join(_extras.extras())}" in capsys.readouterr().err
