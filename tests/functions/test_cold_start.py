"""What a handler's import builds (issue 29): no settings validator before it is used."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from snapledger.gc_settings import GcConfig
from snapledger.settings import LedgerSettings, settings_from_env
from tests.functions.support import POWERTOOLS_ENV
from tests.functions.test_imports import HANDLER_MODULES

# A function validates one of LedgerSettings/JobSettings and GcConfig at its first
# ``runtime()``; GcSettings only in tests. None is built while the handler is imported.
SETTINGS_CLASSES = (
    "snapledger.settings.LedgerSettings",
    "snapledger.settings.JobSettings",
    "snapledger.gc_settings.GcConfig",
    "snapledger.gc_settings.GcSettings",
)


@pytest.mark.parametrize("name", HANDLER_MODULES)
def test_importing_a_handler_builds_no_settings_validator(name):
    # Given a fresh interpreter with the function's environment
    script = (
        "import importlib, json, sys\n"
        f"import functions.{name}\n"
        "built = {}\n"
        f"for path in {list(SETTINGS_CLASSES)!r}:\n"
        "    module, _, cls = path.rpartition('.')\n"
        "    built[path] = getattr(importlib.import_module(module), cls).__pydantic_complete__\n"
        "print(json.dumps(built))\n"
    )
    env = {**os.environ, **POWERTOOLS_ENV}
    # When the handler module is imported
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    # Then no settings class has built its validator yet
    assert json.loads(done.stdout) == dict.fromkeys(SETTINGS_CLASSES, False)


def test_deferred_settings_still_validate_on_first_use():
    # Given the environment a function is deployed with, a bad default policy in it
    env = {"SNAPLEDGER_TABLE": "ledger", "SNAPLEDGER_ROOT": "s3://bucket"}
    # When the settings are read
    ledger = settings_from_env(LedgerSettings, env)
    gc = settings_from_env(GcConfig, env)
    # Then they are validated as before: values, defaults, and a refusal naming the setting
    assert (ledger.table, ledger.root, gc.gc_workers) == ("ledger", "s3://bucket", 4)
    with pytest.raises(Exception, match="SNAPLEDGER_TABLE"):
        settings_from_env(LedgerSettings, {"SNAPLEDGER_ROOT": "s3://bucket"})
