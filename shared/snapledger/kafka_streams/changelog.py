"""A store's changelog topic as the snapshotter and the boot step read it: each partition's
log start and end offsets, the topic's ``delete.retention.ms`` and its topic id (which
incarnation of the topic this is: a topic deleted and recreated under the same name has
another; confluent-kafka, the ``kafka`` extra, imported when used), and the lineage a store
partition's snapshots form.

Bounds (docs/kafka-streams.md, "Limits"): the lineage's stream is the changelog topic's
name, so ``{application.id}-{store}-changelog`` must fit a stream name (1-128 letters,
digits, ``.``, ``_``, ``-``); a partition is at most ``MAX_PARTITION``; offsets and
``delete.retention.ms`` are Kafka's int64s (0..2^63-1); every request to the brokers waits
at most ``timeout_s`` (``MIN_BROKER_TIMEOUT_S``..``MAX_BROKER_TIMEOUT_S``, default
``DEFAULT_BROKER_TIMEOUT_S``: the CLI's ``--broker-timeout``).

A Kafka client's failure is told as what it means: no broker answered within the timeout
(``BrokerUnreachableError``), the broker answered that the topic does not exist
(``ChangelogMissingError``: the application has not started yet), or the broker's own error.
The clients' own logs (librdkafka's connection attempts) go to a logger that drops them.
"""

from __future__ import annotations

import base64
import logging
import re
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
#: How long each request to the brokers waits for an answer (seconds): an unreachable
#: cluster is told within it (0.1..300, default 5).
DEFAULT_BROKER_TIMEOUT_S, MIN_BROKER_TIMEOUT_S, MAX_BROKER_TIMEOUT_S = 5.0, 0.1, 300.0

#: A character a stream name (so a changelog topic snapledger keeps snapshots of) may hold.
_STREAM_CHARACTER = re.compile(r"[A-Za-z0-9._-]")
#: Where the Kafka clients' own log lines go: nowhere (not stderr).
_CLIENT_LOG = logging.getLogger("snapledger.kafka_streams.librdkafka")
_CLIENT_LOG.addHandler(logging.NullHandler())
_CLIENT_LOG.propagate = False


class ChangelogError(SnapledgerError):
    """The changelog topic could not be read (missing, unreachable, or out of bounds)."""


class ChangelogMissingError(ChangelogError):
    """The broker answered that the changelog topic does not exist (UNKNOWN_TOPIC_OR_PART):
    the application has not started yet, or the application id or store is not its."""


class BrokerUnreachableError(ChangelogError):
    """No broker of ``bootstrap_servers`` answered within the timeout."""

    def __init__(self, bootstrap_servers: str, timeout_s: float) -> None:
        super().__init__(
            f"no Kafka broker answered at {bootstrap_servers} within {timeout_s:g} s: is "
            "--bootstrap-servers right and the broker up? (--broker-timeout waits longer)"
        )


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
    """The lineage stream of a store's snapshots: its changelog topic's name. A character a
    stream name cannot hold is named, with the part it is in; a name too long is told so."""
    topic = changelog_topic(application_id, store)
    allowed = "ASCII letters, digits, '.', '_' and '-'"
    parts = (("application id", application_id, "--application-id"), ("store", store, "--store"))
    for part, value, option in parts:
        bad = sorted({c for c in value if not _STREAM_CHARACTER.fullmatch(c)})
        if bad:
            raise InvalidRequestError(
                f"the {part} {value!r} has {', '.join(repr(c) for c in bad)}: its changelog "
                f"topic {topic!r} names a snapledger stream, which allows {allowed} only (as "
                f"Kafka's topic names do); check {option}"
            )
    first = application_id[:1]
    if not first.isalnum():  # ASCII: the loop above refused the others
        wrong = f"starts with {first!r}" if first else "is empty"
        raise InvalidRequestError(
            f"the application id {application_id!r} {wrong}: its changelog topic {topic!r} "
            "names a snapledger stream, which starts with an ASCII letter or digit; check "
            "--application-id"
        )
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


