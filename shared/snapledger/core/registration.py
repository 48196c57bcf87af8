"""Registration rules: deciding a ``RegisterSnapshot`` and folding its events."""

from __future__ import annotations

from datetime import datetime
from typing import Any, assert_never

from snapledger.core.problems import join_problems
from snapledger.core.references import aged_shared, reference_refusals
from snapledger.core.state import LineageState, Sequencer
from snapledger.limits import MAX_SHARING_SNAPSHOTS
from snapledger.models.commands import ManifestSummary, RegisterSnapshot
from snapledger.models.events import (
    LatestAdvanced,
    LedgerEvent,
    ManifestEvent,
    RejectionCode,
    SnapshotRegistered,
    SnapshotRejected,
)
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus, snapshot_sort_key


def decide_register(state: LineageState, cmd: RegisterSnapshot, now: datetime) -> list[LedgerEvent]:
    head = state.head
    ev = Sequencer(state, cmd.command_id, now)
    existing = state.snapshots.get(snapshot_sort_key(cmd.lsn, cmd.snapshot_id))

    def rejected(code: RejectionCode, reason: str) -> list[LedgerEvent]:
        epoch = cmd.summary.epoch if cmd.summary else cmd.epoch_hint
        return [
            SnapshotRejected(
                **ev.next(),
                snapshot_id=cmd.snapshot_id,
                lsn=cmd.lsn,
                epoch=epoch,
                manifest_key=cmd.manifest_key,
                manifest_digest=cmd.manifest_digest,
                code=code,
                reason=reason,
            )
        ]

    if existing is not None:
        already_seen = cmd.manifest_missing or cmd.manifest_digest in (
            existing.manifest_digest,
            *existing.conflicting_digests,
        )
        if already_seen:
            return []  # a redelivery: the ledger already holds this answer
        return rejected(
            "conflict",
            f"snapshot {cmd.snapshot_id} at LSN {cmd.lsn} is already recorded with other "
            f"content ({existing.manifest_digest}); snapshots are immutable: write new state "
            "under a new snapshot id",
        )
    if cmd.manifest_missing:
        # Vanished before it was read (its producer or GC deleted it): there is nothing to
        # register or reject. The caller answers "vanished" and counts it, never silently.
        return []
    if cmd.summary is None:
        return rejected("invalid", cmd.rejection or "the manifest is invalid")
    refusal = _writer_refusal(head, cmd.summary) or _reference_refusal(state, cmd, cmd.summary, now)
    if refusal is not None:
        return rejected(*refusal)
    events: list[LedgerEvent] = [
        SnapshotRegistered(
            **ev.next(),
            snapshot_id=cmd.snapshot_id,
            lsn=cmd.lsn,
            manifest_key=cmd.manifest_key,
            manifest_digest=cmd.manifest_digest,
            **cmd.summary.model_dump(),
        )
    ]
    if _becomes_latest(head, cmd.lsn, cmd.summary):
        events.append(
            LatestAdvanced(
                **ev.next(),
                snapshot_id=cmd.snapshot_id,
                lsn=cmd.lsn,
                previous_snapshot_id=head.latest_snapshot_id,
                previous_lsn=head.latest_lsn,
            )
        )
    return events


def _becomes_latest(head: Head, lsn: int, summary: ManifestSummary) -> bool:
    """A snapshot becomes the latest when its LSN is above the latest's, or when it begins
    the lineage over on a new incarnation of its log: its manifest names the changelog's
    topic id and its epoch is above the lineage's highest (the Kafka Streams snapshotter
    writes the first snapshot of a recreated topic so), whatever its LSN (the new topic's
    offsets restart at 0). Within an incarnation the latest never moves back; the old
    incarnation's late snapshots are fenced by their epoch."""
    if head.latest_lsn is None or lsn > head.latest_lsn:
        return True
    new_incarnation = summary.changelog is not None and summary.changelog.topic_id is not None
    return new_incarnation and head.max_epoch is not None and summary.epoch > head.max_epoch


