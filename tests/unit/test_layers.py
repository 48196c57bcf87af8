"""The layer contract (``[tool.layers]`` in pyproject.toml, tools/check_layers.py, run by
``make lint``): the code keeps it, and the checker finds each kind of back-import planted
in an otherwise unchanged copy of the sources, so the guard cannot quietly stop guarding."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from infra import names
from infra.packaging import stage_function_code

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "tools" / "check_layers.py"


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_layers", CHECKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


layers = _load_checker()


@pytest.fixture(scope="module")
def sources() -> dict[str, str]:
    return layers.module_sources(REPO)


@pytest.fixture(scope="module")
def contract():
    return layers.load_contract(REPO)


def planted(sources: dict[str, str], module: str, code: str) -> dict[str, str]:
    """``sources`` with ``code`` appended to ``module``."""
    assert module in sources, module
    return {**sources, module: sources[module] + "\n" + code + "\n"}


def test_the_code_keeps_the_layer_contract(sources, contract):
    assert layers.violations(sources, contract) == []
    # And the checker did read the packages it guards, the functions among them
    assert {"functions.query", "snapledger.core.lineage", "snapledger.client.control"} <= set(
        sources
    )


@pytest.mark.parametrize(
    ("module", "code", "said"),
    [
        # core, services and entrypoints never import an adapter
        (
            "snapledger.core.coverage",
            "import snapledger.adapters.dynamodb_ledger",
            "imports snapledger.adapters.dynamodb_ledger, which snapledger.core",
        ),
        (
            "snapledger.services.queries",
            "from snapledger.adapters.dynamodb_codec import plain",
            "imports snapledger.adapters.dynamodb_codec, which snapledger.core",
        ),
        # a lazy import inside a function counts too
        (
            "snapledger.entrypoints.query",
            "def f():\n    from snapledger.adapters import dynamodb_ledger",
            "imports snapledger.adapters.dynamodb_ledger",
        ),
        # so does a relative one, and one hidden behind importlib
        (
            "snapledger.core.coverage",
            "from ..adapters import object_store",
            "imports snapledger.adapters.object_store",
        ),
        (
            "snapledger.core.coverage",
            "import importlib\nimportlib.import_module('snapledger.adapters.dynamodb_jobs')",
            "imports snapledger.adapters.dynamodb_jobs",
        ),
        # the layers: functions > entrypoints > services > core > models
        (
            "snapledger.models.ledger",
            "from snapledger.core import lineage",
            "(snapledger.core is above snapledger.models)",
        ),
        (
            "snapledger.core.lineage",
            "from snapledger.services import queries",
            "(snapledger.services is above snapledger.core)",
        ),
        (
            "snapledger.services.queries",
            "from snapledger.entrypoints import answers",
            "(snapledger.entrypoints is above snapledger.services)",
        ),
        (
            "snapledger.entrypoints.answers",
            "import functions.query",
            "(functions is above snapledger.entrypoints)",
        ),
        # the client is below the CLI and the local runtime
        (
            "snapledger.client.control",
            "from snapledger.cli.main import cli",
            "imports snapledger.cli.main, which snapledger.client never import",
        ),
        (
            "snapledger.client.control",
            "def f():\n    from snapledger.local.transport import LocalTransport",
            "imports snapledger.local.transport, which snapledger.client never import",
        ),
        # what the Lambda package leaves out is imported by nothing it ships
        (
            "snapledger.adapters.object_store",
            "from snapledger.cli import pictures",
            "imports snapledger.cli.pictures, which functions, snapledger never import",
        ),
        (
            "functions.query",
            "import snapledger.client",
            "imports snapledger.client, which functions, snapledger never import",
        ),
    ],
)
def test_a_planted_back_import_is_found(sources, contract, module, code, said):
    found = layers.violations(planted(sources, module, code), contract)
    assert len(found) >= 1
    assert all(line.startswith(f"{module}:") for line in found)
    assert any(said in line for line in found), found


def test_an_ignored_pair_is_allowed_and_only_that_pair(sources, contract):
    code = "import snapledger.adapters.dynamodb_ledger"
    table = {
        "layers": list(contract.layers),
        "forbidden": [
            {"from": list(f), "unless": list(u), "to": list(t)} for f, u, t in contract.forbidden
        ],
        "ignore": ["snapledger.core.coverage -> snapledger.adapters.dynamodb_ledger"],
    }
    allowing = layers.Contract.from_table(table)
    assert layers.violations(planted(sources, "snapledger.core.coverage", code), allowing) == []
    assert layers.violations(planted(sources, "snapledger.core.lineage", code), allowing) != []


def test_the_checker_fails_on_a_planted_back_import_in_a_copy_of_the_tree(tmp_path):
    # Given a copy of the sources and the contract, as `make lint` checks them
    for package_dir in layers.PACKAGE_DIRS.values():
        shutil.copytree(REPO / package_dir, tmp_path / package_dir)
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    command = [sys.executable, str(CHECKER), "--root", str(tmp_path)]
    kept = subprocess.run(command, capture_output=True, text=True, check=False)
    assert kept.returncode == 0, kept.stderr
    # When a core module imports an adapter
    core = tmp_path / "shared" / "snapledger" / "core" / "coverage.py"
    core.write_text(core.read_text() + "\nimport snapledger.adapters.dynamodb_ledger\n")
    broken = subprocess.run(command, capture_output=True, text=True, check=False)
    # Then the check fails, naming the import
    assert broken.returncode == 1
    assert "snapledger.core.coverage" in broken.stderr
    assert "imports snapledger.adapters.dynamodb_ledger" in broken.stderr


def test_make_lint_runs_the_layer_check():
    dry_run = subprocess.run(
        ["make", "-n", "lint"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert "tools/check_layers.py" in dry_run.stdout


def test_the_workstation_packages_are_the_ones_the_lambda_package_leaves_out(contract):
    excluded = {f"snapledger.{name}" for name in names.LAMBDA_EXCLUDED_SUBPACKAGES}
    guarded = [(f, set(u)) for f, u, t in contract.forbidden if set(t) == excluded]
    assert guarded == [(("functions", "snapledger"), excluded)]


def test_pictures_and_matplotlib_are_not_in_the_lambda_package():
    out = stage_function_code(
        names.FUNCTIONS_DIR, names.SHARED_PACKAGE_DIR, names.LAMBDA_EXCLUDED_SUBPACKAGES
    )
    assert (names.SHARED_PACKAGE_DIR / "cli" / "pictures" / "__init__.py").is_file()
    assert [p for p in out.rglob("*") if "pictures" in p.parts] == []
    assert [p for p in out.rglob("*") if p.name.startswith(("matplotlib", "numpy"))] == []
    drawing = [p for p in out.rglob("*.py") if "matplotlib" in p.read_text()]
    assert drawing == [], "the functions' code must not import matplotlib (the cli extra's)"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("matplotlib")]
    assert [d for d in project["optional-dependencies"]["cli"] if d.startswith("matplotlib")]
