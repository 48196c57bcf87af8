"""The orphan sweep: prefixes with no (live) ledger record, and the grace window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from snapledger.gc_settings import GcConfig
from snapledger.layout import snapshot_prefix
from snapledger.models.gc_commands import ClaimOrphan
from snapledger.models.ledger import SnapshotStatus
from snapledger.services.gc import run_gc
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.gc.support import (
    age_objects,
    assert_ledger_and_store_agree,
    event_types,
    gc_deps,
    listing,
    records,
    register,
)
from tests.support import write_snapshot

HOUR = timedelta(hours=1)
CONFIG = GcConfig()  # grace 24h


@pytest.fixture
def deps(ledger, store, clock):
    return gc_deps(ledger, store, clock)


def upload_without_manifest(
    store, stream="orders", partition=3, lsn=5, sid="01J0000000000000000000ABCD"
):
    prefix = snapshot_prefix(stream, partition, lsn, sid)
    store.put(prefix + "part-00000.parquet", b"data")
    return prefix


def test_an_old_orphan_goes_and_an_upload_in_flight_stays(deps, ledger, store, clock):
    # Given a lineage with a registered snapshot, an old orphan and a fresh upload
    register(ledger, store, clock, 100)
    old = upload_without_manifest(store, lsn=5, sid="01J000000000000000000000AA")
    fresh = upload_without_manifest(store, lsn=6, sid="01J000000000000000000000BB")
    age_objects(store, old, clock.now() - 25 * HOUR)
    age_objects(store, fresh, clock.now() - 23 * HOUR)
    # When GC runs
    report = run_gc(deps, config=CONFIG)
    # Then the old orphan is claimed and deleted, the fresh one untouched
    assert listing(store, old) == []
    assert listing(store, fresh) == [(fresh + "part-00000.parquet", 4)]
    [lineage] = report.lineages
    assert sorted((o.prefix, o.action) for o in lineage.orphans) == [
        (old, "deleted"),
        (fresh, "in_flight"),
    ]
    claimed = records(ledger)[5]
    assert (claimed.status, claimed.expiry_cause) == (SnapshotStatus.DELETED, "orphan")
    # (the claimed prefix is marked with the lineage's other deletions, the trim riding along)
    assert event_types(ledger)[-3:] == ["OrphanClaimed", "SnapshotDeleted", "TrimPointAdvanced"]
    assert 6 not in records(ledger)


def test_a_registered_prefix_is_never_touched_however_old(deps, ledger, store, clock):
    # Given the registered latest snapshot whose files are very old, plus a stray extra file
    register(ledger, store, clock, 100)
    prefix = snapshot_prefix("orders", 3, 100, records(ledger)[100].snapshot_id)
    store.put(prefix + "extra.bin", b"not in the manifest")
    clock.advance(timedelta(days=30))
    age_objects(store, prefix, clock.now() - timedelta(days=30))
    before = listing(store, prefix)
    # When GC runs
    report = run_gc(deps, config=CONFIG)
    # Then nothing under it is touched
    assert listing(store, prefix) == before
    assert report.lineages[0].orphans == []


def test_a_manifest_arriving_after_the_claim_is_a_conflict_not_a_registration(
    deps, ledger, store, clock
):
    # Given an orphan's files (uploaded long ago) and GC claiming and deleting them
    register(ledger, store, clock, 100)
    key = write_snapshot(store, "orders", 3, 50, snapshot_id="01J000000000000000000000CC")
    manifest = store.get(key)
    store.delete_many([key])  # the writer died before its manifest... or it is late
    age_objects(store, "snapshots/orders/3/00000000000000000050-", clock.now() - 30 * HOUR)
    run_gc(deps, config=CONFIG)
    assert records(ledger)[50].status is SnapshotStatus.DELETED
    # When the manifest finally arrives (files gone or not)
    store.put(key, manifest)
    result = register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    # Then it is not registered: the record of the swept prefix stands
    assert result.outcome is Outcome.CONFLICT
    assert records(ledger)[50].status is SnapshotStatus.DELETED


def test_a_lineage_with_no_ledger_history_is_swept_too(deps, ledger, store, clock):
    # Given a stream the ledger has never heard of, with an old and a new upload
    old = upload_without_manifest(store, "ghost", 0, lsn=1, sid="01J000000000000000000000DD")
    new = upload_without_manifest(store, "ghost", 0, lsn=2, sid="01J000000000000000000000EE")
    age_objects(store, old, clock.now() - 48 * HOUR)
    age_objects(store, new, clock.now() - HOUR)
    # When GC runs
    report = run_gc(deps, config=CONFIG)
    # Then the old one is gone (and recorded), the new one stays
    assert sorted((o.prefix, o.action) for o in report.orphans) == [
        (old, "deleted"),
        (new, "in_flight"),
    ]
    assert listing(store, old) == []
    assert records(ledger, "ghost", 0)[1].status is SnapshotStatus.DELETED


def test_objects_written_again_under_a_deleted_snapshot_are_swept_after_the_window(
    deps, ledger, store, clock
):
    # Given a snapshot GC deleted
    for lsn in (10, 20, 30, 40):
        register(ledger, store, clock, lsn)
    clock.advance(timedelta(days=2))
    run_gc(deps, config=CONFIG)
    deleted = records(ledger)[10]
    assert deleted.status is SnapshotStatus.DELETED
    # When a writer re-uploads into its prefix (a retry long after)
    prefix = snapshot_prefix("orders", 3, 10, deleted.snapshot_id)
    store.put(prefix + "part-00000.parquet", b"again")
    age_objects(store, prefix, clock.now() - HOUR)
    run_gc(deps, config=CONFIG)
    assert listing(store, prefix) != []  # within the window: left alone
    age_objects(store, prefix, clock.now() - 25 * HOUR)
    run_gc(deps, config=CONFIG)
    # Then it is removed, and the ledger and the store agree again
    assert listing(store, prefix) == []
    assert_ledger_and_store_agree(ledger, store)


def test_a_grace_window_under_an_hour_is_refused():
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        GcConfig(orphan_grace_hours=0.5)
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        ClaimOrphan(
            stream="s",
            partition=0,
            lsn=1,
            snapshot_id="x",
            manifest_key="k",
            object_count=1,
            newest_object_at=datetime(2026, 1, 1, tzinfo=UTC),
            grace_hours=0.5,
        )


# Issue 27 row 1: a prefix whose manifest was never recorded (its events lost, or its
# registration failed until the failure queue) is registered by the sweep, never deleted.


def _sweeping_deps(ledger, store, clock):
    from dataclasses import replace

    from snapledger.entrypoints.register import manifest_registrar
    from tests.support import make_runtime

    return replace(
        gc_deps(ledger, store, clock),
        register=manifest_registrar(make_runtime(ledger, store, clock)),
    )


def test_an_old_unrecorded_prefix_with_a_valid_manifest_is_registered_not_deleted(
    ledger, store, clock
):
    # Given a valid snapshot whose manifest's registration never reached the ledger
    register(ledger, store, clock, 100)
    key = write_snapshot(store, "orders", 3, 50, snapshot_id="01J000000000000000000000CC")
    prefix = key.removesuffix("_manifest.json")
    before = listing(store, prefix)
    age_objects(store, prefix, clock.now() - 48 * HOUR)
    deps = _sweeping_deps(ledger, store, clock)
    # When a dry run, then GC, runs past the grace window
    dry = run_gc(deps, config=CONFIG, dry_run=True)
    report = run_gc(deps, config=CONFIG)
    # Then the dry run said it would register it, and GC registered it, deleting nothing
    assert [(o.prefix, o.action) for o in dry.lineages[0].orphans] == [(prefix, "would_register")]
    assert [(o.prefix, o.action) for o in report.lineages[0].orphans] == [(prefix, "registered")]
    assert "recorded" in report.lineages[0].orphans[0].note
    assert listing(store, prefix) == before
    assert records(ledger)[50].status is SnapshotStatus.REGISTERED
    # And the next run leaves it to the ledger: no orphan any more
    assert run_gc(deps, config=CONFIG).lineages[0].orphans == []


def test_an_old_unrecorded_prefix_with_a_malformed_manifest_is_recorded_rejected(
    ledger, store, clock
):
    # Given a prefix whose manifest is hostile (nested past the parser) and never recorded
    register(ledger, store, clock, 100)
    key = write_snapshot(
        store, "orders", 3, 60, snapshot_id="01J000000000000000000000DD", manifest=b"[" * 300_000
    )
    prefix = key.removesuffix("_manifest.json")
    age_objects(store, prefix, clock.now() - 48 * HOUR)
    # When GC runs
    report = run_gc(_sweeping_deps(ledger, store, clock), config=CONFIG)
    # Then it is recorded REJECTED with its reason (collected later as rejected snapshots are)
    [outcome] = report.lineages[0].orphans
    assert outcome.action == "registered"
    assert "rejected" in outcome.note
    record = records(ledger)[60]
    assert record.status is SnapshotStatus.REJECTED
    assert "nests deeper" in (record.rejection_reason or "")


def test_without_a_registrar_an_unrecorded_manifest_is_kept(deps, ledger, store, clock):
    register(ledger, store, clock, 100)
    key = write_snapshot(store, "orders", 3, 70, snapshot_id="01J000000000000000000000EE")
    prefix = key.removesuffix("_manifest.json")
    age_objects(store, prefix, clock.now() - 48 * HOUR)
    report = run_gc(deps, config=CONFIG)
    assert [(o.prefix, o.action) for o in report.lineages[0].orphans] == [(prefix, "kept")]
    assert listing(store, prefix) != []
