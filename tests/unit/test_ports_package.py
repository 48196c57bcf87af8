"""The ports package: every name importable from it, each family loaded only when used."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from snapledger import ports

FAMILIES = ("jobs", "ledger", "objects", "queues")


@pytest.mark.parametrize("name", ports.__all__)
def test_every_name_is_its_familys_object(name):
    # Given a name the package exports, When it is read from the package
    found = getattr(ports, name)
    # Then it is the object its family module defines
    owners = [f for f in FAMILIES if name in vars(importlib.import_module(f"snapledger.ports.{f}"))]
    assert owners and all(
        getattr(importlib.import_module(f"snapledger.ports.{f}"), name) is found for f in owners
    )


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = ports.Nothing  # type: ignore[attr-defined]


def _families_loaded(statement: str) -> list[str]:
    script = (
        f"import json, sys\n{statement}\n"
        "print(json.dumps(sorted(m.rpartition('.')[2] for m in sys.modules\n"
        "      if m.startswith('snapledger.ports.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_a_family_loads_alone():
    # When one family's port is imported, through its module or through the package
    # Then the other families' classes are not created (a function's cold start)
    assert _families_loaded("import snapledger.ports.ledger") == ["ledger"]
    # (a job store pages its answers: the jobs family uses the ledger's Page)
    assert _families_loaded("from snapledger.ports import JobStore") == ["jobs", "ledger"]
    assert _families_loaded("from snapledger.ports import ObjectStore, ShardQueue") == [
        "objects",
        "queues",
    ]
