"""The layer contract (``[tool.layers]`` in pyproject.toml, tools/check_layers.py, run by
``make lint``): the code keeps it, and the checker finds each kind of back-import planted
in an otherwise unchanged copy of the sources, so the guard cannot quietly stop guarding."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from infra import names
from infra.packaging import stage_function_code
from tests.repo_tools import load_tool

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "tools" / "check_layers.py"


layers = load_tool("check_layers")


@pytest.fixture(scope="module")
def contract():
    return layers.load_contract(REPO)


@pytest.fixture(scope="module")
def sources(contract) -> dict[str, str]:
    return layers.module_sources(REPO, contract)


def planted(sources: dict[str, str], module: str, code: str) -> dict[str, str]:
    """``sources`` with ``code`` appended to ``module``."""
    assert module in sources, module
    return {**sources, module: sources[module] + "\n" + code + "\n"}


def test_the_code_keeps_the_layer_contract(sources, contract):
    assert layers.violations(sources, contract) == []
    # And the checker did read the packages it guards: the functions, the jobs, the stack
    assert {
        "functions.query",
        "snapledger.core.lineage",
        "snapledger.client.control",
        "jobs.args",
        "infra.stack",
        "infra.constructs.ledger_table",
    } <= set(sources)


def test_every_module_has_a_place_in_the_contract(sources, contract):
    assert [m for m in sources if contract.package_of(m) is None] == []
    # A new package nobody placed fails, saying what to do
    found = layers.violations({**sources, "snapledger.newcomer.thing": ""}, contract)
    assert found == [
        "snapledger.newcomer.thing: has no place in the layer contract: add its package to a "
        "layer of [tool.layers] in pyproject.toml"
    ]


ABOVE = "is in a layer above"
SIBLING = "are independent packages of one layer"
COMPOSITION = "only the composition"
LAMBDA = "what the Lambda package leaves out"
STACK = "the CDK app describes the stack"
EXAMPLE = "an example is what a producer or consumer writes"


@pytest.mark.parametrize(
    ("module", "code", "said"),
    [
        # core, services and entrypoints never import an adapter
        (
            "snapledger.core.coverage",
            "import snapledger.adapters.dynamodb_ledger",
            "snapledger.core.coverage → snapledger.adapters",
        ),
        (
            "snapledger.services.queries",
            "from snapledger.adapters.dynamodb_codec import plain",
            COMPOSITION,
        ),
        # a lazy import inside a function counts too
        (
            "snapledger.entrypoints.query",
            "def f():\n    from snapledger.adapters import dynamodb_ledger",
            COMPOSITION,
        ),
        # so does a relative one, and one hidden behind importlib
        (
            "snapledger.core.coverage",
            "from ..adapters import object_store",
            "snapledger.adapters.object_store",
        ),
        (
            "snapledger.core.coverage",
            "import importlib\nimportlib.import_module('snapledger.adapters.dynamodb_jobs')",
            "snapledger.adapters.dynamodb_jobs",
        ),
        # the library's layers, top down
        (
            "snapledger.models.ledger",
            "from snapledger.core import lineage",
            "snapledger.core is in a layer above snapledger.models",
        ),
        (
            "snapledger.core.lineage",
            "from snapledger.services import queries",
            "snapledger.services is in a layer above snapledger.core",
        ),
        (
            "snapledger.services.queries",
            "from snapledger.entrypoints import answers",
            "snapledger.entrypoints is in a layer above snapledger.services",
        ),
        (
            "snapledger.entrypoints.answers",
            "import functions.query",
            "functions is in a layer above snapledger.entrypoints",
        ),
        # issue 39: what passed before
        (
            "snapledger.core.coverage",
            "from snapledger.runtime import runtime",
            "snapledger.runtime is in a layer above snapledger.core",
        ),
        (
            "snapledger.core.coverage",
            "from snapledger.ports import Ledger",
            "snapledger.ports is in a layer above snapledger.core",
        ),
        (
            "snapledger.models.ledger",
            "from snapledger.layouts import restate_keys",
            "snapledger.layouts is in a layer above snapledger.models",
        ),
        (
            "snapledger.adapters.object_store",
            "from snapledger.services import queries",
            f"snapledger.services and snapledger.adapters {SIBLING}",
        ),
        (
            "snapledger.adapters.object_store",
            "from snapledger.entrypoints import answers",
            "snapledger.entrypoints is in a layer above snapledger.adapters",
        ),
        (
            "snapledger.ports.ledger",
            "from snapledger.services import queries",
            "snapledger.services is in a layer above snapledger.ports",
        ),
        (
            "snapledger.ports.ledger",
            "import snapledger.adapters.dynamodb_ledger",
            "snapledger.adapters is in a layer above snapledger.ports",
        ),
        (
            "snapledger.layouts.restate_keys",
            "from snapledger.services import queries",
            "snapledger.services is in a layer above snapledger.layouts",
        ),
        (
            "snapledger.job_kinds",
            "from snapledger.services import queries",
            "snapledger.services is in a layer above snapledger.job_kinds",
        ),
        (
            "jobs.args",
            "from snapledger.adapters import object_store",
            f"snapledger.adapters and jobs {SIBLING}",
        ),
        (
            "jobs.args",
            "from snapledger.services import queries",
            f"snapledger.services and jobs {SIBLING}",
        ),
        ("infra.config", "from snapledger.services import queries", STACK),
        ("infra.config", "from snapledger.adapters import dynamodb_ledger", COMPOSITION),
        # the entrypoints name the runtime only in annotations: importing it to run fails
        (
            "snapledger.entrypoints.answers",
            "from snapledger.runtime import Runtime",
            "snapledger.runtime is in a layer above snapledger.entrypoints",
        ),
        # the client is below the CLI and the local runtime
        (
            "snapledger.client.control",
            "from snapledger.cli.main import cli",
            "snapledger.cli is in a layer above snapledger.client",
        ),
        (
            "snapledger.client.control",
            "def f():\n    from snapledger.local.transport import LocalTransport",
            "snapledger.local is in a layer above snapledger.client",
        ),
        # what the Lambda package leaves out is imported by nothing it ships
        ("snapledger.adapters.object_store", "from snapledger.cli import pictures", LAMBDA),
        ("functions.query", "import snapledger.client", LAMBDA),
        # the benchmarks and the examples are at the top: nothing imports them
        (
            "snapledger.local.runtime",
            "from bench.bench_gc import CountingStore",
            "bench is in a layer above snapledger.local",
        ),
        (
            "jobs.args",
            "def f():\n    from bench import dataplane_cases",
            "bench is in a layer above jobs",
        ),
        (
            "snapledger.client.control",
            "import examples.producer",
            "examples is in a layer above snapledger.client",
        ),
        # an example uses the client library, never the registry's insides
        ("examples.producer", "from snapledger.adapters import object_store", EXAMPLE),
        ("examples.ktable_checkpointer.table", "from snapledger.services import queries", EXAMPLE),
    ],
)
def test_a_planted_back_import_is_found(sources, contract, module, code, said):
    found = layers.violations(planted(sources, module, code), contract)
    assert len(found) >= 1
    assert all(line.startswith(f"{module}:") for line in found), found
    assert any(said in line for line in found), found


LAYOUTS_BELOW = "snapledger.services is in a layer above snapledger.layouts"


@pytest.mark.parametrize(
    ("module", "code", "said"),
    [
        # The layouts (the strategy protocol, the catalog's protocol, the keys) are below the
        # services with no exception: a lazy import, as the strategies once made, fails...
        (
            "snapledger.layouts.strategy",
            "def f():\n    from snapledger.services.gc_steps import NativeSteps",
            LAYOUTS_BELOW,
        ),
        (
            "snapledger.layouts.native_keys",
            "def f():\n    from snapledger.services.manifest_checks import command_for",
            LAYOUTS_BELOW,
        ),
        (
            "snapledger.layouts.restate_prefix",
            "from snapledger.services import restate_snapshots",
            LAYOUTS_BELOW,
        ),
        # ...and so does an annotation's import
        (
            "snapledger.layouts.lineage",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from snapledger.services.gc_steps import CollectedStrategy",
            LAYOUTS_BELOW,
        ),
        # The services are given the catalog: they never import a strategy
        (
            "snapledger.services.registration",
            "from snapledger.strategies.catalog import NATIVE_ONLY",
            "snapledger.strategies is in a layer above snapledger.services",
        ),
        (
            "snapledger.services.restate_gc",
            "def f():\n    from snapledger.strategies.restate import RestateLayout",
            "snapledger.strategies is in a layer above snapledger.services",
        ),
        # The stack checks its layouts' context with the pure configuration, not the
        # strategies (which load the services)
        ("infra.config", "from snapledger.strategies.catalog import LayoutCatalog", STACK),
    ],
)
def test_the_strategies_sit_above_the_services_and_the_layouts_below(
    sources, contract, module, code, said
):
    found = layers.violations(planted(sources, module, code), contract)
    assert any(line.startswith(f"{module}:") and said in line for line in found), found


def test_no_pair_lets_a_layout_module_import_a_service(contract):
    assert [
        (a, b)
        for a, b in contract.ignore | contract.types_only
        if a.startswith("snapledger.layouts") and b.startswith("snapledger.services")
    ] == []


def test_an_import_module_of_a_computed_name_is_refused_unless_allowed(sources, contract):
    code = (
        "import importlib\n"
        "name = 'snapledger.' + 'adapters.dynamodb_jobs'\n"
        "importlib.import_module(name)"
    )
    found = layers.violations(planted(sources, "snapledger.core.coverage", code), contract)
    assert len(found) == 1
    assert found[0].startswith("snapledger.core.coverage:")
    assert "imports a module by a computed name" in found[0]
    assert "[tool.layers.dynamic]" in found[0]
    # The lazy exports of snapledger.ports are allowed, each with its reason
    assert contract.dynamic["snapledger.ports"]
    allowing = replace(contract, dynamic={**contract.dynamic, "snapledger.core.coverage": "why"})
    assert layers.violations(planted(sources, "snapledger.core.coverage", code), allowing) == []


def test_a_cycle_inside_a_layer_fails_with_the_cycle_printed(sources, contract):
    tree = planted(sources, "snapledger.core.gc_rules", "import snapledger.core.lineage")
    found = layers.violations(tree, contract)
    assert len(found) == 1, found
    assert "a module-level import cycle in snapledger.core" in found[0]
    assert "snapledger.core.gc_rules → " in found[0]
    assert "→ snapledger.core.lineage → " in found[0]
    # A lazy import is how a cycle is broken: it loads nothing at import time
    lazy = planted(
        sources, "snapledger.core.checksums", "def f():\n    import snapledger.core.lineage"
    )
    assert layers.violations(lazy, contract) == []


def test_a_type_only_cycle_is_found_too(sources, contract):
    # gc_steps loads gc_deps at module level: a TYPE_CHECKING import of gc_steps from
    # gc_deps (what broke the contract before GcDeps was made generic) closes a cycle that
    # never runs, and still fails: two modules that each need the other to be read are one
    back = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from snapledger.services import gc_steps"
    )
    tree = planted(sources, "snapledger.services.gc_deps", back)
    found = layers.violations(tree, contract)
    assert len(found) == 1, found
    assert "an import cycle through a TYPE_CHECKING import in snapledger.services" in found[0]
    assert "snapledger.services.gc_deps → snapledger.services.gc_steps → " in found[0]
    # The same import done lazily, inside a function, closes none
    lazy = planted(
        sources, "snapledger.services.gc_deps", "def f():\n    import snapledger.services.gc_steps"
    )
    assert layers.violations(lazy, contract) == []


def test_the_cycle_search_names_one_shortest_cycle_per_group():
    cycles = load_tool("import_cycles").cycles
    edges = {"a": {"b"}, "b": {"c", "a"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert cycles(edges) == [["a", "b"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


SYNTHETIC = layers.Contract.from_table(
    {
        "roots": {"pkg": "pkg"},
        "layers": [["pkg.top"], ["pkg.mid"], ["pkg.low"], ["pkg"]],
        "forbidden": [{"from": ["pkg.top"], "to": ["pkg.low"], "why": "top never loads low"}],
    }
)


@pytest.mark.parametrize(
    ("top", "found"),
    [
        # a module-level import is followed through what it loads...
        ("import pkg.mid.b", "pkg.top.a:1: pkg.top.a → pkg.mid.b → pkg.low.c: top never loads low"),
        # ...and a lazy one is judged where it runs, with what it loads
        (
            "x = 1\ndef f():\n    import pkg.mid.b",
            "pkg.top.a:3: pkg.top.a → pkg.mid.b → pkg.low.c: top never loads low",
        ),
    ],
)
def test_imports_are_followed_transitively_and_named_as_a_chain(top, found):
    tree = {"pkg": "", "pkg.top.a": top, "pkg.mid.b": "from pkg.low import c", "pkg.low.c": ""}
    assert layers.violations(tree, SYNTHETIC) == [found]
    # pkg.mid.d loading the same module breaks nothing: the rule is pkg.top's
    assert layers.violations({**tree, "pkg.mid.d": "import pkg.mid.b"}, SYNTHETIC) == [found]


def test_a_type_checking_import_is_judged_but_never_followed(sources, contract):
    # The entrypoints annotate the Runtime a handler hands them (types_only)...
    allowed = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from snapledger.runtime import Runtime"
    )
    assert (
        layers.violations(planted(sources, "snapledger.entrypoints.answers", allowed), contract)
        == []
    )
    # ...but core may not, even for its annotations
    found = layers.violations(planted(sources, "snapledger.core.coverage", allowed), contract)
    assert len(found) == 1
    assert "snapledger.runtime is in a layer above snapledger.core" in found[0]


def test_an_ignored_pair_is_allowed_and_only_that_pair(sources, contract):
    code = "import snapledger.adapters.dynamodb_ledger"
    pair = ("snapledger.core.coverage", "snapledger.adapters.dynamodb_ledger")
    allowing = replace(contract, ignore=contract.ignore | {pair})
    assert layers.violations(planted(sources, "snapledger.core.coverage", code), allowing) == []
    assert layers.violations(planted(sources, "snapledger.core.lineage", code), allowing) != []


def test_the_three_planted_together_in_a_copy_of_the_tree_fail_the_check(tmp_path, contract):
    # Given a copy of the sources and the contract, as `make lint` checks them
    for folder in contract.roots.values():
        shutil.copytree(REPO / folder, tmp_path / folder)
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    command = [sys.executable, str(CHECKER), "--root", str(tmp_path)]
    kept = subprocess.run(command, capture_output=True, text=True, check=False)
    assert kept.returncode == 0, kept.stderr
    # When core imports the runtime and the ports, and an adapter a service (issue 39)
    base = tmp_path / "shared" / "snapledger"
    for path, code in [
        ("core/coverage.py", "from snapledger.runtime import runtime"),
        ("core/lineage.py", "from snapledger.ports import Ledger"),
        ("adapters/object_store.py", "from snapledger.services import queries"),
    ]:
        (base / path).write_text((base / path).read_text() + f"\n{code}\n")
    broken = subprocess.run(command, capture_output=True, text=True, check=False)
    # Then the check fails, naming each
    assert broken.returncode == 1
    assert "snapledger.core.coverage:" in broken.stderr
    assert "snapledger.core.coverage → snapledger.runtime" in broken.stderr
    assert "snapledger.core.lineage → snapledger.ports" in broken.stderr
    assert "snapledger.adapters.object_store → snapledger.services" in broken.stderr
    assert "3 import(s) break the layer contract" in broken.stderr


def test_make_lint_needs_only_the_synced_environment():
    # -W: as if the environment were older than pyproject.toml, so make prints its sync too
    dry_run = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", "lint"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "tools/check_layers.py" in dry_run.stdout
    assert "sync --frozen" in dry_run.stdout
    for download in (
        "install-dynamodb-local",
        "install-restate",
        "install-kafka",
        "install-fluss",
        "mvn",
    ):
        assert download not in dry_run.stdout


def test_the_workstation_packages_are_the_ones_the_lambda_package_leaves_out(contract):
    excluded = {f"snapledger.{name}" for name in names.LAMBDA_EXCLUDED_SUBPACKAGES}
    guarded = [(r.sources, set(r.unless)) for r in contract.forbidden if set(r.targets) == excluded]
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
