"""README.md's map of the import layers is the one the contract renders."""

from __future__ import annotations

import pytest

from tests.repo_tools import REPO, load_tool

layers = load_tool("check_layers")  # layer_map imports it by this name
layer_map = load_tool("layer_map")


def test_the_readme_holds_the_map_the_contract_renders() -> None:
    # If this fails, run `python tools/layer_map.py --write` and commit README.md.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert layer_map.with_map(readme, layer_map.render()) == readme


def test_the_map_has_a_row_per_layer_top_first_each_with_its_comment() -> None:
    rows = layer_map.render().splitlines()[2:]
    contract_layers = layers.load_contract(REPO).layers
    assert len(rows) == len(contract_layers)
    for row, layer in zip(rows, contract_layers, strict=True):
        assert all(f"`{package}`" in row for package in layer)
        assert row.split("|")[3].strip(), f"layer {layer} has no comment in pyproject.toml"


def test_a_comment_belongs_to_the_layer_below_it() -> None:
    pyproject = (
        'x = 1\nlayers = [\n    # top\n    ["a"],\n    ["b"],\n    # c\n    # too\n    ["c"],\n]\n'
    )
    assert layer_map.layer_comments(pyproject) == ["top", "", "c too"]


def test_a_readme_without_its_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="needs one"):
        layer_map.with_map("# no markers\n", "| table |")
