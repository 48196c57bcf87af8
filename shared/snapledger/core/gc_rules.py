"""Retention rules on a lineage: expiring, deleting, claiming orphans, holds, the trim point.

``decide_expire`` is where GC's promise is kept: it re-checks the rule against the state
loaded for the commit (not the plan's view), so a pin, a hold or a new latest that arrived
between plan and apply wins, and the transaction's version conditions make that check
and the write one atomic step.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import assert_never

from snapledger.core.retention import (
    CAPS,
    counts_as_restorable,
    protections,
    rejected_protections,
)
from snapledger.core.state import LineageState, Sequencer
from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.limits import MAX_HOLD_HOURS
from snapledger.models.commands import HoldSnapshot, ReleaseHold
from snapledger.models.events import (
    LedgerEvent,
    OrphanClaimed,
    SnapshotDeleted,
    SnapshotExpiring,
    SnapshotHeld,
    SnapshotReleased,
    TrimPointAdvanced,
)
from snapledger.models.gc_commands import (
    AdvanceTrimPoint,
    ClaimOrphan,
    ExpireSnapshots,
    ExpiryTarget,
    MarkSnapshotsDeleted,
)
from snapledger.models.generations import ProtectedGenerations
from snapledger.models.ledger import (
    Head,
    Hold,
    SnapshotRecord,
    SnapshotStatus,
    snapshot_sort_key,
)
from snapledger.models.policy import RetentionPolicy
from snapledger.models.retention_reasons import DeleteCause, KeepReason

GcEvent = (
    SnapshotExpiring
    | OrphanClaimed
    | SnapshotDeleted
    | SnapshotHeld
    | SnapshotReleased
    | TrimPointAdvanced
)


def expiry_refusal(
    record: SnapshotRecord,
    target: ExpiryTarget,
    head: Head,
    policy: RetentionPolicy,
    now: datetime,
    *,
    grace: timedelta,
    registered_newer: int,
    generations: ProtectedGenerations | None = None,
    unrestorable: Collection[str] = (),
) -> str | None:
    """Why ``record`` may not be expired now (None: it may), on the state in hand;
    ``registered_newer``: the restorable REGISTERED snapshots newer than it (none found
    broken), as ``retention.plan`` ranks it."""
    if record.status is SnapshotStatus.REJECTED and target.cause is DeleteCause.REJECTED:
        kept = rejected_protections(record, now, grace)
        return _kept_because(kept) if kept else None
    if record.status is not SnapshotStatus.REGISTERED or target.cause is DeleteCause.REJECTED:
        return f"it is {record.status.value}"
    kept = protections(
        record,
        head,
        policy,
        now,
        registered_newer=registered_newer,
        generations=generations,
        unrestorable=unrestorable,
    )
    if kept:
        return _kept_because(kept)
    if target.cause is DeleteCause.UNPROTECTED and policy.has_caps:
        return "caps are configured, and none was named as selecting it"
    cap = CAPS.get(target.cause)
    if cap is not None and cap.on_record_alone and not cap.selects(record, policy, now, ()):
        return f"it is not {target.cause.text}"
    return None


def restorable_newer(
    snapshots: Mapping[str, SnapshotRecord], sort_key: str, unrestorable: Collection[str] = ()
) -> int:
    """How many of ``snapshots`` rank above ``sort_key`` for ``min_count``: REGISTERED,
    newer, not found broken and not ``unrestorable`` (counted as ``retention.plan``)."""
    return sum(
        1
        for key, other in snapshots.items()
        if key > sort_key
        and other.status is SnapshotStatus.REGISTERED
        and counts_as_restorable(other, unrestorable)
    )


def decide_expire(state: LineageState, cmd: ExpireSnapshots, now: datetime) -> list[LedgerEvent]:
    ev = Sequencer(state, cmd.command_id, now)
    grace = timedelta(hours=cmd.grace_hours)
    current = dict(state.snapshots)
    events: list[LedgerEvent] = []
    # Newest first, so each check sees the expiries this command already made above it.
    for target in sorted(cmd.targets, key=lambda t: t.sort_key, reverse=True):
        record = current.get(target.sort_key)
        if record is None:
            continue
        newer = restorable_newer(current, target.sort_key, cmd.unrestorable)
        if expiry_refusal(
            record,
            target,
            state.head,
            cmd.policy,
            now,
            grace=grace,
            registered_newer=newer,
            generations=cmd.generations,
            unrestorable=cmd.unrestorable,
        ):
            continue
        events.append(
            SnapshotExpiring(
                **ev.next(),
                snapshot_id=record.snapshot_id,
                lsn=record.lsn,
                cause=target.cause,
                reason=target.cause.reason(cmd.policy, cmd.grace_hours),
            )
        )
        current[target.sort_key] = record.model_copy(update={"status": SnapshotStatus.EXPIRING})
    return events


def decide_claim_orphan(state: LineageState, cmd: ClaimOrphan, now: datetime) -> list[LedgerEvent]:
    existing = state.snapshots.get(snapshot_sort_key(cmd.lsn, cmd.snapshot_id))
    if existing is not None and existing.status is not SnapshotStatus.DELETED:
        return []  # registered (or claimed) meanwhile: not an orphan
    # A DELETED record (GC no longer reads them) with objects again: claimed like no record.
    if now - cmd.newest_object_at <= timedelta(hours=cmd.grace_hours):
        return []  # a writer may still be between upload and registration
    ev = Sequencer(state, cmd.command_id, now)
    return [
        OrphanClaimed(
            **ev.next(),
            snapshot_id=cmd.snapshot_id,
            lsn=cmd.lsn,
            manifest_key=cmd.manifest_key,
            object_count=cmd.object_count,
            newest_object_at=cmd.newest_object_at,
            reason=f"no ledger record and no object newer than {cmd.grace_hours:g}h: "
            "an upload that was never registered"
            if existing is None
            else f"objects written again after the snapshot was deleted, none newer "
            f"than {cmd.grace_hours:g}h",
        )
    ]


def decide_mark_deleted(
    state: LineageState, cmd: MarkSnapshotsDeleted, now: datetime
) -> list[LedgerEvent]:
    ev = Sequencer(state, cmd.command_id, now)
    events: list[LedgerEvent] = []
    for done in cmd.deleted:
        record = state.snapshots.get(done.sort_key)
        if record is None or record.status is not SnapshotStatus.EXPIRING:
            continue  # already DELETED (another run), or never expired: nothing to record
        events.append(
            SnapshotDeleted(
                **ev.next(),
                snapshot_id=record.snapshot_id,
                lsn=record.lsn,
                objects_deleted=done.objects_deleted,
            )
        )
    if cmd.trim is not None:
        events += _trim_events(state, cmd.trim.lsn, cmd.trim.snapshot_key, ev)
    return events


def decide_trim(state: LineageState, cmd: AdvanceTrimPoint, now: datetime) -> list[LedgerEvent]:
    ev = Sequencer(state, cmd.command_id, now)
    return _trim_events(state, cmd.lsn, cmd.snapshot_key, ev)


def _trim_events(
    state: LineageState, lsn: int, snapshot_key: str, ev: Sequencer
) -> list[LedgerEvent]:
    """``TrimPointAdvanced`` to ``lsn`` if that moves it forward and nothing still needs
    the changelog below it; else nothing (the next run computes it again)."""
    head = state.head
    if head.trim_lsn is not None and lsn <= head.trim_lsn:
        return []  # the trim point never moves backwards
    record = state.snapshots.get(snapshot_key)
    if record is None or record.status is not SnapshotStatus.REGISTERED or record.lsn != lsn:
        return []  # the plan is stale
    if any(job.base_lsn is None or job.base_lsn < lsn for job in head.active_jobs.values()):
        return []  # a running job still reads the changelog below it
    return [
        TrimPointAdvanced(
            **ev.next(), lsn=lsn, previous_lsn=head.trim_lsn, snapshot_id=record.snapshot_id
        )
    ]


def decide_hold(state: LineageState, cmd: HoldSnapshot, now: datetime) -> list[LedgerEvent]:
    record = existing_snapshot(state, cmd.lsn, cmd.snapshot_id)
    if any(hold.hold_id == cmd.hold_id for hold in record.holds):
        return []  # the same hold again: already recorded
    if record.status in (SnapshotStatus.EXPIRING, SnapshotStatus.DELETED):
        raise InvalidRequestError(
            f"snapshot {cmd.snapshot_id} of {state.head.lineage} is {record.status.value}: its "
            "files are being (or have been) deleted, so it cannot be held; hold a REGISTERED one"
        )
    problem = hold_expiry_problem(cmd.expires_at, now)
    if problem is not None:
        raise InvalidRequestError(problem)
    ev = Sequencer(state, cmd.command_id, now)
    return [
        SnapshotHeld(
            **ev.next(),
            snapshot_id=record.snapshot_id,
            lsn=record.lsn,
            hold_id=cmd.hold_id,
            expires_at=cmd.expires_at,
            reason=cmd.reason,
            by=cmd.by,
        )
    ]


def hold_expiry_problem(expires_at: datetime | None, now: datetime) -> str | None:
    """Why a new hold may not expire at ``expires_at`` (None: it may, or it has no expiry):
    within its bound (``hold_expiry_bound_problem``) and in the future."""
    problem = hold_expiry_bound_problem(expires_at, now)
    if problem is None and expires_at is not None and expires_at <= now:
        problem = (
            f"expires_at {expires_at.isoformat()} is not in the future: give a later "
            "time, or none for a hold that lasts until released"
        )
    return problem


def hold_expiry_bound_problem(expires_at: datetime | None, now: datetime) -> str | None:
    """Why ``expires_at`` is refused whatever the hold (None: it is not): it carries a
    timezone and is at most ``MAX_HOLD_HOURS`` ahead (a later one, e.g. 9999-12-31, would
    overflow the dates computed from it, such as its record's TTL)."""
    if expires_at is None:
        return None
    if expires_at.tzinfo is None:
        return "expires_at must carry a timezone, e.g. 2026-05-01T12:00:00Z"
    latest = now + timedelta(hours=MAX_HOLD_HOURS)
    try:
        beyond = expires_at.astimezone(UTC) > latest
    except OverflowError:
        beyond = True  # past the last datetime once in UTC: far past the bound
    if beyond:
        return (
            f"expires_at {expires_at.isoformat()} is more than {MAX_HOLD_HOURS:g} hours "
            f"(100 years) ahead, the longest hold: give a time before {latest.isoformat()}, "
            "or none for a hold that lasts until released"
        )
    return None


def decide_release(state: LineageState, cmd: ReleaseHold, now: datetime) -> list[LedgerEvent]:
    record = existing_snapshot(state, cmd.lsn, cmd.snapshot_id)
    released = [h for h in record.holds if cmd.hold_id is None or h.hold_id == cmd.hold_id]
    ev = Sequencer(state, cmd.command_id, now)
    return [
        SnapshotReleased(
            **ev.next(),
            snapshot_id=record.snapshot_id,
            lsn=record.lsn,
            hold_id=hold.hold_id,
            by=cmd.by,
        )
        for hold in released
    ]


def evolve_gc(head: Head, snapshots: dict[str, SnapshotRecord], event: GcEvent) -> Head:
    if isinstance(event, TrimPointAdvanced):
        return head.model_copy(update={"trim_lsn": event.lsn})
    if isinstance(event, OrphanClaimed):
        claimed = SnapshotRecord(
            stream=event.stream,
            partition=event.partition,
            lsn=event.lsn,
            snapshot_id=event.snapshot_id,
            status=SnapshotStatus.EXPIRING,
            manifest_key=event.manifest_key,
            manifest_digest="",
            registered_at=event.at,
            version=event.seq,
            expiry_cause="orphan",
            expiry_reason=event.reason,
            expiring_at=event.at,
        )
        snapshots[claimed.sort_key] = claimed
        return head
    key = snapshot_sort_key(event.lsn, event.snapshot_id)
    record = snapshots[key]
    update: dict[str, object] = {"version": event.seq}
    match event:
        case SnapshotExpiring():
            update |= {
                "status": SnapshotStatus.EXPIRING,
                "expiry_cause": event.cause,
                "expiry_reason": event.reason,
                "expiring_at": event.at,
            }
        case SnapshotDeleted():
            update |= {
                "status": SnapshotStatus.DELETED,
                "deleted_at": event.at,
                "objects_deleted": event.objects_deleted,
            }
            if head.sharing and key in head.sharing:
                left = tuple(k for k in head.sharing if k != key)
                head = head.model_copy(update={"sharing": left or None})
        case SnapshotHeld():
            hold = Hold(
                hold_id=event.hold_id,
                at=event.at,
                expires_at=event.expires_at,
                reason=event.reason,
                by=event.by,
            )
            update["holds"] = (*record.holds, hold)
        case SnapshotReleased():
            update["holds"] = tuple(h for h in record.holds if h.hold_id != event.hold_id)
        case _:
            assert_never(event)
    snapshots[key] = record.model_copy(update=update)
    return head


def existing_snapshot(state: LineageState, lsn: int, snapshot_id: str) -> SnapshotRecord:
    """The lineage's record of the snapshot; NotFoundError naming it when there is none."""
    record = state.snapshots.get(snapshot_sort_key(lsn, snapshot_id))
    if record is None:
        raise NotFoundError(
            f"{state.head.lineage} has no snapshot {snapshot_id} at LSN {lsn}: list the "
            "lineage's snapshots to see their ids"
        )
    return record


def _kept_because(reasons: tuple[KeepReason, ...]) -> str:
    return "it is kept: " + ", ".join(r.value for r in reasons)
