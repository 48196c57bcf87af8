"""Rules for a producer-owned pointer (Restate's latest.json): a snapshot found broken, and
the pointer moved to another snapshot by heal or by an operator's restore-from-chosen.

The pointer itself is the producer's object, written by compare-and-swap in the services;
the ledger records the facts: ``SnapshotFoundBroken`` (the snapshot's record keeps the
problems, so heal never picks it again) and ``ProducerLatestRepointed`` (who moved it, from
what, to what). A snapshot may be repointed to only while REGISTERED and not broken.
A REGISTERED snapshot whose files the producer deleted itself (Restate's ``num-retained``)
is ``SnapshotEvicted``: DELETED, with the cause ``evicted_by_producer``.
"""

from __future__ import annotations

from datetime import datetime

from snapledger.core.gc_rules import existing_snapshot
from snapledger.core.state import LineageState, Sequencer
from snapledger.errors import InvalidRequestError
from snapledger.models.commands import RecordBrokenSnapshot, RecordEvicted, RecordRepoint
from snapledger.models.events import (
    LedgerEvent,
    ProducerLatestRepointed,
    SnapshotEvicted,
    SnapshotFoundBroken,
)
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus, snapshot_sort_key


def decide_broken(
    state: LineageState, cmd: RecordBrokenSnapshot, now: datetime
) -> list[LedgerEvent]:
    record = existing_snapshot(state, cmd.lsn, cmd.snapshot_id)
    if record.broken == cmd.problems:
        return []  # found broken again for the same reasons: already recorded
    ev = Sequencer(state, cmd.command_id, now)
    return [
        SnapshotFoundBroken(
            **ev.next(), snapshot_id=record.snapshot_id, lsn=record.lsn, problems=cmd.problems
        )
    ]


def decide_repoint(state: LineageState, cmd: RecordRepoint, now: datetime) -> list[LedgerEvent]:
    record = existing_snapshot(state, cmd.lsn, cmd.snapshot_id)
    problem = repoint_problem(record)
    if problem is not None:
        raise InvalidRequestError(problem)
    ev = Sequencer(state, cmd.command_id, now)
    return [
        ProducerLatestRepointed(
            **ev.next(),
            snapshot_id=record.snapshot_id,
            lsn=record.lsn,
            previous_snapshot_id=cmd.previous_snapshot_id,
            previous_lsn=cmd.previous_lsn,
            cause=cmd.cause,
            by=cmd.by,
            reason=cmd.reason,
        )
    ]


#: The expiry cause a record evicted by its producer carries.
EVICTED_BY_PRODUCER = "evicted_by_producer"


def decide_evicted(state: LineageState, cmd: RecordEvicted, now: datetime) -> list[LedgerEvent]:
    """Only a REGISTERED record is marked: an EXPIRING one is GC's own deletion (it
    finishes it), a DELETED one is done, a REJECTED one is collected as rejected."""
    record = existing_snapshot(state, cmd.lsn, cmd.snapshot_id)
    if record.status is not SnapshotStatus.REGISTERED:
        return []
    ev = Sequencer(state, cmd.command_id, now)
    return [
        SnapshotEvicted(
            **ev.next(), snapshot_id=record.snapshot_id, lsn=record.lsn, reason=cmd.reason
        )
    ]


def repoint_problem(record: SnapshotRecord) -> str | None:
    """Why a pointer may not be moved to ``record`` (None: it may)."""
    if record.status is not SnapshotStatus.REGISTERED:
        return (
            f"snapshot {record.snapshot_id} is {record.status.value}: only a REGISTERED "
            "snapshot can be restored from; choose another (snapledger list shows them)"
        )
    if record.broken:
        return (
            f"snapshot {record.snapshot_id} was found broken ({record.broken[0]}): it "
            "cannot be restored from; choose another"
        )
    return None


def evolve_producer_pointer(
    head: Head,
    snapshots: dict[str, SnapshotRecord],
    event: SnapshotFoundBroken | ProducerLatestRepointed | SnapshotEvicted,
) -> Head:
    if isinstance(event, SnapshotEvicted):
        key = snapshot_sort_key(event.lsn, event.snapshot_id)
        record = snapshots.get(key)
        if record is not None:
            snapshots[key] = record.model_copy(
                update={
                    "status": SnapshotStatus.DELETED,
                    "deleted_at": event.at,
                    "objects_deleted": 0,
                    "expiry_cause": EVICTED_BY_PRODUCER,
                    "expiry_reason": event.reason,
                    "version": event.seq,
                }
            )
    if isinstance(event, SnapshotFoundBroken):
        key = snapshot_sort_key(event.lsn, event.snapshot_id)
        record = snapshots.get(key)
        if record is not None:
            snapshots[key] = record.model_copy(
                update={"broken": event.problems, "version": event.seq}
            )
    return head
