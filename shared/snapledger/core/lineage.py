"""The Decider of a lineage: ``decide(state, command, now) -> events`` and ``evolve``.

Both are pure. The ledger adapter loads a ``LineageState``, calls ``decide``, folds the
events with ``evolve`` and writes the result in one transaction conditioned on the
version it loaded.

Registration rules (docs/ledger.md):
- a valid manifest with an LSN above the latest becomes latest (``LatestAdvanced``);
- one at or below the latest is recorded but the pointer stays; at the *same* LSN the
  pointer stays on the snapshot that got there first (first-come wins, so a redelivery
  or a second writer can never flip the pointer sideways);
- an epoch below the highest epoch seen is fenced (REJECTED, code ``fenced``);
- an invalid manifest is REJECTED with its reason; the pointer never moves for it;
- the same manifest again is a no-op; the same snapshot id with other content is
  rejected with code ``conflict`` (recorded once per distinct content).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import assert_never

from snapledger.models.commands import RegisterSnapshot
from snapledger.models.events import (
    LatestAdvanced,
    LedgerEvent,
    SnapshotRegistered,
    SnapshotRejected,
)
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus, snapshot_sort_key

Command = RegisterSnapshot


@dataclass(frozen=True)
class LineageState:
    """HEAD plus the snapshot records a decision needs (keyed by sort key)."""

    head: Head
    snapshots: Mapping[str, SnapshotRecord] = field(default_factory=dict)

    @classmethod
    def empty(cls, stream: str, partition: int) -> LineageState:
        return cls(head=Head(stream=stream, partition=partition))


class _Sequencer:
    """Numbers the events of one decision, continuing from the head's version."""

    def __init__(self, state: LineageState, command_id: str, now: datetime) -> None:
        self._next = state.head.version + 1
        self.common = {
            "at": now,
            "stream": state.head.stream,
            "partition": state.head.partition,
            "command_id": command_id,
        }

    def seq(self) -> int:
        value, self._next = self._next, self._next + 1
        return value


def decide(state: LineageState, command: Command, now: datetime) -> list[LedgerEvent]:
    """The events ``command`` produces in ``state`` (empty: nothing to do)."""
    if isinstance(command, RegisterSnapshot):
        return _decide_register(state, command, now)
    assert_never(command)


def _decide_register(
    state: LineageState, cmd: RegisterSnapshot, now: datetime
) -> list[LedgerEvent]:
    head = state.head
    ev = _Sequencer(state, cmd.command_id, now)
    existing = state.snapshots.get(snapshot_sort_key(cmd.lsn, cmd.snapshot_id))

    def rejected(code: str, reason: str) -> list[LedgerEvent]:
        epoch = cmd.summary.epoch if cmd.summary else cmd.epoch_hint
        return [
            SnapshotRejected.model_validate(
                {
                    **ev.common,
                    "seq": ev.seq(),
                    "snapshot_id": cmd.snapshot_id,
                    "lsn": cmd.lsn,
                    "epoch": epoch,
                    "manifest_key": cmd.manifest_key,
                    "manifest_digest": cmd.manifest_digest,
                    "code": code,
                    "reason": reason,
                }
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
        return rejected(
            "invalid",
            f"the manifest {cmd.manifest_key} no longer existed when it was processed; "
            "nothing was registered: rewrite the snapshot under a new id if it is still wanted",
        )
    if cmd.summary is None:
        return rejected("invalid", cmd.rejection or "the manifest is invalid")
    if head.max_epoch is not None and cmd.summary.epoch < head.max_epoch:
        return rejected(
            "fenced",
            f"epoch {cmd.summary.epoch} is below the lineage's highest epoch {head.max_epoch}: "
            "a newer writer owns this partition, so this snapshot was fenced",
        )
    events: list[LedgerEvent] = [
        SnapshotRegistered.model_validate(
            {
                **ev.common,
                "seq": ev.seq(),
                "snapshot_id": cmd.snapshot_id,
                "lsn": cmd.lsn,
                "manifest_key": cmd.manifest_key,
                "manifest_digest": cmd.manifest_digest,
                **cmd.summary.model_dump(),
            }
        )
    ]
    if head.latest_lsn is None or cmd.lsn > head.latest_lsn:
        events.append(
            LatestAdvanced.model_validate(
                {
                    **ev.common,
                    "seq": ev.seq(),
                    "snapshot_id": cmd.snapshot_id,
                    "lsn": cmd.lsn,
                    "previous_snapshot_id": head.latest_snapshot_id,
                    "previous_lsn": head.latest_lsn,
                }
            )
        )
    return events


def evolve(state: LineageState, event: LedgerEvent) -> LineageState:
    """The state after ``event``; every event bumps the head's version to its seq."""
    if event.seq != state.head.version + 1:
        raise ValueError(f"event seq {event.seq} does not follow version {state.head.version}")
    head = state.head.model_copy(update={"version": event.seq, "updated_at": event.at})
    snapshots = dict(state.snapshots)
    match event:
        case SnapshotRegistered():
            record = SnapshotRecord(
                stream=event.stream,
                partition=event.partition,
                lsn=event.lsn,
                snapshot_id=event.snapshot_id,
                status=SnapshotStatus.REGISTERED,
                epoch=event.epoch,
                manifest_key=event.manifest_key,
                manifest_digest=event.manifest_digest,
                file_count=event.file_count,
                total_bytes=event.total_bytes,
                row_count=event.row_count,
                source_kind=event.source_kind,
                registered_at=event.at,
                version=event.seq,
            )
            snapshots[record.sort_key] = record
            head = head.model_copy(
                update={
                    "max_epoch": max(event.epoch, head.max_epoch or 0),
                    "registered_count": head.registered_count + 1,
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
                    stream=event.stream,
                    partition=event.partition,
                    lsn=event.lsn,
                    snapshot_id=event.snapshot_id,
                    status=SnapshotStatus.REJECTED,
                    epoch=event.epoch,
                    manifest_key=event.manifest_key,
                    manifest_digest=event.manifest_digest,
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
    return replace(state, head=head, snapshots=snapshots)


def evolve_all(state: LineageState, events: Iterable[LedgerEvent]) -> LineageState:
    for event in events:
        state = evolve(state, event)
    return state
