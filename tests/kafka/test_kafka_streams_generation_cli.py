"""``snapledger kafka-streams generation`` and ``rewind`` through click's CliRunner
(docs/kafka-streams.md, "Generations"): bad arguments name the option (exit 2), the rewind's
refusals are the message on stderr (exit 1), and ``--local`` reaches the tests' in-process
registry (moto, ``file://``) as it reaches the local runtime's. Only the request of a
generation needs the broker (it reads the changelog's end offsets): marker ``kafka``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from snapledger.cli import kafka_streams_commands
from snapledger.local import kafka_topics
from snapledger.local.handlers import invoke
from snapledger.local.kafka_app import STORE
from snapledger.local.kafka_broker import KafkaBroker
from snapledger.local.transport import LocalTransport
from tests.cli.support import Ran, run_cli
from tests.kafka.conftest import Registry
from tests.kafka.generation_members import NO_BROKER, Generation

STORE_ARGS = ["--bootstrap-servers", NO_BROKER, "--store", STORE]


@dataclass
class _LocalOnTests:
    """What the commands use of the local transport (``invoke``, the store's URI, the
    router that delivers an arrival), on the tests' in-process registry."""

    registry: Registry

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)

    @property
    def local(self) -> SimpleNamespace:
        return SimpleNamespace(store_uri=self.registry.root)

    @property
    def router(self) -> Any:
        return self.registry.router

    def store_root(self, root: str | None = None) -> str:
        return LocalTransport.store_root(self, root)  # type: ignore[arg-type]  # its rule

    def deliver(self, written: Any) -> Any:
        return self.registry.router.scan((written.prefix,), settled=True)

    def close(self) -> None:
        pass


@pytest.fixture
def local(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> Registry:
    monkeypatch.setattr(kafka_streams_commands, "_open_local", lambda _o: _LocalOnTests(registry))
    return registry


def _rewind(app_id: str, *more: str) -> Ran:
    return run_cli(
        "--local", "kafka-streams", "rewind", *STORE_ARGS, "--application-id", app_id, *more
    )


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (
            ["generation", *STORE_ARGS, "--application-id", "a", "--deadline-minutes", "0"],
            "--deadline-minutes",
        ),
        (
            ["generation", *STORE_ARGS, "--application-id", "a", "--deadline-minutes", "10081"],
            "--deadline-minutes",
        ),
        (["generation", *STORE_ARGS], "--application-id"),
        (["rewind", *STORE_ARGS, "--application-id", "a"], "--state-dir"),
        (
            [
                "rewind",
                *STORE_ARGS,
                "--application-id",
                "a",
                "--state-dir",
                "d",
                "--generation",
                "0",
            ],
            "--generation",
        ),
    ],
)
def test_bad_arguments_name_the_option(argv: list[str], named: str):
    ran = run_cli("kafka-streams", *argv)
    assert ran.status == 2
    assert named in ran.err


@pytest.mark.parametrize("command", ["generation", "rewind"])
def test_without_root_or_local_says_what_to_give(command: str, tmp_path: Path):
    more = ["--state-dir", str(tmp_path)] if command == "rewind" else []
    ran = run_cli("kafka-streams", command, *STORE_ARGS, "--application-id", "a", *more)
    assert ran.status == 2
    assert "--root s3://bucket[/prefix] is required without --local" in ran.err


@pytest.mark.parametrize("command", ["rewind", "seed"])
def test_local_with_another_root_is_refused_as_nothing_there_would_register(
    local: Registry, command: str, tmp_path: Path
):
    elsewhere = (tmp_path / "elsewhere").as_uri()
    ran = run_cli(
        "--local", "kafka-streams", command, *STORE_ARGS, "--application-id", "app",
        "--root", elsewhere, "--state-dir", str(tmp_path / "state"),
        *(["--generation", "1"] if command == "rewind" else []),
    )  # fmt: skip
    assert ran.status == 2, ran
    assert f"--root {elsewhere} is not the local runtime's store" in ran.err
    assert len(ran.err.strip().splitlines()) == 1 and "Traceback" not in ran.err


