"""Check the imports of every first-party package (``[tool.layers]`` roots) against a contract.

The contract is ``[tool.layers]`` in pyproject.toml:

- ``roots``: each first-party top-level package → its folder;
- ``layers``: from the top down, each a list of packages (a package is a module name and
  everything under it, ``pkg.__init__`` the package's own module alone; a module belongs to
  the longest package listed that holds it). Every
  module has a place. A module imports from its own package and from the layers below,
  never from a layer above, nor from another package of its own layer;
- ``forbidden``: a module under one of ``from`` (unless also under one of ``unless``) never
  imports a module under one of ``to``, each rule with its ``why``;
- ``ignore``: ``"importer -> imported"`` pairs allowed despite the above (with what the
  imported module itself loads), each with a comment in pyproject.toml saying why;
- ``types_only``: ``"importer -> imported"`` packages whose imports under ``TYPE_CHECKING``
  are allowed despite the above (an annotation, never run);
- ``dynamic``: module → why it may call ``import_module`` with a computed name.

Imports are followed as Python runs them: a module-level import loads the imported module,
its parent packages and, transitively, their module-level imports; each module so loaded is
judged against the importer (``a → b → c``: ``a`` loads ``c``). A lazy import inside a
function is judged where it is written, with what it loads. ``TYPE_CHECKING`` imports never
run: they are judged against the layers directly and followed no further. An
``importlib.import_module`` of a literal name counts as an import; of a computed one, it is
refused unless ``dynamic`` names the module. Import cycles inside a package fail, with the
cycle printed: module-level imports and ``TYPE_CHECKING`` ones count (a lazy import does
not: it is how a cycle is broken); ``tools/import_cycles.py`` finds them. Standard library
only, so ``make lint`` runs it with nothing to install:

    python tools/check_layers.py [--root DIR]   # exit 1 and one line per broken rule
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from import_cycles import cycles as find_cycles

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The calls that import a module named by a string.
_DYNAMIC_IMPORTS = {"import_module", "__import__"}
#: How an import statement runs: at module level, inside a function, or never (TYPE_CHECKING).
MODULE, LAZY, TYPES = "module", "lazy", "types"
#: ``pkg.__init__`` in the layers places the package's own module, not what is under it.
INIT = "__init__"


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _pairs(entries: Iterable[str], what: str) -> frozenset[tuple[str, str]]:
    pairs = set()
    for pair in entries:
        importer, _, imported = (part.strip() for part in pair.partition("->"))
        if not importer or not imported:
            raise ValueError(f'a {what} entry is "importer -> imported", not {pair!r}')
        pairs.add((importer, imported))
    return frozenset(pairs)


@dataclass(frozen=True)
class Rule:
    sources: tuple[str, ...]
    unless: tuple[str, ...]
    targets: tuple[str, ...]
    why: str

    def breaks(self, chain: tuple[str, ...]) -> bool:
        """Whether the first module of ``chain`` loading the last breaks the rule: a module
        the rule exempts on the way (the composition building an adapter) keeps it."""
        module, imported = chain[0], chain[-1]
        return (
            any(under(module, s) for s in self.sources)
            and not any(under(m, u) for m in chain[:-1] for u in self.unless)
            and any(under(imported, t) for t in self.targets)
        )


@dataclass(frozen=True)
class Contract:
    roots: Mapping[str, Path]
    layers: tuple[tuple[str, ...], ...]
    forbidden: tuple[Rule, ...] = ()
    ignore: frozenset[tuple[str, str]] = frozenset()
    types_only: frozenset[tuple[str, str]] = frozenset()
    dynamic: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> Contract:
        layers = tuple(
            (layer,) if isinstance(layer, str) else tuple(layer) for layer in table["layers"]
        )
        placed = [package for layer in layers for package in layer]
        twice = sorted({p for p in placed if placed.count(p) > 1})
        if twice:
            raise ValueError(f"a package has one place in the layers: {', '.join(twice)}")
        forbidden = []
        for rule in table.get("forbidden", ()):
            if not rule.get("why"):
                raise ValueError(f"a forbidden rule says why it holds: {rule!r}")
            unless = tuple(rule.get("unless", ()))
            forbidden.append(Rule(tuple(rule["from"]), unless, tuple(rule["to"]), rule["why"]))
        roots = {name: Path(folder) for name, folder in table.get("roots", {}).items()}
        return cls(
            roots=roots,
            layers=layers,
            forbidden=tuple(forbidden),
            ignore=_pairs(table.get("ignore", ()), "ignore"),
            types_only=_pairs(table.get("types_only", ()), "types_only"),
            dynamic=dict(table.get("dynamic", {})),
        )

    def ignored(self, module: str, imported: str) -> bool:
        """Whether an ignored pair lets ``module`` load ``imported`` (or its parent packages)."""
        return any(module == a and under(b, imported) for a, b in self.ignore)

    def package_of(self, module: str) -> tuple[str, int] | None:
        """The package ``module`` belongs to (the longest one listed) and its layer's index."""
        found = [
            (package, i)
            for i, layer in enumerate(self.layers)
            for package in layer
            if under(module, package) or f"{module}.{INIT}" == package
        ]
        return max(found, key=lambda p: len(p[0])) if found else None

    def judge(self, chain: tuple[str, ...], how: str = MODULE) -> list[str]:
        """What the first module of ``chain`` loading the last (through the others) breaks,
        one reason each."""
        module, imported = chain[0], chain[-1]
        if self.ignored(module, imported):
            return []
        mine, theirs = self.package_of(module), self.package_of(imported)
        if mine is None or theirs is None or mine[0] == theirs[0]:
            return []
        if how == TYPES and any(
            under(module, a) and under(imported, b) for a, b in self.types_only
        ):
            return []
        broken = []
        if theirs[1] < mine[1]:
            broken.append(f"{theirs[0]} is in a layer above {mine[0]}")
        elif theirs[1] == mine[1]:
            broken.append(f"{theirs[0]} and {mine[0]} are independent packages of one layer")
        broken += [rule.why for rule in self.forbidden if rule.breaks(chain)]
        return broken


