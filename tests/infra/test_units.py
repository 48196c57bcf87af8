"""The app's building blocks, without synthesizing the whole stack."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from infra import names
from infra.bytecode import LAMBDA_PYTHON
from infra.config import StackConfig
from infra.constructs.console_events import console_event_schema, load_console_events
from infra.constructs.ledger_table import LedgerTable
from infra.packaging import stage_function_code, stage_job_package, stage_python_package
from snapledger.layout import segment_key, snapshot_prefix


def test_function_code_holds_functions_and_snapledger_without_workstation_parts() -> None:
    # When the function code is staged from the repository
    out = stage_function_code(
        names.FUNCTIONS_DIR, names.SHARED_PACKAGE_DIR, names.LAMBDA_EXCLUDED_SUBPACKAGES
    )
    # Then it has both packages at its top, as Lambda imports them
    assert (out / "functions" / "__init__.py").is_file()
    assert (out / "snapledger" / "__init__.py").is_file()
    assert (out / "snapledger" / "adapters" / "table_definition.py").is_file()
    # And none of the workstation-only sub-packages, and no bytecode of the working tree's
    # Python: only the Lambda runtime's, compiled for it (infra/bytecode.py)
    for excluded in names.LAMBDA_EXCLUDED_SUBPACKAGES:
        assert not (out / "snapledger" / excluded).exists()
    runtime_tag = "cpython-" + LAMBDA_PYTHON.replace(".", "")
    assert [p for p in out.rglob("*.pyc") if f".{runtime_tag}." not in p.name] == []


def test_jobs_zip_directory_puts_the_package_at_its_root() -> None:
    out = stage_python_package(names.JOBS_DIR)
    assert [p.name for p in out.iterdir()] == ["jobs"]
    assert (out / "jobs" / "__init__.py").is_file()


def test_job_zip_carries_the_snapledger_modules_the_jobs_share() -> None:
    out = _job_package()
    assert sorted(p.name for p in out.iterdir()) == ["jobs", "snapledger"]
    shared = out / "snapledger"
    shipped = sorted(str(p.relative_to(shared)) for p in shared.rglob("*.py"))
    assert shipped == sorted(names.JOB_SHARED_MODULES)


def test_every_snapledger_module_the_jobs_import_is_in_the_job_zip() -> None:
    imported: set[str] = set()
    for path in names.JOBS_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("snapledger"):
                imported.add(node.module or "")
    shipped = {
        "snapledger." + m.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for m in names.JOB_SHARED_MODULES
    }
    assert imported and imported <= shipped, imported - shipped


def test_job_zip_refuses_a_shared_module_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"core/nope\.py"):
        stage_job_package(names.JOBS_DIR, names.SHARED_PACKAGE_DIR, ("core/nope.py",))


def test_stage_rejects_a_missing_package(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        stage_python_package(tmp_path)


def test_console_events_are_named_function_dash_example(tmp_path: Path) -> None:
    # Given example files, one with dashes in its example name
    (tmp_path / "launch-restore-latest.json").write_text('{"action": "restore"}')
    (tmp_path / "gc-dry-run.json").write_text('{"dry_run": true}')
    (tmp_path / "README.md").write_text("not an event")
    # When they are loaded
    events = load_console_events(tmp_path, ("launch", "gc"))
    # Then function and example name split at the first dash
    assert [(e.function, e.name, e.body) for e in events] == [
        ("gc", "dry-run", {"dry_run": True}),
        ("launch", "restore-latest", {"action": "restore"}),
    ]


def test_console_event_for_an_unknown_function_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "lunch-restore.json").write_text("{}")
    with pytest.raises(ValueError, match="lunch"):
        load_console_events(tmp_path, ("launch",))


def test_console_event_schema_is_what_the_lambda_console_reads() -> None:
    schema = console_event_schema({"dry-run": {"dry_run": True, "limit": 3}})
    assert schema["openapi"] == "3.0.0"
    assert schema["components"]["examples"] == {"dry-run": {"value": {"dry_run": True, "limit": 3}}}
    properties = schema["components"]["schemas"]["Event"]["properties"]
    assert properties == {"dry_run": {"type": "boolean"}, "limit": {"type": "integer"}}
    json.dumps(schema)  # serializable as the schema's Content


def test_config_reads_context_strings_and_defaults() -> None:
    app = App(
        context={
            names.CTX_DELETION_PROTECTION: "false",
            names.CTX_RESERVED_CONCURRENCY: "no",
            names.CTX_EMR_MAX_VCPU: "8",
        }
    )
    config = StackConfig.from_context(app.node)
    assert config.deletion_protection is False
    assert config.reserved_concurrency is False
    assert config.emr_max_vcpu == 8
    assert config.emr_max_memory_gb == StackConfig().emr_max_memory_gb
    assert StackConfig.from_context(App().node) == StackConfig()


def test_config_rejects_a_bad_flag() -> None:
    with pytest.raises(ValueError, match="true or false"):
        StackConfig.from_context(App(context={names.CTX_DELETION_PROTECTION: "maybe"}).node)


def test_test_stacks_can_drop_table_deletion_protection() -> None:
    # Given a throwaway stack with deletion protection off
    stack = Stack(App(), "Throwaway")
    LedgerTable(stack, "Ledger", deletion_protection=False)
    # Then the table can be deleted with the stack
    Template.from_stack(stack).has_resource(
        "AWS::DynamoDB::Table",
        {"Properties": {"DeletionProtectionEnabled": False}, "DeletionPolicy": "Delete"},
    )


# --- what the packaged code may import -------------------------------------------------------

# The Lambda runtime brings boto3; AWS's Powertools layer is built from
# ``aws-lambda-powertools[all]`` (pydantic v2, pydantic-settings, aws-xray-sdk, ...).
LAMBDA_PROVIDED = {
    "boto3",
    "botocore",
    "aws_lambda_powertools",
    "aws_xray_sdk",
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "typing_extensions",
    "typing_inspection",
    "annotated_types",
    "jmespath",
    "fastjsonschema",
}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _job_package() -> Path:
    return stage_job_package(names.JOBS_DIR, names.SHARED_PACKAGE_DIR, names.JOB_SHARED_MODULES)


def _is_optional_import(node: ast.Try) -> bool:
    """``try: import x`` / ``except ImportError``: the code runs without ``x``."""
    caught = {
        name.id
        for handler in node.handlers
        if handler.type is not None
        for name in ast.walk(handler.type)
        if isinstance(name, ast.Name)
    }
    return bool(caught & {"ImportError", "ModuleNotFoundError"})


def _runtime_imports(root: Path) -> dict[str, set[str]]:
    """Top-level module -> files importing it at run time (``if TYPE_CHECKING`` and
    optional imports, those guarded by ``except ImportError``, skipped)."""
    found: dict[str, set[str]] = {}

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit(other, where)
                continue
            if isinstance(child, ast.Try) and _is_optional_import(child):
                for other in [*child.handlers, *child.orelse, *child.finalbody]:
                    visit(other, where)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.setdefault(alias.name.split(".")[0], set()).add(where)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.setdefault(child.module.split(".")[0], set()).add(where)
            visit(child, where)

    for path in root.rglob("*.py"):
        visit(ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(root)))
    return found


def test_function_code_imports_only_what_lambda_provides() -> None:
    # Given the function code asset (it ships no third-party packages)
    out = stage_function_code(
        names.FUNCTIONS_DIR, names.SHARED_PACKAGE_DIR, names.LAMBDA_EXCLUDED_SUBPACKAGES
    )
    allowed = set(sys.stdlib_module_names) | {"functions", "snapledger"} | LAMBDA_PROVIDED
    # Then everything it imports is stdlib, itself, the runtime's boto3 or the layer's
    foreign = {m: sorted(files) for m, files in _runtime_imports(out).items() if m not in allowed}
    assert foreign == {}, (
        "not available in Lambda: ship it, or keep the module out of the function code "
        "(infra/names.py: LAMBDA_EXCLUDED_SUBPACKAGES)"
    )


def test_function_code_ships_every_snapledger_module_it_imports() -> None:
    # Given the function code asset, without the workstation's packages
    out = stage_function_code(
        names.FUNCTIONS_DIR, names.SHARED_PACKAGE_DIR, names.LAMBDA_EXCLUDED_SUBPACKAGES
    )
    # Then every snapledger module its code imports, at module level or lazily (the
    # runtime builds the layout catalog, snapledger.strategies, when first asked), is in it
    imported = set()
    for path in out.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
    ours = {m for m in imported if m.split(".")[0] == "snapledger"}
    missing = sorted(
        m
        for m in ours
        if not (out / f"{m.replace('.', '/')}.py").exists()
        and not (out / m.replace(".", "/") / "__init__.py").exists()
    )
    assert "snapledger.strategies.catalog" in ours
    assert missing == []


def test_job_package_imports_only_pyspark_and_the_standard_library() -> None:
    # A --py-files zip cannot carry compiled packages (DESIGN.md, "Data plane").
    allowed = set(sys.stdlib_module_names) | {"jobs", "pyspark", "py4j", "snapledger"}
    foreign = {
        m: sorted(files)
        for m, files in _runtime_imports(_job_package()).items()
        if m not in allowed
    }
    assert foreign == {}


def test_staging_prefix_is_the_jobs_scratch_space() -> None:
    from jobs.layout import staging_prefix

    assert staging_prefix("job", "1").startswith(names.STAGING_PREFIX)


def test_notification_filters_match_the_layout() -> None:
    manifest = snapshot_prefix("orders", 3, 42, "01JW8Z3K9Q7N4M2P6R8T0V2X4Y") + "_manifest.json"
    assert manifest.startswith(names.SNAPSHOTS_PREFIX)
    assert manifest.endswith(names.MANIFEST_SUFFIX)
    segment = segment_key("orders", 3, 1, 99)
    assert segment.startswith(names.CHANGELOG_PREFIX)
    assert segment.endswith(names.CHANGELOG_SUFFIX)


def test_the_manual_zip_in_jobs_md_carries_the_shared_modules() -> None:
    text = (names.REPO_ROOT / "docs" / "jobs.md").read_text()
    listed = re.findall(r"snapledger/([\w/]+\.py)", text.split("zip -r jobs.zip", 1)[1][:600])
    assert sorted(listed) == sorted(names.JOB_SHARED_MODULES)
