"""docs/multi-region.md names today's code: every module it says would change exists, and
every section of the other docs it cites is there."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "multi-region.md").read_text()


def test_every_module_the_design_would_change_exists() -> None:
    table = DOC.split("## What in today's code would change", 1)[1]
    paths = re.findall(r"`((?:core|services|adapters|entrypoints|models)/[\w/]+\.py)`", table)
    assert len(paths) >= 8
    missing = [p for p in paths if not (REPO / "shared" / "snapledger" / p).is_file()]
    assert missing == []


def test_every_cited_section_exists() -> None:
    cited = re.findall(r"`docs/(\w+\.md)`,\s+\"([^\"]+)\"", DOC)
    assert len(cited) >= 4
    for doc, spaced in cited:
        section = " ".join(spaced.split())  # a citation may wrap across lines
        headings = re.findall(r"^#+ (.+)$", (REPO / "docs" / doc).read_text(), re.M)
        assert any(h.startswith(section) for h in headings), (doc, section)
