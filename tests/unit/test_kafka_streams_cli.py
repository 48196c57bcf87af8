"""``snapledger kafka-streams``: what it refuses before it reaches Kafka or a registry (one
line on stderr, exit 2), and which errors are the state's (exit 1) and which a bad argument's
or an unreachable service's (exit 2): docs/kafka-streams.md, "Exit status and errors"."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapledger.cli.kafka_streams_commands import exit_status
from snapledger.cli.main import main
from snapledger.client.control import RequestRefusedError
from snapledger.client.transport import TransportError
from snapledger.errors import InvalidRequestError, SnapledgerError
from snapledger.kafka_streams.catch_up import CatchUpError, CatchUpRefusedError
from snapledger.kafka_streams.changelog import (
    BrokerUnreachableError,
    ChangelogError,
    ChangelogMissingError,
)
from snapledger.kafka_streams.generation_rewind import GenerationRewindError
from snapledger.kafka_streams.seed import SeedError
from tests.cli.support import Ran, run_cli

#: A closed port: a test passing with it made no Kafka call (it would end in "no broker").
NO_BROKER = "127.0.0.1:1"


def _seed(state_dir, *more: str) -> int:
    common = ["--bootstrap-servers", NO_BROKER, "--application-id", "a", "--store", "totals"]
    return main(["kafka-streams", "seed", *common, "--state-dir", str(state_dir), *more])


def test_seed_without_root_or_local_says_what_to_give(tmp_path, capsys: pytest.CaptureFixture[str]):
    status = _seed(tmp_path)
    assert status == 2
    assert "--root s3://bucket[/prefix] is required without --local" in capsys.readouterr().err


def test_seed_refuses_a_task_that_is_no_task_id(tmp_path, capsys: pytest.CaptureFixture[str]):
    status = _seed(tmp_path, "--root", "file:///tmp/x", "--tasks", "0_1,three")
    assert status == 2
    assert "task 'three': a task is {subtopology}_{partition}" in capsys.readouterr().err


def _seed_into(state_dir: Path) -> Ran:
    """A seed of application ``a`` into ``state_dir`` (no broker: a Kafka call would fail)."""
    common = ["--bootstrap-servers", NO_BROKER, "--application-id", "a", "--store", "totals"]
    return run_cli(
        "kafka-streams", "seed", *common, "--root", "file:///tmp/x", "--state-dir", str(state_dir)
    )


def test_an_application_folder_that_is_a_file_is_a_bad_state_dir(tmp_path: Path):
    # Given {state-dir}/{application id} is a file
    (tmp_path / "a").write_text("not a folder")

    # When seeding into it: one line naming the path and what to do, exit 2, no Kafka call
    ran = _seed_into(tmp_path)
    assert ran.status == 2
    assert ran.err == (
        f"snapledger: {tmp_path / 'a'} is a file, not a folder: Kafka Streams keeps the "
        "application's task folders there; move the file away, or give another --state-dir\n"
    )
    assert (tmp_path / "a").read_text() == "not a folder"


def test_a_state_dir_with_a_file_in_its_path_is_a_bad_state_dir(tmp_path: Path):
    # Given a --state-dir under a file: {state-dir}/{application id} cannot be made
    (tmp_path / "volume").write_text("a file")
    state_dir = tmp_path / "volume" / "state"

    ran = _seed_into(state_dir)
    assert ran.status == 2
    assert ran.err == (
        f"snapledger: cannot make the folder {state_dir / 'a'}: Not a directory; give a "
        "--state-dir this user can write, with no file in the way\n"
    )


ALLOWED = "which allows ASCII letters, digits, '.', '_' and '-' only (as Kafka's topic names do)"


@pytest.mark.parametrize(
    ("application_id", "store", "told"),
    [
        ("my app", "totals", f"the application id 'my app' has ' ': its changelog topic "
         f"'my app-totals-changelog' names a snapledger stream, {ALLOWED}; check "
         "--application-id"),
        ("app", "tot/al$", f"the store 'tot/al$' has '$', '/': its changelog topic "
         f"'app-tot/al$-changelog' names a snapledger stream, {ALLOWED}; check --store"),
        ("_app", "totals", "the application id '_app' starts with '_': its changelog topic "
         "'_app-totals-changelog' names a snapledger stream, which starts with an ASCII letter "
         "or digit; check --application-id"),
        ("a" * 100, "b" * 18, "use a shorter application id or store name (together at most "
         "117 characters)"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["seed", "snapshot", "generation"])
def test_a_name_no_stream_can_have_says_what_is_wrong(
    command: str, application_id: str, store: str, told: str, tmp_path: Path
):
    more = ["--state-dir", str(tmp_path)] if command == "seed" else []
    ran = run_cli(
        "kafka-streams", command, "--bootstrap-servers", NO_BROKER, "--application-id",
        application_id, "--store", store, "--root", "file:///tmp/x", *more,
    )  # fmt: skip
    assert ran.status == 2
    [line] = ran.err.splitlines()
    assert line.startswith("snapledger: ") and line.endswith(told)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        # refused by the state: 1
        (SeedError("the state directory is locked"), 1),
        (GenerationRewindError("generation 3 is REQUESTED"), 1),
        (ChangelogMissingError("topic 't' does not exist"), 1),
        (ChangelogError("partitions [1] hold no record yet"), 1),
        (CatchUpRefusedError("the store's offset + 1 is below the log start"), 1),
        (CatchUpError("kafka-seeder failed"), 1),
        (RequestRefusedError({"ok": False, "error": "not_found", "message": "no such"}), 1),
        # a bad argument, or out of reach: 2
        (RequestRefusedError({"ok": False, "error": "validation", "message": "bad"}), 2),
        (InvalidRequestError("task 0_9: the topic has no partition 9"), 2),
        (BrokerUnreachableError(NO_BROKER, 5), 2),
        (TransportError("could not read the stack"), 2),
        (SnapledgerError("anything else"), 2),
    ],
)
def test_exit_status_is_1_for_the_state_and_2_for_arguments_or_reach(
    error: SnapledgerError, status: int
):
    assert exit_status(error) == status


@pytest.mark.parametrize("work_dir", [None, "work"])
def test_a_one_shot_pass_keeps_its_working_copies_in_the_work_dir_alone(
    work_dir: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # docs/kafka-streams.md, "Working copies": with --work-dir DIR a pass keeps them in
    # DIR/working-copies; without, it starts cold and keeps none
    from contextlib import contextmanager

    from snapledger.cli import kafka_streams_commands
    from snapledger.kafka_streams.snapshotter import StoreSnapshotter

    @contextmanager
    def registry_for(_options, root):  # type: ignore[no-untyped-def]
        yield None, root, None

    kept = []
    monkeypatch.setattr(kafka_streams_commands, "registry_for", registry_for)
    monkeypatch.setattr(
        StoreSnapshotter, "snapshot", lambda self, *a, **k: kept.append(self.keep_dir) or []
    )
    more = [] if work_dir is None else ["--work-dir", str(tmp_path / work_dir)]
    ran = run_cli(
        "kafka-streams", "snapshot", "--bootstrap-servers", NO_BROKER, "--application-id", "a",
        "--store", "totals", "--root", "file:///tmp/x", *more,
    )  # fmt: skip
    assert ran.status == 0, ran.err
    assert kept == [None if work_dir is None else tmp_path / work_dir / "working-copies"]
