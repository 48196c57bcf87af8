"""A whole Kafka Streams application rewound to a generation, against the real broker and
application (docs/kafka-streams.md, "Generations"): a generation requested and completed by the
snapshotter's snapshots, more input (deletes among it), the application stopped and rewound:
its changelog agrees with the generation again, the new instance restores nothing, and once
it reprocessed the input from the generation's offsets every key is what it was before."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from snapledger.kafka_streams.generation import request_generation
from snapledger.kafka_streams.generation_rewind import GenerationRewind, GenerationRewindError
from snapledger.kafka_streams.snapshotter import StoreSnapshotter
from snapledger.local import kafka_topics
from snapledger.local.kafka_app import STORE, KafkaStreamsApp, changelog_topic
from snapledger.local.kafka_broker import KafkaBroker
from tests.kafka.conftest import Registry
from tests.kafka.orders import orders, totals

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 8
#: The generation configuration: each changelog record carries its input position.
GENERATION_PROPERTIES = {"__iq.consistency.offset.vector.enabled__": "true"}


def _changelog_state(servers: str, topic: str) -> dict[str, int]:
    """The state a full replay of the changelog gives (values are the app's Long serde)."""
    state: dict[str, int] = {}
    for record in kafka_topics.read_all(servers, topic):
        key = record.key.decode()
        if record.value is None:
            state.pop(key, None)
        else:
            state[key] = struct.unpack(">q", record.value)[0]
    return state


def _settled(servers: str, topic: str, records: int) -> list[kafka_topics.PartitionOffsets]:
    """The topic's offsets once it holds ``records`` records (served totals may precede the
    changelog's last writes by a commit interval)."""
    deadline = time.monotonic() + 30
    while True:
        found = kafka_topics.offsets(servers, topic)
        if sum(p.end for p in found) >= records or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_an_application_rewound_to_a_generation_restarts_from_its_state_and_offsets(
    kafka_broker: KafkaBroker,
    app_factory: Callable[..., KafkaStreamsApp],
    registry: Registry,
    tmp_path: Path,
):
    servers = kafka_broker.bootstrap_servers
    app_id, source, output = "gen-0", "gen-orders-0", "gen-out-0"
    kafka_topics.create_topics(servers, [source, output], partitions=PARTITIONS)
    registry.apply_kafka_streams(changelog_topic(app_id))

    def instance(state: str) -> KafkaStreamsApp:
        return app_factory(
            app_id,
            tmp_path / state,
            input_topic=source,
            output_topic=output,
            properties=GENERATION_PROPERTIES,
        )

    snapshotter = StoreSnapshotter(
        registry.client, registry.root, servers, app_id, STORE, on_written=registry.deliver
    )
    rewind = GenerationRewind(registry.client, registry.root, servers, app_id, STORE)
    first = orders(11, 240)
    later = [*orders(12, 60), ("c001", "delete"), ("c017", "delete"), ("new-1", "7")]

    # Given the application processed a first batch, a generation was requested and every
    # partition's snapshot (made while it runs) completed it
    kafka_topics.produce(servers, source, first)
    with instance("a") as a:
        assert a.wait_for_totals(totals(first)) == totals(first)
        _settled(servers, changelog_topic(app_id), len(first))  # every order logged
        requested = request_generation(registry.client, servers, app_id, STORE)
        snapshotter.snapshot(work_dir=tmp_path)
        generation = registry.client.generation(changelog_topic(app_id))["generation"]
        assert (generation["generation"], generation["status"]) == (
            requested["generation"],
            "COMPLETED",
        )
        # ...each member names the input offset its state reflects: every order of its
        # partition, as the application has processed them all
        ends = {p.partition: p.end for p in kafka_topics.offsets(servers, source)}
        assert {
            m["partition"]: m["offsets"][f"{source}-{m['partition']}"]
            for m in generation["members"]
        } == {p: ends[p] - 1 for p in range(PARTITIONS)}
        # ...and it processed more input, deletes among it
        kafka_topics.produce(servers, source, later)
        assert a.wait_for_totals(totals(first, later)) == totals(first, later)
        # (a rewind while the application runs is refused, nothing changed: the changelog
        # holds one record per order, the application's, and no more)
        before = _settled(servers, changelog_topic(app_id), len(first) + len(later))
        with pytest.raises(GenerationRewindError, match="stop every instance"):
            rewind.rewind(tmp_path / "b")
        assert kafka_topics.offsets(servers, changelog_topic(app_id)) == before

    # When the stopped application is rewound to the generation and started again
    rewound = rewind.rewind(tmp_path / "b")

    # Then the changelog agrees with the generation key for key (compensating records
    # appended for the keys changed after it), every task was placed from its member
    assert _changelog_state(servers, changelog_topic(app_id)) == totals(first)
    assert sorted((r.task, r.snapshot_id) for r in rewound) == sorted(
        (f"0_{m['partition']}", m["snapshot_id"]) for m in generation["members"]
    )
    assert sum(r.puts + r.tombstones for r in rewound) > 0
    with instance("b") as b:
        # ...the new instance restored nothing: it booted at exactly the generation's state
        assert b.restored_count() == 0
        # ...and, having reprocessed the input from the generation's offsets, serves what
        # the application served before the rewind
        assert b.wait_for_totals(totals(first, later)) == totals(first, later)
