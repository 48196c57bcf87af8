"""The track_changelog function: each arriving changelog segment counted once."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from snapledger.entrypoints.answers import Answer, MetricSink, RecordsFailedError, count, ok
from snapledger.entrypoints.s3_events import Arrival, InvalidRecord, arrivals_intake, key_in_store
from snapledger.entrypoints.stream_metrics import (
    CHANGELOG_RECORDS_SINCE_SNAPSHOT,
    JOBS_FAILED,
    NONE,
    emit_for_stream,
)
from snapledger.layout import CHANGELOG, parse_changelog_lineage
from snapledger.services.changelog_tracking import track_segment
from snapledger.services.launch import LaunchDeps

if TYPE_CHECKING:
    from snapledger.runtime import Runtime

_log = logging.getLogger(__name__)
ARRIVALS_INTAKE = arrivals_intake("Changelog_malformed_event")


def track_arrivals(arrivals: Sequence[Arrival], rt: Runtime, metrics: MetricSink) -> Answer:
    """Track every segment among ``arrivals``; unexpected failures raise after the rest."""
    deps = LaunchDeps(
        ledger=rt.ledger, jobs=rt.jobs, runner=rt.runner, store=rt.store, clock=rt.clock
    )
    records: list[dict[str, object]] = []
    failures: list[tuple[str, Exception]] = []
    for arrival in arrivals:
        if isinstance(arrival, InvalidRecord):
            records.append({"outcome": "invalid_record", "fields": arrival.fields})
            continue
        key = key_in_store(rt.store.uri, arrival.bucket, arrival.key)
        if key is None or not key.startswith(f"{CHANGELOG}/") or not arrival.created:
            records.append({"key": arrival.key, "outcome": "ignored"})
            continue
        try:
            info = rt.store.head(key)
            if info is None:
                records.append({"key": key, "outcome": "ignored", "reason": "no longer exists"})
                continue
            result = track_segment(
                key, info.size, segments=rt.segments, deps=deps, thresholds=rt.thresholds
            )
        except Exception as exc:  # the others are still processed; raised below to retry
            _log.exception("tracking %s failed; the delivery will be retried", key)
            failures.append((key, exc))
            continue
        count(metrics, f"Changelog_{result.outcome}")
        _emit_backlog(key, result.backlog_records)
        if result.compaction_job_id:
            count(metrics, "Changelog_compaction_due")
        if result.compaction_failed:
            placed = parse_changelog_lineage(key)
            if placed is not None:
                emit_for_stream(JOBS_FAILED, placed[0], 1)
        records.append(result.to_dict())
    if failures:
        raise RecordsFailedError(failures) from failures[0][1]
    return ok(records=records)


def _emit_backlog(key: str, backlog_records: int | None) -> None:
    """The changelog records past the lineage's latest snapshot, as this arrival found it."""
    placed = parse_changelog_lineage(key)
    if backlog_records is not None and placed is not None:
        emit_for_stream(CHANGELOG_RECORDS_SINCE_SNAPSHOT, placed[0], backlog_records, NONE)
