"""The Kafka broker snapledger's Kafka tests run: installed by `make setup`, started from its
jars in KRaft mode on loopback, and a real broker: topics, partitions, records."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from snapledger.local import kafka_topics
from snapledger.local.kafka_broker import (
    KafkaBroker,
    KafkaBrokerError,
    cluster_id,
    server_properties,
)


@pytest.mark.kafka
def test_a_topic_with_8_partitions_round_trips_its_records(kafka_broker: KafkaBroker):
    # Given the session's broker and a new topic with 8 partitions
    servers = kafka_broker.bootstrap_servers
    kafka_topics.create_topics(servers, ["round-trip"], partitions=8)
    sent = [(f"customer-{i % 13}", str(i)) for i in range(200)]

    # When records are produced and read back
    assert kafka_topics.produce(servers, "round-trip", sent) == 200
    read = [(r.partition, *r.text()) for r in kafka_topics.read_all(servers, "round-trip")]

    # Then every record is there once, in order per key, spread over the 8 partitions
    assert [p.partition for p in kafka_topics.offsets(servers, "round-trip")] == list(range(8))
    assert sorted((k, int(v or "")) for _, k, v in read) == sorted((k, int(v)) for k, v in sent)
    for key in {k for k, _ in sent}:
        mine = [(p, v) for p, k, v in read if k == key]
        assert len({p for p, _ in mine}) == 1  # one key, one partition
        assert [v for _, v in mine] == [v for k, v in sent if k == key]
    assert len({p for p, _, _ in read}) > 1


@pytest.mark.kafka
def test_creating_a_topic_that_exists_says_which(kafka_broker: KafkaBroker):
    kafka_topics.create_topics(kafka_broker.bootstrap_servers, ["twice"], partitions=1)
    with pytest.raises(kafka_topics.KafkaTopicsError, match="creating topic 'twice' failed"):
        kafka_topics.create_topics(kafka_broker.bootstrap_servers, ["twice"], partitions=1)


def test_a_missing_install_names_the_script_and_make_setup(tmp_path: Path):
    broker = KafkaBroker(tmp_path / "work", install_dir=tmp_path / "nothing-here")
    with pytest.raises(KafkaBrokerError, match=r"not installed in .*install-kafka\.sh.*make setup"):
        broker.start()
    with pytest.raises(KafkaBrokerError, match="start"):
        _ = broker.bootstrap_servers


def test_the_node_is_broker_and_controller_with_a_compacting_cleaner(tmp_path: Path):
    config = dict(
        line.split("=", 1)
        for line in server_properties(tmp_path, 9092, 9093, {"log.retention.ms": "1"}).splitlines()
    )
    assert config["process.roles"] == "broker,controller"
    assert config["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert config["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert config["log.cleaner.enable"] == "true"
    assert config["offsets.topic.replication.factor"] == "1"
    assert config["transaction.state.log.replication.factor"] == "1"
    assert config["log.retention.ms"] == "1"  # extra properties override or add


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch):
    # Given uuid4 draws first a UUID whose base64 starts with "-" (first byte 0xF8)
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=bytes(16))])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(drawn))

    # Then kafka-storage never gets an id it would read as an option: it draws again
    assert cluster_id() == "AAAAAAAAAAAAAAAAAAAAAA"
