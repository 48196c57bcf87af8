"""The snapshot sidecar against the real broker (docs/kafka-streams.md, "Snapshots on a
schedule"): records written straight into a store's changelog topic (the snapshots are made
from the topic alone, so no application runs here), the sidecar's polls snapshot a partition
when and only when it is due, it starts again from the ledger's latest registered snapshots,
one failing partition does not hold back the others, and SIGTERM stops it cleanly."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from snapledger.errors import SnapledgerError
from snapledger.kafka_streams.schedule import SnapshotSchedule
from snapledger.kafka_streams.sidecar import SnapshotSidecar
from snapledger.kafka_streams.snapshotter import PartitionSnapshot, StoreSnapshotter
from snapledger.local import kafka_topics
from snapledger.local.kafka_app import STORE, changelog_topic
from snapledger.local.kafka_broker import KafkaBroker
from tests.kafka.conftest import Registry
from tests.kafka.topic_reset import create_again, delete_topics

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

_names = itertools.count()
#: A changelog topic's configuration, as Kafka Streams creates it.
COMPACTED = {"cleanup.policy": "compact"}


class Changelog:
    """A store's changelog topic (3 partitions, compacted) with nothing reading it, the
    registry knowing it as a Kafka Streams lineage."""

    def __init__(
        self, broker: KafkaBroker, registry: Registry, tmp_path: Path, *, create: bool = True
    ) -> None:
        self.servers = broker.bootstrap_servers
        self.app_id = f"sidecar-{next(_names)}"
        self.topic = changelog_topic(self.app_id)
        if create:
            self.create()
        registry.apply_kafka_streams(self.topic)
        self.registry = registry
        self.tmp = tmp_path

    def create(self) -> None:
        """The topic, as the application creates it at its first start."""
        kafka_topics.create_topics(self.servers, [self.topic], partitions=3, config=COMPACTED)

    def write(self, partition: int, count: int) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.servers, "enable.idempotence": True})
        for i in range(count):
            key = f"k{partition}-{time.monotonic_ns()}-{i}".encode()
            producer.produce(self.topic, key=key, value=(i + 1).to_bytes(8), partition=partition)
        assert producer.flush(30) == 0

    def snapshotter(self, cls: type[StoreSnapshotter] = StoreSnapshotter) -> StoreSnapshotter:
        return cls(
            self.registry.client,
            self.registry.root,
            self.servers,
            self.app_id,
            STORE,
            on_written=self.registry.deliver,
        )

    def latest_lsn(self, partition: int) -> int | None:
        try:
            head = self.registry.client.latest(self.topic, partition)["head"]
        except SnapledgerError:
            return None
        return head.get("latest_lsn")

    def registered_ids(self) -> set[str]:
        ids = set()
        for p in range(3):
            listed = self.registry.client.snapshots(self.topic, p)["snapshots"]
            ids |= {s["snapshot_id"] for s in listed if s["status"] == "REGISTERED"}
        return ids

    def manifest_ids(self) -> set[str]:
        """The snapshot ids of every manifest in the store (registered or not)."""
        return {
            m.parent.name.split("-", 1)[1] for m in self.registry.directory.rglob("_manifest.json")
        }


@pytest.fixture
def changelog(kafka_broker, registry, tmp_path) -> Changelog:
    return Changelog(kafka_broker, registry, tmp_path)


def _written(made: list[PartitionSnapshot]) -> dict[int, int]:
    return {run.partition: run.written.lsn for run in made if run.written is not None}


def test_the_sidecar_snapshots_a_partition_when_and_only_when_it_is_due(changelog: Changelog):
    # Given 5 records in partition 0, 1 in partition 1, none in partition 2, and a sidecar
    # due every 5 records or every 60 s with a change (its clock in the test's hands)
    changelog.write(0, 5)
    changelog.write(1, 1)
    now = [datetime.now(UTC)]
    sidecar = SnapshotSidecar(
        changelog.snapshotter(),
        SnapshotSchedule(every_records=5, every_seconds=60),
        work_dir=changelog.tmp,
        clock=lambda: now[0],
    )
    # When it polls: partition 0 alone is due (5 records), and is snapshotted at LSN 4
    first = sidecar.poll_once()
    assert (first.due, _written(first.made)) == ([0], {0: 4})
    assert [changelog.latest_lsn(p) for p in range(3)] == [4, None, None]
    # ...polled again at once: nothing is due (partition 1 has 1 record, no time passed)
    assert sidecar.poll_once().due == []
    # ...59 s on, still nothing; 60 s on, partition 1 is due by time (it has a change)
    now[0] += timedelta(seconds=59)
    assert sidecar.poll_once().due == []
    now[0] += timedelta(seconds=1)
    by_time = sidecar.poll_once()
    assert (by_time.due, _written(by_time.made)) == ([1], {1: 0})
    # ...and a day on, nothing: no partition changed (partition 2 never did)
    now[0] += timedelta(days=1)
    assert sidecar.poll_once().due == []
    assert [changelog.latest_lsn(p) for p in range(3)] == [4, 0, None]

    # When a new sidecar starts (a restart) it starts from the ledger's latest snapshots:
    # nothing is due again, and 4 new records in partition 0 are not enough...
    restarted = SnapshotSidecar(
        changelog.snapshotter(),
        SnapshotSchedule(every_records=5),
        work_dir=changelog.tmp,
        clock=lambda: now[0],
    )
    assert restarted.poll_once().due == []
    changelog.write(0, 4)
    assert restarted.poll_once().due == []
    # ...the fifth is
    changelog.write(0, 1)
    again = restarted.poll_once()
    assert (again.due, _written(again.made)) == ([0], {0: 9})
    assert changelog.manifest_ids() == changelog.registered_ids()


class _FailsPartition1(StoreSnapshotter):
    """A snapshotter whose runs that include partition 1 fail while ``broken`` is set (a
    fault in the snapshot store or the seeder for that partition)."""

    broken = True
    runs: list[list[int]] = []

    def snapshot(self, partitions=None, *, work_dir=None):  # type: ignore[no-untyped-def]
        self.runs.append(sorted(partitions or []))
        if _FailsPartition1.broken and 1 in (partitions or []):
            raise SnapledgerError("partition 1's snapshot store refused the upload")
        return super().snapshot(partitions, work_dir=work_dir)


def test_a_failing_partition_is_retried_next_poll_and_does_not_hold_back_the_others(
    changelog: Changelog,
):
    # Given partitions 0 and 1 due, and partition 1's snapshots failing
    changelog.write(0, 2)
    changelog.write(1, 2)
    sidecar = SnapshotSidecar(
        changelog.snapshotter(_FailsPartition1),
        SnapshotSchedule(every_records=2),
        work_dir=changelog.tmp,
    )
    # When it polls: the batch fails, then each partition runs alone: 0 is snapshotted,
    # 1 fails and is reported
    first = sidecar.poll_once()
    assert first.due == [0, 1]
    assert _written(first.made) == {0: 1}
    assert list(first.failed) == [1]
    assert "refused the upload" in first.failed[1]
    assert _FailsPartition1.runs == [[0, 1], [0], [1]]
    # When the fault is gone, the next poll retries partition 1, alone
    _FailsPartition1.broken = False
    second = sidecar.poll_once()
    assert (second.due, _written(second.made), second.failed) == ([1], {1: 1}, {})
    assert _FailsPartition1.runs[-1] == [1]
    assert [changelog.latest_lsn(p) for p in range(3)] == [1, 1, None]


class _SignalledMidRun(StoreSnapshotter):
    """Sends this process SIGTERM as a run starts: the signal arrives with a snapshot in
    flight."""

    runs: list[list[int]] = []

    def snapshot(self, partitions=None, *, work_dir=None):  # type: ignore[no-untyped-def]
        self.runs.append(sorted(partitions or []))
        os.kill(os.getpid(), signal.SIGTERM)
        return super().snapshot(partitions, work_dir=work_dir)


def test_sigterm_finishes_the_snapshot_in_flight_and_stops(changelog: Changelog):
    # Given a due partition and a sidecar run on the main thread (it handles the signals)
    changelog.write(2, 3)
    before = signal.getsignal(signal.SIGTERM)
    sidecar = SnapshotSidecar(
        changelog.snapshotter(_SignalledMidRun),
        SnapshotSchedule(every_records=1),
        poll_seconds=0.2,
        work_dir=changelog.tmp,
    )
    # When SIGTERM arrives while its snapshot runs
    sidecar.run()
    # Then that snapshot was finished and registered, no other run started, every manifest
    # in the store is registered, and the previous SIGTERM handler is back
    assert _SignalledMidRun.runs == [[2]]
    assert changelog.latest_lsn(2) == 2
    assert changelog.manifest_ids() == changelog.registered_ids() != set()
    assert signal.getsignal(signal.SIGTERM) is before

    # Given an idle sidecar waiting for its next poll (a long one)
    idle = SnapshotSidecar(
        changelog.snapshotter(),
        SnapshotSchedule(every_records=1),
        poll_seconds=3600,
        work_dir=changelog.tmp,
    )
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
    started = time.monotonic()
    # When SIGTERM arrives, it returns at once
    idle.run()
    assert time.monotonic() - started < 5
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_sidecar_started_before_the_application_waits_for_its_changelog(
    kafka_broker, registry, tmp_path, caplog
):
    # Given a sidecar started before the application has created its changelog (a sidecar
    # container that starts first), run on a thread of its own
    changelog = Changelog(kafka_broker, registry, tmp_path, create=False)
    sidecar = SnapshotSidecar(
        changelog.snapshotter(),
        SnapshotSchedule(every_records=2),
        poll_seconds=0.2,
        work_dir=changelog.tmp,
    )
    thread = threading.Thread(target=sidecar.run, daemon=True)
    with caplog.at_level("ERROR", logger="snapledger.kafka_streams.sidecar"):
        thread.start()
        # When the topic is still missing after a few polls, it has not stopped
        time.sleep(1.5)
        assert thread.is_alive()
        assert "waiting for the changelog" in caplog.text
        assert changelog.topic in caplog.text
        # ...and once the application creates it and writes to it
        changelog.create()
        changelog.write(1, 2)
        deadline = time.monotonic() + 60
        while changelog.latest_lsn(1) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        sidecar.stop()
        thread.join(timeout=60)
    # Then it snapshotted the partition that fell due, and stopped when asked
    assert changelog.latest_lsn(1) == 1
    assert not thread.is_alive()
    assert changelog.manifest_ids() == changelog.registered_ids()


class _RecordsRuns(StoreSnapshotter):
    """A snapshotter that records the partitions of each run (each a seeder JVM start)."""

    runs: list[list[int]] = []

    def snapshot(self, partitions=None, *, work_dir=None):  # type: ignore[no-untyped-def]
        self.runs.append(sorted(partitions or []))
        return super().snapshot(partitions, work_dir=work_dir)


def test_the_partitions_of_one_pass_fall_due_again_together(changelog: Changelog):
    # Given two partitions with records and a sidecar due every 60 s with a change, its
    # clock in the test's hands (the catch-ups themselves read the wall clock, later)
    changelog.write(0, 2)
    changelog.write(1, 3)
    start = datetime.now(UTC)
    now = [start]
    _RecordsRuns.runs = []
    sidecar = SnapshotSidecar(
        changelog.snapshotter(_RecordsRuns),
        SnapshotSchedule(every_seconds=60),
        work_dir=changelog.tmp,
        clock=lambda: now[0],
    )
    sidecar.start()
    now[0] = start + timedelta(seconds=60)
    assert _written(sidecar.poll_once().made) == {0: 1, 1: 2}
    # When both get new records and 60 s pass from the poll that snapshotted them
    changelog.write(0, 1)
    changelog.write(1, 1)
    now[0] += timedelta(seconds=59)
    assert sidecar.poll_once().due == []
    now[0] += timedelta(seconds=1)
    again = sidecar.poll_once()
    # Then both are due at that poll and snapshotted in one run (one seeder start)
    assert (again.due, _written(again.made)) == ([0, 1], {0: 2, 1: 3})
    assert _RecordsRuns.runs == [[0, 1], [0, 1]]


def test_a_topic_recreated_under_a_running_sidecar_is_snapshotted_from_its_start(
    changelog: Changelog, caplog
):
    # Given a sidecar that snapshotted partition 0 at LSN 9 (10 records, due every 5)
    changelog.write(0, 10)
    sidecar = SnapshotSidecar(
        changelog.snapshotter(), SnapshotSchedule(every_records=5), work_dir=changelog.tmp
    )
    assert _written(sidecar.poll_once().made) == {0: 9}
    # When the topic is deleted and created again (another incarnation), 6 records written
    delete_topics(changelog.servers, [changelog.topic])
    create_again(changelog.servers, [changelog.topic], partitions=3, config=COMPACTED)
    changelog.write(0, 6)
    # Then the next poll sees the end offset below what the snapshot covered and snapshots
    # nothing, saying why; the one after reads the topic and the ledger again: partition 0 is
    # due (6 records since the new topic's start) and snapshotted from empty at epoch 2, the
    # latest though its LSN is below the old one's
    with caplog.at_level("WARNING", logger="snapledger.kafka_streams.sidecar"):
        behind = sidecar.poll_once()
    assert (behind.due, behind.made) == ([], [])
    assert "the topic was recreated" in caplog.text
    again = sidecar.poll_once()
    assert (again.due, _written(again.made)) == ([0], {0: 5})
    [run] = again.made
    assert "made from another incarnation of the changelog" in run.note
    head = changelog.registry.client.latest(changelog.topic, 0)["head"]
    assert (head["latest_lsn"], head["max_epoch"]) == (5, 2)
    # ...and a restarted sidecar starts from that snapshot: nothing is due
    restarted = SnapshotSidecar(
        changelog.snapshotter(), SnapshotSchedule(every_records=5), work_dir=changelog.tmp
    )
    assert restarted.poll_once().due == []
