from __future__ import annotations

from collections.abc import Iterator

import pytest

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from tests.support import create_ledger, local_client, moto_ledger


@pytest.fixture(params=["moto", pytest.param("ddblocal", marks=pytest.mark.ddblocal)])
def ledger(request: pytest.FixtureRequest) -> Iterator[DynamoLedger]:
    """The ledger on moto and on DynamoDB Local (the real engine), a fresh table each."""
    if request.param == "moto":
        with moto_ledger() as moto:
            yield moto
    else:
        engine = request.getfixturevalue("dynamodb_local")
        yield create_ledger(local_client(engine.endpoint_url))


@pytest.fixture
def store(tmp_path) -> FileObjectStore:
    return FileObjectStore(tmp_path / "root")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
