"""Restate's ``retained_snapshots`` reconciled with the ledger, every GC run.

GC drops what it deletes from latest.json's ``retained_snapshots`` when it deletes it
(``gc_lineage._pruning``). That drop is a compare-and-swap; after ``MAX_REWRITES`` lost
races it gives up, and the next run deletes nothing more of those snapshots, so its own drop
would never name them again. This step is what finishes it: each run, an entry whose
snapshot the ledger records DELETED by snapledger is dropped, by the same
compare-and-swap.

Stale means exactly that: the ledger's record of the entry's snapshot is DELETED, and not
``evicted_by_producer`` (Restate drops what it evicts itself). An entry with no record
(registration has not caught up, or the record's TTL passed), or with a live one, is left
as Restate wrote it, and so is the entry latest.json names (never dropped). The records
GC read for its plan (every live one) decide most entries at no cost; only an entry none of
them is looked up (one GetItem); nothing stale, nothing is written. In the steady state
(every entry one of those records) the step makes no request.
"""

from __future__ import annotations

from collections.abc import Iterable

from snapledger.core.producer_pointers import EVICTED_BY_PRODUCER
from snapledger.layouts import restate
from snapledger.models.ledger import LineageId, SnapshotRecord, SnapshotStatus, snapshot_sort_key
from snapledger.ports import Ledger
from snapledger.services import restate_pointer
from snapledger.services.gc_report import LineageReport
from snapledger.services.restate_pointer import RestatePointers


def stale_entries(
    ledger: Ledger,
    lineage: LineageId,
    latest: restate.RestateLatest,
    live: Iterable[SnapshotRecord],
) -> list[str]:
    """The ids in ``latest``'s ``retained_snapshots`` that snapledger deleted (see the
    module docstring), oldest last as listed; ``live``: the lineage's live records, as GC
    read them."""
    known = {record.snapshot_id for record in live}
    stale: list[str] = []
    for entry in latest.retained_snapshots:
        if entry.snapshot_id == latest.snapshot_id or entry.snapshot_id in known:
            continue
        record = ledger.get_snapshot(
            lineage, snapshot_sort_key(entry.min_applied_lsn, entry.snapshot_id)
        )
        if (
            record is not None
            and record.status is SnapshotStatus.DELETED
            and record.expiry_cause != EVICTED_BY_PRODUCER
        ):
            stale.append(entry.snapshot_id)
    return stale


def reconcile(
    ledger: Ledger,
    pointers: RestatePointers,
    lineage: LineageId,
    live: Iterable[SnapshotRecord],
    report: LineageReport,
) -> None:
    """Drop the stale entries (``stale_entries``) from latest.json by compare-and-swap;
    none: nothing is written. Reads latest.json only when this run has no read of it that
    still stands (heal found its latest broken)."""
    if pointers.known is None and report.heal is not None and report.heal.broken:
        pointers.named()  # heal may have written: read what stands now
    read = pointers.known
    if read is None:
        return  # no latest.json: nothing to reconcile
    stale = stale_entries(ledger, lineage, read.latest, live)
    if stale and drop(pointers, stale, report):
        pointers.known = None  # written: the version read is spent
        report.notes.append(
            f"dropped {', '.join(stale)} from Restate's latest.json retained_snapshots: "
            "snapledger had deleted them, and an earlier run's drop did not finish"
        )


def drop(pointers: RestatePointers, ids: Iterable[str], report: LineageReport) -> bool:
    """``ids`` dropped from latest.json's ``retained_snapshots`` (``restate_pointer.prune``),
    starting from the version this run read; whether it was done. A failure is the
    lineage's error: the deletions stand, and the next run drops them (``reconcile``)."""
    try:
        restate_pointer.prune(
            pointers.store, pointers.layout, pointers.partition, ids, first=pointers.known
        )
    except Exception as exc:  # the deletions stand
        report.errors.append(
            f"dropping deleted snapshots from Restate's latest.json failed: "
            f"{type(exc).__name__}: {exc}; the next run drops them"
        )
        return False
    return True
