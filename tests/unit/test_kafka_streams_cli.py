"""``snapledger kafka-streams``: what it refuses before it reaches Kafka or a registry."""

from __future__ import annotations

import pytest

from snapledger.cli.main import main


def _seed(state_dir, *more: str) -> int:
    common = ["--bootstrap-servers", "127.0.0.1:1", "--application-id", "a", "--store", "totals"]
    return main(["kafka-streams", "seed", *common, "--state-dir", str(state_dir), *more])


def test_seed_without_root_or_local_says_what_to_give(tmp_path, capsys: pytest.CaptureFixture[str]):
    status = _seed(tmp_path)
    assert status == 2
    assert "--root s3://bucket[/prefix] is required without --local" in capsys.readouterr().err


def test_seed_refuses_a_task_that_is_no_task_id(tmp_path, capsys: pytest.CaptureFixture[str]):
    status = _seed(tmp_path, "--root", "file:///tmp/x", "--tasks", "0_1,three")
    assert status == 2
    assert "task 'three': a task is {subtopology}_{partition}" in capsys.readouterr().err
