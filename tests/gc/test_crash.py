"""Crash injection: GC dies before or after every ledger write and every delete, then reruns.

After the rerun: nothing retained was deleted, nothing deletable is left behind, nothing
is left EXPIRING, and the ledger and the store agree.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.gc_settings import GcConfig
from snapledger.layout import snapshot_prefix
from snapledger.models.commands import RequestJob
from snapledger.models.ledger import LineageId
from snapledger.services.commands import execute
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from tests.gc.support import (
    age_objects,
    assert_ledger_and_store_agree,
    gc_deps,
    records,
    register,
    statuses,
)
from tests.support import create_ledger

STREAM = "orders"
CONFIG = GcConfig()  # min_count 3, min_age 24h, grace 24h
KEPT = {80: "REGISTERED", 70: "REGISTERED", 60: "REGISTERED", 30: "REGISTERED", 20: "REGISTERED"}
GONE = {5: "DELETED", 10: "DELETED", 40: "DELETED", 50: "DELETED", 75: "DELETED"}


class Crash(BaseException):  # it is what it simulates: the process dies
    """The process died here: not an Exception, which GC reports on the lineage that
    raised it and goes on (a process that dies does not go on)."""


class Faults:
    """Numbered fault points; raises Crash on reaching point ``crash_at``."""

    def __init__(self, crash_at: int | None = None) -> None:
        self.crash_at = crash_at
        self.passed: list[str] = []

    def point(self, name: str) -> None:
        if len(self.passed) == self.crash_at:
            raise Crash(name)
        self.passed.append(name)


class CrashingLedger:
    def __init__(self, inner, faults: Faults) -> None:
        self._inner, self._faults = inner, faults

    def commit(self, before, events, after, *, request_token):
        what = ",".join(sorted({e.type for e in events}))
        self._faults.point(f"before commit {what}")
        self._inner.commit(before, events, after, request_token=request_token)
        self._faults.point(f"after commit {what}")

    def __getattr__(self, name):
        return getattr(self._inner, name)


class CrashingStore:
    def __init__(self, inner, faults: Faults) -> None:
        self._inner, self._faults = inner, faults

    def delete_many(self, keys):
        self._faults.point(f"before delete {len(keys)} keys")
        result = self._inner.delete_many(keys)
        self._faults.point(f"after delete {len(keys)} keys")
        return result

    def __getattr__(self, name):
        return getattr(self._inner, name)


def scenario(ledger, store, clock, stream: str) -> None:
    """Eight snapshots (one pinned, one held), a fenced one, and an old orphan prefix."""
    ids = {
        lsn: register(ledger, store, clock, lsn, stream=stream, partition=0, epoch=2, files=3)
        for lsn in (10, 20, 30, 40, 50, 60, 70, 80)
    }
    register(ledger, store, clock, 75, stream=stream, partition=0, epoch=1)  # fenced
    lineage = LineageId(stream=stream, partition=0)
    pin = RequestJob(
        stream=stream,
        partition=0,
        job_id=f"job-{stream}",
        job_kind="restore",
        base_snapshot_id=ids[20],
        base_lsn=20,
        target_lsn=80,
    )
    execute(ledger, pin, clock.now(), snapshot_keys=(records(ledger, stream, 0)[20].sort_key,))
    hold_snapshot(ledger, lineage, ids[30], clock=clock, reason="keep")
    orphan = snapshot_prefix(stream, 0, 5, "01J000000000000000000ABCDE")
    store.put(orphan + "part-00000.parquet", b"orphan")
    clock.advance(timedelta(days=3))
    age_objects(store, orphan, clock.now() - timedelta(hours=30))


def converged(ledger, store, stream: str) -> None:
    assert statuses(ledger, stream, 0) == {**KEPT, **GONE}
    assert_ledger_and_store_agree(ledger, store, stream, 0)


@contextmanager
def fresh_world(ledger, store, name: str):
    """A new table and store root per scenario: moto copies every table on each transaction."""
    table = create_ledger(ledger.client)
    root = FileObjectStore(store.root.parent / name)
    try:
        yield table, root
    finally:
        ledger.client.delete_table(TableName=table.table_name)


def test_gc_converges_after_a_crash_at_any_step(ledger, store, clock):
    # Given the scenario run once without faults, to number its fault points
    with fresh_world(ledger, store, "calibrate") as (table, root):
        faults = Faults()
        scenario(table, root, clock, STREAM)
        crashing = gc_deps(CrashingLedger(table, faults), CrashingStore(root, faults), clock)
        run_gc(crashing, stream=STREAM, config=CONFIG)
        converged(table, root, STREAM)
    points = list(faults.passed)
    # expire, orphan claim, one delete of every key, mark (with the trim): before and after
    assert len(points) == 8, points
    for k, point in enumerate(points):
        with fresh_world(ledger, store, f"crash-{k}") as (table, root):
            scenario(table, root, clock, STREAM)
            # When GC dies at fault point k
            faults = Faults(crash_at=k)
            crashing = gc_deps(CrashingLedger(table, faults), CrashingStore(root, faults), clock)
            with pytest.raises(Crash):
                run_gc(crashing, stream=STREAM, config=CONFIG)
            # Then what was promised is still there, even before any rerun
            for lsn in KEPT:
                record = records(table, STREAM, 0)[lsn]
                assert record.status.value == "REGISTERED", (point, lsn)
                prefix = snapshot_prefix(STREAM, 0, lsn, record.snapshot_id)
                assert len(list(root.list(prefix))) == 4, (point, lsn)
            # When GC runs again
            run_gc(gc_deps(table, root, clock), stream=STREAM, config=CONFIG)
            # Then it converged to the same end state as a run without a crash
            converged(table, root, STREAM)


def test_a_crash_between_a_batch_across_lineages_and_its_marks_is_finished_by_the_next_run(
    ledger, store, clock
):
    # Given two lineages whose doomed snapshots (and orphans) share one DeleteObjects
    streams = (STREAM, "refunds")
    with fresh_world(ledger, store, "calibrate-two") as (table, root):
        faults = Faults()
        for stream in streams:
            scenario(table, root, clock, stream)
        run_gc(gc_deps(CrashingLedger(table, faults), CrashingStore(root, faults), clock))
        for stream in streams:
            converged(table, root, stream)
    points = list(faults.passed)
    deletes = [k for k, point in enumerate(points) if point.startswith("before delete")]
    assert [points[k] for k in deletes] == ["before delete 32 keys"], points
    # the marks of both lineages come after the one delete
    marks = [
        k for k, p in enumerate(points) if p == "before commit SnapshotDeleted,TrimPointAdvanced"
    ]
    assert len(marks) == 2 and min(marks) > deletes[0], points
    for k in range(deletes[0] + 1, len(points)):
        with fresh_world(ledger, store, f"crash-two-{k}") as (table, root):
            for stream in streams:
                scenario(table, root, clock, stream)
            # When GC dies after the batch's DeleteObjects, before (or between) the marks
            faults = Faults(crash_at=k)
            crashing = gc_deps(CrashingLedger(table, faults), CrashingStore(root, faults), clock)
            with pytest.raises(Crash):
                run_gc(crashing)
            # Then nothing retained was deleted
            for stream in streams:
                for lsn in KEPT:
                    record = records(table, stream, 0)[lsn]
                    assert record.status.value == "REGISTERED", (points[k], stream, lsn)
                    prefix = snapshot_prefix(stream, 0, lsn, record.snapshot_id)
                    assert len(list(root.list(prefix))) == 4, (points[k], stream, lsn)
            # When GC runs again, then both lineages converge: nothing left behind
            run_gc(gc_deps(table, root, clock))
            for stream in streams:
                converged(table, root, stream)
