"""``GenerationRewind.rewind``'s refusals (docs/kafka-streams.md, "Generations"), each before
anything changes. The generation's members are written straight into the registry (the rewind
reads them, never how they were made). The refusals the registry, the store or the state
directory decide come before any Kafka call: those tests run without a broker (the bootstrap
servers name a closed port, so a Kafka call would fail them, and nothing in Kafka can have
changed). The damaged member is found by the download, after Kafka's checks: that test runs on
the session's broker and checks the changelog's end offsets and the group's offsets."""

from __future__ import annotations

import itertools
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from snapledger.client.writer import SnapshotWriter, WrittenSnapshot
from snapledger.kafka_streams.generation_rewind import GenerationRewind, GenerationRewindError
from snapledger.kafka_streams.snapshotter import PRODUCER
from snapledger.layouts.lineage import LayoutCatalog
from snapledger.local import kafka_topics
from snapledger.local.kafka_app import STORE, changelog_topic
from snapledger.local.kafka_broker import KafkaBroker
from snapledger.runtime import replaced, runtime, use_runtime
from tests.kafka.conftest import Registry

#: A closed port: any Kafka call fails (after its timeout), so a test passing with it made none.
NO_BROKER = "127.0.0.1:1"
LSN = 4
_ids = itertools.count()


class Generation:
    """A store's generation over two changelog partitions, its members written directly:
    each an opaque store folder at LSN 4 naming input ``rw-orders-{p}`` offset 9."""

    def __init__(self, registry: Registry, tmp_path: Path) -> None:
        self.registry = registry
        self.tmp = tmp_path
        self.app_id = f"rw-{next(_ids)}"
        self.stream = changelog_topic(self.app_id)
        self.input = f"rw-orders-{self.app_id}"
        use_runtime(replaced(runtime(), layouts=LayoutCatalog(kafka_streams=[self.stream])))
        requested = registry.client.request_stream_snapshot(
            self.stream, [0, 1], min_lsn={0: LSN, 1: LSN}
        )
        self.number: int = requested["generation"]
        self.written: dict[int, WrittenSnapshot] = {}

    def member(self, partition: int, *, inputs: bool = True) -> WrittenSnapshot:
        folder = self.tmp / f"store-{partition}"
        folder.mkdir()
        (folder / "CURRENT").write_bytes(b"MANIFEST-000005\n")
        (folder / "OPTIONS-000007").write_bytes(b"options of partition %d\n" % partition)
        own = {f"{self.stream}-{partition}": LSN}
        offsets = {f"{self.input}-{partition}": 9, **own} if inputs else own
        written = SnapshotWriter(
            self.registry.root, self.stream, partition, producer=PRODUCER
        ).write_files(
            LSN,
            1,
            folder,
            offsets=offsets,
            created_at=datetime.now(UTC),
            generation=self.number,
            changelog={
                "log_start_offset": 0,
                "end_offset": LSN + 1,
                "delete_retention_ms": 86_400_000,
            },
        )
        self.registry.deliver(written)
        self.written[partition] = written
        return written

    def completed(self, *, inputs: bool = True) -> Generation:
        for partition in (0, 1):
            self.member(partition, inputs=inputs)
        found = self.registry.client.generation(self.stream, self.number)["generation"]
        assert found["status"] == "COMPLETED"
        return self

    def rewind(self, servers: str = NO_BROKER) -> GenerationRewind:
        return GenerationRewind(
            self.registry.client, self.registry.root, servers, self.app_id, STORE
        )

    def occupied(self, state_dir: Path, task: str) -> Path:
        """``task``'s folder in ``state_dir`` holding a file already (an instance's state)."""
        folder = state_dir / self.app_id / task
        folder.mkdir(parents=True)
        (folder / ".checkpoint").write_text("0\n1\nsome-topic 1 7\n")
        return folder

    def files_of(self, partition: int) -> Path:
        return self.registry.directory / self.written[partition].prefix


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
