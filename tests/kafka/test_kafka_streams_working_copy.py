"""Passes that keep their working copy and one resident seeder, against the real broker
(docs/kafka-streams.md, "Incremental snapshots"): records (puts and deletes) written straight
into a store's changelog topic, snapshotted pass after pass. Each pass after the first
continues the store it left (nothing downloaded) with the same seeder process, and its
snapshot holds exactly the changelog's entries; a copy changed behind the snapshotter's back
is detected and replaced by a download; a resident seeder that died is started again; a pass
that crashed between its upload and its registration leaves the next pass to download and
nothing referenced lost."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from snapledger.client.reader import SnapshotReader
from snapledger.kafka_streams.catch_up import java_launch
from snapledger.kafka_streams.resident_seeder import ResidentSeeder
from snapledger.kafka_streams.snapshotter import SST_SUFFIX, StoreSnapshotter
from snapledger.local.kafka_app import STORE
from tests.kafka.test_kafka_streams_sidecar import Changelog

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture
def changelog(kafka_broker, registry, tmp_path) -> Changelog:
    return Changelog(kafka_broker, registry, tmp_path)


@pytest.fixture
def seeder():
    with ResidentSeeder() as resident:
        yield resident


class Writes:
    """Puts and deletes into partition 0 of the changelog, and the entries they leave."""

    def __init__(self, changelog: Changelog) -> None:
        from confluent_kafka import Producer

        self.topic = changelog.topic
        self.producer = Producer({"bootstrap.servers": changelog.servers})
        self.entries: dict[bytes, bytes] = {}

    def put(self, keys: range, value: bytes) -> None:
        for k in keys:
            key = f"key-{k:05d}".encode()
            self.producer.produce(self.topic, key=key, value=value, partition=0)
            self.entries[key] = value
        assert self.producer.flush(30) == 0

    def delete(self, keys: range) -> None:
        for k in keys:
            key = f"key-{k:05d}".encode()
            self.producer.produce(self.topic, key=key, value=None, partition=0)
            self.entries.pop(key, None)
        assert self.producer.flush(30) == 0


def _entries_of_latest(changelog: Changelog, tmp: Path) -> dict[bytes, bytes]:
    """The latest snapshot of partition 0, downloaded and read by Kafka Streams' classes."""
    latest = changelog.registry.client.latest(changelog.topic, 0)["head"]["latest_snapshot_id"]
    return _entries_of(changelog, latest, tmp)


