"""The repository's standard-library tools (tools/*.py, run by ``make lint``) loaded as
modules, so their tests call them in-process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_tool(name: str) -> ModuleType:
    """tools/``name``.py as the module ``name`` (tools/ on the path, as when it is run, so
    it imports its sibling tools by name)."""
    tools = str(REPO / "tools")
    if tools not in sys.path:
        sys.path.append(tools)
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
