"""Operators' holds: keep a snapshot until released or until the hold expires.

A hold is an event on the snapshot's lineage (``SnapshotHeld`` / ``SnapshotReleased``),
checked by GC in the same transaction that would expire the snapshot: once
``hold_snapshot`` has returned, no GC run deletes it while the hold is live. A hold may
be put on a REGISTERED snapshot or on a REJECTED one (to keep its files for a look),
never on one already EXPIRING or DELETED.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from snapledger.clock import Clock
from snapledger.core.gc_rules import hold_expiry_bound_problem
from snapledger.errors import InvalidRequestError
from snapledger.ids import new_ulid
from snapledger.models.commands import HoldSnapshot, ReleaseHold
from snapledger.models.events import SnapshotReleased
from snapledger.models.ledger import Hold, LineageId, SnapshotRecord
from snapledger.ports import Ledger
from snapledger.services import queries
from snapledger.services.commands import execute


@dataclass(frozen=True)
class HoldResult:
    lineage: LineageId
    snapshot: SnapshotRecord
    changed: list[str]  # the hold ids added or released (empty: nothing to do)

    def to_dict(self) -> dict[str, object]:
        return {
            "stream": self.lineage.stream,
            "partition": self.lineage.partition,
            "snapshot_id": self.snapshot.snapshot_id,
            "lsn": self.snapshot.lsn,
            "status": self.snapshot.status.value,
            "changed": self.changed,
            "holds": [_hold(h) for h in self.snapshot.holds],
        }


def hold_snapshot(
    ledger: Ledger,
    lineage: LineageId,
    snapshot_id: str,
    *,
    clock: Clock,
    expires_at: datetime | None = None,
    reason: str = "",
    by: str = "",
    hold_id: str | None = None,
) -> HoldResult:
    """Hold the snapshot; the same ``hold_id`` again is a no-op (retries are safe).

    ``expires_at`` more than ``MAX_HOLD_HOURS`` ahead (or without a timezone) is refused
    before anything is read; the decision checks it again, and that it is in the future."""
    problem = hold_expiry_bound_problem(expires_at, clock.now())
    if problem is not None:
        raise InvalidRequestError(problem)
    record = queries.by_id(ledger, lineage, snapshot_id)
    chosen = hold_id or new_ulid()
    result = execute(
        ledger,
        HoldSnapshot(
            stream=lineage.stream,
            partition=lineage.partition,
            lsn=record.lsn,
            snapshot_id=snapshot_id,
            hold_id=chosen,
            expires_at=expires_at,
            reason=reason,
            by=by,
        ),
        clock.now(),
        snapshot_keys=(record.sort_key,),
    )
    after = result.state.snapshots[record.sort_key]
    return HoldResult(lineage, after, [chosen] if result.events else [])


def release_hold(
    ledger: Ledger,
    lineage: LineageId,
    snapshot_id: str,
    *,
    clock: Clock,
    hold_id: str | None = None,
    by: str = "",
) -> HoldResult:
    """Release one hold, or every hold of the snapshot when ``hold_id`` is None."""
    record = queries.by_id(ledger, lineage, snapshot_id)
    result = execute(
        ledger,
        ReleaseHold(
            stream=lineage.stream,
            partition=lineage.partition,
            lsn=record.lsn,
            snapshot_id=snapshot_id,
            hold_id=hold_id,
            by=by,
            request_id=new_ulid(),
        ),
        clock.now(),
        snapshot_keys=(record.sort_key,),
    )
    after = result.state.snapshots[record.sort_key]
    released = [e.hold_id for e in result.events if isinstance(e, SnapshotReleased)]
    return HoldResult(lineage, after, released)


def _hold(hold: Hold) -> dict[str, object]:
    return {
        "hold_id": hold.hold_id,
        "at": hold.at.isoformat(),
        "expires_at": None if hold.expires_at is None else hold.expires_at.isoformat(),
        "reason": hold.reason,
        "by": hold.by,
    }
