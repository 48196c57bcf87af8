"""Output discipline with --local: the functions' logs never reach the CLI's stdout, so
``--json`` is one JSON document; the user chooses a file or stderr for them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.ddblocal, pytest.mark.slow]

#: A well-formed snapshot id no lineage has; ``--by`` past the functions' 256 characters,
#: which only the function refuses (and logs, at WARNING).
SNAPSHOT_ID = "01J00000000000000000000000"
REFUSED_BY_THE_FUNCTION = ("hold", "orders", "0", SNAPSHOT_ID, "--by", "x" * 300)


def snapledger(*argv: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI in its own process: stdout is the real one, as a script sees it."""
    return subprocess.run(
        [sys.executable, "-m", "snapledger.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_refusal_logged_by_the_function_leaves_json_output_one_document(tmp_path):
    home = tmp_path / "home"
    ran = snapledger("--local", "--home", str(home), "--json", *REFUSED_BY_THE_FUNCTION)
    # The function refused it (a bad argument: exit 2) and its answer is all of stdout
    assert ran.returncode == 2, ran.stderr
    answer = json.loads(ran.stdout)
    assert answer["error"] == "validation"
    assert [f["field"] for f in answer["fields"]] == ["by"]
    # and the function's log line went to the home folder's functions.log
    assert "refused a malformed gc request" not in ran.stderr
    [line] = (home / "functions.log").read_text().splitlines()
    assert json.loads(line)["message"] == "refused a malformed gc request"


def test_function_logs_go_to_stderr_or_a_file_as_the_user_chooses(tmp_path):
    home, log = str(tmp_path / "home"), tmp_path / "logs" / "fn.log"
    on_stderr = snapledger(
        "--local", "--home", home, "--function-logs", "-", "--json", *REFUSED_BY_THE_FUNCTION
    )
    assert json.loads(on_stderr.stdout)["error"] == "validation"
    assert "refused a malformed gc request" in on_stderr.stderr
    in_file = snapledger(
        "--local", "--home", home, "--function-logs", str(log), "--json", *REFUSED_BY_THE_FUNCTION
    )
    assert json.loads(in_file.stdout)["error"] == "validation"
    assert "refused a malformed gc request" not in in_file.stderr
    assert "refused a malformed gc request" in log.read_text()
