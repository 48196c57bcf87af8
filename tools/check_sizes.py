"""Check the size of every module and class against ``[tool.sizes]`` in pyproject.toml.

``[tool.sizes]`` names the folders checked (``roots``), the most lines a module may have
(``module_lines``) and a class (``class_lines``, from its first decorator to its last line),
and an allow-list ``[tool.sizes.allow]``: ``"path"`` (a module) or ``"path::Class"`` (a class,
nested ones as ``Outer.Inner``), each with the reason no split of it names something real.
An entry that is no longer over its limit, or names nothing, is stale and fails too, so the
list shrinks as the code does. Standard library only, so ``make lint`` runs it with nothing
to install:

    python tools/check_sizes.py [--root DIR]   # exit 1 and one line per problem
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Folders under a root that hold no source of ours.
_SKIPPED = {"__pycache__", "cdk.out", "node_modules"}


@dataclass(frozen=True)
class Limits:
    roots: tuple[str, ...]
    module_lines: int
    class_lines: int
    #: ``path`` or ``path::Class`` → why it may stay over its limit.
    allow: Mapping[str, str]


def load_limits(root: Path) -> Limits:
    table = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["sizes"]
    return Limits(
        roots=tuple(table["roots"]),
        module_lines=int(table["module_lines"]),
        class_lines=int(table["class_lines"]),
        allow=dict(table.get("allow", {})),
    )


def module_paths(root: Path, limits: Limits) -> Iterator[str]:
    """The ``.py`` files under the roots, as paths relative to ``root`` with ``/``."""
    for folder in limits.roots:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root)
            if not any(part in _SKIPPED or part.startswith(".") for part in relative.parts):
                yield relative.as_posix()


def class_sizes(source: str) -> Iterator[tuple[str, int]]:
    """Each class's qualified name (``Outer.Inner``) and its lines, decorators included."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = prefix + child.name
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                yield name, (child.end_lineno or child.lineno) - start + 1
                yield from walk(child, name + ".")
            else:
                yield from walk(child, prefix)

    yield from walk(ast.parse(source), "")


def measure(sources: Mapping[str, str]) -> dict[str, int]:
    """``path`` → a module's lines and ``path::Class`` → a class's lines."""
    sizes: dict[str, int] = {}
    for path, source in sources.items():
        sizes[path] = len(source.splitlines())
        for name, lines in class_sizes(source):
            sizes[f"{path}::{name}"] = lines
    return sizes


def problems(sources: Mapping[str, str], limits: Limits) -> list[str]:
    """One line per module or class over its limit and not allowed, and per stale entry."""
    found = []
    sizes = measure(sources)
    for name, lines in sizes.items():
        kind, limit = (
            ("class", limits.class_lines) if "::" in name else ("module", limits.module_lines)
        )
        if lines > limit and name not in limits.allow:
            found.append(
                f"{name}: {kind} of {lines} lines, over the {limit} allowed: split it where a "
                f"part names something real, else add it to [tool.sizes.allow] in pyproject.toml "
                f"with the reason no split does"
            )
    for name, reason in limits.allow.items():
        limit = limits.class_lines if "::" in name else limits.module_lines
        if name not in sizes:
            found.append(
                f"{name}: in [tool.sizes.allow] but no such module or class: remove the entry"
            )
        elif sizes[name] <= limit:
            found.append(
                f"{name}: in [tool.sizes.allow] but {sizes[name]} lines is within the {limit} "
                f"allowed: remove the entry"
            )
        if not str(reason).strip():
            found.append(
                f"{name}: [tool.sizes.allow] gives no reason: say why no split names something real"
            )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="the repository (pyproject.toml)"
    )
    root = parser.parse_args(argv).root
    limits = load_limits(root)
    sources = {path: (root / path).read_text() for path in module_paths(root, limits)}
    found = problems(sources, limits)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
