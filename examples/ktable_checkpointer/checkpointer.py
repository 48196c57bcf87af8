"""``KTableCheckpointer``: a compacted topic materialized into a table, checkpointed through
snapledger, and booted from its latest registered checkpoint (docs/kafka-streams.md, "The
KTable checkpointer")."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from examples.ktable_checkpointer.boot import Boot, CheckpointLoader, delete_retention_ms
from examples.ktable_checkpointer.table import (
    MAX_EPOCH,
    MAX_RETENTION_MIN_AGE_HOURS,
    MAX_RETENTION_MIN_COUNT,
    CheckpointSchedule,
    KTableCheckpointerError,
    PartitionTable,
    checked_number,
)
from snapledger.client import Snapledger, SnapshotReader, SnapshotWriter, WrittenSnapshot
from snapledger.client.state_table import STATE_ARROW_SCHEMA
from snapledger.layout import check_stream_name

PRODUCER = "snapledger-ktable-checkpointer"
#: Records one ``poll`` takes from the consumer at most.
BATCH = 500


class KTableCheckpointer:
    """Materializes ``topic`` (compacted: key → last value, a null value deletes the key)
    and writes one checkpoint per changed partition every ``every_records`` records or
    ``every_seconds`` seconds, whichever first, to the store at ``root`` as stream
    ``stream`` (default: the topic's name). ``start()`` (or ``with``) boots each partition
    from its latest registered checkpoint, asked of ``registry``, and assigns the consumer
    at the checkpoint's offset. ``retention_min_count``/``retention_min_age_hours`` set
    the stream's retention policy at start (``set_retention=False``: leave it).
    ``on_written`` is called with each checkpoint once written (the local runtime delivers
    its arrival, so it registers; in AWS the S3 event does).
    """

    def __init__(
        self,
        topic: str,
        bootstrap_servers: str,
        root: str,
        *,
        registry: Snapledger,
        stream: str | None = None,
        every_records: int = 10_000,
        every_seconds: float = 300.0,
        epoch: int = 1,
        retention_min_count: int = 10,
        retention_min_age_hours: float = 12.0,
        set_retention: bool = True,
        clock: Callable[[], float] = time.monotonic,
        consumer_config: Mapping[str, Any] | None = None,
        s3_client: Any = None,
        on_written: Callable[[WrittenSnapshot], object] | None = None,
    ) -> None:
        self.topic = topic
        self.stream = check_stream_name(stream if stream is not None else topic)
        self.schedule = CheckpointSchedule(every_records, every_seconds, clock)
        self._epoch = int(checked_number("epoch", epoch, 0, MAX_EPOCH))
        self._retention = (
            int(
                checked_number(
                    "retention_min_count", retention_min_count, 1, MAX_RETENTION_MIN_COUNT
                )
            ),
            checked_number(
                "retention_min_age_hours", retention_min_age_hours, 0, MAX_RETENTION_MIN_AGE_HOURS
            ),
        )
        self._set_retention = set_retention
        self._registry = registry
        self._root = root
        self._s3_client = s3_client
        self._on_written = on_written
        self._servers = bootstrap_servers
        self._consumer_config = dict(consumer_config or {})
        self._consumer: Any = None
        self.partitions: dict[int, PartitionTable] = {}
        self._writers: dict[int, SnapshotWriter] = {}
        self.boots: dict[int, Boot] = {}
        self.written: list[WrittenSnapshot] = []
        #: Records read from the topic since start (the checkpoints' rows are not counted).
        self.records_read = 0

    # -- start ---------------------------------------------------------------------------

    def __enter__(self) -> KTableCheckpointer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def start(self) -> KTableCheckpointer:
        """Set the retention policy, boot every partition, assign the consumer."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        if self._set_retention:
            min_count, min_age_hours = self._retention
            self._registry.set_policy(self.stream, min_count=min_count, min_age_hours=min_age_hours)
        self._consumer = Consumer(
            {
                "bootstrap.servers": self._servers,
                "group.id": f"snapledger-ktable-{self.stream}",  # assigned, never committed
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                **self._consumer_config,
            }
        )
        metadata = self._consumer.list_topics(self.topic, timeout=30).topics.get(self.topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            raise KTableCheckpointerError(
                f"topic {self.topic!r} not found on {self._servers} "
                f"({metadata and metadata.error}): create it (compacted) or fix --topic"
            )
        retention_ms = delete_retention_ms(self._servers, self.topic)
        reader = SnapshotReader(self._root, s3_client=self._s3_client)
        loader = CheckpointLoader(self._registry, reader, self.topic, self.stream)
        assignment = []
        for partition in sorted(metadata.partitions):
            table = PartitionTable(self.topic, partition)
            low, _ = self._consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=30
            )
            self.boots[partition] = loader.boot(
                table, epoch=self._epoch, log_start=low, retention_ms=retention_ms
            )
            self._writers[partition] = SnapshotWriter(
                self._root, self.stream, partition, producer=PRODUCER, s3_client=self._s3_client
            )
            self.partitions[partition] = table
            start = OFFSET_BEGINNING if table.last_applied is None else table.next_offset
            assignment.append(TopicPartition(self.topic, partition, start))
        self._consumer.assign(assignment)
        return self

    # -- run -----------------------------------------------------------------------------

    def poll(self, timeout_s: float = 1.0) -> int:
        """Apply the records that arrive within ``timeout_s`` (at most ``BATCH``), writing
        checkpoints when due; return how many were applied."""
        from confluent_kafka import KafkaError

        consumer = self._started()
        applied = 0
        for message in consumer.consume(num_messages=BATCH, timeout=timeout_s):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KTableCheckpointerError(f"reading {self.topic!r}: {error}")
            table = self.partitions[message.partition()]
            table.apply(message.key(), message.value(), message.offset())
            applied += 1
            self.records_read += 1
            self._checkpoint_if_due()
        self._checkpoint_if_due()
        return applied

    def catch_up(self, timeout_s: float = 30.0) -> int:
        """Poll until every partition is at its end offset as of the call (committed
        records); return how many records were applied."""
        from confluent_kafka import TopicPartition

        consumer = self._started()
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1]
            for p in self.partitions
        }
        deadline = time.monotonic() + timeout_s
        applied = 0
        while True:
            positions = {
                tp.partition: tp.offset
                for tp in consumer.position([TopicPartition(self.topic, p) for p in ends])
            }
            behind = {
                p: end
                for p, end in ends.items()
                if max(positions[p], self.partitions[p].next_offset) < end
            }
            if not behind:
                return applied
            if time.monotonic() > deadline:
                raise KTableCheckpointerError(
                    f"{self.topic!r} not read to its end offsets {behind} in {timeout_s}s "
                    f"(at {positions}): is the broker up?"
                )
            applied += self.poll(0.2)

    def checkpoint(self) -> list[WrittenSnapshot]:
        """Write a checkpoint of every partition changed since its last one, now."""
        written = []
        for partition, table in sorted(self.partitions.items()):
            if table.applied_since_checkpoint == 0 or table.last_applied is None:
                continue
            snapshot = self._writers[partition].write(
                lsn=table.last_applied,  # the offset of the last record applied
                epoch=self.boots[partition].epoch,
                data=pa.table(table.columns(), schema=STATE_ARROW_SCHEMA),
                offsets={f"{self.topic}-{partition}": table.next_offset},
            )
            table.applied_since_checkpoint = 0
            written.append(snapshot)
            if self._on_written is not None:
                self._on_written(snapshot)
        self.schedule.done()
        self.written.extend(written)
        return written

    @property
    def table(self) -> dict[str, bytes]:
        """The current table: every key of every partition and its value."""
        return {
            key: value
            for table in self.partitions.values()
            for key, (value, _) in table.rows.items()
        }

    def close(self, *, checkpoint: bool = True) -> None:
        """Stop: a last checkpoint of the changed partitions (unless ``checkpoint=False``,
        and whatever the schedule), then the consumer closed. Closing twice does nothing."""
        if self._consumer is None:
            return
        try:
            if checkpoint:
                self.checkpoint()
        finally:
            self._consumer.close()
            self._consumer = None

    def _checkpoint_if_due(self) -> None:
        pending = sum(t.applied_since_checkpoint for t in self.partitions.values())
        if self.schedule.due(pending):
            self.checkpoint()

    def _started(self) -> Any:
        if self._consumer is None:
            raise KTableCheckpointerError("the checkpointer is not started: call start() first")
        return self._consumer
