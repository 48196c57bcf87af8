"""Snapshots Restate evicted itself, noticed by GC and recorded, never as an error.

Restate deletes the files of the snapshots beyond its ``num-retained`` (best effort). GC
lists a Restate lineage whole each run, so a REGISTERED snapshot whose folder holds
nothing any more is one its producer evicted (or someone deleted outside snapledger): it is
recorded DELETED with the cause ``evicted_by_producer`` (``SnapshotEvicted``). When
snapledger's policy was keeping it, the run says so: Restate's ``num-retained`` is below
what the policy keeps, and ``docs/restate.md`` says how to let snapledger decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from snapledger.clock import Clock
from snapledger.core.retention import PROTECTIONS, RetentionPlan
from snapledger.layouts.lineage import folder_of_manifest
from snapledger.models.commands import RecordEvicted
from snapledger.models.ledger import LineageId, SnapshotRecord, SnapshotStatus
from snapledger.ports import Ledger, ObjectInfo
from snapledger.services.commands import execute

REASON = (
    "its folder holds no object any more: Restate evicted it (beyond its num-retained) or "
    "its files were deleted outside snapledger"
)


def evicted(
    records: Sequence[SnapshotRecord], listing: Mapping[str, list[ObjectInfo]]
) -> list[SnapshotRecord]:
    """The REGISTERED records whose folder the lineage's whole listing did not find."""
    return [
        record
        for record in records
        if record.status is SnapshotStatus.REGISTERED
        and folder_of_manifest(record.manifest_key) not in listing
    ]


def dry_run_note(record: SnapshotRecord) -> str:
    """What a dry run says of a snapshot the run would record evicted."""
    return (
        f"{record.snapshot_id} (LSN {record.lsn}) was evicted by Restate (its folder holds "
        "no object): a run records it DELETED (evicted_by_producer)"
    )


def record_evictions(
    ledger: Ledger,
    clock: Clock,
    lineage: LineageId,
    gone: Sequence[SnapshotRecord],
    plan: RetentionPlan,
) -> list[str]:
    """Record each of ``gone`` evicted; the notes to report (a policy Restate undercuts)."""
    notes = []
    protected = {
        kept.record.sort_key: [r.value for r in kept.reasons if r in PROTECTIONS]
        for kept in plan.kept
    }
    for record in gone:
        execute(
            ledger,
            RecordEvicted(
                stream=lineage.stream,
                partition=lineage.partition,
                lsn=record.lsn,
                snapshot_id=record.snapshot_id,
                reason=REASON,
            ),
            clock.now(),
            snapshot_keys=(record.sort_key,),
        )
        reasons = protected.get(record.sort_key)
        note = f"{record.snapshot_id} (LSN {record.lsn}) was evicted by Restate"
        if reasons:
            note += (
                f" though snapledger's policy keeps it ({', '.join(reasons)}): Restate's "
                "num-retained is lower than what the policy keeps; raise it (up to 255) so "
                "snapledger decides (docs/restate.md)"
            )
        notes.append(note)
    return notes
