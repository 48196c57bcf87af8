"""Per-stream metrics: each with the stream as a dimension, in its own EMF blob.

An EMF blob has one set of dimensions for all its metrics, and the handlers' Powertools
``Metrics`` carries only ``service``; so a per-stream value is printed at once in a blob of
its own (Powertools' CloudWatch EMF provider, which honours ``POWERTOOLS_METRICS_DISABLED``
as the handlers' metrics do). Each blob publishes the metric under ``service`` + ``Stream``
and, with ``total``, also under ``service`` alone: the total the stream-independent alarms
watch. The registration outcomes are already counted under ``service`` by the handler's
own metrics, so theirs go out without the total (no double count).

The alarms and the dashboard on these (``infra/constructs/stream_alarms.py``) and the
table of them (docs/deploy.md, "Per-stream metrics and alarms") use these names.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from snapledger.models.ledger import LineageId
    from snapledger.services.gc_report import GcReport

#: The changelog records of a lineage past an LSN (its latest snapshot's).
RecordsSince = Callable[["LineageId", int], int]

COUNT = "Count"
BYTES = "Bytes"
NONE = "None"
STREAM_DIMENSION = "Stream"
SERVICE_ENV = "POWERTOOLS_SERVICE_NAME"

#: A manifest rejected (invalid, conflicting) or fenced (a stale epoch), per stream.
REGISTRATION_REJECTED = "Registration_rejected"
REGISTRATION_FENCED = "Registration_fenced"
#: A manifest (or Restate metadata.json) gone when registration read it, per stream.
REGISTRATION_VANISHED = "Registration_vanished"
#: A job that ended FAILED: its state event, a launch refused, the stuck-job sweeper.
JOBS_FAILED = "Jobs_failed"
#: What GC deleted: snapshots (marked DELETED) and their bytes (the records' total_bytes).
GC_SNAPSHOTS_DELETED = "Gc_snapshots_deleted"
GC_BYTES_DELETED = "Gc_bytes_deleted"
#: Hours since each lineage's latest snapshot was registered (every GC run, per lineage).
SNAPSHOT_AGE_HOURS = "Snapshot_age_hours"
#: Jobs a GC run found stuck and failed (never started, or the runner says FAILED).
SWEPT_FAILED_STATE = "FAILED"
#: Changelog records past each lineage's latest snapshot (every GC run, per lineage; and
#: each counted segment's arrival).
CHANGELOG_RECORDS_SINCE_SNAPSHOT = "Changelog_records_since_snapshot"


def emit_for_stream(
    name: str, stream: str, value: float, unit: str = COUNT, *, total: bool = True
) -> None:
    """Print one EMF blob: ``name`` = ``value`` for ``stream`` (and the total, unless not)."""
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
        AmazonCloudWatchEMFProvider,
    )

    service = os.environ.get(SERVICE_ENV)
    defaults = {"service": service} if service else {}
    blob = AmazonCloudWatchEMFProvider(default_dimensions=defaults)
    blob.add_metric(name=name, unit=unit, value=value)
    if total:
        blob.add_dimensions(**{STREAM_DIMENSION: stream})
    else:
        blob.add_dimension(name=STREAM_DIMENSION, value=stream)
    blob.flush_metrics()


def emit_gc_metrics(
    report: GcReport, now: datetime, records_since: RecordsSince | None = None
) -> None:
    """What a GC run (or shard) did and saw, per stream.

    - ``Snapshot_age_hours`` for each lineage with a latest snapshot: hours since it was
      registered (the plan keeps the latest, with reason ``latest``), dry run or not, and
      with ``records_since``, ``Changelog_records_since_snapshot`` (one read a lineage);
    - unless a dry run, ``Gc_snapshots_deleted`` and ``Gc_bytes_deleted`` once per stream
      (zeros included: the dashboard shows a run that deleted nothing), bytes from the
      deleted snapshots' records (``total_bytes``);
    - ``Jobs_failed`` for each stuck job the sweeper failed.
    """
    from snapledger.models.retention_reasons import KeepReason

    snapshots: dict[str, int] = defaultdict(int)
    deleted_bytes: dict[str, int] = defaultdict(int)
    for lineage in report.lineages:
        stream = lineage.lineage.stream
        decided = [k.record for k in lineage.plan.kept] + [d.record for d in lineage.plan.doomed]
        sizes = {record.snapshot_id: record.total_bytes for record in decided}
        snapshots[stream] += len(lineage.deleted)
        deleted_bytes[stream] += sum(sizes.get(snapshot_id, 0) for snapshot_id in lineage.deleted)
        latest = [k.record for k in lineage.plan.kept if KeepReason.LATEST in k.reasons]
        if latest:
            age = (now - latest[0].registered_at).total_seconds() / 3600
            emit_for_stream(SNAPSHOT_AGE_HOURS, stream, round(age, 3), NONE)
            if records_since is not None:
                backlog = records_since(lineage.lineage, latest[0].lsn)
                emit_for_stream(CHANGELOG_RECORDS_SINCE_SNAPSHOT, stream, backlog, NONE)
    if not report.dry_run:
        for stream in sorted(snapshots):
            emit_for_stream(GC_SNAPSHOTS_DELETED, stream, snapshots[stream])
            emit_for_stream(GC_BYTES_DELETED, stream, deleted_bytes[stream], BYTES)
    for job in report.stuck_jobs:
        if job.new_state == SWEPT_FAILED_STATE:
            emit_for_stream(JOBS_FAILED, job.stream, 1)
