"""The real Fluss cluster's KV snapshots kept by snapledger, Fluss unchanged (the fluss-kv
layout): every bucket snapshot registered from its _METADATA with its shared SSTs as
references while upserts run; GC by snapledger's policy (min count, min age, a hold) beside
Fluss's own retention, dropping ZooKeeper's node of what it expires before its files, never
deleting a file of a snapshot ZooKeeper lists; and a tablet server whose KV state is wiped
after that restores every key from what is left."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.zookeeper_fluss import ZooKeeperFlussNodes
from snapledger.clock import Clock, ManualClock
from snapledger.gc_settings import GcConfig
from snapledger.layouts.layout_map import layout_map
from snapledger.local.fluss_cluster import FlussCluster
from snapledger.local.fluss_probe import FlussProbe
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from snapledger.services.queries import live_snapshots
from snapledger.services.registration import Outcome, register_manifests
from snapledger.strategies.catalog import LayoutCatalog
from tests.fluss.conftest import wait_for_snapshots
from tests.gc.support import gc_deps
from tests.support import moto_ledger

Table = Callable[[int], tuple[FlussProbe, int]]
STREAM = "probe-kv"
#: snapledger's policy: the newest 1, nothing younger than an hour; the sweep's window far
#: beyond the test's clock jump (the files Fluss writes meanwhile are real-time new).
CONFIG = GcConfig(default_min_count=1, default_min_age_hours=1, orphan_grace_hours=72)


@pytest.fixture
def nodes(fluss_cluster: FlussCluster) -> Iterator[ZooKeeperFlussNodes]:
    zookeeper = ZooKeeperFlussNodes(fluss_cluster.zookeeper_address)
    yield zookeeper
    zookeeper.close()


def metadata_keys(store: FileObjectStore, prefix: str) -> list[str]:
    return sorted(i.key for i in store.list(prefix + "/") if i.key.endswith("/_METADATA"))


def files_of(store: FileObjectStore, key: str) -> dict[str, int]:
    """Every file a _METADATA names (its path under the store's root) with its size."""
    handles = json.loads(store.get(key))["kv_snapshot_handle"]
    root = str(store.root) + "/"
    return {
        h["kv_file_handle"]["path"].removeprefix(root): h["kv_file_handle"]["size"]
        for group in ("shared_file_handles", "private_file_handles")
        for h in handles[group]
    }


def assert_listed_snapshots_whole(store, nodes, prefix, table_id, buckets) -> None:
    """Every snapshot ZooKeeper lists has every file it names, with its size."""
    for bucket in range(buckets):
        listed = nodes.listed(table_id, bucket)
        assert listed, f"bucket {bucket} has no snapshot in ZooKeeper"
        for number in listed:
            key = f"{prefix}/{bucket}/snap-{number}/_METADATA"
            for path, size in files_of(store, key).items():
                assert (Path(store.root) / path).stat().st_size == size, (bucket, number, path)


class Registrar:
    """Registers every _METADATA under the table's prefix not registered yet."""

    def __init__(self, ledger, store: FileObjectStore, prefix: str, clock: Clock) -> None:
        self.ledger, self.store, self.prefix, self.clock = ledger, store, prefix, clock
        self.entries = layout_map({prefix: {"layout": "fluss-kv", "stream": STREAM}})
        self.registered: set[str] = set()

    def register_new(self) -> None:
        new = [k for k in metadata_keys(self.store, self.prefix) if k not in self.registered]
        answers = register_manifests(
            new,
            ledger=self.ledger,
            store=self.store,
            clock=self.clock,
            layouts=LayoutCatalog(self.entries),
        )
        for answer in answers:  # a snapshot Fluss dropped meanwhile has vanished
            assert answer.outcome in (Outcome.BECAME_LATEST, Outcome.VANISHED), answer
        self.registered.update(new)

    def gc(self, nodes: ZooKeeperFlussNodes, config: GcConfig = CONFIG):
        layouts = LayoutCatalog(self.entries, {"fluss-kv": {"nodes": nodes}})
        deps = replace(gc_deps(self.ledger, self.store, self.clock), layouts=layouts)
        return run_gc(deps, config=config)


def write_rounds(probe: FlussProbe, registrar: Registrar, rounds: int) -> None:
    """Upserts and a few deletes per round, each round's snapshots registered."""
    for version in range(1, rounds + 1):
        probe.upsert(0, 1500, version=version)
        probe.delete(1400 + version * 10, 1400 + version * 10 + 5)
        wait_for_snapshots(probe, probe.offsets())
        registrar.register_new()
        registrar.clock.advance(timedelta(minutes=1))


@pytest.mark.fluss
def test_fluss_snapshots_are_registered_collected_beside_fluss_and_restore(
    fluss_cluster: FlussCluster, fluss_table: Table, nodes: ZooKeeperFlussNodes
):
    # Given a table of 2 buckets written in 4 rounds, every snapshot registered as it lands
    probe, table_id = fluss_table(2)
    prefix = f"kv/probe/{probe.table.split('.')[1]}-{table_id}"
    store = FileObjectStore(fluss_cluster.remote_dir)
    clock = ManualClock(datetime.now(UTC))
    with moto_ledger() as ledger:
        registrar = Registrar(ledger, store, prefix, clock)
        write_rounds(probe, registrar, 4)
        lineages = [LineageId(stream=STREAM, partition=b) for b in (0, 1)]
        records = {b.partition: live_snapshots(ledger, b) for b in lineages}
        assert all(len(r) >= 2 for r in records.values()), records
        assert all(r.references for rs in records.values() for r in rs)
        # bucket 0's second newest is held
        held = sorted(records[0], key=lambda r: r.lsn)[-2]
        hold_snapshot(ledger, lineages[0], held.snapshot_id, clock=clock, reason="audit")

        # When GC runs two days later (Fluss's own retention, 3, still on)
        listed_before = {b: set(nodes.listed(table_id, b)) for b in (0, 1)}
        assert all(len(ids) >= 2 for ids in listed_before.values()), listed_before
        clock.advance(timedelta(days=2))
        report = registrar.gc(nodes)

        # Then only the latest and the held remain registered, ZooKeeper lists only what
        # snapledger keeps (or Fluss has not registered yet), and every listed one is whole
        assert not report.failed, report.to_dict()
        dropped = {b: listed_before[b] - set(nodes.listed(table_id, b)) for b in (0, 1)}
        assert all(dropped.values()), dropped  # each bucket had older snapshots collected
        for lineage in lineages:
            left = {
                r.snapshot_id
                for r in live_snapshots(ledger, lineage)
                if r.status is SnapshotStatus.REGISTERED
            }
            latest = max(r.lsn for r in records[lineage.partition])
            expected = {f"snap-{latest}"} | (
                {held.snapshot_id} if lineage.partition == 0 else set()
            )
            assert left == expected, (lineage, left)
            listed = set(nodes.listed(table_id, lineage.partition))
            assert {f"snap-{n}" for n in listed} <= expected | {
                f"snap-{n}" for n in listed if n > latest
            }
        assert_listed_snapshots_whole(store, nodes, prefix, table_id, 2)

        # and a tablet server whose KV directories are lost restores every key from it
        expected_rows = probe.read(0, 1500)
        fluss_cluster.stop_tablet_server()
        fluss_cluster.wipe_tablet_kv()
        fluss_cluster.start_tablet_server()
        assert probe.read(0, 1500) == expected_rows


@pytest.mark.fluss
def test_a_damaged_shared_sst_of_the_latest_is_healed_and_the_bucket_restores_before_it(
    fluss_cluster: FlussCluster, fluss_table: Table, nodes: ZooKeeperFlussNodes
):
    # Given a table of 1 bucket written in 3 rounds, every snapshot registered
    probe, table_id = fluss_table(1)
    prefix = f"kv/probe/{probe.table.split('.')[1]}-{table_id}"
    store = FileObjectStore(fluss_cluster.remote_dir)
    with moto_ledger() as ledger:
        registrar = Registrar(ledger, store, prefix, ManualClock(datetime.now(UTC)))
        write_rounds(probe, registrar, 3)
        rows = probe.read(0, 1500)
        listed = sorted(nodes.listed(table_id, 0))
        assert len(listed) >= 2, listed
        latest, previous = (
            files_of(store, f"{prefix}/0/snap-{n}/_METADATA") for n in (listed[-1], listed[-2])
        )
        # an SST the latest alone uses is torn
        (torn, *_) = sorted(k for k in latest if "/shared/" in k and k not in previous)
        (Path(store.root) / torn).write_bytes(b"torn")

        # When GC runs (its heal first)
        report = registrar.gc(nodes)

        # Then the latest is recorded broken, its node dropped, Fluss's latest the one before
        assert not report.failed, report.to_dict()
        (lineage,) = report.lineages
        heal = lineage.to_dict()["heal"]
        assert heal["state"] == "healed", heal
        assert heal["breaks"] == {torn: [f"snap-{listed[-1]}"]}
        assert heal["healed_to"] == f"snap-{listed[-2]}"
        assert max(nodes.listed(table_id, 0)) == listed[-2]
        # and a tablet server whose KV is lost restores from it and the log after it
        fluss_cluster.stop_tablet_server()
        fluss_cluster.wipe_tablet_kv()
        fluss_cluster.start_tablet_server()
        assert probe.read(0, 1500) == rows
