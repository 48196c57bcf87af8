"""``--local`` says what it starts, and how long that takes, before it starts it."""

from __future__ import annotations

import json
import os

import pytest

from snapledger.cli import main as cli
from snapledger.local.dynamodb_local import DynamoDBLocalError
from snapledger.local.runtime import RUNTIME_FILE, LocalRuntime
from snapledger.local.transport import STARTING_NOTICE


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
