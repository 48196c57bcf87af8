"""snapledger beside a Fluss cluster that is being written: snapshots registered with their
shared references while upserts run, and GC (its policy expiring at once) and the orphan
sweep running meanwhile, between and during snapshots in flight. Fluss's own retention runs
too. Nothing a snapshot Fluss lists uses is deleted, the orphans of apache/fluss#3403 (SSTs of
snapshots that never completed, days old) are swept, and the table restores every key."""

from __future__ import annotations

import os
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.zookeeper_fluss import ZooKeeperFlussNodes
from snapledger.clock import SystemClock
from snapledger.gc_settings import GcConfig
from snapledger.layouts import fluss_keys
from snapledger.local.fluss_cluster import FlussCluster
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.queries import live_snapshots
from snapledger.services.registration import Outcome, register_manifests
from snapledger.strategies.catalog import LayoutCatalog
from tests.fluss.conftest import wait_for_snapshots
from tests.fluss.test_fluss_kv_snapshots import (
    STREAM,
    Registrar,
    Table,
    assert_listed_snapshots_whole,
    metadata_keys,
    nodes,
)
from tests.support import moto_ledger

__all__ = ["nodes"]

#: GC expiring all but the newest at once (no minimum age), the sweep after its shortest
#: window: whatever Fluss writes meanwhile is minutes young, the planted orphans days old.
BESIDE = GcConfig(default_min_count=1, default_min_age_hours=0, orphan_grace_hours=1)
ROUNDS, ROWS = 6, 1500


class LiveRegistrar(Registrar):
    """Registers each bucket's new snapshots in id order; keeps every answer."""

    answers: list

    def register_new(self) -> None:
        def order(key: str) -> tuple[int, int]:
            bucket, folder = key.split("/")[-3:-1]
            return int(bucket), fluss_keys.folder_number(folder) or 0

        new = sorted(
            (k for k in metadata_keys(self.store, self.prefix) if k not in self.registered),
            key=order,
        )
        self.answers += register_manifests(
            new,
            ledger=self.ledger,
            store=self.store,
            clock=self.clock,
            layouts=LayoutCatalog(self.entries),
        )
        self.registered.update(new)


def plant_orphans(store: FileObjectStore, prefix: str, buckets: int) -> list[str]:
    """An SST of a snapshot that never completed in each bucket's shared/, two days old."""
    stamp = (datetime.now(UTC) - timedelta(days=2)).timestamp()
    keys = [f"{prefix}/{b}/shared/{uuid.uuid4()}" for b in range(buckets)]
    for key in keys:
        store.put(key, b"o" * 100)
        os.utime(Path(store.root) / key, (stamp, stamp))
    return keys


@pytest.mark.fluss
def test_registration_gc_and_the_sweep_run_beside_upserts_and_snapshots_in_flight(
    fluss_cluster: FlussCluster, fluss_table: Table, nodes: ZooKeeperFlussNodes
):
    # Given a table of 2 buckets with a first snapshot each, and an orphan SST in each bucket
    probe, table_id = fluss_table(2)
    prefix = f"kv/probe/{probe.table.split('.')[1]}-{table_id}"
    store = FileObjectStore(fluss_cluster.remote_dir)
    probe.upsert(0, ROWS, version=1)
    wait_for_snapshots(probe, probe.offsets())
    orphans = plant_orphans(store, prefix, 2)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for version in range(2, ROUNDS + 2):
                probe.upsert(0, ROWS, version=version)
                probe.delete(ROWS - 10 * version, ROWS - 10 * version + 5)
        except BaseException as exc:
            failures.append(exc)

    with moto_ledger() as ledger:
        registrar = LiveRegistrar(ledger, store, prefix, SystemClock())
        registrar.answers = []
        # When upserts run on a thread while registration and GC run in turn, then once more
        # after the last write's snapshots
        writer = threading.Thread(target=write, name="fluss-writer")
        writer.start()
        runs = []
        while writer.is_alive():
            registrar.register_new()
            runs.append(registrar.gc(nodes, BESIDE))
        writer.join()
        assert not failures, failures
        wait_for_snapshots(probe, probe.offsets())
        registrar.register_new()
        runs.append(registrar.gc(nodes, BESIDE))

        # Then every snapshot registered was taken whole, or vanished (Fluss dropped it
        # first); one Fluss deleted while it was read is refused naming a file, and Fluss
        # no longer lists it
        outcomes = {a.outcome for a in registrar.answers}
        assert Outcome.BECAME_LATEST in outcomes
        for answer in registrar.answers:
            if answer.outcome is Outcome.REJECTED:
                assert "is not in the store" in answer.reason, answer
                assert answer.lsn not in nodes.listed(table_id, answer.partition), answer
            else:
                assert answer.outcome in (Outcome.BECAME_LATEST, Outcome.RECORDED, Outcome.VANISHED)
        # GC collected while Fluss wrote, swept both orphans, and failed nowhere
        assert all(not r.failed for r in runs), [r.to_dict() for r in runs if r.failed]
        assert sum(r.counts()["snapshots_deleted"] for r in runs) > 0
        assert not [k for k in orphans if (Path(store.root) / k).exists()]
        # every snapshot ZooKeeper lists is whole, and so is every one the ledger keeps
        assert_listed_snapshots_whole(store, nodes, prefix, table_id, 2)
        for bucket in (0, 1):
            kept = [
                r
                for r in live_snapshots(ledger, LineageId(stream=STREAM, partition=bucket))
                if r.status is SnapshotStatus.REGISTERED
            ]
            assert kept and all(r.references for r in kept), kept
            for record in kept:
                for path in record.references:
                    assert (Path(store.root) / f"{prefix}/{bucket}/{path}").is_file(), path

    # and a tablet server whose KV directories are lost restores every key from what is left
    rows = probe.read(0, ROWS)
    assert rows[0].v == ROUNDS + 1
    fluss_cluster.stop_tablet_server()
    fluss_cluster.wipe_tablet_kv()
    fluss_cluster.start_tablet_server()
    assert probe.read(0, ROWS) == rows
