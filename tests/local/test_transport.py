"""``--local`` says what it starts, and how long that takes, before it starts it; a writer
with ``--local`` writes to the local runtime's store (``LocalTransport.store_root``)."""

from __future__ import annotations

import json
import os

import pytest

from snapledger.cli import main as cli
from snapledger.errors import InvalidRequestError
from snapledger.local.dynamodb_local import DynamoDBLocalError
from snapledger.local.runtime import RUNTIME_FILE, LocalRuntime
from snapledger.local.transport import STARTING_NOTICE, LocalTransport


@pytest.fixture
def stderr_at_start(monkeypatch, capsys) -> list[str]:
    """What the CLI had written on stderr when the local runtime started (then it stops)."""
    seen: list[str] = []

    def start(self):
        seen.append(capsys.readouterr().err)
        raise DynamoDBLocalError("stopped by the test")

    monkeypatch.setattr(LocalRuntime, "start", start)
    return seen


def test_local_without_local_up_announces_dynamodb_local_on_stderr_first(tmp_path, stderr_at_start):
    cli.main(["--local", "--home", str(tmp_path), "latest", "orders", "0"])
    assert stderr_at_start == [STARTING_NOTICE + "\n"]
    assert "DynamoDB Local" in STARTING_NOTICE and "30 s" in STARTING_NOTICE
    assert "snapledger local up" in STARTING_NOTICE


def test_local_with_local_up_running_starts_nothing_and_says_nothing(tmp_path, stderr_at_start):
    endpoint = {"pid": os.getpid(), "endpoint": "http://127.0.0.1:9"}
    (tmp_path / RUNTIME_FILE).write_text(json.dumps(endpoint))
    cli.main(["--local", "--home", str(tmp_path), "latest", "orders", "0"])
    assert stderr_at_start == [""]


# -- the store a --local writer writes to ---------------------------------------------------


def _transport(home, s3_endpoint=None) -> LocalTransport:
    """A transport on a runtime not started: ``store_root`` needs only where its store is."""
    local = LocalRuntime(home=home, s3_endpoint=s3_endpoint)
    return LocalTransport(local=local, router=None, handlers={})  # type: ignore[arg-type]


def test_a_local_writer_s_root_is_the_local_store_however_it_is_spelled(tmp_path):
    transport = _transport(tmp_path)
    own = (tmp_path / "root").as_uri()
    assert transport.store_root() == own
    assert transport.s3_client() is None  # a folder
    for same in (own, own + "/", str(tmp_path / "root"), f"file://{tmp_path}/./root"):
        assert transport.store_root(same) == own, same
    for other in (f"{own}/sub", (tmp_path / "elsewhere").as_uri(), "s3://bucket"):
        with pytest.raises(InvalidRequestError) as refused:
            transport.store_root(other)
        assert str(refused.value) == (
            f"--root {other} is not the local runtime's store ({own}), so nothing written "
            "there would be registered: with --local leave --root out (or give that store); "
            "to write elsewhere, register through a deployment instead of --local"
        )


def test_with_local_up_s_s3_endpoint_the_local_store_is_its_bucket(tmp_path):
    transport = _transport(tmp_path, s3_endpoint="http://127.0.0.1:9")
    assert transport.store_root() == transport.store_root("s3://snapledger-local/")
    assert transport.store_root() == "s3://snapledger-local"
    assert transport.s3_client().meta.endpoint_url == "http://127.0.0.1:9"
    with pytest.raises(InvalidRequestError, match="is not the local runtime's store"):
        transport.store_root((tmp_path / "root").as_uri())
