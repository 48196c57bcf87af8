"""README says how long ``make test`` takes and how to run a part of it, and what it says
holds: the Makefile hands PYTEST_ARGS to pytest, and the markers it names are pyproject's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme() -> str:
    return " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())


def test_readme_says_how_long_make_test_takes_and_how_to_run_a_part():
    readme = _readme()
    assert re.search(r"`make test` takes about \d+ minutes", readme)
    assert 'make test PYTEST_ARGS="tests/restate"' in readme
    assert (ROOT / "tests" / "restate").is_dir()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [recipe] = re.findall(r"^test:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe.endswith("pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)")
    # ...and runs the suite in the worker processes README names, one with TEST_WORKERS=0
    assert re.search(r"^TEST_WORKERS \?= 2$", makefile, re.MULTILINE)
    assert "in 2 test processes" in readme and "make test TEST_WORKERS=0" in readme


def test_the_markers_readme_names_are_the_ones_pyproject_declares():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = {m.split(":")[0] for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]}
    sentence = _readme().split("or by marker", 1)[1].split("pyproject.toml", 1)[0]
    named = set(re.findall(r"`(\w+)`", sentence))
    assert named == declared
    for example in re.findall(r"-m \"([^\"]+)\"", sentence):
        assert set(re.findall(r"\w+", example)) - {"not", "and", "or"} <= declared
