"""A store's generation with its members written straight into the tests' registry (the
rewind reads them, never how they were made): the rewind's refusal tests and its CLI tests."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

from snapledger.client.writer import SnapshotWriter, WrittenSnapshot
from snapledger.kafka_streams.generation_rewind import GenerationRewind
from snapledger.kafka_streams.snapshotter import PRODUCER
from snapledger.local.kafka_app import STORE, changelog_topic
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
        registry.apply_kafka_streams(self.stream)
        requested = registry.client.request_stream_snapshot(
            self.stream, [0, 1], min_lsn={0: LSN, 1: LSN}
        )
        self.number: int = requested["generation"]
        self.written: dict[int, WrittenSnapshot] = {}

    def member(
        self, partition: int, *, inputs: bool = True, topic_id: str | None = None
    ) -> WrittenSnapshot:
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
                **({} if topic_id is None else {"topic_id": topic_id}),
            },
        )
        self.registry.deliver(written)
        self.written[partition] = written
        return written

    def completed(self, *, inputs: bool = True, topic_id: str | None = None) -> Generation:
        for partition in (0, 1):
            self.member(partition, inputs=inputs, topic_id=topic_id)
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
