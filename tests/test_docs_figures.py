"""Every speed figure of README.md and docs/ against clobkit is the one docs/bench.json measured.

The figures sit in generated blocks (``benchmarks/docs_figures.py``); this
renders them again from the committed report and compares them with the
files, so a figure edited by hand, or a report run again without its
blocks, fails here.
"""

from __future__ import annotations

import json
import re

import pytest
from benchmarks import docs_figures


@pytest.fixture(scope="module")
def blocks() -> dict[str, str]:
    return docs_figures.render(json.loads(docs_figures.REPORT.read_text()))


@pytest.mark.parametrize("name", docs_figures.FILES)
def test_generated_blocks_match_the_report(name: str, blocks: dict[str, str]) -> None:
    text = (docs_figures.ROOT / name).read_text()
    assert docs_figures.found(text) == docs_figures.FILES[name]
    assert docs_figures.update(text, blocks) == text, (
        f"{name}: a figure differs from docs/bench.json; run python -m benchmarks.docs_figures"
    )


def test_the_report_is_a_full_run_that_agreed(blocks: dict[str, str]) -> None:
    report = json.loads(docs_figures.REPORT.read_text())
    assert report["ok"] is True
    assert report["settings"]["rounds"] >= 7  # not --quick
    assert report["memory"]
    assert report["machine"]["core"] == "c"
    assert report["machine"]["cpu"] in blocks["verdicts"]


GUIDES = ["README.md", *(f"docs/{p.name}" for p in (docs_figures.ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("name", sorted(set(GUIDES) - {"docs/architecture.md"}))
def test_no_speed_figure_outside_a_block(name: str) -> None:
    """The user docs quote no 'N times faster' of their own: those live in the blocks."""
    outside = docs_figures.BLOCK.sub("", (docs_figures.ROOT / name).read_text())
    assert not re.findall(r"\d+(?:\.\d+)?\s*(?:times|×|x) faster", outside)


def test_a_changed_figure_is_caught(blocks: dict[str, str]) -> None:
    text = (docs_figures.ROOT / "README.md").read_text()
    m = re.search(r"(\d+) to (\d+) times faster than py-order-utils", text)
    assert m is not None
    wrong = text.replace(m.group(0), "70 to 135 times faster than py-order-utils")
    assert docs_figures.update(wrong, blocks) != wrong
