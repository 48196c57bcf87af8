"""Track changelog segments as they arrive and start compaction past a threshold.

Each segment counts once (its SEG item is created only if absent). When the backlog
since the latest snapshot crosses the stream's threshold and no compaction is in flight,
a compaction (or, for a lineage with no snapshot yet, a bootstrap) is launched with a
request id derived from the latest snapshot: concurrent arrivals start one job.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapledger.core.compaction_trigger import (
    CompactionConfig,
    backlog_since,
    due,
)
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layout import parse_segment_key
from snapledger.models.jobs import JobKind
from snapledger.models.ledger import LineageId
from snapledger.models.requests import LaunchRequest
from snapledger.ports import SegmentStore
from snapledger.services.launch import LaunchDeps, launch


@dataclass(frozen=True)
class TrackResult:
    key: str
    outcome: str  # counted | duplicate | ignored
    reason: str | None = None
    backlog_records: int | None = None
    backlog_bytes: int | None = None
    compaction_job_id: str | None = None

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
        deps.ledger.record_unplaceable_manifest(key, str(exc), deps.clock.now())
        return TrackResult(key, "ignored", reason=str(exc))
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
        job = launch(request, request_id=request_id, deps=deps).job
    except InvalidRequestError as exc:  # e.g. a gap in the changelog: an answer, not a retry
        return TrackResult(**{**result.__dict__, "reason": f"compaction not started: {exc}"})
    return TrackResult(**{**result.__dict__, "compaction_job_id": job.job_id})