def kafka_config(bootstrap_servers: str, **more: Any) -> dict[str, Any]:
    """A Kafka client's configuration: the cluster, and its log lines dropped (only
    emergencies logged at all, so a long-lived client never polled for its logs, the
    sidecar's, queues none)."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "logger": _CLIENT_LOG,
        "log_level": 0,
        "log.connection.close": False,
        **more,
    }


def kafka_failure(
    exc: BaseException, bootstrap_servers: str, timeout_s: float, doing: str, topic: str = ""
) -> ChangelogError:
    """What a Kafka client's exception means, as the error to raise: no broker answered (the
    call timed out, the transport failed, the name did not resolve), ``topic`` does not
    exist, or the error the broker answered (``doing`` says what failed)."""
    kafka = confluent_kafka()
    error = exc.args[0] if isinstance(exc, kafka.KafkaException) and exc.args else None
    code = error.code() if isinstance(error, kafka.KafkaError) else None
    unreachable = {
        kafka.KafkaError._TRANSPORT,
        kafka.KafkaError._TIMED_OUT,
        kafka.KafkaError._ALL_BROKERS_DOWN,
        kafka.KafkaError._RESOLVE,
    }
    if isinstance(exc, TimeoutError) or code in unreachable:
        return BrokerUnreachableError(bootstrap_servers, timeout_s)
    if code == kafka.KafkaError.UNKNOWN_TOPIC_OR_PART and topic:
        return missing_topic(topic, bootstrap_servers)
    reason = error.str() if isinstance(error, kafka.KafkaError) else str(exc)
    return ChangelogError(f"{doing} at {bootstrap_servers} failed: {reason or type(exc).__name__}")


def missing_topic(topic: str, bootstrap_servers: str) -> ChangelogMissingError:
    return ChangelogMissingError(
        f"topic {topic!r} does not exist at {bootstrap_servers}: the application creates its "
        "changelog when it first starts (if it has, check --application-id and --store)"
    )


def describe_changelog(
    bootstrap_servers: str, topic: str, *, timeout_s: float = DEFAULT_BROKER_TIMEOUT_S
) -> Changelog:
    """Each partition's offsets, the topic's ``delete.retention.ms`` and its topic id."""
    kafka = confluent_kafka()
    # Re-exported by confluent_kafka.admin at run time; its stubs do not declare them.
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient(kafka_config(bootstrap_servers))
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        configs = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(
            timeout=timeout_s
        )
    except Exception as exc:
        doing = f"reading the config of topic {topic!r}"
        raise kafka_failure(exc, bootstrap_servers, timeout_s, doing, topic) from exc
    entry = configs.get("delete.retention.ms")
    retention = (
        int(entry.value) if entry is not None and entry.value else DEFAULT_DELETE_RETENTION_MS
    )
    if not 0 <= retention <= MAX_INT64:
        raise ChangelogError(f"topic {topic!r}: delete.retention.ms {retention} is not an int64")
    consumer = kafka.Consumer(
        kafka_config(bootstrap_servers, **{"group.id": "snapledger-changelog"})
    )
    try:
        try:
            metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        except kafka.KafkaException as exc:
            doing = f"reading the partitions of topic {topic!r}"
            raise kafka_failure(exc, bootstrap_servers, timeout_s, doing, topic) from exc
        if metadata is None or metadata.error is not None:
            raise missing_topic(topic, bootstrap_servers)
        partitions = {}
        for number in sorted(metadata.partitions):
            try:
                low, high = consumer.get_watermark_offsets(
                    kafka.TopicPartition(topic, number), timeout=timeout_s
                )
            except kafka.KafkaException as exc:  # e.g. a new topic's leader not elected yet
                doing = f"reading the offsets of {topic}-{number}"
                raise kafka_failure(exc, bootstrap_servers, timeout_s, doing) from exc
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
        raise kafka_failure(
            exc, bootstrap_servers, timeout_s, f"reading the topic id of {topic!r}", topic
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

    return AdminClient(kafka_config(bootstrap_servers))


def end_offsets(
    admin: Any,
    topic: str,
    partitions: Iterable[int],
    *,
    timeout_s: float = DEFAULT_BROKER_TIMEOUT_S,
    bootstrap_servers: str = "the cluster",
) -> dict[int, int]:
    """Each partition's end offset (committed records: the last stable offset), read with
    one ListOffsets call for all of them (``bootstrap_servers``: named in an error)."""
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
        doing = f"reading the end offsets of topic {topic!r}"
        raise kafka_failure(exc, bootstrap_servers, timeout_s, doing, topic) from exc
    for partition, end in ends.items():
        if not 0 <= end <= MAX_INT64:
            raise ChangelogError(f"{topic}-{partition}: end offset {end} is not an int64")
    return ends
