"""Shared fixtures. DynamoDB Local is started once per session, on a free port."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")

from snapledger.local.dynamodb_local import DynamoDBLocal
from tests.moto_threads import serialize_moto_requests

serialize_moto_requests()  # GC's lineage threads on moto (tests/moto_threads.py)


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    """A DynamoDB Local engine for the whole session (tests create their own tables)."""
    with DynamoDBLocal() as engine:
        yield engine


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the whole test session (it costs seconds to start)."""
    from snapledger.local.spark_runner import local_spark_session

    session = local_spark_session()
    yield session
    session.stop()
