"""Snapshots that share files (issue 45): a manifest's references, registration's checks of
them, GC by reachability, the orphan sweep of ``shared/``, and crashes at every call.

The lineage of every test is a chain of incremental snapshots: each keeps a file or two of
its own and references earlier ones' and the lineage's ``shared/`` folder, as an
incremental RocksDB snapshot does (``core/references.py``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from snapledger.gc_settings import GcConfig
from snapledger.layout import lineage_snapshots_prefix, snapshot_prefix
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot, release_hold
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.gc.support import age_objects, gc_deps, records
from tests.gc.test_crash import Crash, CrashingLedger, CrashingStore, Faults, fresh_world
from tests.support import write_snapshot

STREAM, PARTITION = "orders", 0
LINEAGE = lineage_snapshots_prefix(STREAM, PARTITION)
IDS = {
    10: "01J00000000000000000000010",
    20: "01J00000000000000000000020",
    30: "01J00000000000000000000030",
    40: "01J00000000000000000000040",
    50: "01J00000000000000000000050",
}
KEEP_ONE = GcConfig(default_min_count=1, default_min_age_hours=0)


def folder(lsn: int) -> str:
    return snapshot_prefix(STREAM, PARTITION, lsn, IDS[lsn]).removeprefix(LINEAGE).rstrip("/")


def write_incremental(store: Any, lsn: int, own: dict[str, bytes], refs: list[str]) -> str:
    """An opaque snapshot at ``lsn`` with ``own`` files and ``refs`` (lineage-relative)."""
    sizes = {info.key: info.size for info in store.list(LINEAGE)}
    references = [{"path": path, "size": sizes[LINEAGE + path]} for path in refs]
    return write_snapshot(
        store,
        STREAM,
        PARTITION,
        lsn,
        snapshot_id=IDS[lsn],
        files=own,
        format="opaque",
        references=references or None,
    )


def register(ledger: Any, store: Any, clock: Any, key: str) -> Any:
    return register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)


def chain(ledger: Any, store: Any, clock: Any) -> None:
    """10 (a, b) <- 20 (c; 10/a, shared/x) <- 30 (d; 10/a, 20/c, shared/x, shared/y)
    <- 40 (e; 30/d, shared/y): each registered, a minute apart."""
    store.put(LINEAGE + "shared/x.sst", b"x" * 30)
    store.put(LINEAGE + "shared/y.sst", b"y" * 40)
    plan = {
        10: ({"a.sst": b"a" * 10, "b.sst": b"b" * 11}, []),
        20: ({"c.sst": b"c" * 12}, [f"{folder(10)}/a.sst", "shared/x.sst"]),
        30: (
            {"d.sst": b"d" * 13},
            [f"{folder(10)}/a.sst", f"{folder(20)}/c.sst", "shared/x.sst", "shared/y.sst"],
        ),
        40: ({"e.sst": b"e" * 14}, [f"{folder(30)}/d.sst", "shared/y.sst"]),
    }
    for lsn, (own, refs) in plan.items():
        result = register(ledger, store, clock, write_incremental(store, lsn, own, refs))
        assert result.outcome.value == "became_latest", (lsn, result)
        clock.advance(timedelta(minutes=1))
    # written two hours ago: past what a registration may still take as new (GC leaves a
    # younger shared file to the orphan sweep)
    age_objects(store, LINEAGE + "shared/", clock.now() - timedelta(hours=2))


def keys(store: Any, prefix: str = LINEAGE) -> set[str]:
    return {info.key for info in store.list(prefix)}


def assert_nothing_used_is_missing(ledger: Any, store: Any) -> None:
    present = keys(store)
    for record in records(ledger, STREAM, PARTITION).values():
        if record.status is not SnapshotStatus.REGISTERED:
            continue
        prefix = snapshot_prefix(STREAM, PARTITION, record.lsn, record.snapshot_id)
        own = {k for k in present if k.startswith(prefix)}
        assert record.manifest_key in own, record.lsn
        assert len(own) == record.file_count + 1, (record.lsn, sorted(own))
        for path in record.references or ():
            assert LINEAGE + path in present, (record.lsn, path)


# -- registration ---------------------------------------------------------------------------


def test_a_chain_of_incremental_snapshots_registers_with_its_references(ledger, store, clock):
    chain(ledger, store, clock)
    found = records(ledger, STREAM, PARTITION)
    assert found[10].references is None
    assert found[40].references == (f"{folder(30)}/d.sst", "shared/y.sst")
    head = ledger.get_head(LineageId(stream=STREAM, partition=PARTITION), consistent=True)
    assert head.sharing == tuple(found[lsn].sort_key for lsn in (20, 30, 40))


@pytest.mark.parametrize(
    ("path", "size", "why"),
    [
        ("shared/missing.sst", 5, "'shared/missing.sst' is not in the store under"),
        ("shared/x.sst", 31, "is 30 bytes in the store but the manifest says 31"),
        ("../other/0/shared/x.sst", 30, "is not a file of the lineage's area"),
        ("x.sst", 30, "names no file under shared/ or an earlier snapshot's folder"),
        ("elsewhere/x.sst", 30, "is neither shared/ nor a snapshot's folder"),
        (f"{'0' * 20}-01J00000000000000000000099/_manifest.json", 1, "a snapshot's manifest"),
        (f"{'0' * 19}5-01J00000000000000000000099/f.sst", 1, "a snapshot that is not registered"),
    ],
)
def test_a_reference_that_cannot_be_used_is_rejected_naming_it(
    ledger, store, clock, path: str, size: int, why: str
):
    store.put(LINEAGE + "shared/x.sst", b"x" * 30)
    store.put(LINEAGE + f"{'0' * 19}5-01J00000000000000000000099/f.sst", b"f")
    key = write_snapshot(
        store,
        STREAM,
        PARTITION,
        10,
        snapshot_id=IDS[10],
        files={"a.sst": b"a"},
        format="opaque",
        references=[{"path": path, "size": size}],
    )
    result = register(ledger, store, clock, key)
    assert result.outcome.value == "rejected"
    assert why in result.reason and "references[0]" in result.reason


def test_references_are_for_opaque_snapshots(ledger, store, clock):
    store.put(LINEAGE + "shared/x.sst", b"x" * 30)
    key = write_snapshot(
        store, STREAM, PARTITION, 10, references=[{"path": "shared/x.sst", "size": 30}]
    )
    result = register(ledger, store, clock, key)
    assert result.outcome.value == "rejected"
    assert 'references are for "format": "opaque" snapshots' in result.reason


def test_a_shared_file_written_long_before_its_manifest_is_refused_unless_one_uses_it(
    ledger, store, clock
):
    # Given a shared file an hour old that no registered snapshot references
    store.put(LINEAGE + "shared/old.sst", b"o" * 8)
    age_objects(store, LINEAGE + "shared/", clock.now() - timedelta(hours=1))
    key = write_incremental(store, 10, {"a.sst": b"a"}, ["shared/old.sst"])
    # Then a snapshot referencing it is refused: the orphan sweep may be deleting it
    result = register(ledger, store, clock, key)
    assert result.outcome.value == "rejected"
    assert "written more than 30 minutes before its registration" in result.reason
    # but a file that old that a registered snapshot references is anyone's to use
    store.put(LINEAGE + "shared/new.sst", b"n" * 8)
    first = register(ledger, store, clock, write_incremental(store, 20, {}, ["shared/new.sst"]))
    assert first.outcome.value == "became_latest"
    age_objects(store, LINEAGE + "shared/", clock.now() - timedelta(hours=1))
    later = register(ledger, store, clock, write_incremental(store, 30, {}, ["shared/new.sst"]))
    assert later.outcome.value == "became_latest", later.reason


def test_a_reference_to_a_file_gc_is_collecting_is_rejected(ledger, store, clock):
    # Given GC stopped right after marking 10..30 EXPIRING (before any delete)
    chain(ledger, store, clock)
    faults = Faults(crash_at=1)  # 0: before the EXPIRING commit, 1: after it
    deps = gc_deps(CrashingLedger(ledger, faults), CrashingStore(store, faults), clock)
    with pytest.raises(Crash):
        run_gc(deps, stream=STREAM, config=KEEP_ONE)
    assert faults.passed[0].startswith("before commit SnapshotExpiring")
    # When a snapshot references shared/x (used only by 20 and 30), 20's own file, and
    # shared/y (which 40, registered, references too)
    refs = ["shared/x.sst", f"{folder(20)}/c.sst", "shared/y.sst"]
    result = register(ledger, store, clock, write_incremental(store, 50, {}, refs))
    # Then it is rejected, naming each file GC may be deleting; shared/y was fine
    assert result.outcome.value == "rejected"
    assert "references[0] 'shared/x.sst' is being collected by GC" in result.reason
    assert f"references[1] '{folder(20)}/c.sst' is being collected by GC" in result.reason
    assert "references[2]" not in result.reason


# -- GC by reachability ---------------------------------------------------------------------


def test_gc_deletes_only_the_files_no_retained_snapshot_references(ledger, store, clock):
    chain(ledger, store, clock)
    run_gc(gc_deps(ledger, store, clock), stream=STREAM, config=KEEP_ONE)
    assert {lsn: r.status.value for lsn, r in records(ledger, STREAM, PARTITION).items()} == {
        10: "DELETED",
        20: "DELETED",
        30: "DELETED",
        40: "REGISTERED",
    }
    assert_nothing_used_is_missing(ledger, store)
    left = keys(store) - {LINEAGE + "latest.json"}
    assert left == {
        f"{LINEAGE}{folder(40)}/e.sst",
        f"{LINEAGE}{folder(40)}/_manifest.json",
        f"{LINEAGE}{folder(30)}/d.sst",
        f"{LINEAGE}shared/y.sst",
    }
    head = ledger.get_head(LineageId(stream=STREAM, partition=PARTITION), consistent=True)
    assert head.sharing == (records(ledger, STREAM, PARTITION)[40].sort_key,)


def test_a_held_snapshot_keeps_what_it_references_while_older_and_newer_ones_go(
    ledger, store, clock
):
    chain(ledger, store, clock)
    lineage = LineageId(stream=STREAM, partition=PARTITION)
    hold_snapshot(ledger, lineage, IDS[20], clock=clock, reason="audit")
    run_gc(gc_deps(ledger, store, clock), stream=STREAM, config=KEEP_ONE)
    assert {lsn: r.status.value for lsn, r in records(ledger, STREAM, PARTITION).items()} == {
        10: "DELETED",
        20: "REGISTERED",
        30: "DELETED",
        40: "REGISTERED",
    }
    assert_nothing_used_is_missing(ledger, store)
    left = keys(store) - {LINEAGE + "latest.json"}
    assert left == {
        f"{LINEAGE}{folder(10)}/a.sst",  # 20 references it
        f"{LINEAGE}{folder(20)}/c.sst",
        f"{LINEAGE}{folder(20)}/_manifest.json",
        f"{LINEAGE}{folder(30)}/d.sst",  # 40 references it
        f"{LINEAGE}{folder(40)}/e.sst",
        f"{LINEAGE}{folder(40)}/_manifest.json",
        f"{LINEAGE}shared/x.sst",  # 20
        f"{LINEAGE}shared/y.sst",  # 40
    }
    # When the hold goes and GC runs again, what only 20 used goes with it
    (hold,) = records(ledger, STREAM, PARTITION)[20].holds
    release_hold(ledger, lineage, IDS[20], clock=clock, hold_id=hold.hold_id)
    run_gc(gc_deps(ledger, store, clock), stream=STREAM, config=KEEP_ONE)
    assert_nothing_used_is_missing(ledger, store)
    assert keys(store) - {LINEAGE + "latest.json"} == {
        f"{LINEAGE}{folder(30)}/d.sst",
        f"{LINEAGE}{folder(40)}/e.sst",
        f"{LINEAGE}{folder(40)}/_manifest.json",
        f"{LINEAGE}shared/y.sst",
    }


# -- the orphan sweep -----------------------------------------------------------------------


def test_the_sweep_deletes_an_unreferenced_shared_file_only_past_the_grace_window(
    ledger, store, clock
):
    # Given the chain, an upload in flight (young) and a leftover (old) in shared/
    chain(ledger, store, clock)
    store.put(LINEAGE + "shared/in-flight.sst", b"i")
    store.put(LINEAGE + "shared/leftover.sst", b"l")
    clock.advance(timedelta(days=3))
    age_objects(store, LINEAGE + "shared/", clock.now() - timedelta(days=2))
    age_objects(store, LINEAGE + "shared/in-flight.sst", clock.now() - timedelta(minutes=5))
    # When GC runs with a policy that keeps every snapshot
    keep_all = GcConfig(default_min_count=10, default_min_age_hours=0)
    report = run_gc(gc_deps(ledger, store, clock), stream=STREAM, config=keep_all)
    # Then only the old file nothing references went; referenced ones stay, however old
    shared = keys(store, LINEAGE + "shared/")
    assert shared == {LINEAGE + f"shared/{n}.sst" for n in ("x", "y", "in-flight")}
    swept = [o for lineage in report.lineages for o in lineage.orphans]
    assert [(o.prefix, o.action, o.objects) for o in swept] == [(LINEAGE + "shared/", "deleted", 1)]
    assert_nothing_used_is_missing(ledger, store)


def test_a_folder_gc_emptied_of_its_snapshot_keeps_the_files_others_reference(ledger, store, clock):
    # Given 30 DELETED with its d.sst kept for 40, days later
    chain(ledger, store, clock)
    run_gc(gc_deps(ledger, store, clock), stream=STREAM, config=KEEP_ONE)
    clock.advance(timedelta(days=5))
    age_objects(store, LINEAGE, clock.now() - timedelta(days=4))
    # When GC runs again (the sweep looks at DELETED snapshots' folders)
    run_gc(gc_deps(ledger, store, clock), stream=STREAM, config=KEEP_ONE)
    # Then 40's reference into it is still there
    assert f"{LINEAGE}{folder(30)}/d.sst" in keys(store)
    assert_nothing_used_is_missing(ledger, store)


# -- crashes --------------------------------------------------------------------------------


def test_gc_of_shared_files_converges_after_a_crash_at_any_call(ledger, store, clock):
    # Given the chain collected once without faults, to number its fault points
    with fresh_world(ledger, store, "shared-calibrate") as (table, root):
        chain(table, root, clock)
        faults = Faults()
        crashing = gc_deps(CrashingLedger(table, faults), CrashingStore(root, faults), clock)
        run_gc(crashing, stream=STREAM, config=KEEP_ONE)
        expected = keys(root)
    points = list(faults.passed)
    assert any(p.startswith("before delete") for p in points), points
    for k, point in enumerate(points):
        with fresh_world(ledger, store, f"shared-crash-{k}") as (table, root):
            chain(table, root, clock)
            # When GC dies at fault point k
            faults = Faults(crash_at=k)
            crashing = gc_deps(CrashingLedger(table, faults), CrashingStore(root, faults), clock)
            with pytest.raises(Crash):
                run_gc(crashing, stream=STREAM, config=KEEP_ONE)
            # Then nothing a registered snapshot uses is gone, even before a rerun
            assert_nothing_used_is_missing(table, root)
            # When GC runs again, then it ends where a run without a crash ends
            run_gc(gc_deps(table, root, clock), stream=STREAM, config=KEEP_ONE)
            assert keys(root) == expected, point
            assert_nothing_used_is_missing(table, root)


def test_a_lineage_with_no_snapshot_registered_loses_its_old_shared_files(ledger, store, clock):
    # Given files under shared/ of a lineage the ledger has never heard of, one old
    other = lineage_snapshots_prefix(STREAM, 7)
    store.put(other + "shared/old.sst", b"o")
    store.put(other + "shared/new.sst", b"n")
    clock.advance(timedelta(days=3))
    age_objects(store, other + "shared/old.sst", clock.now() - timedelta(days=2))
    age_objects(store, other + "shared/new.sst", clock.now() - timedelta(minutes=5))
    # When GC runs (its sweep of lineages with no HEAD)
    run_gc(gc_deps(ledger, store, clock), config=KEEP_ONE)
    # Then the old one went, the young one stays
    assert keys(store, other) == {other + "shared/new.sst"}
