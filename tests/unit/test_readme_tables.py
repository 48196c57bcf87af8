"""README.md's layout table names every folder of the repository and every package of
snapledger, and its documents table links every page of docs/."""

from __future__ import annotations

import re
import subprocess

from tests.repo_tools import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _tracked_folders() -> set[str]:
    files = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return {f.split("/", 1)[0] for f in files if "/" in f and not f.startswith(".")}


def test_the_layout_table_names_every_top_level_folder() -> None:
    rows = set(re.findall(r"^\| `([^`/]+)/` \|", _section("Layout"), re.M))
    assert _tracked_folders() - rows == set(), "add a row for each to README's Layout table"


def test_the_layout_table_names_every_package_of_snapledger() -> None:
    rows = set(re.findall(r"^\| `shared/snapledger/([^`/]+)/` \|", _section("Layout"), re.M))
    packages = {p.parent.name for p in (REPO / "shared" / "snapledger").glob("*/__init__.py")}
    assert packages - rows == set(), "add a row for each to README's Layout table"


def test_the_documents_table_links_every_page_of_docs() -> None:
    linked = set(re.findall(r"^\| \[docs/([^\]]+\.md)\]", _section("How it works"), re.M))
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages - linked == set(), "add a row for each to README's How it works table"
