"""README.md and the guide's pages with runnable code are tests: their code blocks run
against a sandbox, so they cannot rot.

A sandbox is started with ``serve_in_thread``; the ``CLOBKIT_*`` variables the
README tells the user to set point at it. Every ``python`` block runs as a
script in a fresh interpreter, every ``sh`` block in ``bash -euo pipefail``
with ``clobkit`` on PATH, each in its own temporary directory. In ``sh``
blocks, ``export CLOBKIT_...=...`` lines are checked against the variables set
here and dropped (their values are placeholders). ``console`` and ``text``
blocks show output and are not run; unlabelled blocks are not run either (the
first one holds the two fresh-machine commands: CI runs its second line).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from clobkit.sandbox import Sandbox, serve_in_thread

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# the guide's pages whose blocks run as README's do (the other pages' blocks are
# excerpts of a loop: market_id, trading, ladder_for are the reader's)
GUIDES = ("quickstart", "raw-orders", "stream", "errors", "cli", "market-making-tour")
PAGES = [README, *(ROOT / "docs" / f"{name}.md" for name in GUIDES)]
RUN_KINDS = ("python", "sh")
SHOWN_KINDS = ("", "console", "text")
EXPORT = re.compile(r"^export (CLOBKIT_[A-Z_]+)=\S*(\s+#.*)?$")
# commands that must not run from a test: use a console block for them
UNSAFE = ("pip install", "pytest", "clobkit sandbox", "clobkit bench", "python -m clobkit.sandbox")


class Block(NamedTuple):
    kind: str
    line: int  # line of the opening fence, from 1
    text: str
    page: str = "README.md"  # the file, from the repository's root

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(text: str, page: str = "README.md") -> list[Block]:
    """The fenced code blocks of a Markdown text."""
    found: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = re.match(r"^```(\S*)\s*$", lines[i])
        if match is None:
            i += 1
            continue
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{page}:{start + 1}: unclosed code block")
        found.append(Block(match.group(1), start + 1, "\n".join(body) + "\n", page))
        i += 1
    return found


BLOCKS = [
    b
    for page in PAGES
    for b in blocks(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())
]


def of_kind(kind: str) -> list[Block]:
    return [b for b in BLOCKS if b.kind == kind]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with serve_in_thread() as sb:
        yield sb


@pytest.fixture(scope="module")
def environ(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The process environment of a block: the sandbox's settings, ``clobkit`` on PATH."""
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "clobkit"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m clobkit "$@"\n')
    shim.chmod(0o755)
    trader = sandbox.users[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOBKIT_")}
    # blocks run in their own directory: a relative PYTHONPATH entry (PYTHONPATH=src
    # from a checkout) is made absolute, so they import the code this test imports
    paths = env.get("PYTHONPATH", "").split(os.pathsep)
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p for p in paths)
    env.update(
        CLOBKIT_BASE_URL=sandbox.base_url,
        CLOBKIT_API_KEY=trader.api_key,
        CLOBKIT_API_SECRET=trader.api_secret,
        CLOBKIT_CLOB_URL=sandbox.clob_url,
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path, where: str) -> None:
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, (
        f"{where} failed (exit {done.returncode})\n"
        f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )


def test_first_block_is_the_two_fresh_machine_commands() -> None:
    first = blocks(README.read_text(encoding="utf-8"))[0]
    lines = first.text.splitlines()
    assert first.kind == ""
    assert len(lines) == 2
    assert lines[0].startswith("pip install ")
    assert lines[0].endswith(" && clobkit demo")
    # every test (docs/development.md, "Test time"): .ci/run runs this line and no
    # other pytest, so that what CI proves is what README says
    assert lines[1] == "pip install '.[dev]' && python -m pytest -n 4"
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert 'bash -euo pipefail -c "$test_cmd"' in ci
    assert "pytest" not in ci.replace("python -m pytest --cov", "").split("$test_cmd")[-1]


def test_every_block_kind_is_known_and_enough_run() -> None:
    for block in BLOCKS:
        assert block.kind in RUN_KINDS + SHOWN_KINDS, f"{block.where}: {block.kind!r}"
    assert len(of_kind("python")) >= 8
    assert len(of_kind("sh")) >= 4


def test_the_readme_is_short_and_its_guide_pages_are_in_the_site() -> None:
    """README holds what a newcomer needs first; the rest is the site's guide."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200
    nav = (ROOT / "mkdocs.yml").read_text()
    for name in GUIDES:
        assert f" {name}.md" in nav, name


def block_id(block: Block) -> str:
    return f"{block.page.removeprefix('docs/').removesuffix('.md')}-line-{block.line}"


@pytest.mark.parametrize("block", of_kind("python"), ids=block_id)
def test_python_block(block: Block, environ: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / f"block_{block.line}.py"
    script.write_text(block.text)
    run([sys.executable, str(script)], environ, tmp_path, block.where)


@pytest.mark.parametrize("block", of_kind("sh"), ids=block_id)
def test_sh_block(block: Block, environ: dict[str, str], tmp_path: Path) -> None:
    lines = []
    for line in block.text.splitlines():
        export = EXPORT.match(line)
        if export is not None:
            assert export.group(1) in environ, f"{block.where}: {export.group(1)} unset"
            continue
        for command in UNSAFE:
            assert command not in line, f"{block.where}: {command!r} in an sh block"
        lines.append(line)
    run(["bash", "-euo", "pipefail", "-c", "\n".join(lines)], environ, tmp_path, block.where)
