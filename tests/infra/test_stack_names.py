"""The names the client and the stack share (stack name, outputs, metric names) are declared
once, in snapledger/stack_names.py, and both import them from there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from infra import constants, names
from snapledger import stack_names
from snapledger.cli import app
from snapledger.client import control, transport
from snapledger.entrypoints import gc

REPO = Path(__file__).resolve().parents[2]
SHARED = {
    name: value
    for name, value in vars(stack_names).items()
    if name.isupper() and isinstance(value, str)
}
SOURCES = [*(REPO / "shared" / "snapledger").rglob("*.py"), *(REPO / "infra").rglob("*.py")]


def test_the_stack_and_the_client_read_the_same_declarations() -> None:
    # Then each side's name is the shared module's
    assert constants.STACK_NAME == transport.STACK_NAME == app.STACK_NAME == control.STACK_NAME
    assert constants.STACK_NAME == stack_names.STACK_NAME
    assert constants.OUTPUT_FUNCTION_PREFIX == transport.FUNCTION_OUTPUT_PREFIX
    assert constants.METRICS_NAMESPACE == stack_names.METRICS_NAMESPACE
    assert constants.SERVICE_NAME == stack_names.SERVICE_NAME
    assert (names.GC_STREAMS_FAILED_METRIC, names.GC_POINTERS_UNREPAIRED_METRIC) == (
        gc.STREAMS_FAILED_METRIC,
        gc.POINTERS_UNREPAIRED_METRIC,
    )
    assert names.GC_RESTATE_LATESTS_BROKEN_METRIC == gc.LATESTS_BROKEN_METRIC
    assert names.STUCK_JOBS_METRIC == gc.STUCK_JOBS_METRIC


@pytest.mark.parametrize("module", ["infra/constants.py", "infra/names.py"])
def test_infra_imports_the_shared_module(module: str) -> None:
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "snapledger"
        for alias in node.names
    }
    assert "stack_names" in imported


def test_no_shared_name_is_spelled_again_as_a_literal() -> None:
    # Given every source module of the package and of infra but the shared one
    found = []
    for path in SOURCES:
        if path.name == "stack_names.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # Then none assigns (or maps a setting to) a shared name's value as a literal
            if isinstance(node, ast.Assign | ast.Dict):
                values = node.values if isinstance(node, ast.Dict) else [node.value]
                for value in values:
                    if isinstance(value, ast.Constant) and value.value in (
                        stack_names.STACK_NAME,
                        *(v for k, v in SHARED.items() if k.endswith("_METRIC")),
                        stack_names.OUTPUT_FUNCTION_PREFIX,
                    ):
                        found.append(f"{path.relative_to(REPO)}:{value.lineno}")
    assert found == [], "use snapledger.stack_names instead"
