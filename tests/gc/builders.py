"""Snapshot records and heads for the pure tests (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from snapledger.core.state import LineageState
from snapledger.models.ledger import Head, Hold, Pin, SnapshotRecord, SnapshotStatus

T0 = datetime(2026, 1, 10, tzinfo=UTC)
HOUR = timedelta(hours=1)


def sid(n: int) -> str:
    return f"01J{n:023d}"


def record(
    lsn: int,
    n: int | None = None,
    *,
    status: SnapshotStatus = SnapshotStatus.REGISTERED,
    age: timedelta = timedelta(days=10),
    now: datetime = T0,
    pins: int = 0,
    holds: tuple[Hold, ...] = (),
    version: int = 1,
    broken: tuple[str, ...] = (),
) -> SnapshotRecord:
    ident = sid(lsn if n is None else n)
    return SnapshotRecord(
        stream="orders",
        partition=3,
        lsn=lsn,
        snapshot_id=ident,
        status=status,
        epoch=1,
        manifest_key=f"snapshots/orders/3/{lsn:020d}-{ident}/_manifest.json",
        manifest_digest=f"d{lsn}",
        registered_at=now - age,
        rejection_code="invalid" if status is SnapshotStatus.REJECTED else None,
        pins=tuple(Pin(job_id=f"job-{i}", at=now) for i in range(pins)),
        holds=holds,
        version=version,
        broken=broken,
    )


def hold(hold_id: str = "h1", expires_at: datetime | None = None) -> Hold:
    return Hold(hold_id=hold_id, at=T0 - timedelta(days=30), expires_at=expires_at)


def head_for(*records: SnapshotRecord, version: int | None = None) -> Head:
    registered = [r for r in records if r.status is SnapshotStatus.REGISTERED]
    newest = max(registered, key=lambda r: r.lsn, default=None)
    return Head(
        stream="orders",
        partition=3,
        version=version if version is not None else max((r.version for r in records), default=0),
        latest_snapshot_id=None if newest is None else newest.snapshot_id,
        latest_lsn=None if newest is None else newest.lsn,
    )


def state_of(*records: SnapshotRecord, head: Head | None = None) -> LineageState:
    return LineageState(head=head or head_for(*records), snapshots={r.sort_key: r for r in records})
