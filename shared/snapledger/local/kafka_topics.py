"""Topics on a Kafka broker, through ``confluent-kafka`` (librdkafka): create them, produce
string records, read them back and read each partition's offsets. What the Kafka tests and
the demo need around the broker (``kafka_broker.py``) and the application (``kafka_app.py``).

``confluent-kafka`` is in the dev dependency group (``make setup`` installs it); it is
imported where used, so importing this module needs nothing beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from snapledger.errors import SnapledgerError


class KafkaTopicsError(SnapledgerError):
    """A topic could not be created, written or read."""


@dataclass(frozen=True)
class Record:
    """One record as read back: its place in the topic and its key and value bytes
    (``None`` for a null key or value: a tombstone in a compacted topic)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None

    def text(self) -> tuple[str | None, str | None]:
        """Key and value as UTF-8 text."""
        return (
            None if self.key is None else self.key.decode("utf-8"),
            None if self.value is None else self.value.decode("utf-8"),
        )


@dataclass(frozen=True)
class PartitionOffsets:
    """A partition's log start offset and its end offset (the next offset to be written)."""

    partition: int
    start: int
    end: int


def create_topics(
    bootstrap_servers: str,
    names: Iterable[str],
    *,
    partitions: int,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """Create each topic with ``partitions`` partitions, replicated once (a one-node broker);
    ``config`` sets topic properties (e.g. ``cleanup.policy``). A topic that exists fails."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    if partitions < 1:
        raise KafkaTopicsError(f"a topic needs at least 1 partition, not {partitions}")
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    topics = [
        NewTopic(name, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
        for name in names
    ]
    for name, future in admin.create_topics(topics, request_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
        except Exception as exc:
            raise KafkaTopicsError(f"creating topic {name!r} failed: {exc}") from exc


def produce(
    bootstrap_servers: str,
    topic: str,
    records: Iterable[tuple[str, str | None]],
    *,
    timeout_s: float = 30.0,
) -> int:
    """Write ``(key, value)`` records (UTF-8; ``None`` = a null value) with the default
    partitioner (librdkafka's murmur2, as the Java client), acknowledged by the broker
    (``acks=all``, idempotent); return how many were written."""
    from confluent_kafka import KafkaError, Producer

    failures: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "linger.ms": 5,
        }
    )
    count = 0
    for key, value in records:
        producer.produce(
            topic,
            key=key.encode("utf-8"),
            value=None if value is None else value.encode("utf-8"),
            on_delivery=on_delivery,
        )
        producer.poll(0)
        count += 1
    left = producer.flush(timeout_s)
    if left or failures:
        raise KafkaTopicsError(
            f"producing to {topic!r}: {left} of {count} records not acknowledged "
            f"in {timeout_s}s; errors: {failures[:5]}"
        )
    return count


def offsets(
    bootstrap_servers: str, topic: str, *, timeout_s: float = 10.0
) -> list[PartitionOffsets]:
    """Each partition's log start and end offsets, by partition number."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "snapledger-offsets"})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise KafkaTopicsError(f"topic {topic!r} not found: {metadata and metadata.error}")
        result = []
        for partition in sorted(metadata.partitions):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout_s
            )
            result.append(PartitionOffsets(partition, low, high))
        return result
    finally:
        consumer.close()


def read_all(bootstrap_servers: str, topic: str, *, timeout_s: float = 30.0) -> list[Record]:
    """Every record of ``topic`` from each partition's start to its end offset as of the
    call (committed records only), by partition then offset."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    ends = {p.partition: p for p in offsets(bootstrap_servers, topic, timeout_s=timeout_s)}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": "snapledger-read-all",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    records: list[Record] = []
    try:
        wanted = {p: o for p, o in ends.items() if o.end > o.start}
        consumer.assign([TopicPartition(topic, p, o.start) for p, o in wanted.items()])
        deadline = time.monotonic() + timeout_s
        position = {p: o.start for p, o in wanted.items()}
        while any(position[p] < wanted[p].end for p in wanted):
            if time.monotonic() > deadline:
                raise KafkaTopicsError(
                    f"reading {topic!r}: not at its end offsets after {timeout_s}s "
                    f"(at {position}, ends {[(p, o.end) for p, o in wanted.items()]})"
                )
            message = consumer.poll(0.2)
            if message is None:
                # transaction markers take offsets but are never delivered: ask where we are
                for tp in consumer.position([TopicPartition(topic, p) for p in wanted]):
                    if tp.offset >= 0:
                        position[tp.partition] = max(position[tp.partition], tp.offset)
                continue
            if message.error() is not None:
                raise KafkaTopicsError(f"reading {topic!r}: {message.error()}")
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:  # only for errors, handled above
                raise KafkaTopicsError(f"reading {topic!r}: a message without partition/offset")
            position[partition] = offset + 1
            if offset < wanted[partition].end:
                records.append(Record(partition, offset, message.key(), message.value()))
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))