def test_rewind_to_a_generation_not_completed_is_refused(local: Registry, tmp_path: Path):
    # Given a generation only partition 0 of 2 completed
    generation = Generation(local, tmp_path)
    generation.member(0)

    # When the CLI rewinds to it, Then it is refused with the reason (exit 1), nothing made
    ran = _rewind(generation.app_id, "--state-dir", str(tmp_path / "state"))
    assert ran.status == 1, ran.err
    assert (
        f"snapledger: generation {generation.number} of {generation.stream} is REQUESTED" in ran.err
    )
    assert "only a COMPLETED generation can be rewound to" in ran.err
    assert ran.out == "" and not (tmp_path / "state").exists()


def test_rewind_to_a_generation_that_does_not_exist_is_refused(local: Registry, tmp_path: Path):
    # Given a completed generation 1, When the CLI asks for generation 7, Then refused (exit 1)
    generation = Generation(local, tmp_path).completed()
    ran = _rewind(generation.app_id, "--state-dir", str(tmp_path / "state"), "--generation", "7")
    assert ran.status == 1, ran.err
    assert ran.err.startswith("snapledger: not_found")
    assert not (tmp_path / "state").exists()


def test_rewind_into_a_state_dir_holding_the_task_is_refused(local: Registry, tmp_path: Path):
    # Given a completed generation and a state dir holding task 0_0 already
    generation = Generation(local, tmp_path).completed()
    task = generation.occupied(tmp_path / "state", "0_0")

    # When / Then: refused naming the folder (exit 1), the folder kept
    ran = _rewind(generation.app_id, "--state-dir", str(tmp_path / "state"), "--json")
    assert ran.status == 1, ran.err
    assert f"{task} is not empty" in ran.err
    assert (task / ".checkpoint").read_text() == "0\n1\nsome-topic 1 7\n"


def test_rewind_with_no_broker_answering_is_one_line_and_exit_2(
    local: Registry, tmp_path: Path, capfd: pytest.CaptureFixture[str]
):
    # Given a completed generation (its checks pass without Kafka) and no broker at the address
    generation = Generation(local, tmp_path).completed()

    # When the CLI rewinds to it with a 1 s broker timeout
    state = tmp_path / "state"
    ran = _rewind(generation.app_id, "--state-dir", str(state), "--broker-timeout", "1")

    # Then: unreachable is a bad argument (exit 2), one line with the reason, nothing made
    assert ran.status == 2, ran.err
    assert ran.err == (
        f"snapledger: no Kafka broker answered at {NO_BROKER} within 1 s: is --bootstrap-servers "
        "right and the broker up? (--broker-timeout waits longer)\n"
    )
    assert ran.out == "" and not state.exists()
    # and librdkafka wrote nothing to the process's stderr (file descriptor 2)
    assert "rdkafka" not in capfd.readouterr().err


@pytest.mark.kafka
def test_generation_is_requested_over_every_changelog_partition(
    kafka_broker: KafkaBroker, local: Registry, tmp_path: Path
):
    servers = kafka_broker.bootstrap_servers
    app_id = "gen-cli-0"
    topic = f"{app_id}-{STORE}-changelog"
    kafka_topics.create_topics(servers, [topic], partitions=2)
    argv = ["--local", "kafka-streams", "generation", "--bootstrap-servers", servers]
    argv += ["--application-id", app_id, "--store", STORE]

    # Given a changelog with no record in partition 1 yet: refused by its state (exit 1),
    # saying when to ask
    _write(servers, topic, partition=0, count=5)
    ran = run_cli(*argv)
    assert ran.status == 1
    assert f"{topic} partitions [1] hold no record yet" in ran.err

    # When every partition holds records, Then the generation is opened at each end - 1
    _write(servers, topic, partition=1, count=3)
    ends = {p.partition: p.end for p in kafka_topics.offsets(servers, topic)}
    assert ends == {0: 5, 1: 3}
    ran = run_cli(*argv, "--deadline-minutes", "5")
    assert ran.status == 0, ran.err
    answer = ran.json()
    assert answer["generation"] == 1
    assert {int(p): lsn for p, lsn in answer["min_lsn"].items()} == {
        p: end - 1 for p, end in ends.items()
    }


def _write(servers: str, topic: str, *, partition: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=b"1", partition=partition)
    assert producer.flush(30) == 0
