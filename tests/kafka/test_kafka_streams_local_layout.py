"""``snapledger --local kafka-streams snapshot`` registers through the kafka-streams layout
when the local registry has the changelog as a Kafka Streams stream
(``SNAPLEDGER_KAFKA_STREAMS_STREAMS`` in the command's environment, as the functions read
it), and as a native snapshot without it: the real broker, the command's own transport
(``LocalTransport``, no patch), the functions' log saying which layout checked each."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from snapledger.local.kafka_app import STORE, changelog_topic
from snapledger.local.kafka_broker import KafkaBroker
from snapledger.local.runtime import RUNTIME_FILE
from snapledger.local.transport import FUNCTION_LOG
from snapledger.settings import ENV_KAFKA_STREAMS_STREAMS
from tests.cli.support import run_cli
from tests.functions.support import POWERTOOLS_ENV

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.ddblocal]


def _changelog(servers: str, app_id: str) -> str:
    """``app_id``'s store changelog (1 partition, compacted) holding 20 records."""
    from confluent_kafka import Producer

    from snapledger.local import kafka_topics

    topic = changelog_topic(app_id)
    kafka_topics.create_topics(servers, [topic], partitions=1, config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    for i in range(20):
        producer.produce(topic, key=f"k{i}".encode(), value=(i + 1).to_bytes(8), partition=0)
    assert producer.flush(30) == 0
    return topic


def _layouts_checked(home: Path) -> list[str | None]:
    """The layout of every registration the functions logged in the home folder."""
    found = []
    for line in (home / FUNCTION_LOG).read_text().splitlines():
        registration = json.loads(line).get("registration") if line.startswith("{") else None
        if registration is not None:
            found.append(registration.get("layout"))
    return found


@pytest.mark.parametrize(("configured", "layout"), [(True, "kafka-streams"), (False, "native")])
def test_a_local_snapshot_command_registers_through_the_layout_the_environment_names(
    configured, layout, kafka_broker: KafkaBroker, dynamodb_local, tmp_path, monkeypatch
):
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "INFO")  # the registrations' log lines
    # Given a changelog, and a home whose running registry is the session's DynamoDB Local
    app_id = f"local-layout-{layout}"
    topic = _changelog(kafka_broker.bootstrap_servers, app_id)
    home = tmp_path / "home"
    home.mkdir()
    running = {"pid": os.getpid(), "endpoint": dynamodb_local.endpoint_url}
    (home / RUNTIME_FILE).write_text(json.dumps(running))
    if configured:
        monkeypatch.setenv(ENV_KAFKA_STREAMS_STREAMS, json.dumps([topic]))
    else:
        monkeypatch.delenv(ENV_KAFKA_STREAMS_STREAMS, raising=False)
    # When the store is snapshotted with --local
    ran = run_cli(
        *("--local", "--home", str(home), "kafka-streams", "snapshot"),
        *("--bootstrap-servers", kafka_broker.bootstrap_servers, "--application-id", app_id),
        *("--store", STORE, "--work-dir", str(tmp_path)),
    )
    assert ran.status == 0, ran.out + ran.err
    # Then its one snapshot was registered, checked by the layout the environment names
    assert _layouts_checked(home) == [layout], (home / FUNCTION_LOG).read_text()
