"""The handler bench's import plan: every module the handler loads, on its own side."""

from __future__ import annotations

import json
import shutil

import pytest

from bench.bench_handlers import (
    collaborators,
    import_plan,
    instruction_overhead,
    library_import_names,
)


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
