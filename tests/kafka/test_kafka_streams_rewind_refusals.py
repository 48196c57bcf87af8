"""``GenerationRewind.rewind``'s refusals (docs/kafka-streams.md, "Generations"), each before
anything changes. The generation's members are written straight into the registry (the rewind
reads them, never how they were made). The refusals the registry, the store or the state
directory decide come before any Kafka call: those tests run without a broker (the bootstrap
servers name a closed port, so a Kafka call would fail them, and nothing in Kafka can have
changed). The damaged member is found by the download, after Kafka's checks: that test runs on
the session's broker and checks the changelog's end offsets and the group's offsets."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from snapledger.kafka_streams.generation_rewind import GenerationRewindError
from snapledger.local import kafka_topics
from snapledger.local.kafka_broker import KafkaBroker
from tests.kafka.conftest import Registry
from tests.kafka.generation_members import Generation


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None: a folder); empty when it is absent."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


def _refused(generation: Generation, state_dir: Path, match: str) -> None:
    before = _tree(state_dir)
    with pytest.raises(GenerationRewindError, match=match):
        generation.rewind().rewind(state_dir)
    assert _tree(state_dir) == before


def test_a_generation_not_completed_is_refused(registry: Registry, tmp_path: Path):
    # Given a generation only partition 0 of 2 completed
    generation = Generation(registry, tmp_path)
    generation.member(0)

    # When it is rewound to, Then it is refused naming the missing partition, nothing made
    _refused(generation, tmp_path / "state", r"is REQUESTED \(missing partitions \[1\]\)")
    assert not (tmp_path / "state").exists()


def test_a_member_without_input_offsets_is_refused(registry: Registry, tmp_path: Path):
    # Given a completed generation whose members name no input offsets (the application ran
    # without the generation configuration)
    generation = Generation(registry, tmp_path).completed(inputs=False)

    # When / Then
    _refused(generation, tmp_path / "state", "names no input offsets.*generation configuration")
    assert not (tmp_path / "state").exists()


def test_a_member_deleted_from_the_store_is_refused(registry: Registry, tmp_path: Path):
    # Given a completed generation whose partition 1 snapshot was deleted from the store
    generation = Generation(registry, tmp_path).completed()
    shutil.rmtree(generation.files_of(1))

    # When / Then
    _refused(generation, tmp_path / "state", "partition 1: snapshot .* cannot be read")
    assert not (tmp_path / "state").exists()


def test_a_task_folder_not_empty_is_refused_and_kept(registry: Registry, tmp_path: Path):
    # Given a completed generation and a state directory holding task 0_1's state already
    generation = Generation(registry, tmp_path).completed()
    generation.occupied(tmp_path / "state", "0_1")

    # When / Then: refused, the folder as it was
    _refused(generation, tmp_path / "state", r"0_1 is not empty")


@pytest.mark.kafka
def test_a_damaged_member_is_refused_with_kafka_unchanged(
    kafka_broker: KafkaBroker, registry: Registry, tmp_path: Path
):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    servers = kafka_broker.bootstrap_servers
    generation = Generation(registry, tmp_path).completed()
    # Given the changelog holding records past the members, and the application's group
    # having committed input offsets (it ran, and is stopped)
    kafka_topics.create_topics(servers, [generation.stream, generation.input], partitions=2)
    kafka_topics.produce(
        servers,
        generation.stream,
        [(f"k{i}", str(i)) for i in range(12)],
    )
    group = Consumer({"bootstrap.servers": servers, "group.id": generation.app_id})
    committed = [TopicPartition(generation.input, p, 20 + p) for p in (0, 1)]
    group.commit(offsets=committed, asynchronous=False)
    group.close()

    def group_offsets() -> list[tuple[int, int]]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        admin = AdminClient({"bootstrap.servers": servers})
        request = ConsumerGroupTopicPartitions(generation.app_id, None)
        done = admin.list_consumer_group_offsets([request])[generation.app_id].result(timeout=30)
        return sorted((tp.partition, tp.offset) for tp in done.topic_partitions)

    ends = kafka_topics.offsets(servers, generation.stream)
    offsets = group_offsets()
    assert offsets == [(0, 20), (1, 21)]
    # ...and partition 0's snapshot damaged in the store (a file's bytes changed, same size)
    damaged = generation.files_of(0) / "CURRENT"
    damaged.write_bytes(b"MANIFEST-000009\n")

    # When it is rewound to, Then it is refused, nothing changed: the changelog's end offsets,
    # the group's offsets, the state directory (absent before, absent after)
    with pytest.raises(GenerationRewindError, match=r"partition 0: snapshot .* damaged or gone"):
        generation.rewind(servers).rewind(tmp_path / "state")
    assert kafka_topics.offsets(servers, generation.stream) == ends
    assert group_offsets() == offsets
    assert not (tmp_path / "state").exists()


def test_a_member_of_another_incarnation_of_the_changelog_is_refused(
    kafka_broker: KafkaBroker, registry: Registry, tmp_path: Path
):
    # Given a generation whose members name a topic id the changelog no longer has (the
    # topic was deleted and recreated since), the changelog holding records past them
    servers = kafka_broker.bootstrap_servers
    gone = "AAAAAAAAAAAAAAAAAAAAAQ"
    generation = Generation(registry, tmp_path).completed(topic_id=gone)
    kafka_topics.create_topics(servers, [generation.stream, generation.input], partitions=2)
    kafka_topics.produce(servers, generation.stream, [(f"k{i}", str(i)) for i in range(12)])
    ends = kafka_topics.offsets(servers, generation.stream)
    # When it is rewound to, Then it is refused naming both ids, nothing changed
    with pytest.raises(
        GenerationRewindError,
        match=rf"partition 0: snapshot .* was made from another incarnation of the changelog: "
        rf"{generation.stream} had topic id {gone}, its current one is [A-Za-z0-9_-]{{22}}",
    ):
        generation.rewind(servers).rewind(tmp_path / "state")
    assert kafka_topics.offsets(servers, generation.stream) == ends
    assert not (tmp_path / "state").exists()
