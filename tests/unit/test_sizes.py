"""The module and class sizes (``[tool.sizes]`` in pyproject.toml, tools/check_sizes.py, run by
``make lint``): the code keeps them, and the checker finds an oversize module or class planted
in a copy of the sources, and an allow-list entry that has gone stale."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.repo_tools import load_tool

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "tools" / "check_sizes.py"
sizes = load_tool("check_sizes")


@pytest.fixture(scope="module")
def limits():
    return sizes.load_limits(REPO)


@pytest.fixture(scope="module")
def sources(limits) -> dict[str, str]:
    """Every module the check reads, by its path."""
    paths = sizes.module_paths(REPO, limits)
    return {path: (REPO / path).read_text() for path in paths}


def a_class(name: str, lines: int) -> str:
    """A class of exactly ``lines`` lines (its decorator included)."""
    body = [f"    x{i} = {i}" for i in range(lines - 2)]
    return "\n".join(["@dataclass", f"class {name}:", *body]) + "\n"


def test_the_code_keeps_the_sizes(sources, limits):
    assert sizes.problems(sources, limits) == []
    # And the checker did read every folder it guards
    assert {
        "shared/snapledger/core/lineage.py",
        "functions/query.py",
        "jobs/args.py",
        "infra/stack.py",
        "tools/check_layers.py",
        "tools/check_sizes.py",
        "bench/bench_gc.py",
    } <= set(sources)
    assert (limits.module_lines, limits.class_lines) == (400, 250)


def test_every_allowed_entry_gives_its_reason(limits):
    assert all(len(reason.split()) >= 4 for reason in limits.allow.values()), limits.allow


def test_a_planted_oversize_module_fails_naming_it(sources, limits):
    code = "\n".join(f"x{i} = {i}" for i in range(401))
    found = sizes.problems({**sources, "shared/snapledger/core/big.py": code}, limits)
    assert found == [
        "shared/snapledger/core/big.py: module of 401 lines, over the 400 allowed: split it where "
        "a part names something real, else add it to [tool.sizes.allow] in pyproject.toml with "
        "the reason no split does"
    ]
    # 400 lines is within
    within = "\n".join(f"x{i} = {i}" for i in range(400))
    assert sizes.problems({**sources, "shared/snapledger/core/big.py": within}, limits) == []


def test_a_planted_oversize_class_fails_decorator_and_nesting_counted(sources, limits):
    planted = {**sources, "bench/big.py": a_class("Big", 251), "jobs/ok.py": a_class("Ok", 250)}
    assert sizes.problems(planted, limits) == [
        "bench/big.py::Big: class of 251 lines, over the 250 allowed: split it where a part names "
        "something real, else add it to [tool.sizes.allow] in pyproject.toml with the reason no "
        "split does"
    ]
    nested = "class Outer:\n" + "".join(
        "    " + line + "\n" for line in a_class("Inner", 251).splitlines()
    )
    found = sizes.problems({**sources, "infra/nested.py": nested}, limits)
    assert [line.split(": ", 1)[0] for line in found] == [
        "infra/nested.py::Outer",
        "infra/nested.py::Outer.Inner",
    ]


def test_an_allowed_oversize_passes_and_a_stale_or_reasonless_entry_fails(sources, limits):
    planted = {**sources, "bench/big.py": a_class("Big", 251)}
    allowing = replace(limits, allow={**limits.allow, "bench/big.py::Big": "one state machine"})
    assert sizes.problems(planted, allowing) == []
    # The class shrinks: its entry is stale
    shrunk = {**sources, "bench/big.py": a_class("Big", 250)}
    assert sizes.problems(shrunk, allowing) == [
        "bench/big.py::Big: in [tool.sizes.allow] but 250 lines is within the 250 allowed: "
        "remove the entry"
    ]
    # The class is gone, or the entry gives no reason
    assert sizes.problems(sources, allowing) == [
        "bench/big.py::Big: in [tool.sizes.allow] but no such module or class: remove the entry"
    ]
    reasonless = replace(limits, allow={**limits.allow, "bench/big.py::Big": " "})
    assert sizes.problems(planted, reasonless) == [
        "bench/big.py::Big: [tool.sizes.allow] gives no reason: say why no split names "
        "something real"
    ]


def test_an_oversize_planted_in_a_copy_of_the_tree_fails_the_check(tmp_path, limits):
    # Given a copy of the sources and the limits, as `make lint` checks them
    for folder in limits.roots:
        shutil.copytree(
            REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    command = [sys.executable, str(CHECKER), "--root", str(tmp_path)]
    kept = subprocess.run(command, capture_output=True, text=True, check=False)
    assert kept.returncode == 0, kept.stderr
    # When a module grows past 400 lines and a class past 250
    lineage = tmp_path / "shared" / "snapledger" / "core" / "lineage.py"
    lineage.write_text(lineage.read_text() + "\n" * 400 + a_class("Grown", 251))
    broken = subprocess.run(command, capture_output=True, text=True, check=False)
    # Then the check fails, naming both
    assert broken.returncode == 1
    assert "shared/snapledger/core/lineage.py: module of" in broken.stderr
    assert "shared/snapledger/core/lineage.py::Grown: class of 251 lines" in broken.stderr


def test_make_lint_runs_the_size_check():
    dry_run = subprocess.run(
        ["make", "-n", "lint"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert "tools/check_sizes.py" in dry_run.stdout


def test_the_readme_states_the_limits(limits):
    readme = (REPO / "README.md").read_text()
    assert (
        f"a module at most {limits.module_lines} lines, a class {limits.class_lines}, "
        "unless allow-listed with its reason"
    ) in readme
