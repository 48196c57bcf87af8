"""The layout strategy: registration and GC ask the stream's strategy, never a layout's name.

DESIGN "This round (2026-11-28)": a layout (native, restate, kafka-streams, …) is one module
the catalog registers; registration and GC ask the strategy; none branches on a layout's
name. The modules below are the ones that route arrivals, register and collect: each must
import no layout module (only the strategy protocol and the catalog), name no
layout-specific class or catalog call, and compare nothing with a layout's name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from snapledger.layouts.strategy import LayoutStrategy, Placed, Refused
from snapledger.strategies.catalog import LayoutCatalog

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "snapledger"
#: The services and entry points that must ask the strategy (the issue's list).
ASKERS = (
    "services/registration.py",
    "services/gc_lineage.py",
    "services/orphans.py",
    "entrypoints/register.py",
    "entrypoints/registration_queue.py",
    "local/router.py",
)
#: The layout modules a strategy's user may import: the protocols (the strategy's and the
#: catalog's) and, in the composition (the local router), the catalog itself.
ALLOWED_LAYOUT_MODULES = {
    "snapledger.layouts.strategy",
    "snapledger.layouts.lineage",
    "snapledger.strategies.catalog",
}
LAYOUT_NAMES = {"native", "restate", "kafka-streams", "kafka_streams"}
#: Words that name one layout in an identifier (a class, a function, a call).
LAYOUT_WORDS = ("restate", "kafka", "native")
#: The catalog's default (no layout configured: every stream native), not a branch.
CATALOG_NAMES = {"NATIVE_ONLY", "snapledger.strategies.catalog.NATIVE_ONLY"}


def _imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return found


def _identifiers(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name)
    return names


def _layout_name_compares(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare | ast.MatchValue):
            parts = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            if isinstance(node, ast.MatchValue):
                parts = [node.value]
            for part in parts:
                values = part.elts if isinstance(part, ast.Tuple | ast.Set | ast.List) else [part]
                if any(isinstance(v, ast.Constant) and v.value in LAYOUT_NAMES for v in values):
                    lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("path", ASKERS)
def test_registration_and_gc_never_branch_on_a_layout(path: str) -> None:
    # Given a module that registers, routes or collects snapshots
    tree = ast.parse((SOURCE / path).read_text(encoding="utf-8"))

    # Then it imports no layout or strategy module but the protocols and the catalog, nor
    # any service of one layout (e.g. services.restate_snapshots)
    layout_imports = [
        name
        for name in _imports(tree)
        if name.startswith(("snapledger.layouts.", "snapledger.strategies."))
        and not any(name.startswith(m) for m in ALLOWED_LAYOUT_MODULES)
    ]
    assert layout_imports == [], f"{path} imports layout modules {layout_imports}"
    one_layout = [
        name
        for name in _imports(tree)
        if any(word in name.rsplit(".", 1)[-1].lower() for word in LAYOUT_WORDS)
        and name not in CATALOG_NAMES
    ]
    assert one_layout == [], f"{path} imports {one_layout}: ask the strategy instead"
    # And it names no class, function or catalog call of one layout (restate_for,
    # locate_restate, RestatePointers, NativeLayout, ...)
    named = sorted(
        name
        for name in _identifiers(tree)
        if any(word in name.lower() for word in LAYOUT_WORDS) and name not in CATALOG_NAMES
    )
    assert named == [], f"{path} names {named}: ask the stream's strategy instead"
    # And it compares nothing with a layout's name
    assert _layout_name_compares(tree) == [], f"{path} branches on a layout's name"


def test_the_check_sees_a_branch_on_a_layout_name() -> None:
    # Given code that branches on a strategy's name (what the test above forbids)
    tree = ast.parse("if layout.name == 'restate':\n    pass\nmatch x:\n    case 'native': pass\n")
    # Then the check finds both
    assert _layout_name_compares(tree) == [1, 4]


def test_the_catalog_places_each_layouts_keys_with_its_strategy() -> None:
    catalog = LayoutCatalog.of({"restate/prod-1": "payments"})
    ulid = "01JQ0000000000000000000000"
    native = catalog.place(f"snapshots/orders/3/{7:020d}-{ulid}/_manifest.json")
    restate = catalog.place(f"restate/prod-1/2/lsn_{9:020d}-snap_abc/metadata.json")
    assert isinstance(native, Placed) and isinstance(restate, Placed)
    assert (native.strategy.name, native.location.partition, native.location.lsn) == (
        "native",
        3,
        7,
    )
    assert (restate.strategy.name, restate.location.stream, restate.location.lsn) == (
        "restate",
        "payments",
        9,
    )
    # An SST under the Restate prefix is no manifest: ignored, with its reason
    sst = catalog.place(f"restate/prod-1/2/lsn_{9:020d}-snap_abc/000001.sst")
    assert isinstance(sst, Refused) and not sst.manifest and "metadata.json" in sst.reason
    # A _manifest.json whose key does not parse is a manifest refused: recorded REJECTED
    bad = catalog.place("snapshots/orders/03/x/_manifest.json")
    assert isinstance(bad, Refused) and bad.manifest
    # Anything else is no manifest
    other = catalog.place("changelog/orders/0/x.parquet")
    assert isinstance(other, Refused) and not other.manifest


def test_each_strategy_answers_the_contract() -> None:
    catalog = LayoutCatalog.of({"restate/prod-1": "payments"})
    strategies: list[LayoutStrategy] = [
        catalog.for_stream("orders"),
        catalog.for_stream("payments"),
    ]
    assert [(s.name, s.owner) for s in strategies] == [
        ("native", "snapledger"),
        ("restate", "producer"),
    ]
    assert [s.stream_root for s in strategies] == ["snapshots/orders/", "restate/prod-1/"]
    assert [s.root(4) for s in strategies] == ["snapshots/orders/4/", "restate/prod-1/4/"]
    assert [s.manifest_name for s in strategies] == ["_manifest.json", "metadata.json"]
    assert all(s.boot for s in strategies)
    assert [s.stream for s in catalog.rooted] == ["payments"]
