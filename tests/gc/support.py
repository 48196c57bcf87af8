"""GC test support: deps on a ledger fixture, registered snapshots, aged objects, checks."""

from __future__ import annotations

import os
from datetime import datetime

from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.adapters.dynamodb_lineages import DynamoLineageIndex
from snapledger.adapters.dynamodb_policies import DynamoPolicyStore
from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.layout import lineage_snapshots_prefix, snapshot_prefix
from snapledger.models.ledger import LineageId, SnapshotRecord, SnapshotStatus
from snapledger.services.gc_deps import GcDeps
from snapledger.services.queries import iter_snapshots
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import kv_parquet, write_snapshot


def gc_deps(ledger, store, clock, runner=None) -> GcDeps:
    return GcDeps(
        ledger=ledger,
        store=store,
        clock=clock,
        lineages=DynamoLineageIndex(ledger.table_name, client=ledger.client),
        policies=DynamoPolicyStore(ledger.table_name, client=ledger.client),
        jobs=DynamoJobStore(ledger.table_name, client=ledger.client),
        runner=runner,
        streams=DynamoStreamLog(ledger.table_name, client=ledger.client),
        layouts=NATIVE_ONLY,
    )


def stream_log(ledger) -> DynamoStreamLog:
    """The streams' own logs (where policies are set) on the ledger's table."""
    return DynamoStreamLog(ledger.table_name, client=ledger.client)


def register(ledger, store, clock, lsn: int, *, stream="orders", partition=3, files=2, **kw) -> str:
    """Write a snapshot with ``files`` data files, register it, return its snapshot id."""
    data = {f"part-{i:05d}.parquet": kv_parquet(f"{stream}-{lsn}-{i}") for i in range(files)}
    key = write_snapshot(store, stream, partition, lsn, files=data, **kw)
    result = register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    assert result.snapshot_id is not None
    return result.snapshot_id


def age_objects(store, prefix: str, when: datetime) -> None:
    """Backdate every object under ``prefix`` to ``when`` (the file store reads mtimes)."""
    stamp = when.timestamp()
    for info in store.list(prefix):
        os.utime(store.root / info.key, (stamp, stamp))


def records(ledger, stream="orders", partition=3) -> dict[int, SnapshotRecord]:
    """The lineage's records by LSN (one snapshot per LSN in these tests)."""
    lineage = LineageId(stream=stream, partition=partition)
    return {r.lsn: r for r in iter_snapshots(ledger, lineage)}


def statuses(ledger, stream="orders", partition=3) -> dict[int, str]:
    return {lsn: r.status.value for lsn, r in sorted(records(ledger, stream, partition).items())}


def event_types(ledger, stream="orders", partition=3) -> list[str]:
    lineage = LineageId(stream=stream, partition=partition)
    return [e.type for e in ledger.list_events(lineage, limit=1000).items]


def events_of(ledger, stream="orders", partition=3) -> list:
    lineage = LineageId(stream=stream, partition=partition)
    return ledger.list_events(lineage, limit=1000).items


def listing(store, prefix: str = "") -> list[tuple[str, int]]:
    return [(info.key, info.size) for info in store.list(prefix)]


def prefix_of(record: SnapshotRecord) -> str:
    return snapshot_prefix(record.stream, record.partition, record.lsn, record.snapshot_id)


def assert_ledger_and_store_agree(ledger, store, stream="orders", partition=3) -> None:
    """DELETED ⇔ no objects; REGISTERED ⇒ every file the manifest names; nothing EXPIRING."""
    for record in records(ledger, stream, partition).values():
        keys = {info.key for info in store.list(prefix_of(record))}
        if record.status is SnapshotStatus.DELETED:
            assert not keys, f"{record.lsn} is DELETED but has objects {sorted(keys)}"
        elif record.status is SnapshotStatus.REGISTERED:
            assert record.manifest_key in keys, f"{record.lsn} lost its manifest"
            assert len(keys) == record.file_count + 1, f"{record.lsn} lost files"
        else:
            assert record.status is SnapshotStatus.REJECTED, f"{record.lsn} left {record.status}"
    seqs = [e.seq for e in events_of(ledger, stream, partition)]
    assert seqs == list(range(1, len(seqs) + 1)), "the event log has gaps"
    # Every prefix with objects has a live record
    live = {
        prefix_of(r)
        for r in records(ledger, stream, partition).values()
        if r.status is not SnapshotStatus.DELETED
    }
    for directory in store.list_dirs(lineage_snapshots_prefix(stream, partition)):
        assert directory in live, f"{directory} has objects but no live record"
