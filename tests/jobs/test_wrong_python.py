"""A job started under a Python older than the jobs need stops at once and says why.

The entry point checks ``sys.version_info`` before it imports any of the job's modules
(which fail on import before 3.11, with an ImportError naming neither the Python needed
nor the setting to change). Checked three ways: the check itself with faked versions, the
entry point's top imports nothing the old interpreter lacks, and the real entry point run
by every older Python 3 found on this machine.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from jobs_support import pythons_older_than

from infra import names
from jobs.entrypoint import PYTHON_SETTINGS, REQUIRED_PYTHON, WRONG_PYTHON_EXIT, wrong_python
from snapledger.adapters import emr_serverless

ENTRYPOINT = names.JOBS_DIR / names.JOB_ENTRYPOINT_NAME
OLDER = pythons_older_than(REQUIRED_PYTHON)


@pytest.mark.parametrize("version", [(3, 7, 16), (3, 9, 18), (3, 10, 13)])
def test_an_older_python_is_refused_naming_the_one_needed_and_the_settings(version) -> None:
    problem = wrong_python((*version, "final", 0), "/usr/bin/python3")
    assert problem is not None
    assert "need Python 3.11 or newer" in problem
    assert f"this is Python {'.'.join(map(str, version))} (/usr/bin/python3)" in problem
    # The settings named are the ones the launcher ships (the job cannot import snapledger)
    assert PYTHON_SETTINGS == emr_serverless.PYTHON_SETTINGS
    for setting in PYTHON_SETTINGS:
        assert setting in problem
    assert "\n" not in problem


@pytest.mark.parametrize("version", [(3, 11, 0), (3, 12, 4), (3, 13, 1), (4, 0, 0)])
def test_the_release_pythons_are_accepted(version) -> None:
    assert wrong_python((*version, "final", 0), "/usr/bin/python3.11") is None


def test_nothing_before_the_check_needs_a_newer_python() -> None:
    # Given the entry point's statements before the check exits
    source = ENTRYPOINT.read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 7))  # its syntax is 3.7's
    body = tree.body
    check = next(
        i
        for i, node in enumerate(body)
        if isinstance(node, ast.If) and "WRONG_PYTHON_EXIT" in ast.unparse(node)
    )
    before = body[:check]
    # Then they import only sys and the annotations future (3.7+), and define constants and
    # the check function, whose annotations are never evaluated
    imports = [n for n in before if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [ast.unparse(n) for n in imports] == [
        "from __future__ import annotations",
        "import sys",
    ]
    allowed = ast.Expr | ast.Import | ast.ImportFrom | ast.Assign | ast.FunctionDef
    assert all(isinstance(n, allowed) for n in before)
    # And nothing after the check is reached by the old interpreter: the check exits
    exits = [n for n in ast.walk(body[check]) if isinstance(n, ast.Call)]
    assert any(ast.unparse(n.func) == "sys.exit" for n in exits)


@pytest.mark.skipif(not OLDER, reason="no Python older than 3.11 on this machine")
@pytest.mark.parametrize("version", sorted(OLDER) or ["none"])
def test_the_entry_point_run_by_an_older_python_stops_at_once(version) -> None:
    python = OLDER[version]
    done = subprocess.run(
        [python, "-I", str(ENTRYPOINT), "--kind", "bootstrap", "--root", "file:///nowhere"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == WRONG_PYTHON_EXIT, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: snapledger's Spark jobs need Python 3.11 or newer")
    assert f"this is Python {version}." in line
    assert done.stdout == ""


def test_this_python_passes_the_check() -> None:
    # The interpreter the tests run on (the project's, >= 3.11) is one the jobs accept
    assert wrong_python(tuple(sys.version_info), sys.executable) is None
