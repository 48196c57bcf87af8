"""Fixtures of the client tests: a store root on file:// (tmp_path) or on S3 (moto).

The S3 root has a key prefix and the bucket holds an object beside it, so every test also
checks that the client's keys stay under its root.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from snapledger.client.control import Snapledger
from snapledger.client.storage import BlobStore, ListedObject, StoredObject, open_store
from snapledger.local.handlers import invoke
from snapledger.runtime import runtime_override
from tests.functions.support import POWERTOOLS_ENV
from tests.support import make_runtime, moto_ledger

BUCKET = "snapledger-client-test"
S3_PREFIX = "tenant/root"
MIB = 1024 * 1024


@dataclass
class Backend:
    """A store root under test, and what a test may inspect beside it."""

    name: str
    root: str  # the URI the client is given
    client: Any = None  # the boto3 S3 client (s3 only)
    directory: Path | None = None  # the root folder (file only)

    def store(self, **options: Any) -> BlobStore:
        return open_store(self.root, s3_client=self.client, **options)

    def raw_key(self, key: str) -> str:
        """The bucket key of a key relative to the root (s3 only)."""
        return f"{S3_PREFIX}/{key}"

    def overwrite(self, key: str, data: bytes) -> None:
        """Replace an object's bytes behind the client's back."""
        if self.client is not None:
            self.client.put_object(Bucket=BUCKET, Key=self.raw_key(key), Body=data)
        else:
            assert self.directory is not None
            (self.directory / key).write_bytes(data)

    def read(self, key: str) -> bytes:
        if self.client is not None:
            return self.client.get_object(Bucket=BUCKET, Key=self.raw_key(key))["Body"].read()
        assert self.directory is not None
        return (self.directory / key).read_bytes()


@pytest.fixture
def s3_client() -> Iterator[Any]:
    """A moto S3 client with the test bucket and a neighbour object outside the root."""
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        client.put_object(Bucket=BUCKET, Key="outside", Body=b"neighbour")
        yield client


@pytest.fixture
def s3_backend(s3_client: Any) -> Backend:
    return Backend("s3", f"s3://{BUCKET}/{S3_PREFIX}", client=s3_client)


@pytest.fixture
def file_backend(tmp_path: Path) -> Backend:
    directory = tmp_path / "root"
    return Backend("file", directory.as_uri(), directory=directory)


@pytest.fixture(params=["file", "s3"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")


class RecordingStore:
    """A BlobStore wrapper recording each write (name, key) in order; it can fail the
    n-th ``put_file`` to stand for a crash in the middle of a write."""

    def __init__(self, inner: BlobStore, *, fail_put_file: int | None = None) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str]] = []
        self._fail_put_file = fail_put_file

    @property
    def uri(self) -> str:
        return self.inner.uri

    def put_file(self, key: str, source: Any, *, checksum_algorithm: str) -> StoredObject:
        self.calls.append(("put_file", key))
        if self._fail_put_file == sum(1 for name, _ in self.calls if name == "put_file"):
            raise OSError("the machine stopped")
        return self.inner.put_file(key, source, checksum_algorithm=checksum_algorithm)

    def put_if_absent(self, key: str, data: bytes) -> None:
        self.calls.append(("put_if_absent", key))
        self.inner.put_if_absent(key, data)

    def get(self, key: str) -> bytes:
        return self.inner.get(key)

    def iter_chunks(self, key: str) -> Iterator[bytes]:
        return self.inner.iter_chunks(key)

    def download(self, key: str, path: Any, *, checksum_algorithm: str | None = None) -> Any:
        return self.inner.download(key, path, checksum_algorithm=checksum_algorithm)

    def list(self, prefix: str) -> list[ListedObject]:
        return self.inner.list(prefix)


class InProcess:
    """The functions' handlers in-process, as the local transport calls them."""

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A client whose payloads the handlers answer in-process, on a moto-backed runtime."""
    from snapledger.adapters.object_store_file import FileObjectStore
    from snapledger.clock import ManualClock

    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)
    with moto_ledger() as ledger:
        runtime = make_runtime(ledger, FileObjectStore(tmp_path / "root"), ManualClock())
        with runtime_override(runtime):
            yield Snapledger(InProcess()), runtime