def load_contract(root: Path) -> Contract:
    with (root / "pyproject.toml").open("rb") as f:
        return Contract.from_table(tomllib.load(f)["tool"]["layers"])


def module_sources(root: Path, contract: Contract | None = None) -> dict[str, str]:
    """Module name → source text, for every first-party module under ``root``."""
    roots = (contract or load_contract(root)).roots
    sources = {}
    for package, folder in roots.items():
        base = root / folder
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            sources[".".join((package, *parts))] = path.read_text(encoding="utf-8")
    return sources


@dataclass(frozen=True)
class Import:
    imported: str
    line: int
    how: str  # MODULE, LAZY or TYPES


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Finder(ast.NodeVisitor):
    def __init__(self, module: str, modules: set[str], roots: Iterable[str]) -> None:
        self.module, self.modules, self.roots = module, modules, set(roots)
        self.is_package = any(m.startswith(module + ".") for m in modules)
        self.how = MODULE
        self.found: list[Import] = []
        self.computed: list[int] = []  # lines of import_module calls with a computed name

    def _within(self, how: str, nodes: Iterable[ast.AST]) -> None:
        outer, self.how = self.how, how if self.how == MODULE else self.how
        for node in nodes:
            self.visit(node)
        self.how = outer

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self._within(LAZY, ast.iter_child_nodes(node))

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef  # noqa: N815

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._within(TYPES, node.body)
            self._within(self.how, node.orelse)
        else:
            self.generic_visit(node)

    def _add(self, names: Iterable[str], node: ast.stmt | ast.expr) -> None:
        for name in names:
            if name.split(".")[0] in self.roots:
                self.found.append(Import(name, node.lineno, self.how))

    def visit_Import(self, node: ast.Import) -> None:
        self._add((alias.name for alias in node.names), node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        target = _resolve(self.module, self.is_package, node)
        # ``from snapledger import pictures`` imports the module snapledger.pictures.
        subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in self.modules]
        self._add(subs or [target], node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called in _DYNAMIC_IMPORTS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self._add([first.value], node)
            else:
                self.computed.append(node.lineno)
        self.generic_visit(node)


@cache  # the tests check many plantings in one tree: each module is parsed once
def find_imports(module: str, source: str, known: frozenset[str], roots: frozenset[str]) -> _Finder:
    finder = _Finder(module, set(known), roots)
    finder.visit(ast.parse(source, filename=module))
    return finder


def _parents(module: str, modules: Mapping[str, Any]) -> list[str]:
    """The modules loading ``module`` runs: its parent packages, then itself."""
    parts = module.split(".")
    loaded = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return [m for m in loaded if m in modules]


class Graph:
    """The first-party imports of every module, and what each module loads when imported."""

    def __init__(self, sources: Mapping[str, str], contract: Contract) -> None:
        self.contract = contract
        known, roots = frozenset(sources), frozenset(contract.roots)
        self.found = {m: find_imports(m, s, known, roots) for m, s in sorted(sources.items())}

    def loads(self, module: str) -> Iterator[tuple[str, str]]:
        """``(importer, loaded)`` for each module ``module``'s module-level imports load."""
        for imp in self.found[module].found:
            if imp.how == MODULE:
                for loaded in reversed(_parents(imp.imported, self.found)):
                    if not under(module, loaded):  # its own packages are loaded already
                        yield module, loaded

    def violations(self) -> list[str]:
        found = []
        for module, finder in self.found.items():
            if self.contract.package_of(module) is None:
                found.append(
                    f"{module}: has no place in the layer contract: add its package to a "
                    "layer of [tool.layers] in pyproject.toml"
                )
            for line in finder.computed:
                if module not in self.contract.dynamic:
                    found.append(
                        f"{module}:{line}: imports a module by a computed name, which the "
                        "layer check cannot follow: import it by name, or add the module to "
                        "[tool.layers.dynamic] in pyproject.toml with the reason"
                    )
            for imp in finder.found:
                found += self._judge_from(module, imp)
        return found + self.cycles()

    def _judge_from(self, module: str, imp: Import) -> list[str]:
        """What ``imp`` in ``module`` breaks, directly or through the modules it loads."""
        found: dict[str, str] = {}  # one line per rule an import breaks, the nearest first
        loaded_first = [p for p in _parents(imp.imported, self.found) if not under(module, p)]
        start = [(p, (module, p)) for p in reversed(loaded_first)]  # the module, then its parents
        queue, seen = deque(start), {p for p, _ in start}
        while queue:
            loaded, chain = queue.popleft()
            broken = self.contract.judge(chain, imp.how if len(chain) == 2 else MODULE)
            if broken:
                for why in broken:
                    found.setdefault(why, f"{module}:{imp.line}: {' → '.join(chain)}: {why}")
                continue
            if imp.how == TYPES or self.contract.ignored(module, loaded):
                continue
            for importer, nxt in self.loads(loaded):
                # An import that breaks the contract where it is written is reported there;
                # what an ignored pair loads is that pair's deliberate use.
                if (
                    nxt not in seen
                    and not self.contract.ignored(importer, nxt)
                    and not self.contract.judge((importer, nxt))
                ):
                    seen.add(nxt)
                    queue.append((nxt, (*chain, nxt)))
        return list(found.values())

    def cycles(self) -> list[str]:
        """One line per import cycle inside a package, ``TYPE_CHECKING`` imports counted."""
        module_level: dict[str, set[str]] = {m: set() for m in self.found}
        edges: dict[str, set[str]] = {m: set() for m in self.found}
        for module, finder in self.found.items():
            runs = {b for _, b in self.loads(module)}
            typed = {b for i in finder.found if i.how == TYPES for b in _parents(i.imported, edges)}
            for other in runs | typed:
                mine, theirs = self.contract.package_of(module), self.contract.package_of(other)
                if not under(module, other) and mine and theirs and mine[0] == theirs[0]:
                    edges[module].add(other)
                    if other in runs:
                        module_level[module].add(other)
        found = []
        for cycle in find_cycles(edges):
            steps = zip(cycle, [*cycle[1:], cycle[0]], strict=True)
            kind = (
                "a module-level import cycle"
                if all(b in module_level[a] for a, b in steps)
                else "an import cycle through a TYPE_CHECKING import"
            )
            found.append(
                f"{cycle[0]}: {kind} in {self.contract.package_of(cycle[0])[0]}"  # type: ignore[index]
                f": {' → '.join([*cycle, cycle[0]])}: import one of them inside the function "
                "that needs it, or move what both need into a module of its own"
            )
        return found


def violations(sources: Mapping[str, str], contract: Contract) -> list[str]:
    """One line per broken rule, ``module:line: a → b → c: why``."""
    return Graph(sources, contract).violations()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the repository root")
    root = parser.parse_args(argv).root
    contract = load_contract(root)
    sources = module_sources(root, contract)
    found = violations(sources, contract)
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(
            f"{len(found)} import(s) break the layer contract ([tool.layers] in "
            "pyproject.toml): move the code, or pass what it needs in from above",
            file=sys.stderr,
        )
        return 1
    print(f"layer contract kept by {len(sources)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
