"""Check the import layers of ``snapledger`` and ``functions`` against their contract.

The contract is ``[tool.layers]`` in pyproject.toml:

- ``layers``: packages from the top down; a module may import from its own layer and the
  layers below, never from one above (``snapledger.core`` never imports ``snapledger.services``);
- ``forbidden``: a module under one of ``from`` (unless also under one of ``unless``) never
  imports a module under one of ``to``;
- ``ignore``: ``"importer -> imported"`` pairs allowed despite the above, each with a comment
  in pyproject.toml saying why.

Every ``import`` statement counts, at module level or inside a function (the lazy imports
this code uses to keep cold starts short), under ``TYPE_CHECKING`` too; so does an
``importlib.import_module`` of a literal first-party name, which would otherwise hide a
dependency. Standard library only, so ``make lint`` runs it with nothing to install:

    python tools/check_layers.py [--root DIR]   # exit 1 and one line per broken rule
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Where each first-party top-level package's sources are, relative to the repository root.
PACKAGE_DIRS = {"snapledger": Path("shared/snapledger"), "functions": Path("functions")}
#: The calls that import a module named by a string.
_DYNAMIC_IMPORTS = {"import_module", "__import__"}


@dataclass(frozen=True)
class Contract:
    layers: tuple[str, ...]
    forbidden: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]
    ignore: frozenset[tuple[str, str]]

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> Contract:
        forbidden = tuple(
            (tuple(rule["from"]), tuple(rule.get("unless", ())), tuple(rule["to"]))
            for rule in table.get("forbidden", ())
        )
        ignore = set()
        for pair in table.get("ignore", ()):
            importer, _, imported = (part.strip() for part in pair.partition("->"))
            if not importer or not imported:
                raise ValueError(f'an ignore entry is "importer -> imported", not {pair!r}')
            ignore.add((importer, imported))
        return cls(tuple(table["layers"]), forbidden, frozenset(ignore))


def load_contract(root: Path) -> Contract:
    with (root / "pyproject.toml").open("rb") as f:
        return Contract.from_table(tomllib.load(f)["tool"]["layers"])


def module_sources(root: Path) -> dict[str, str]:
    """Module name → source text, for every first-party module under ``root``."""
    sources = {}
    for package, folder in PACKAGE_DIRS.items():
        base = root / folder
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            sources[".".join((package, *parts))] = path.read_text(encoding="utf-8")
    return sources


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, source: str, known: Iterable[str]) -> Iterator[tuple[str, int]]:
    """``(imported module, line)`` for each first-party import in ``source``."""
    modules = set(known)
    is_package = any(m.startswith(module + ".") for m in modules)
    for node in ast.walk(ast.parse(source, filename=module)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            # ``from snapledger import pictures`` imports the module snapledger.pictures.
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            names = subs or [target]
        elif isinstance(node, ast.Call) and node.args:
            names = _dynamic_import(node)
        for name in names:
            if name.split(".")[0] in PACKAGE_DIRS:
                yield name, node.lineno


def _dynamic_import(call: ast.Call) -> list[str]:
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called not in _DYNAMIC_IMPORTS:
        return []
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return [first.value]
    if isinstance(first, ast.JoinedStr) and first.values:  # f"functions.{name}"
        head = first.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return [head.value.rstrip(".")]
    return []


def _layer(module: str, layers: tuple[str, ...]) -> int | None:
    return next((i for i, layer in enumerate(layers) if under(module, layer)), None)


def violations(sources: Mapping[str, str], contract: Contract) -> list[str]:
    """One line per import that breaks the contract, ``module:line: what, why``."""
    found = []
    for module, source in sorted(sources.items()):
        for imported, line in imports_of(module, source, sources):
            if (module, imported) in contract.ignore:
                continue
            where = f"{module}:{line}: imports {imported}"
            mine, theirs = _layer(module, contract.layers), _layer(imported, contract.layers)
            if mine is not None and theirs is not None and theirs < mine:
                found.append(
                    f"{where}, a layer above it ({contract.layers[theirs]} is above "
                    f"{contract.layers[mine]})"
                )
            for sources_, unless, targets in contract.forbidden:
                if (
                    any(under(module, s) for s in sources_)
                    and not any(under(module, u) for u in unless)
                    and any(under(imported, t) for t in targets)
                ):
                    found.append(f"{where}, which {', '.join(sources_)} never import")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the repository root")
    root = parser.parse_args(argv).root
    sources = module_sources(root)
    found = violations(sources, load_contract(root))
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
