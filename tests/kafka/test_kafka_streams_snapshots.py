"""Kafka Streams snapshots end to end against the real broker and application: the store's
partitions snapshotted from the changelog while the application runs, registered, and a new
instance with an empty state directory seeded from them: it restores only the changelog
written after the snapshots and serves what a full replay serves (docs/kafka-streams.md,
"Snapshots" and "Boot")."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from snapledger.kafka_streams.seed import StoreSeeder
from snapledger.kafka_streams.snapshotter import StoreSnapshotter
from snapledger.local import kafka_topics
from snapledger.local.kafka_app import STORE, KafkaStreamsApp, changelog_topic
from snapledger.local.kafka_broker import KafkaBroker
from tests.kafka.conftest import Registry
from tests.kafka.orders import orders as _orders
from tests.kafka.orders import totals as _totals

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 8
_names = itertools.count()


class Story:
    """One application id with its own topics, its instances, snapshotter and seeder."""

    def __init__(
        self,
        broker: KafkaBroker,
        app_factory: Callable[..., KafkaStreamsApp],
        registry: Registry,
        tmp_path: Path,
    ) -> None:
        n = next(_names)
        self.servers = broker.bootstrap_servers
        self.app_id, self.orders, output = f"snap-{n}", f"snap-orders-{n}", f"snap-out-{n}"
        kafka_topics.create_topics(self.servers, [self.orders, output], partitions=PARTITIONS)
        self.changelog = changelog_topic(self.app_id)
        self.tmp = tmp_path
        self.instance = lambda state: app_factory(
            self.app_id, tmp_path / state, input_topic=self.orders, output_topic=output
        )
        self.snapshotter = StoreSnapshotter(
            registry.client,
            registry.root,
            self.servers,
            self.app_id,
            STORE,
            on_written=registry.deliver,
        )
        self.seeder = StoreSeeder(registry.client, registry.root, self.servers, self.app_id, STORE)

    def produce(self, batch: list[tuple[str, str]]) -> None:
        kafka_topics.produce(self.servers, self.orders, batch)

    def snapshot(self) -> dict[int, int]:
        """A snapshot of every partition with something new: partition -> LSN."""
        made = self.snapshotter.snapshot(work_dir=self.tmp)
        return {p.partition: p.written.lsn for p in made if p.written is not None}

    def records_after(self, lsns: dict[int, int]) -> int:
        return sum(
            1
            for r in kafka_topics.read_all(self.servers, self.changelog)
            if r.offset > lsns.get(r.partition, -1)
        )


@pytest.fixture
def story(kafka_broker, app_factory, registry, tmp_path) -> Story:
    return Story(kafka_broker, app_factory, registry, tmp_path)


def test_a_seeded_instance_restores_only_the_changelog_after_the_snapshots(story: Story):
    # Given the application processed a first batch and, while it runs, every changelog
    # partition was snapshotted (and registered), then it processed a second batch
    first, second = _orders(1, 300), _orders(2, 80)
    story.produce(first)
    with story.instance("a") as a:
        assert a.wait_for_totals(_totals(first)) == _totals(first)
        lsns = story.snapshot()
        story.produce(second)
        assert a.wait_for_totals(_totals(first, second)) == _totals(first, second)
    tail = story.records_after(lsns)

    # When a new instance starts on an empty state dir after the seed
    seeded = story.seeder.seed(story.tmp / "b")
    with story.instance("b") as b:
        served_b = b.wait_for_totals(_totals(first, second))
        restored_b = b.restored_count()
    # ...and another replays the whole changelog
    with story.instance("c") as c:
        served_c = c.wait_for_totals(_totals(first, second))
        restored_c = c.restored_count()

    # Then every partition was snapshotted and seeded, the seeded instance restored exactly
    # the records written after the snapshots, and both serve the sums computed here
    assert sorted(lsns) == list(range(PARTITIONS))
    assert [(s.task, s.outcome, s.lsn) for s in seeded] == [
        (f"0_{p}", "seeded", lsns[p]) for p in range(PARTITIONS)
    ]
    assert restored_b == tail == len(second)
    assert restored_c == len(first) + len(second)
    assert served_b == served_c == _totals(first, second)
