"""Kafka Streams snapshots end to end against the real broker and application: the store's
partitions snapshotted from the changelog while the application runs, registered, and a new
instance with an empty state directory seeded from them: it restores only the changelog
written after the snapshots and serves what a full replay serves (docs/kafka-streams.md,
"Snapshots" and "Boot")."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from snapledger.kafka_streams import catch_up as catch_up_module
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
        # The registry knows the store's changelog as a Kafka Streams stream: registration
        # runs the kafka-streams strategy's checks (layouts/kafka_streams.py) on every snapshot.
        registry.apply_kafka_streams(self.changelog)
        self.tmp = tmp_path
        self.registry = registry
        self.root_dir = registry.directory
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

    def records_after(self, lsns: dict[int, int], only: int | None = None) -> int:
        """Changelog records after each partition's LSN (all of a partition without one)."""
        return sum(
            1
            for r in kafka_topics.read_all(self.servers, self.changelog)
            if r.offset > lsns.get(r.partition, -1) and only in (None, r.partition)
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
    # ...each snapshot registered through the kafka-streams checks, with the changelog's
    # horizon as the snapshotter read it (what retention counts it restorable by)
    for partition, lsn in lsns.items():
        latest = story.registry.client.latest(story.changelog, partition)["head"]
        assert latest["latest_lsn"] == lsn
        record = story.registry.client.snapshot(
            story.changelog, partition, latest["latest_snapshot_id"]
        )["snapshot"]
        horizon = record["changelog"]
        assert horizon["end_offset"] == lsn + 1
        assert horizon["log_start_offset"] == 0
        assert horizon["delete_retention_ms"] > 0
    assert restored_c == len(first) + len(second)
    assert served_b == served_c == _totals(first, second)


def test_a_snapshot_of_every_partition_runs_one_seeder_process(
    story: Story, monkeypatch: pytest.MonkeyPatch
):
    # Given the application processed orders on every partition
    first = _orders(5, 200)
    story.produce(first)
    with story.instance("a") as a:
        a.wait_for_totals(_totals(first))
    started: list[list[str]] = []
    real_run = catch_up_module.subprocess.run

    def counting(command: list[str], **kwargs: Any) -> Any:
        started.append(command)
        return real_run(command, **kwargs)

    monkeypatch.setattr(catch_up_module.subprocess, "run", counting)

    # When every partition is snapshotted
    lsns = story.snapshot()

    # Then one seeder process (one JVM start) caught all 8 stores up
    assert sorted(lsns) == list(range(PARTITIONS))
    assert len(started) == 1
    assert started[0][started[0].index("--tasks") + 1] == ",".join(
        f"0_{p}" for p in range(PARTITIONS)
    )


def _partition_of(story: Story, key: str) -> int:
    # The input topic, produced and flushed before: the store's task (and its changelog
    # partition) is the input partition of the key (groupByKey, no repartition). The
    # changelog itself may not hold the key yet when the total is served (it is flushed
    # at the next commit).
    return next(
        r.partition
        for r in kafka_topics.read_all(story.servers, story.orders)
        if r.key == key.encode()
    )


def _restored(app: KafkaStreamsApp, partition: int) -> int:
    return sum(r.count for r in app.restored() if r.partition == partition)


def test_a_damaged_snapshot_is_skipped_for_the_older_one(story: Story):
    # Given two snapshots of a partition, the newer one with a file damaged after its
    # registration (same size, other bytes)
    first, second, third = _orders(11, 200), _orders(12, 60), _orders(13, 40)
    story.produce(first)
    with story.instance("a") as a:
        a.wait_for_totals(_totals(first))
        p = _partition_of(story, first[0][0])
        [older] = story.snapshotter.snapshot([p], work_dir=story.tmp)
        story.produce(second)
        a.wait_for_totals(_totals(first, second))
        [newer] = story.snapshotter.snapshot([p], work_dir=story.tmp)
        story.produce(third)
        a.wait_for_totals(_totals(first, second, third))
    assert older.written is not None and newer.written is not None
    damaged = next(f for f in newer.written.files if f.path.endswith(".sst"))
    path = story.root_dir / newer.written.prefix / damaged.path
    path.write_bytes(bytes(b ^ 0xFF for b in path.read_bytes()))

    # When an instance boots after the seed
    seeded = {s.task: s for s in story.seeder.seed(story.tmp / "b")}
    with story.instance("b") as b:
        served = b.wait_for_totals(_totals(first, second, third))
        restored_p = _restored(b, p)

    # Then the damaged snapshot was skipped and the older one placed: the partition
    # restored the changelog after the older one; tasks without snapshots from the topic
    task = seeded[f"0_{p}"]
    assert (task.outcome, task.snapshot_id) == ("seeded", older.written.snapshot_id)
    assert [(s.snapshot_id, s.reason.split(":")[0]) for s in task.skipped] == [
        (newer.written.snapshot_id, "damaged")
    ]
    assert {s.outcome for t, s in seeded.items() if t != f"0_{p}"} == {"changelog"}
    assert restored_p == story.records_after({p: older.written.lsn}, only=p) > 0
    assert served == _totals(first, second, third)


def _admin(story: Story):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": story.servers})


def _set_config(admin, topic: str, name: str, value: str) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    [done] = admin.incremental_alter_configs([resource]).values()
    done.result(timeout=30)


def test_a_snapshot_below_the_log_start_is_skipped(story: Story):
    # Given a snapshot of a partition, then records deleted from its changelog past it
    first, second = _orders(21, 200), _orders(22, 60)
    story.produce(first)
    with story.instance("a") as a:
        a.wait_for_totals(_totals(first))
        p = _partition_of(story, first[0][0])
        [made] = story.snapshotter.snapshot([p], work_dir=story.tmp)
        story.produce(second)
        a.wait_for_totals(_totals(first, second))
    assert made.written is not None
    from confluent_kafka import TopicPartition

    cut = TopicPartition(story.changelog, p, made.written.lsn + 2)
    admin = _admin(story)  # kept: its futures fail once the client is collected
    # DeleteRecords is refused on a compact-only topic; compact,delete allows it
    _set_config(admin, story.changelog, "cleanup.policy", "compact,delete")
    [done] = admin.delete_records([cut]).values()
    assert done.result(timeout=30).low_watermark == made.written.lsn + 2

    # When an instance boots after the seed, and another replays what the changelog holds
    seeded = {s.task: s for s in story.seeder.seed(story.tmp / "b")}
    with story.instance("b") as b:
        served_b = b.totals()
    with story.instance("c") as c:
        served_c = c.totals()

    # Then the snapshot was skipped: the task restored from the changelog, as C did
    task = seeded[f"0_{p}"]
    assert task.outcome == "changelog"
    assert [(s.snapshot_id, s.reason) for s in task.skipped] == [
        (made.written.snapshot_id, f"below the log start {made.written.lsn + 2}")
    ]
    assert served_b == served_c


def test_a_snapshot_older_than_delete_retention_is_skipped_and_deleted_keys_stay_deleted(
    story: Story,
):
    # Given a snapshot holding a key, then the key deleted (a tombstone in the changelog)
    first = _orders(31, 200)
    gone = first[0][0]
    deletion = [(gone, "delete")]
    story.produce(first)
    with story.instance("a") as a:
        a.wait_for_totals(_totals(first))
        p = _partition_of(story, gone)
        [made] = story.snapshotter.snapshot([p], work_dir=story.tmp)
        story.produce(deletion)
        assert gone not in a.wait_for_totals(_totals(first, deletion))
    assert made.written is not None
    tombstones = [
        r
        for r in kafka_topics.read_all(story.servers, story.changelog)
        if r.key == gone.encode() and r.value is None
    ]
    # ...and the changelog's delete.retention.ms is now shorter than the snapshot's age
    _set_config(_admin(story), story.changelog, "delete.retention.ms", "1000")
    time.sleep(1.5)

    # When an instance boots after the seed (the horizon rule's window for 1 s is 0.5 s)
    seeded = {s.task: s for s in story.seeder.seed(story.tmp / "b")}
    with story.instance("b") as b:
        served = b.wait_for_totals(_totals(first, deletion))
        restored_p = _restored(b, p)

    # Then the snapshot was skipped for its age, the partition restored its whole
    # changelog, and the deleted key stayed deleted
    task = seeded[f"0_{p}"]
    assert task.outcome == "changelog"
    assert [s.snapshot_id for s in task.skipped] == [made.written.snapshot_id]
    assert "delete.retention.ms" in task.skipped[0].reason
    assert len(tombstones) == 1
    assert restored_p == story.records_after({}, only=p)
    assert gone not in served
    assert served == _totals(first, deletion)


def test_without_snapshots_every_task_restores_from_the_changelog(story: Story):
    # Given an application's changelog and no snapshot registered
    first = _orders(41, 150)
    story.produce(first)
    with story.instance("a") as a:
        a.wait_for_totals(_totals(first))

    # When an instance boots after the seed
    seeded = story.seeder.seed(story.tmp / "b")
    placed = list((story.tmp / "b" / story.app_id).glob("0_*"))
    with story.instance("b") as b:
        served = b.wait_for_totals(_totals(first))
        restored = b.restored_count()

    # Then every task restored from the changelog, the whole of it, and its state is right
    assert [(s.task, s.outcome, s.skipped) for s in seeded] == [
        (f"0_{p}", "changelog", ()) for p in range(PARTITIONS)
    ]
    assert placed == []
    assert restored == len(first)
    assert served == _totals(first)


def test_a_later_snapshot_references_the_ssts_it_kept_and_boots_exactly_after_gc(story: Story):
    # Given every partition snapshotted, then more orders processed and snapshotted again
    first, second, third = _orders(51, 400), _orders(52, 60), _orders(53, 30)
    story.produce(first)
    with story.instance("a") as a:
        a.wait_for_totals(_totals(first))
        one = {p.partition: p.written for p in story.snapshotter.snapshot(work_dir=story.tmp)}
        story.produce(second)
        a.wait_for_totals(_totals(first, second))
        two = {p.partition: p.written for p in story.snapshotter.snapshot(work_dir=story.tmp)}
        story.produce(third)
        a.wait_for_totals(_totals(first, second, third))
    tail = story.records_after({p: w.lsn for p, w in two.items() if w is not None})

    # Then each second snapshot references its partition's first SSTs, uploading only new files
    for partition, written in two.items():
        assert written is not None and one[partition] is not None
        base_folder = one[partition].prefix.rstrip("/").rpartition("/")[2]
        base_ssts = {f.path for f in one[partition].files if f.path.endswith(".sst")}
        kept = {r.path.rpartition("/")[2] for r in written.references}
        assert kept and kept <= base_ssts, (partition, kept, base_ssts)
        assert all(r.path.startswith(base_folder + "/") for r in written.references)
        assert not kept & {f.path for f in written.files}  # none uploaded again

    # When GC keeps only the latest snapshot of each partition
    story.registry.client.set_policy(story.changelog, min_count=1, min_age_hours=0)
    story.registry.client.gc(story.changelog)
    for partition, first_written in one.items():
        record = story.registry.client.snapshot(
            story.changelog, partition, first_written.snapshot_id
        )["snapshot"]
        assert record["status"] == "DELETED", partition

    # Then a new instance seeded from the second snapshots (their files wherever they live)
    # restores only the tail and serves exactly what a full replay serves
    seeded = story.seeder.seed(story.tmp / "b")
    assert [s.outcome for s in seeded] == ["seeded"] * PARTITIONS
    with story.instance("b") as b:
        served = b.wait_for_totals(_totals(first, second, third))
        restored = b.restored_count()
    assert restored == tail == len(third)
    assert served == _totals(first, second, third)
