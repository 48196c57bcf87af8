"""``describe_changelog`` turns the Kafka client's errors into ``ChangelogError`` (which the
snapshot sidecar waits out at start: docs/kafka-streams.md, "Snapshots on a schedule"),
including those of a topic just created, whose partitions have no leader yet: the client
raising from its metadata or offsets reads, not only from the config read; ``kafka_failure``
tells no broker answering from a missing topic and keeps another error's reason."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import confluent_kafka
import confluent_kafka.admin
import pytest

from snapledger.kafka_streams.changelog import (
    BrokerUnreachableError,
    ChangelogError,
    ChangelogMissingError,
    describe_changelog,
    kafka_failure,
    topic_id_text,
)

TOPIC = "app-totals-changelog"
NOT_LEADER = confluent_kafka.KafkaError(confluent_kafka.KafkaError.NOT_LEADER_FOR_PARTITION)
#: A topic id as Kafka prints it (URL-safe base64), and its UUID's two halves as signed
#: longs (Java's, and confluent-kafka's ``Uuid.get_*_significant_bits``).
TOPIC_ID = "J_a_Mo_xStyarpEDTjEqtA"
_RAW = base64.urlsafe_b64decode(TOPIC_ID + "==")
MOST = int.from_bytes(_RAW[:8], "big", signed=True)
LEAST = int.from_bytes(_RAW[8:], "big", signed=True)


class _Admin:
    """Answers the config read: no ``delete.retention.ms`` set."""

    def __init__(self, _config: dict[str, Any]) -> None:
        pass

    def describe_configs(self, resources, request_timeout):  # type: ignore[no-untyped-def]
        done = SimpleNamespace(result=lambda timeout: {})
        return {resources[0]: done}

    def describe_topics(self, topics, request_timeout):  # type: ignore[no-untyped-def]
        # librdkafka's Uuid: str() is standard base64 ("J/a/..."); the bits are what count
        uuid = SimpleNamespace(
            get_most_significant_bits=lambda: MOST, get_least_significant_bits=lambda: LEAST
        )
        described = SimpleNamespace(topic_id=uuid)
        return {
            name: SimpleNamespace(result=lambda timeout: described) for name in topics.topic_names
        }


class _Consumer:
    """Partition 0 answers; reads raise ``NOT_LEADER`` where ``raising`` says."""

    raising: str = ""

    def __init__(self, _config: dict[str, Any]) -> None:
        pass

    def list_topics(self, topic, timeout):  # type: ignore[no-untyped-def]
        if self.raising == "list_topics":
            raise confluent_kafka.KafkaException(NOT_LEADER)
        partitions = {0: None, 1: None}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=partitions)})

    def get_watermark_offsets(self, partition, timeout):  # type: ignore[no-untyped-def]
        if self.raising == "offsets" and partition.partition == 1:
            raise confluent_kafka.KafkaException(NOT_LEADER)
        return (0, 10)

    def close(self) -> None:
        pass


@pytest.fixture
def client(monkeypatch) -> type[_Consumer]:
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", _Admin)
    monkeypatch.setattr(confluent_kafka, "Consumer", _Consumer)
    _Consumer.raising = ""
    return _Consumer


def test_the_partitions_offsets_are_read(client):
    changelog = describe_changelog("127.0.0.1:9", TOPIC)
    assert sorted(changelog.partitions) == [0, 1]
    assert changelog.partitions[1].log_start == 0
    assert changelog.topic_id == TOPIC_ID


def test_a_topic_id_is_written_as_kafka_prints_it():
    # Both halves negative as signed longs here: written as their unsigned bytes
    assert MOST < 0 or LEAST < 0
    assert topic_id_text(MOST, LEAST) == TOPIC_ID
    assert topic_id_text(0, 1) == "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.mark.parametrize("raising", ["list_topics", "offsets"])
def test_a_client_error_is_a_changelog_error_naming_the_topic(client, raising):
    client.raising = raising
    with pytest.raises(ChangelogError, match=rf"{TOPIC}.*127\.0\.0\.1:9 failed:.*[Ll]eader"):
        describe_changelog("127.0.0.1:9", TOPIC)


KafkaError, KafkaException = confluent_kafka.KafkaError, confluent_kafka.KafkaException


@pytest.mark.parametrize(
    "raised",
    [
        TimeoutError(),  # a future not done within the timeout: its str() is empty
        KafkaException(KafkaError(KafkaError._TRANSPORT)),
        KafkaException(KafkaError(KafkaError._TIMED_OUT)),
        KafkaException(KafkaError(KafkaError._RESOLVE)),
    ],
)
def test_no_broker_answering_is_told_as_such(raised: BaseException):
    failure = kafka_failure(raised, "kafka:9092", 2.5, "reading something", TOPIC)
    assert isinstance(failure, BrokerUnreachableError)
    assert str(failure) == (
        "no Kafka broker answered at kafka:9092 within 2.5 s: is --bootstrap-servers right "
        "and the broker up? (--broker-timeout waits longer)"
    )


def test_the_broker_saying_the_topic_does_not_exist_is_a_missing_changelog():
    raised = KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
    failure = kafka_failure(raised, "kafka:9092", 5, "reading the config", TOPIC)
    assert isinstance(failure, ChangelogMissingError)
    assert f"topic {TOPIC!r} does not exist at kafka:9092" in str(failure)


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (
            KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)),
            "Broker: Topic authorization failed",
        ),
        (RuntimeError(), "RuntimeError"),  # an empty message still says something
    ],
)
def test_another_error_keeps_the_reason(raised: BaseException, reason: str):
    failure = kafka_failure(raised, "kafka:9092", 5, "reading the config", TOPIC)
    assert type(failure) is ChangelogError
    assert str(failure) == f"reading the config at kafka:9092 failed: {reason}"