def _writer_refusal(head: Head, summary: ManifestSummary) -> tuple[RejectionCode, str] | None:
    """(code, reason) when the snapshot's writer may not write this lineage: an older
    epoch than the lineage's (fenced), or another producer than its earlier snapshots'."""
    if head.max_epoch is not None and summary.epoch < head.max_epoch:
        return (
            "fenced",
            f"epoch {summary.epoch} is below the lineage's highest epoch {head.max_epoch}: "
            "a newer writer owns this partition, so this snapshot was fenced",
        )
    if head.origin is not None and summary.origin != head.origin:
        return (
            "invalid",
            f"the snapshot comes from {summary.origin or 'a producer that names none'} but "
            f"this lineage's snapshots come from {head.origin}: two producers write into one "
            "snapshot prefix; give each its own destination (its snapshots are not "
            "registered, and the lineage's are left as they are)",
        )
    return None


def _reference_refusal(
    state: LineageState, cmd: RegisterSnapshot, summary: ManifestSummary, now: datetime
) -> tuple[RejectionCode, str] | None:
    """("invalid", why) when a file the snapshot references may be deleted by GC. The
    records of the files referenced were loaded with the lineage (the service's
    ``related_sort_keys``): decided on the version the commit is conditioned on."""
    if not summary.references:
        return None
    if len(state.head.sharing or ()) >= MAX_SHARING_SNAPSHOTS:
        return (
            "invalid",
            f"the lineage already retains {MAX_SHARING_SNAPSHOTS:,} snapshots that reference "
            "files outside their folders (the most it keeps track of): let GC collect some "
            "(a lower max_count or max_age), or write this one with every file its own",
        )
    own = snapshot_sort_key(cmd.lsn, cmd.snapshot_id)
    aged = aged_shared(cmd.shared_written, now)
    problems = reference_refusals(summary.references, own, state.snapshots, aged=aged)
    return ("invalid", join_problems(problems)) if problems else None


def evolve_registration(
    head: Head,
    snapshots: dict[str, SnapshotRecord],
    event: SnapshotRegistered | SnapshotRejected | LatestAdvanced,
) -> Head:
    match event:
        case SnapshotRegistered():
            record = SnapshotRecord(
                **_recorded(event),
                status=SnapshotStatus.REGISTERED,
                registered_at=event.at,
                version=event.seq,
            )
            snapshots[record.sort_key] = record
            head = head.model_copy(
                update={
                    "max_epoch": max(event.epoch, head.max_epoch or 0),
                    "origin": head.origin or event.origin,
                    "registered_count": head.registered_count + 1,
                    "sharing": (*(head.sharing or ()), record.sort_key)
                    if event.references
                    else head.sharing,
                }
            )
        case SnapshotRejected():
            key = snapshot_sort_key(event.lsn, event.snapshot_id)
            existing = snapshots.get(key)
            if event.code == "conflict" and existing is not None:
                snapshots[key] = existing.model_copy(
                    update={
                        "conflicting_digests": (
                            *existing.conflicting_digests,
                            event.manifest_digest,
                        ),
                        "version": event.seq,
                    }
                )
            else:
                snapshots[key] = SnapshotRecord(
                    **_recorded(event),
                    status=SnapshotStatus.REJECTED,
                    registered_at=event.at,
                    rejection_code=event.code,
                    rejection_reason=event.reason,
                    version=event.seq,
                )
            head = head.model_copy(update={"rejected_count": head.rejected_count + 1})
        case LatestAdvanced():
            head = head.model_copy(
                update={"latest_snapshot_id": event.snapshot_id, "latest_lsn": event.lsn}
            )
        case _:
            assert_never(event)
    return head


def _recorded(event: ManifestEvent) -> dict[str, Any]:
    """What a snapshot's record takes from the event about its manifest: every field the
    two share (the snapshot's key and manifest; a registration's snapshot fields too)."""
    shared = SnapshotRecord.model_fields.keys() & type(event).model_fields.keys()
    return event.model_dump(include=shared)
