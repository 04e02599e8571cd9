"""The API reference (docs/reference/, mkdocs + mkdocstrings) names every public name.

Each package's ``__all__`` is the list of its public names; every one of them
has an entry on its reference page (a ``::: package.name`` block rendered from
the docstrings, or, for a value griffe cannot read statically, a hand-written
heading with the anchor ``package.name``: ``{ #package.name }``, or an
``<a id="package.name"></a>`` line where Markdown would read ``__`` as
emphasis), and the page names nothing else. The
slow test builds the whole site as CI does, warnings as errors, offline.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import import_extra

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
PAGES = {  # public module -> its reference page
    "clobkit": "clobkit.md",
    "clobkit.client": "client.md",
    "clobkit.mm": "mm.md",
    "clobkit.sentinel": "sentinel.md",
    "clobkit.sandbox": "sandbox.md",
    "clobkit.dask": "dask.md",
    "clobkit.errors": "errors.md",
    "clobkit.models": "models.md",
    "clobkit.record": "record.md",
    "clobkit.amounts": "amounts.md",
    "clobkit.auth": "auth.md",
    "clobkit.order_id": "order_id.md",
    "clobkit.salt": "salt.md",
    "clobkit.signing": "signing.md",
    "clobkit.cli": "cli.md",
    "clobkit.bench": "bench.md",
}
ENTRY = re.compile(r'^::: ([\w.]+)\s*$|\{ #([\w.]+) \}\s*$|^<a id="([\w.]+)"></a>$', re.MULTILINE)


def entries(page: str) -> list[str]:
    """The dotted names a reference page documents, in page order."""
    text = (REFERENCE / page).read_text()
    return [m.group(1) or m.group(2) or m.group(3) for m in ENTRY.finditer(text)]


@pytest.mark.parametrize("package", PAGES)
def test_reference_page_names_every_public_name(package: str) -> None:
    extra = {"clobkit.sandbox": "sandbox", "clobkit.dask": "dask"}.get(package)
    module = import_extra(package, extra) if extra else importlib.import_module(package)
    public = [f"{package}.{name}" for name in module.__all__]
    documented = entries(PAGES[package])
    missing = [name for name in public if name not in documented]
    assert not missing, f"docs/reference/{PAGES[package]} lacks {missing}"
    stale = [name for name in documented if name not in public]
    assert not stale, f"docs/reference/{PAGES[package]} documents non-public {stale}"
    assert len(documented) == len(set(documented)), "a name documented twice"


#: Packages private as a whole (the issue's folder layout names them without ``_``): the
#: twins' machinery, whose public names clobkit, amounts, order_id, auth and salt export.
PRIVATE_PACKAGES = {"core"}


def public_modules() -> list[str]:
    """clobkit and its modules and packages whose names do not start with ``_`` (the
    submodules of ``clobkit.mm`` and ``clobkit.sandbox`` are documented through their
    package's ``__all__``), but the private packages."""
    package = ROOT / "src" / "clobkit"
    found = ["clobkit"]
    for path in sorted(package.iterdir()):
        name = path.name.removesuffix(".py")
        if name.startswith("_") or not (path.suffix == ".py" or (path / "__init__.py").exists()):
            continue
        if name in PRIVATE_PACKAGES:
            continue
        found.append(f"clobkit.{name}")
    return found


def test_every_public_module_has_a_page() -> None:
    assert sorted(PAGES) == sorted(public_modules())
    assert "clobkit.models" in PAGES
    assert "clobkit.record" in PAGES


def test_every_reference_page_is_in_the_site() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    assert sorted(p.name for p in REFERENCE.glob("*.md")) == sorted(PAGES.values())
    for page in PAGES.values():
        assert f"reference/{page}" in nav, page


@pytest.mark.slow
def test_site_builds_with_zero_warnings_offline(tmp_path: Path) -> None:
    """``mkdocs build --strict`` (a warning fails it) with every network request refused."""
    import_extra("mkdocs", "docs")
    import_extra("mkdocstrings_handlers.python", "docs")
    dead = "http://127.0.0.1:9"  # nothing listens there: a download would fail the build
    env = os.environ | {
        "NO_MKDOCS_2_WARNING": "1",
        "HTTP_PROXY": dead,
        "HTTPS_PROXY": dead,
        "http_proxy": dead,
        "https_proxy": dead,
        "NO_PROXY": "",
        "no_proxy": "",
    }
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    for package, page in PAGES.items():
        html = (site / "reference" / page.removesuffix(".md") / "index.html").read_text()
        anchors = set(re.findall(r'id="([^"]+)"', html))
        module = importlib.import_module(package)
        missing = [n for n in module.__all__ if f"{package}.{n}" not in anchors]
        assert not missing, f"{page}: no rendered entry for {missing}"


def test_the_guides_error_tree_is_the_one_errors_py_draws() -> None:
    """docs/errors.md shows the tree of ``clobkit.errors``' docstring (its one home), with
    the reST literals as plain text: a class added to one and not the other fails here."""
    import clobkit.errors

    drawn = (clobkit.errors.__doc__ or "").split("::\n\n", 1)[1].split("\n\n", 1)[0]
    tree = "\n".join(line[4:] for line in drawn.splitlines()).replace("``", "")
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert f"```text\n{tree}\n```" in page
