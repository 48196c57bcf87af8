"""Track changelog segments as they arrive and start compaction past a threshold.

Each segment counts once (its SEG item is created only if absent). When the backlog
since the latest snapshot crosses the stream's threshold and no compaction is in flight,
a compaction (or, for a lineage with no snapshot yet, a bootstrap) is launched with a
request id derived from the latest snapshot: concurrent arrivals start one job.

A file that is not a segment is ``rejected`` with its reason, never counted: on its
lineage's log (``ChangelogSegmentRejected``, once per key) when the key names a stream
and partition, else as an unplaceable key (``REJECTED`` / ``KEY#``). The jobs skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from snapledger.core.compaction_trigger import (
    CompactionConfig,
    backlog_since,
    due,
)
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.job_kinds import JobKind
from snapledger.layout import parse_changelog_lineage, parse_segment_key
from snapledger.models.commands import RejectSegment
from snapledger.models.jobs import JobState
from snapledger.models.ledger import LineageId
from snapledger.models.requests import LaunchRequest
from snapledger.ports import LedgerStore, SegmentStore
from snapledger.services.commands import execute
from snapledger.services.launch import LaunchDeps, launch


@dataclass(frozen=True)
class TrackResult:
    key: str
    outcome: str  # counted | duplicate | rejected | ignored
    reason: str | None = None
    backlog_records: int | None = None
    backlog_bytes: int | None = None
    compaction_job_id: str | None = None
    #: The compaction (or bootstrap) it was due to start failed: refused, or the runner
    #: refused the job (a failed job of the stream).
    compaction_failed: bool | None = None

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def track_segment(
    key: str,
    size: int,
    *,
    segments: SegmentStore,
    deps: LaunchDeps,
    thresholds: CompactionConfig,
) -> TrackResult:
    """Count the segment at ``key`` once and compact its lineage when it is due."""
    try:
        segment = parse_segment_key(key)
    except InvalidKeyError as exc:
        reject_file(
            key, size, str(exc), segments=segments, ledger=deps.ledger, now=deps.clock.now()
        )
        return TrackResult(key, "rejected", reason=str(exc))
    counted = segments.record(segment, size, deps.clock.now())
    lineage = LineageId(stream=segment.stream, partition=segment.partition)
    head = deps.ledger.get_head(lineage, consistent=True)
    latest_lsn = head.latest_lsn if head else None
    backlog = backlog_since(latest_lsn, segments.ending_after(lineage, latest_lsn))
    result = TrackResult(
        key,
        "counted" if counted else "duplicate",
        backlog_records=backlog.records,
        backlog_bytes=backlog.bytes,
    )
    if not due(backlog, thresholds.for_stream(segment.stream)):
        return result
    if head is not None and head.compaction_job_id is not None:
        return TrackResult(**{**result.__dict__, "compaction_job_id": head.compaction_job_id})
    kind = JobKind.COMPACTION if latest_lsn is not None else JobKind.BOOTSTRAP
    request = LaunchRequest.model_validate(
        {"action": kind.value, "stream": segment.stream, "partition": segment.partition}
    )
    base = head.latest_snapshot_id if head and head.latest_snapshot_id else "empty"
    request_id = f"auto-{kind.value}:{lineage}:{base}"
    try:
        launched = launch(request, request_id=request_id, deps=deps)
    except InvalidRequestError as exc:  # e.g. a gap in the changelog: an answer, not a retry
        reason = f"compaction not started: {exc}"
        return TrackResult(**{**result.__dict__, "reason": reason, "compaction_failed": True})
    refused = launched.created and launched.job.state is JobState.FAILED  # by the runner
    return TrackResult(
        **{
            **result.__dict__,
            "compaction_job_id": launched.job.job_id,
            "compaction_failed": refused or None,
            "reason": launched.job.failure_reason if refused else None,
        }
    )


def reject_file(
    key: str, size: int, reason: str, *, segments: SegmentStore, ledger: LedgerStore, now: datetime
) -> None:
    """Record the file at ``key`` as not a segment, once per key.

    The event is appended before the marker is written: a crash between the two makes a
    redelivery append it again (same ``command_id``), never lose it.
    """
    placed = parse_changelog_lineage(key)
    if placed is None:
        ledger.record_unplaceable_manifest(key, reason, now)
        return
    stream, partition, _ = placed
    lineage = LineageId(stream=stream, partition=partition)
    if segments.rejection_recorded(lineage, key):
        return
    command = RejectSegment(
        stream=stream, partition=partition, segment_key=key, size=size, reason=reason
    )
    execute(ledger, command, now)
    segments.record_rejection(lineage, key, reason, now)
