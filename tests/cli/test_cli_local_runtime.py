"""The real --local path: DynamoDB Local with its data kept in the home folder."""

from __future__ import annotations

import json

import pytest

from snapledger.cli import main as cli

pytestmark = [pytest.mark.ddblocal, pytest.mark.slow]


def test_state_persists_between_cli_invocations(tmp_path, capsys):
    home = str(tmp_path / "home")
    # Given a policy set by one invocation (which starts and stops DynamoDB Local)
    assert cli.main(["--local", "--home", home, "policy", "set", "orders", "--min-count", "7"]) == 0
    capsys.readouterr()
    # When another invocation reads it
    status = cli.main(["--local", "--home", home, "--json", "policy", "get", "orders"])
    # Then it was kept on disk
    assert status == 0
    assert json.loads(capsys.readouterr().out)["policy"]["min_count"] == 7
    assert (tmp_path / "home" / "dynamodb").is_dir()
    # and the change is the stream's history, on the local runtime as in AWS
    assert cli.main(["--local", "--home", home, "--json", "history", "orders"]) == 0
    [event] = json.loads(capsys.readouterr().out)["events"]
    assert (event["seq"], event["type"], event["policy"]["min_count"]) == (1, "PolicySet", 7)


def test_a_lineage_with_no_history_is_not_found(tmp_path, capsys):
    status = cli.main(["--local", "--home", str(tmp_path / "home"), "latest", "orders", "0"])
    assert status == 1 and "not_found" in capsys.readouterr().out
