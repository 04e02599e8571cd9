"""The line that installs an extra, wherever clobkit is installed from.

An extra's packages are named one by one, read from the installed clobkit's own
metadata (pyproject.toml is their one home; the metadata is built from it):
``pip install 'pyarrow<27,>=15'`` works beside a wheel and in a checkout alike,
and never builds the compiled core again. The alternatives do not: ``pip install
'clobkit[data]'`` needs clobkit on a package index, where it is not, and ``pip
install '.[data]'`` in a checkout rebuilds the core (72-78 s on the project's
2-core machine). ``clobkit extras`` prints every extra's line.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["extras", "install_hint", "requirements"]

_MARKER = re.compile(r"""^\s*extra\s*==\s*["']([\w.-]+)["']\s*$""")
_OWN = re.compile(r"clobkit\[([\w.,\s-]+)\]")


def _declared() -> list[tuple[str, str]]:
    """(requirement, extra) of every extra's requirement of the installed clobkit."""
    import importlib.metadata  # on a hint's way only: not at every import of clobkit

    try:
        lines = importlib.metadata.requires("clobkit") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for line in lines:
        requirement, _, marker = line.partition(";")
        match = _MARKER.match(marker)
        if match is not None:
            found.append((requirement.strip(), match.group(1)))
    return found


def extras() -> list[str]:
    """The extras the installed clobkit declares, in their order (none when its metadata
    cannot be read: clobkit run from a source tree it was not installed from)."""
    return list(dict.fromkeys(extra for _, extra in _declared()))


def requirements(extra: str) -> list[str]:
    """The packages ``extra`` brings (an extra naming clobkit's own extras, as ``dev``
    does, brings theirs), each once, in the metadata's order."""
    declared = _declared()
    found: list[str] = []

    def add(name: str, seen: set[str]) -> None:
        for requirement, of in declared:
            if of != name:
                continue
            own = _OWN.fullmatch(requirement)
            if own is None:
                if requirement not in found:
                    found.append(requirement)
                continue
            for inner in (e.strip() for e in own.group(1).split(",")):
                if inner not in seen:
                    seen.add(inner)
                    add(inner, seen)

    add(extra, {extra})
    return found


def install_hint(extra: str) -> str:
    """The pip line that adds ``extra`` where clobkit is installed: its packages by name;
    without clobkit's metadata, the extra of the checkout clobkit runs from (which
    builds the core again) or, away from one, of the package."""
    import shlex

    wanted = requirements(extra)
    if wanted:
        return "pip install " + " ".join(shlex.quote(r) for r in wanted)
    root = Path(__file__).resolve().parents[3]  # <root>/src/clobkit/core/extras.py
    if (root / "pyproject.toml").is_file() and (root / "setup.py").is_file():
        return f"pip install '.[{extra}]' in {root}"
    return f"pip install 'clobkit[{extra}]'"
