"""Answers about a lineage (latest, list, history, point-in-time look-ups) and a stream."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.layout import LSN_WIDTH, check_stream_name
from snapledger.models.events import LedgerEvent, StreamEvent
from snapledger.models.ledger import Head, LineageId, SnapshotRecord
from snapledger.ports import LedgerReader, Page, StreamLogStore

SCAN_PAGE = 100
#: REGISTERED snapshots read per request by ``as_of_time`` (DynamoDB's page is <= 1 MB).
AS_OF_TIME_PAGE = 1000
#: Live records read per request by GC's planning (``live_snapshots``).
LIVE_PAGE = 1000
#: What a look-up that skips broken snapshots adds to its "found none".
_NOT_BROKEN = {True: " (not found broken)", False: ""}


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


def expired_through(
    first_page: Page[LedgerEvent] | Page[StreamEvent],
    *,
    after_seq: int,
    last_seq: Callable[[], int],
) -> int | None:
    """The highest sequence number at or after ``after_seq + 1`` whose event is no longer in
    the table (its TTL passed: the archive has it), or None if the page starts where asked.

    Seqs are gapless and HEAD's version is the last one, so a first page starting above
    ``after_seq + 1`` (or empty while HEAD is further on) means the events before are gone.
    ``last_seq`` (HEAD's version) is read only for an empty page.
    """
    if first_page.items:
        first = first_page.items[0].seq
        return first - 1 if first > after_seq + 1 else None
    last = last_seq()
    return last if last > after_seq else None


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


def live_snapshots(ledger: LedgerReader, lineage: LineageId) -> list[SnapshotRecord]:
    """Every REGISTERED, EXPIRING and REJECTED record of the lineage (what GC plans),
    newest first: one request per ``LIVE_PAGE`` live records, whatever the history."""
    records: list[SnapshotRecord] = []
    cursor: str | None = None
    while True:
        page = ledger.list_live(lineage, limit=LIVE_PAGE, cursor=cursor)
        records += page.items
        if page.cursor is None:
            return sorted(records, key=lambda record: record.sort_key, reverse=True)
        cursor = page.cursor


def as_of_lsn(
    ledger: LedgerReader, lineage: LineageId, lsn: int, *, skip_broken: bool = False
) -> SnapshotRecord:
    """The newest REGISTERED snapshot at or below ``lsn``: one Query of live snapshots
    (more only past snapshots found broken, which ``skip_broken`` passes over)."""
    if lsn < 0:
        raise InvalidRequestError(f"lsn must be >= 0, got {lsn}")
    upper = f"SNAP#{lsn:0{LSN_WIDTH}d}#\uffff"
    cursor: str | None = None
    limit = 1  # the newest is the answer unless it was found broken
    while True:
        page = ledger.list_registered(lineage, max_sort_key=upper, limit=limit, cursor=cursor)
        for record in page.items:
            if not (skip_broken and record.broken):
                return record
        if page.cursor is None:
            break
        cursor, limit = page.cursor, AS_OF_TIME_PAGE
    raise NotFoundError(
        f"{lineage} has no registered snapshot{_NOT_BROKEN[skip_broken]} at or below LSN "
        f"{lsn}: pick a later LSN, or bootstrap from the changelog"
    )


def as_of_time(
    ledger: LedgerReader, lineage: LineageId, at: datetime, *, skip_broken: bool = False
) -> SnapshotRecord:
    """The highest-LSN REGISTERED snapshot that the registry had recorded by ``at`` (with
    ``skip_broken``, not one found broken).

    Reads REGISTERED snapshots only, highest LSN first, ``AS_OF_TIME_PAGE`` a request: one
    request unless more than that many live snapshots were registered after ``at``.
    """
    if at.tzinfo is None:
        raise InvalidRequestError("the time must carry a timezone, e.g. 2026-05-01T12:00:00Z")
    cursor: str | None = None
    while True:
        page = ledger.list_registered(lineage, limit=AS_OF_TIME_PAGE, cursor=cursor)
        for record in page.items:
            if record.registered_at <= at and not (skip_broken and record.broken):
                return record
        if page.cursor is None:
            break
        cursor = page.cursor
    raise NotFoundError(
        f"{lineage} has no registered snapshot{_NOT_BROKEN[skip_broken]} recorded at or "
        f"before {at.isoformat()}"
    )


def by_id(ledger: LedgerReader, lineage: LineageId, snapshot_id: str) -> SnapshotRecord:
    """The snapshot with this id, whatever its status: one read."""
    record = ledger.find_snapshot(lineage, snapshot_id)
    if record is None:
        raise NotFoundError(
            f"{lineage} has no snapshot {snapshot_id}: list its snapshots to see ids"
        )
    return record