def _entries_of(changelog: Changelog, snapshot_id: str, tmp: Path) -> dict[bytes, bytes]:
    """Snapshot ``snapshot_id`` of partition 0, downloaded and read by Kafka Streams' classes."""
    record = changelog.registry.client.snapshot(changelog.topic, 0, snapshot_id)["snapshot"]
    state = tmp / f"read-{snapshot_id}"
    shutil.rmtree(state, ignore_errors=True)
    folder = state / changelog.app_id / "0_0" / "rocksdb" / STORE
    SnapshotReader(changelog.registry.root).open(record["manifest_key"]).download(folder)
    dumped = subprocess.run(
        [
            *java_launch(),
            "dump",
            "--state-dir",
            str(state),
            "--application-id",
            changelog.app_id,
            "--task",
            "0_0",
            "--store",
            STORE,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    found = {}
    for line in dumped:
        if line.startswith("entry "):
            _, key, value, _ts = line.split(" ")
            found[bytes.fromhex(key)] = bytes.fromhex(value)
    return found


def _kept(changelog: Changelog, seeder: ResidentSeeder) -> StoreSnapshotter:
    return replace(changelog.snapshotter(), keep_dir=changelog.tmp / "kept", seeder=seeder)


def _first_pass(
    changelog: Changelog, seeder: ResidentSeeder, keys: int
) -> tuple[Writes, StoreSnapshotter]:
    """``keys`` puts, snapshotted by a pass that keeps its copy."""
    writes, snapshotter = Writes(changelog), _kept(changelog, seeder)
    writes.put(range(keys), b"one")
    snapshotter.snapshot([0])
    return writes, snapshotter


def test_passes_continue_their_working_copy_with_one_seeder_and_hold_the_changelogs_entries(
    changelog: Changelog, seeder: ResidentSeeder
):
    writes = Writes(changelog)
    snapshotter = _kept(changelog, seeder)
    # Given a first pass over 300 puts (nothing to continue)
    writes.put(range(300), b"one")
    first = snapshotter.snapshot([0])[0]
    assert first.note.startswith("no snapshot yet")
    pid = seeder.pid
    # When three more passes run, each after updates and deletes
    changes = [
        (range(40), range(290, 300)),
        (range(100, 120), range(5)),
        (range(5, 6), range(200, 260)),
    ]
    for n, (update, delete) in enumerate(changes):
        writes.put(update, f"v{n}".encode())
        writes.delete(delete)
        made = snapshotter.snapshot([0])[0]
        assert made.written is not None
        # Then each continued the copy the last pass left, with the same seeder process, and
        # its snapshot holds exactly the changelog's entries
        assert made.note.startswith(f"continues {made.base_snapshot_id} (its working copy); ")
        assert seeder.pid == pid
        assert _entries_of_latest(changelog, changelog.tmp) == writes.entries
        # ...referencing its base's SSTs rather than uploading them again
        referenced = {r.path.rpartition("/")[2] for r in made.written.references}
        assert referenced
        assert not referenced & {f.path for f in made.written.files}
    # ...and a pass with nothing new keeps the copy usable
    assert snapshotter.snapshot([0])[0].note.endswith("(its working copy); nothing new")
    writes.put(range(7, 8), b"last")
    assert "(its working copy); 1 records applied" in snapshotter.snapshot([0])[0].note
    assert _entries_of_latest(changelog, changelog.tmp) == writes.entries


def test_a_copy_changed_behind_the_snapshotters_back_is_replaced_by_a_download(
    changelog: Changelog, seeder: ResidentSeeder
):
    writes, snapshotter = _first_pass(changelog, seeder, 200)
    # Given the kept copy's SST changed (bytes appended, as a disk fault or a person would)
    store = changelog.tmp / "kept" / changelog.app_id / "0_0" / "rocksdb" / STORE
    sst = next(p for p in store.iterdir() if p.name.endswith(SST_SUFFIX))
    with sst.open("ab") as f:
        f.write(b"garbage")
    # When the next pass runs
    writes.put(range(10), b"two")
    made = snapshotter.snapshot([0])[0]
    # Then it says why the copy was not used, downloaded the latest, and wrote it right
    assert made.note.startswith(
        f"working copy not used ({sst.name} was changed since it was recorded (size or "
        f"modification time)): downloaded; continues {made.base_snapshot_id}; "
    )
    assert _entries_of_latest(changelog, changelog.tmp) == writes.entries


def test_a_resident_seeder_that_died_is_started_again_by_the_next_pass(
    changelog: Changelog, seeder: ResidentSeeder
):
    writes, snapshotter = _first_pass(changelog, seeder, 100)
    # Given the resident seeder killed between two passes
    pid = seeder.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    # When the next pass runs: a new process serves it
    writes.put(range(100, 150), b"two")
    made = snapshotter.snapshot([0])[0]
    assert made.written is not None
    assert seeder.pid not in (None, pid)
    assert _entries_of_latest(changelog, changelog.tmp) == writes.entries


class _CrashedBeforeRegistrationError(Exception):
    """The pass's process died after its upload, before its snapshot was registered."""


def test_a_pass_that_crashed_between_upload_and_registration_loses_nothing(
    changelog: Changelog, seeder: ResidentSeeder
):
    writes, snapshotter = _first_pass(changelog, seeder, 300)
    registered = changelog.registered_ids()
    # Given a pass whose snapshot was uploaded (manifest last) and never registered
    writes.put(range(50), b"two")

    def crash(_written: object) -> None:
        raise _CrashedBeforeRegistrationError

    with pytest.raises(_CrashedBeforeRegistrationError):
        replace(snapshotter, on_written=crash).snapshot([0])
    assert changelog.registered_ids() == registered
    assert len(changelog.manifest_ids()) == len(registered) + 1
    # When the snapshotter runs again (a restart: a new seeder process too)
    with ResidentSeeder() as restarted:
        made = replace(snapshotter, seeder=restarted).snapshot([0])[0]
    # Then it did not trust the copy the crashed pass left, downloaded the registered latest,
    # and its snapshot, registered, holds the changelog's entries; every file a registered
    # snapshot references is in the store
    assert made.note.startswith("working copy not used (no working copy recorded): downloaded")
    assert _entries_of_latest(changelog, changelog.tmp) == writes.entries
    root = changelog.registry.directory
    for snapshot_id in changelog.registered_ids():
        record = changelog.registry.client.snapshot(changelog.topic, 0, snapshot_id)["snapshot"]
        opened = SnapshotReader(changelog.registry.root).open(record["manifest_key"])
        lineage = root / opened.prefix.rstrip("/").rpartition("/")[0]
        for ref in opened.references:
            assert (lineage / ref.path).stat().st_size == ref.size


def test_gc_and_the_orphan_sweep_beside_a_pass_in_flight_take_none_of_its_files(
    changelog: Changelog, seeder: ResidentSeeder, monkeypatch: pytest.MonkeyPatch
):
    from snapledger.client.writer import SnapshotWriter

    writes, snapshotter = _first_pass(changelog, seeder, 300)
    for n in range(2):  # older snapshots, for GC to delete
        writes.put(range(n * 10, n * 10 + 10), f"v{n}".encode())
        snapshotter.snapshot([0])
    client = changelog.registry.client
    client.set_policy(changelog.topic, min_count=1, min_age_hours=0)
    # Given a pass whose files are uploaded and whose manifest is not written yet, and GC
    # (which sweeps the lineage's orphans, SNAPLEDGER_ORPHAN_GRACE_HOURS at its default)
    # running at that moment
    swept = []
    commit = SnapshotWriter._commit

    def gc_then_commit(self, draft, files, **kwargs):  # type: ignore[no-untyped-def]
        swept.append(client.gc(changelog.topic))
        return commit(self, draft, files, **kwargs)

    monkeypatch.setattr(SnapshotWriter, "_commit", gc_then_commit)
    writes.put(range(100, 150), b"in flight")
    made = snapshotter.snapshot([0])[0]
    monkeypatch.undo()
    # Then GC deleted the snapshots its policy expires, and the pass's own files (not yet
    # any snapshot's) and those it references (the latest's) are all there: its snapshot
    # registered as the latest and holds the changelog's entries
    assert len(swept) == 1
    listed = client.snapshots(changelog.topic, 0)["snapshots"]
    assert sorted(s["status"] for s in listed).count("DELETED") == 2
    assert made.written is not None
    head = client.latest(changelog.topic, 0)["head"]
    assert head["latest_snapshot_id"] == made.written.snapshot_id
    assert _entries_of_latest(changelog, changelog.tmp) == writes.entries


def test_gc_under_min_count_min_age_and_a_hold_keeps_what_the_kept_snapshots_share(
    changelog: Changelog, seeder: ResidentSeeder
):
    # Given four snapshots of partition 0, each continuing the last (sharing its SSTs), and
    # the entries each one holds
    writes, snapshotter = _first_pass(changelog, seeder, 200)
    client = changelog.registry.client
    ids, held_entries = [client.latest(changelog.topic, 0)["head"]["latest_snapshot_id"]], {}
    for n in range(3):
        writes.put(range(n * 30, n * 30 + 30), f"v{n}".encode())
        writes.delete(range(190 - n, 191 - n))
        made = snapshotter.snapshot([0])[0]
        assert made.written is not None and made.written.references
        ids.append(made.written.snapshot_id)
        if n == 0:
            held_entries = dict(writes.entries)
    # ...the second one held
    client.hold(changelog.topic, 0, ids[1], reason="an investigation")
    # When GC runs with min count 1 and min age 1 h: every snapshot is younger, none goes
    client.set_policy(changelog.topic, min_count=1, min_age_hours=1)
    client.gc(changelog.topic)
    statuses = {
        s["snapshot_id"]: s["status"] for s in client.snapshots(changelog.topic, 0)["snapshots"]
    }
    assert [statuses[i] for i in ids] == ["REGISTERED"] * 4
    # When the minimum age is 0: the first and third go; the held one and the latest stay
    client.set_policy(changelog.topic, min_count=1, min_age_hours=0)
    client.gc(changelog.topic)
    statuses = {
        s["snapshot_id"]: s["status"] for s in client.snapshots(changelog.topic, 0)["snapshots"]
    }
    assert [statuses[i] for i in ids] == ["DELETED", "REGISTERED", "DELETED", "REGISTERED"]
    # Then each kept snapshot downloads whole, its files wherever they live, and holds what
    # it held when it was made
    assert _entries_of(changelog, ids[1], changelog.tmp) == held_entries
    assert _entries_of(changelog, ids[3], changelog.tmp) == writes.entries
    # ...and the next pass still continues its working copy of the latest
    writes.put(range(1), b"after gc")
    assert "(its working copy)" in snapshotter.snapshot([0])[0].note
    assert _entries_of_latest(changelog, changelog.tmp) == writes.entries
