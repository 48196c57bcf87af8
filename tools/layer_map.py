"""The one-screen map of the import layers, generated from the contract (``[tool.layers]``
in pyproject.toml, which ``tools/check_layers.py`` enforces): README.md's "The layers" part.

One row per layer, from the top down: its packages and what the contract's comment above
it says. A module imports from its own package and from the rows below, never from a row
above nor from another package of its own row.

    python tools/layer_map.py            # print the map
    python tools/layer_map.py --write    # write it into README.md between its markers
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from check_layers import REPO_ROOT, load_contract

START = "<!-- generated: layer map (python tools/layer_map.py --write) -->"
END = "<!-- end generated: layer map -->"
_LAYER_LINE = re.compile(r'^\s*\[\s*"')


def layer_comments(pyproject: str) -> list[str]:
    """The comment above each layer of ``layers = [...]``, in order ("" for none)."""
    block = pyproject.split("\nlayers = [", 1)[1].split("\n]", 1)[0]
    comments, pending = [], []
    for line in block.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
        elif _LAYER_LINE.match(line):
            comments.append(" ".join(pending))
            pending = []
    return comments


def render(root: Path = REPO_ROOT) -> str:
    """The map as a markdown table, top layer first."""
    contract = load_contract(root)
    comments = layer_comments((root / "pyproject.toml").read_text(encoding="utf-8"))
    if len(comments) != len(contract.layers):  # pragma: no cover - both read one list
        raise ValueError("the layers and their comments do not line up")
    rows = ["| layer | packages | what |", "|---|---|---|"]
    for number, (layer, comment) in enumerate(zip(contract.layers, comments, strict=True), 1):
        packages = ", ".join(f"`{package}`" for package in layer)
        rows.append(f"| {number} | {packages} | {comment} |")
    return "\n".join(rows)


def with_map(readme: str, table: str) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    if readme.count(START) != 1 or readme.count(END) != 1:
        raise ValueError(f"README.md needs one {START!r} and one {END!r}")
    head, rest = readme.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n\n{table}\n\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--write", action="store_true", help="write it into README.md")
    table = render()
    if not parser.parse_args(argv).write:
        print(table)
        return 0
    readme = REPO_ROOT / "README.md"
    readme.write_text(with_map(readme.read_text(encoding="utf-8"), table), encoding="utf-8")
    print(f"wrote the layer map into {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
