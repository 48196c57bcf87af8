"""What a handler module pulls in: no Spark, Arrow or workstation-only code; no boto3 import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functions.support import POWERTOOLS_ENV

FUNCTIONS_DIR = Path(__file__).resolve().parents[2] / "functions"
HANDLER_MODULES = sorted(p.stem for p in FUNCTIONS_DIR.glob("*.py") if not p.stem.startswith("_"))
# Never in a function: the data plane (pyspark, and pyarrow, which Lambda does not ship),
# the parts of snapledger that the CDK app leaves out of the function code, test tools.
FORBIDDEN = (
    "pyspark",
    "pyarrow",
    "snapledger.local",
    "snapledger.cli",
    "snapledger.client",
    "moto",
    "infra",
    "jobs",
)


# What each handler's import must not build, on top of FORBIDDEN: another function's
# services (a cold start pays only for what its function uses; issue 29). The Restate
# documents (``layouts.restate``: pydantic models) only where Restate snapshots are read.
NOT_USED_BY = {
    "gc": ("snapledger.services.launch",),
    "job_state": (
        "snapledger.services.gc",
        "snapledger.services.gc_lineage",
        "snapledger.services.registration",
        "snapledger.services.launch",
        "snapledger.layouts.restate",
        "snapledger.core.manifest_rules",
        # nor the ports of objects and queues (snapledger.ports loads a family when used)
        "snapledger.ports.objects",
        "snapledger.ports.queues",
    ),
    "launch": (
        "snapledger.services.gc",
        "snapledger.services.gc_lineage",
        "snapledger.services.registration",
        "snapledger.layouts.restate",
        "snapledger.core.manifest_rules",
    ),
    "ledger_events": ("snapledger.services", "snapledger.core", "snapledger.layouts.restate"),
    "query": (
        # query reads: neither the deciders nor the commands they take
        "snapledger.core.lineage",
        "snapledger.models.commands",
        "snapledger.services.commands",
        "snapledger.services.generations",
        "snapledger.services.gc",
        "snapledger.services.gc_lineage",
        "snapledger.services.registration",
        "snapledger.services.launch",
        "snapledger.services.restate_heal",
        "snapledger.layouts.restate",
        "snapledger.core.manifest_rules",
        "snapledger.ports.jobs",
        "snapledger.ports.objects",
        "snapledger.ports.queues",
    ),
    "register": (
        "snapledger.services.gc",
        "snapledger.services.gc_lineage",
        "snapledger.services.launch",
        "snapledger.services.job_state",
        "snapledger.services.restate_heal",
    ),
    "track_changelog": (
        "snapledger.services.gc",
        "snapledger.services.gc_lineage",
        "snapledger.services.registration",
        "snapledger.layouts.restate",
        "snapledger.core.manifest_rules",
    ),
}

# A function whose trigger delivers the table's own items decodes them with the adapters.
EVENT_DECODERS = {
    "ledger_events": (
        "snapledger.adapters.dynamodb_codec",
        "snapledger.adapters.dynamodb_stream_records",
        "snapledger.adapters.table_definition",
    )
}


def test_every_handler_declares_what_it_does_not_use():
    assert set(NOT_USED_BY) == set(HANDLER_MODULES)


def test_the_handlers_are_found():
    assert {"register", "query"} <= set(HANDLER_MODULES)


@pytest.mark.parametrize("name", HANDLER_MODULES)
def test_importing_a_handler_pulls_in_no_forbidden_module(name):
    # Given a fresh interpreter with the function's environment
    # When the handler module is imported
    modules = _modules_after_importing(name)
    # Then it defines a handler and none of the forbidden modules was imported
    assert f"functions.{name}" in modules
    refused = (*FORBIDDEN, *NOT_USED_BY.get(name, ()))
    loaded = [m for m in modules if any(m == f or m.startswith(f + ".") for f in refused)]
    assert loaded == []


@pytest.mark.parametrize("name", HANDLER_MODULES)
def test_importing_a_handler_loads_no_adapter(name):
    # The runtime builds each adapter the first time a function asks for it (issue 29):
    # the import loads none, and an invocation loads the ones it uses.
    modules = _modules_after_importing(name)
    adapters = {m for m in modules if m.startswith("snapledger.adapters.")}
    assert adapters <= {"snapledger.adapters.access_denied", *EVENT_DECODERS.get(name, ())}


@pytest.mark.parametrize("name", HANDLER_MODULES)
def test_a_handler_file_builds_no_client_of_its_own(name):
    # Handlers get their clients from snapledger.runtime: boto3 is never imported here.
    tree = ast.parse((FUNCTIONS_DIR / f"{name}.py").read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in ("boto3", "botocore")}
    handlers = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "handler"]
    assert len(handlers) == 1


def _modules_after_importing(name: str) -> list[str]:
    """``sys.modules`` of a fresh interpreter, with a function's environment, once it has
    imported the handler ``functions.<name>``."""
    script = f"import json, sys; import functions.{name}; print(json.dumps(sorted(sys.modules)))"
    env = {**_base_env(), **POWERTOOLS_ENV}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(done.stdout)


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")}
