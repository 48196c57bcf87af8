"""The handler bench's import plan: every module the handler loads, on its own side."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from bench.bench_handlers import (
    ENV,
    REPO_ROOT,
    collaborators,
    import_plan,
    instruction_overhead,
    lambda_python,
    library_import_names,
)
from infra.bytecode import LAMBDA_PYTHON, lambda_interpreter

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def test_the_plan_counts_modules_loaded_through_importlib_as_libraries():
    # Given query's handler, which reaches pydantic's BaseModel through pydantic's lazy
    # ``__getattr__`` (an ``importlib.import_module`` that ``-X importtime`` does not report)
    # When its import plan is made
    plan = import_plan("query", library_import_names())
    # Then those modules are the libraries' cost, not snapledger's
    assert {"pydantic.main", "pydantic.fields"} <= set(plan["libraries"])
    assert all(m.startswith("snapledger") for m in plan["snapledger"])
    # And each module is planned once
    everything = plan["libraries"] + plan["snapledger"]
    assert len(everything) == len(set(everything))
    assert plan["handler"] == "functions.query"


def test_first_use_builds_the_collaborators_the_function_asks_for():
    # Given query's plan: its entrypoint reads the ledger, the stream logs and the jobs
    plan = import_plan("query", library_import_names())
    # When the collaborators its first invocations build are listed
    used = collaborators(plan)
    # Then they are the ones its entrypoint names, and not those it never asks for
    assert {"ledger", "streams", "jobs", "clock"} <= set(used)
    assert not {"runner", "store", "gc_shards", "registration_queue"} & set(used)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind counts the instructions")
def test_the_instruction_ratio_is_what_the_handler_adds_to_its_libraries(tmp_path):
    # Given a plan whose "libraries" are json and whose "handler" is email.message
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"libraries": ["json"], "handler": "email.message"}))
    # When the instructions are counted
    ratio = instruction_overhead(plan)
    # Then the handler's import shows as a ratio above 1 (email.message loads far more
    # than json), the same on a second count (instructions do not move with the load)
    assert ratio is not None and ratio > 1.5
    assert instruction_overhead(plan) == pytest.approx(ratio, rel=0.01)


@pytest.mark.skipif(lambda_interpreter() is None, reason=f"no Python {LAMBDA_PYTHON} here")
def test_the_handlers_run_on_the_lambda_runtimes_python_with_the_locked_libraries(tmp_path):
    # Given the Lambda runtime's Python on this machine
    # When the bench makes the children's interpreter
    python, described = lambda_python(tmp_path)
    # Then it is that version, with the runtime dependencies at the versions pyproject pins
    # (the lock's), and snapledger's handlers import under it
    script = (
        "import sys, importlib.metadata as m, functions.query\n"
        "print('%d.%d' % sys.version_info[:2], m.version('pydantic'), m.version('boto3'))"
    )
    done = subprocess.run(
        [python, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ENV, "PYTHONPATH": str(REPO_ROOT / "shared")},
        cwd=REPO_ROOT,
    )
    pins = dict(line.split("==") for line in PROJECT["project"]["dependencies"] if "==" in line)
    assert done.stdout.split() == [LAMBDA_PYTHON, pins["pydantic"], pins["boto3"]]
    assert described.startswith(LAMBDA_PYTHON)
    # And a second call reuses the environment rather than making it again
    made = (Path(python).parent.parent / "requirements.txt").stat().st_mtime_ns
    assert lambda_python(tmp_path)[0] == python
    assert (Path(python).parent.parent / "requirements.txt").stat().st_mtime_ns == made
