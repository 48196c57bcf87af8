"""Handlers under test: Powertools configured as in AWS, the runtime injected (moto + file://).

Handler modules are imported by fixtures, after the Powertools variables are set: Metrics
reads its namespace when the module creates it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.runtime import Runtime, runtime_override
from tests.functions.support import POWERTOOLS_ENV, FakeLambdaContext, Handler
from tests.support import make_runtime, moto_ledger


@pytest.fixture(autouse=True)
def powertools_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def store(tmp_path: Path) -> FileObjectStore:
    return FileObjectStore(tmp_path / "root")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def ledger() -> Iterator[DynamoLedger]:
    with moto_ledger() as moto:
        yield moto


@pytest.fixture
def rt(ledger: DynamoLedger, store: FileObjectStore, clock: ManualClock) -> Iterator[Runtime]:
    """The runtime every handler call in the test uses."""
    with runtime_override(make_runtime(ledger, store, clock)) as injected:
        yield injected


@pytest.fixture
def register_handler(powertools_env: None) -> Handler:
    return importlib.import_module("functions.register").handler  # type: ignore[no-any-return]


@pytest.fixture
def query_handler(powertools_env: None) -> Handler:
    return importlib.import_module("functions.query").handler  # type: ignore[no-any-return]
