"""The Decider of a lineage: ``decide(state, command, now) -> events`` and ``evolve``.

Both are pure. The ledger adapter loads a ``LineageState``, calls ``decide``, folds the
events with ``evolve`` and writes the result in one transaction conditioned on the
version it loaded.

Registration rules (docs/ledger.md):
- a valid manifest with an LSN above the latest becomes latest (``LatestAdvanced``), and
  so does one that begins the lineage over on a new incarnation of its log (it names the
  changelog's topic id, with an epoch above the lineage's highest), whatever its LSN;
- one at or below the latest is recorded but the pointer stays; at the *same* LSN the
  pointer stays on the snapshot that got there first (first-come wins, so a redelivery
  or a second writer can never flip the pointer sideways);
- an epoch below the highest epoch seen is fenced (REJECTED, code ``fenced``);
- an invalid manifest is REJECTED with its reason; the pointer never moves for it;
- the same manifest again is a no-op; the same snapshot id with other content is
  rejected with code ``conflict`` (recorded once per distinct content).

Retention rules (expiring, deleting, orphans, holds, the trim point) are in
``core/gc_rules.py``; docs/retention.md describes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from snapledger.core.gc_rules import (
    decide_claim_orphan,
    decide_expire,
    decide_hold,
    decide_mark_deleted,
    decide_release,
    decide_trim,
    evolve_gc,
)
from snapledger.core.jobs import decide_job_state, decide_request_job, evolve_job
from snapledger.core.producer_pointers import (
    decide_broken,
    decide_evicted,
    decide_repoint,
    evolve_producer_pointer,
)
from snapledger.core.registration import decide_register, evolve_registration
from snapledger.core.segments import decide_reject_segment
from snapledger.core.state import LineageState
from snapledger.models.commands import (
    HoldSnapshot,
    RecordBrokenSnapshot,
    RecordEvicted,
    RecordJobState,
    RecordRepoint,
    RegisterSnapshot,
    RejectSegment,
    ReleaseHold,
    RequestJob,
)
from snapledger.models.events import (
    JobFailed,
    JobRequested,
    JobStateChanged,
    JobSucceeded,
    LatestAdvanced,
    LedgerEvent,
    OrphanClaimed,
    ProducerLatestRepointed,
    SnapshotDeleted,
    SnapshotEvicted,
    SnapshotExpiring,
    SnapshotFoundBroken,
    SnapshotHeld,
    SnapshotPinned,
    SnapshotRegistered,
    SnapshotRejected,
    SnapshotReleased,
    SnapshotUnpinned,
    TrimPointAdvanced,
)
from snapledger.models.gc_commands import (
    AdvanceTrimPoint,
    ClaimOrphan,
    ExpireSnapshots,
    MarkSnapshotsDeleted,
)
from snapledger.models.ledger import Head, SnapshotRecord

Command = (
    RegisterSnapshot
    | RequestJob
    | RecordJobState
    | ExpireSnapshots
    | ClaimOrphan
    | MarkSnapshotsDeleted
    | AdvanceTrimPoint
    | HoldSnapshot
    | ReleaseHold
    | RejectSegment
    | RecordBrokenSnapshot
    | RecordRepoint
    | RecordEvicted
)

__all__ = ["Command", "LineageState", "decide", "evolve", "evolve_all"]


#: Each command's decision rule.
_DECIDERS: dict[type[Command], Callable[[LineageState, Any, datetime], list[LedgerEvent]]] = {
    RegisterSnapshot: decide_register,
    RequestJob: decide_request_job,
    RecordJobState: decide_job_state,
    ExpireSnapshots: decide_expire,
    ClaimOrphan: decide_claim_orphan,
    MarkSnapshotsDeleted: decide_mark_deleted,
    AdvanceTrimPoint: decide_trim,
    HoldSnapshot: decide_hold,
    ReleaseHold: decide_release,
    RejectSegment: decide_reject_segment,
    RecordBrokenSnapshot: decide_broken,
    RecordRepoint: decide_repoint,
    RecordEvicted: decide_evicted,
}


def decide(state: LineageState, command: Command, now: datetime) -> list[LedgerEvent]:
    """The events ``command`` produces in ``state`` (empty: nothing to do)."""
    rule = _DECIDERS.get(type(command))
    if rule is None:
        raise TypeError(f"no lineage rule decides {type(command).__name__}")
    return rule(state, command, now)


#: The rule that applies each event that changes a lineage's state beyond HEAD's version
#: (they update ``head`` and the ``snapshots`` given to them in place of a copy). An event
#: type not listed is a fact the log keeps and nothing reads back (``ChangelogSegmentRejected``):
#: it moves only the version, so a new informational event type needs no entry here.
_EVOLVERS: dict[type, Callable[[Head, dict[str, SnapshotRecord], Any], Head]] = {
    **dict.fromkeys((SnapshotRegistered, SnapshotRejected, LatestAdvanced), evolve_registration),
    **dict.fromkeys(
        (
            SnapshotExpiring,
            OrphanClaimed,
            SnapshotDeleted,
            SnapshotHeld,
            SnapshotReleased,
            TrimPointAdvanced,
        ),
        evolve_gc,
    ),
    **dict.fromkeys(
        (SnapshotFoundBroken, ProducerLatestRepointed, SnapshotEvicted), evolve_producer_pointer
    ),
    **dict.fromkeys(
        (
            JobRequested,
            JobStateChanged,
            JobSucceeded,
            JobFailed,
            SnapshotPinned,
            SnapshotUnpinned,
        ),
        evolve_job,
    ),
}


def evolve(state: LineageState, event: LedgerEvent) -> LineageState:
    """The state after ``event``; every event bumps the head's version to its seq."""
    if event.seq != state.head.version + 1:
        raise ValueError(f"event seq {event.seq} does not follow version {state.head.version}")
    head = state.head.model_copy(update={"version": event.seq, "updated_at": event.at})
    rule = _EVOLVERS.get(type(event))
    if rule is None:
        return replace(state, head=head)
    snapshots = dict(state.snapshots)
    head = rule(head, snapshots, event)
    return replace(state, head=head, snapshots=snapshots)


def evolve_all(state: LineageState, events: Iterable[LedgerEvent]) -> LineageState:
    for event in events:
        state = evolve(state, event)
    return state
