"""Answers about a lineage (latest, list, history, point-in-time look-ups) and a stream."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.layout import LSN_WIDTH, check_stream_name
from snapledger.models.events import LedgerEvent, StreamEvent
from snapledger.models.ledger import Head, LineageId, SnapshotRecord, SnapshotStatus
from snapledger.ports import LedgerReader, Page, StreamLogStore

SCAN_PAGE = 100


def latest(ledger: LedgerReader, lineage: LineageId) -> Head:
    """The lineage's HEAD (one GetItem); NotFoundError if it has no latest snapshot."""
    head = ledger.get_head(lineage)
    if head is None or head.latest_snapshot_id is None:
        raise NotFoundError(
            f"{lineage} has no registered snapshot yet: register one, or bootstrap it from "
            "its changelog"
        )
    return head


def list_snapshots(
    ledger: LedgerReader,
    lineage: LineageId,
    *,
    limit: int = 100,
    cursor: str | None = None,
    newest_first: bool = True,
) -> Page[SnapshotRecord]:
    return ledger.list_snapshots(lineage, limit=limit, cursor=cursor, newest_first=newest_first)


def history(
    ledger: LedgerReader,
    lineage: LineageId,
    *,
    after_seq: int = 0,
    limit: int = 100,
    cursor: str | None = None,
) -> Page[LedgerEvent]:
    return ledger.list_events(lineage, after_seq=after_seq, limit=limit, cursor=cursor)


def stream_history(
    streams: StreamLogStore,
    stream: str,
    *,
    after_seq: int = 0,
    limit: int = 100,
    cursor: str | None = None,
) -> Page[StreamEvent]:
    """The stream's own events (policy changes) in order; empty for a stream with none."""
    check_stream_name(stream)
    return streams.list_events(stream, after_seq=after_seq, limit=limit, cursor=cursor)


def iter_snapshots(
    ledger: LedgerReader,
    lineage: LineageId,
    *,
    newest_first: bool = True,
    max_sort_key: str | None = None,
) -> Iterator[SnapshotRecord]:
    """Every snapshot of the lineage, page by page."""
    cursor: str | None = None
    while True:
        page = ledger.list_snapshots(
            lineage,
            limit=SCAN_PAGE,
            cursor=cursor,
            newest_first=newest_first,
            max_sort_key=max_sort_key,
        )
        yield from page.items
        if page.cursor is None:
            return
        cursor = page.cursor


def as_of_lsn(ledger: LedgerReader, lineage: LineageId, lsn: int) -> SnapshotRecord:
    """The newest REGISTERED snapshot at or below ``lsn``."""
    if lsn < 0:
        raise InvalidRequestError(f"lsn must be >= 0, got {lsn}")
    upper = f"SNAP#{lsn:0{LSN_WIDTH}d}#\uffff"
    for record in iter_snapshots(ledger, lineage, max_sort_key=upper):
        if record.status is SnapshotStatus.REGISTERED:
            return record
    raise NotFoundError(
        f"{lineage} has no registered snapshot at or below LSN {lsn}: pick a later LSN, or "
        "bootstrap from the changelog"
    )


def as_of_time(ledger: LedgerReader, lineage: LineageId, at: datetime) -> SnapshotRecord:
    """The highest-LSN REGISTERED snapshot that the registry had recorded by ``at``."""
    if at.tzinfo is None:
        raise InvalidRequestError("the time must carry a timezone, e.g. 2026-05-01T12:00:00Z")
    for record in iter_snapshots(ledger, lineage):
        if record.status is SnapshotStatus.REGISTERED and record.registered_at <= at:
            return record
    raise NotFoundError(
        f"{lineage} has no registered snapshot recorded at or before {at.isoformat()}"
    )


def by_id(ledger: LedgerReader, lineage: LineageId, snapshot_id: str) -> SnapshotRecord:
    """The snapshot with this id, whatever its status."""
    for record in iter_snapshots(ledger, lineage):
        if record.snapshot_id == snapshot_id:
            return record
    raise NotFoundError(f"{lineage} has no snapshot {snapshot_id}: list its snapshots to see ids")
