"""A store's changelog topic as the snapshotter and the boot step read it: each partition's
log start and end offsets, the topic's ``delete.retention.ms`` and its topic id (which
incarnation of the topic this is: a topic deleted and recreated under the same name has
another; confluent-kafka, the ``kafka`` extra, imported when used), and the lineage a store
partition's snapshots form.

Bounds (docs/kafka-streams.md, "Limits"): the lineage's stream is the changelog topic's
name, so ``{application.id}-{store}-changelog`` must fit a stream name (1-128 letters,
digits, ``.``, ``_``, ``-``); a partition is at most ``MAX_PARTITION``; offsets and
``delete.retention.ms`` are Kafka's int64s (0..2^63-1).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from snapledger.errors import InvalidRequestError, SnapledgerError
from snapledger.extras import raise_missing_extra
from snapledger.kafka_streams.seed_format import changelog_topic
from snapledger.layout import check_stream_name
from snapledger.limits import MAX_INT64, MAX_PARTITION

#: Kafka's default ``delete.retention.ms`` (one day), used when the topic does not say.
DEFAULT_DELETE_RETENTION_MS = 86_400_000


class ChangelogError(SnapledgerError):
    """The changelog topic could not be read (missing, unreachable, or out of bounds)."""


@dataclass(frozen=True)
class ChangelogPartition:
    """A partition's log start offset and end offset (the next offset to be written)."""

    partition: int
    log_start: int
    log_end: int


@dataclass(frozen=True)
class Changelog:
    """A changelog topic as read at one moment."""

    topic: str
    partitions: dict[int, ChangelogPartition]
    delete_retention_ms: int
    #: The topic's id as Kafka prints it (``models.manifest.TOPIC_ID_PATTERN``); None: not
    #: known.
    topic_id: str | None = None


def confluent_kafka() -> ModuleType:
    """The ``confluent_kafka`` module, or MissingExtraError naming the ``kafka`` extra."""
    try:
        import confluent_kafka as module
    except ModuleNotFoundError as missing:
        raise_missing_extra(missing, "kafka")
    return module


def store_stream(application_id: str, store: str) -> str:
    """The lineage stream of a store's snapshots: its changelog topic's name."""
    topic = changelog_topic(application_id, store)
    try:
        return check_stream_name(topic)
    except InvalidRequestError as exc:
        raise InvalidRequestError(
            f"the changelog topic {topic!r} cannot name a snapledger stream ({exc}): use a "
            "shorter application id or store name (together at most 117 characters)"
        ) from exc


def check_partition(partition: int) -> int:
    if not 0 <= partition <= MAX_PARTITION:
        raise InvalidRequestError(
            f"partition {partition}: a changelog partition snapledger keeps snapshots of is "
            f"0..{MAX_PARTITION}"
        )
    return partition


def describe_changelog(bootstrap_servers: str, topic: str, *, timeout_s: float = 30.0) -> Changelog:
    """Each partition's offsets, the topic's ``delete.retention.ms`` and its topic id."""
    kafka = confluent_kafka()
    # Re-exported by confluent_kafka.admin at run time; its stubs do not declare them.
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        configs = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(
            timeout=timeout_s
        )
    except Exception as exc:
        raise ChangelogError(
            f"reading the config of topic {topic!r} at {bootstrap_servers} failed: {exc}"
        ) from exc
    entry = configs.get("delete.retention.ms")
    retention = (
        int(entry.value) if entry is not None and entry.value else DEFAULT_DELETE_RETENTION_MS
    )
    if not 0 <= retention <= MAX_INT64:
        raise ChangelogError(f"topic {topic!r}: delete.retention.ms {retention} is not an int64")
    consumer = kafka.Consumer(
        {"bootstrap.servers": bootstrap_servers, "group.id": "snapledger-changelog"}
    )
    try:
        try:
            metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        except kafka.KafkaException as exc:
            raise ChangelogError(
                f"reading the partitions of topic {topic!r} at {bootstrap_servers} failed: {exc}"
            ) from exc
        if metadata is None or metadata.error is not None:
            raise ChangelogError(f"topic {topic!r} not found at {bootstrap_servers}")
        partitions = {}
        for number in sorted(metadata.partitions):
            try:
                low, high = consumer.get_watermark_offsets(
                    kafka.TopicPartition(topic, number), timeout=timeout_s
                )
            except kafka.KafkaException as exc:  # e.g. a new topic's leader not elected yet
                raise ChangelogError(
                    f"reading the offsets of {topic}-{number} at {bootstrap_servers} failed: {exc}"
                ) from exc
            partitions[number] = ChangelogPartition(number, low, high)
    finally:
        consumer.close()
    return Changelog(
        topic, partitions, retention, read_topic_id(admin, topic, bootstrap_servers, timeout_s)
    )


def read_topic_id(admin: Any, topic: str, bootstrap_servers: str, timeout_s: float) -> str:
    """The topic's id as Kafka prints it (one DescribeTopics call)."""
    from confluent_kafka import TopicCollection

    try:
        future = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)
        uuid = future[topic].result(timeout=timeout_s).topic_id
        bits = (uuid.get_most_significant_bits(), uuid.get_least_significant_bits())
    except Exception as exc:
        raise ChangelogError(
            f"reading the topic id of {topic!r} at {bootstrap_servers} failed: {exc}"
        ) from exc
    return topic_id_text(*bits)


def topic_id_text(most: int, least: int) -> str:
    """A topic id as Kafka prints it (``Uuid.toString``): its 16 bytes, most significant
    first, in URL-safe base64 without padding (``TOPIC_ID_PATTERN``)."""
    raw = (most % 2**64).to_bytes(8, "big") + (least % 2**64).to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def changelog_admin(bootstrap_servers: str) -> Any:
    """A Kafka admin client (kept open by the snapshot sidecar across its polls)."""
    confluent_kafka()
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap_servers})


def end_offsets(
    admin: Any, topic: str, partitions: Iterable[int], *, timeout_s: float = 30.0
) -> dict[int, int]:
    """Each partition's end offset (committed records: the last stable offset), read with
    one ListOffsets call for all of them."""
    kafka = confluent_kafka()
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    wanted = {kafka.TopicPartition(topic, p): latest for p in partitions}
    try:
        futures = admin.list_offsets(
            wanted,
            isolation_level=kafka.IsolationLevel.READ_COMMITTED,
            request_timeout=timeout_s,
        )
        ends = {
            tp.partition: future.result(timeout=timeout_s).offset for tp, future in futures.items()
        }
    except Exception as exc:
        raise ChangelogError(f"reading the end offsets of topic {topic!r} failed: {exc}") from exc
    for partition, end in ends.items():
        if not 0 <= end <= MAX_INT64:
            raise ChangelogError(f"{topic}-{partition}: end offset {end} is not an int64")
    return ends
