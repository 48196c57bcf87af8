"""Every command README's CLI block shows is one the CLI accepts and runs, as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from snapledger.cli import app as cli_app
from snapledger.cli import confirm
from tests.cli.support import Recording, run_cli

README = Path(__file__).resolve().parents[2] / "README.md"
#: What the stand-in functions answer: enough for each command to finish.
ANSWERS = {
    "policy_get": {"policy": {"min_count": 3, "min_age_hours": 24.0, "min_generations": 1}},
    "gc": {"report": {"dry_run": True, "lineages": [], "counts": {}}},
    "restore": {"job_id": "restore-1", "state": "SUBMITTED"},
    "bootstrap": {"job_id": "bootstrap-1", "state": "SUBMITTED"},
    "job": {"job": {"job_id": "restore-1", "state": "SUCCESS", "stream": "orders"}},
    "latest": {"head": {"stream": "orders", "partition": 3, "latest_snapshot_id": None}},
    "list": {"snapshots": []},
}


def _commands() -> list[str]:
    section = README.read_text().split("**From the CLI**", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line.startswith("snapledger ") and "..." not in line]


def _argv(line: str) -> list[str]:
    line = re.sub(r"\[([^\]]*)\]", r"\1", line)  # an optional part, given
    line = line.replace("<snapshot-id>", "01JW8Z3K9Q7N4M2P6R8T0V2X4Y")
    return shlex.split(line)[1:]


def test_the_readme_shows_the_stream_snapshot_and_job_commands():
    shown = {" ".join(_argv(line)[:2]) for line in _commands()}
    assert {"stream-snapshot orders", "generation orders", "restore-stream orders"} <= shown
    assert "jobs wait" in shown


@pytest.mark.parametrize("line", _commands())
def test_each_readme_command_runs(line, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # where a picture a command draws goes
    recording = Recording(answers=ANSWERS)
    monkeypatch.setattr(cli_app, "_transport", lambda options: recording)
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    ran = run_cli(*_argv(line), input="y\n")
    assert ran.status == 0, (ran.out, ran.err)
    assert recording.sent or _argv(line) == ["--version"]  # it reached the functions
