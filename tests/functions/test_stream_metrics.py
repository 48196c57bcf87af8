"""Per-stream metrics: each emitted, with the stream as a dimension, on its path.

Each test invokes the handler on the path and reads the EMF blobs it printed: the value
under ``service`` + ``Stream`` (``emitted_stream_metrics``) and, for the metrics with a
total, under ``service`` alone (``emitted_metrics``).
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from datetime import timedelta

import pytest

from snapledger.entrypoints import stream_metrics as sm
from snapledger.gc_settings import GcConfig
from snapledger.layout import segment_key
from snapledger.models.jobs import reported_state
from snapledger.models.ledger import LineageId
from snapledger.ports import JobRunStatus
from snapledger.runtime import use_runtime
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.functions.support import (
    emf_blobs,
    emitted_metrics,
    emitted_stream_metrics,
    s3_put_event,
    sample_event,
)
from tests.support import FakeRunner, write_segments, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)


@pytest.fixture
def handlers(powertools_env):
    return {
        name: importlib.import_module(f"functions.{name}").handler
        for name in ("register", "launch", "job_state", "gc", "track_changelog")
    }


class ScriptedRunner(FakeRunner):
    """Starts runs like FakeRunner; reports the state it is told (the sweeper asks it)."""

    def __init__(self, state: str = "RUNNING") -> None:
        super().__init__()
        self.state = state

    def status(self, run_id: str) -> JobRunStatus:
        return JobRunStatus(state=reported_state(self.state), reason="Executor lost")


def emr_event(run_id: str, state: str) -> dict:
    event = sample_event("emr-serverless-job-run-state-change.json")
    event["detail"].update({"jobRunId": run_id, "state": state})
    return event


def snapshot_of(rt, stream: str, lsn: int, **kwargs) -> None:
    write_segments(rt.store, stream, 3, (0, lsn - 1), (lsn, lsn + 99))
    key = write_snapshot(rt.store, stream, 3, lsn, **kwargs)
    register_manifest(key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY)


def test_a_blob_with_a_total_publishes_under_service_and_under_service_and_stream(
    powertools_env, capsys
):
    sm.emit_for_stream(sm.JOBS_FAILED, "orders", 1)
    sm.emit_for_stream(sm.REGISTRATION_REJECTED, "orders", 1, total=False)
    totalled, alone = emf_blobs(capsys.readouterr().out)
    [directive] = totalled["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Snapledger"
    assert directive["Dimensions"] == [["service"], ["service", "Stream"]]
    assert (totalled["service"], totalled["Stream"]) == ("snapledger", "orders")
    assert [sorted(d) for d in alone["_aws"]["CloudWatchMetrics"][0]["Dimensions"]] == [
        ["Stream", "service"]
    ]


def test_nothing_is_printed_when_metrics_are_disabled(monkeypatch, powertools_env, capsys):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # the local runtime's setting
    sm.emit_for_stream(sm.JOBS_FAILED, "orders", 1)
    assert emf_blobs(capsys.readouterr().out) == []


def test_rejected_and_fenced_registrations_are_counted_per_stream(rt, handlers, context, capsys):
    rejected = write_snapshot(rt.store, "payments", 3, 200, manifest=b"not json")
    newer_epoch = write_snapshot(rt.store, "orders", 3, 100, epoch=2)
    older_epoch = write_snapshot(rt.store, "orders", 3, 200, epoch=1)
    answer = handlers["register"](s3_put_event(rejected, newer_epoch, older_epoch), context)
    assert answer["counts"] == {"became_latest": 1, "fenced": 1, "rejected": 1}
    out = capsys.readouterr().out
    assert emitted_stream_metrics(out) == {
        (sm.REGISTRATION_REJECTED, "payments"): [1],
        (sm.REGISTRATION_FENCED, "orders"): [1],
    }
    # ... and under service alone once each (the handler's own count, no second total)
    totals = emitted_metrics(out)
    assert (totals[sm.REGISTRATION_REJECTED], totals[sm.REGISTRATION_FENCED]) == (1, 1)


def test_a_vanished_manifest_is_counted_per_stream_and_logged_with_its_key(
    rt, handlers, context, capsys, caplog
):
    # Given a manifest that arrived and was deleted before registration read it
    gone = write_snapshot(rt.store, "payments", 3, 200)
    rt.store.delete_many([gone])
    # When its arrival is registered
    with caplog.at_level("WARNING", logger="snapledger.entrypoints.register"):
        answer = handlers["register"](s3_put_event(gone), context)
    # Then it is answered vanished, not rejected, and nothing is recorded
    assert answer["counts"] == {"vanished": 1}
    assert "gone when registration read it" in answer["records"][0]["reason"]
    assert rt.ledger.load(LineageId(stream="payments", partition=3)).head.version == 0
    # And counted per stream and under service alone (the handler's own count)
    out = capsys.readouterr().out
    assert emitted_stream_metrics(out) == {(sm.REGISTRATION_VANISHED, "payments"): [1]}
    assert emitted_metrics(out)[sm.REGISTRATION_VANISHED] == 1
    # And logged as a warning that names the key
    assert any(gone in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_a_failed_job_is_counted_once_per_stream_however_often_its_event_comes(
    rt, handlers, context, capsys
):
    snapshot_of(rt, "orders", 100)
    job = handlers["launch"]({"action": "restore", "stream": "orders", "partition": 3}, context)
    capsys.readouterr()
    for state in ("RUNNING", "FAILED", "FAILED"):
        handlers["job_state"](emr_event(job["run_id"], state), context)
    out = capsys.readouterr().out
    assert emitted_stream_metrics(out) == {(sm.JOBS_FAILED, "orders"): [1]}
    assert emitted_metrics(out)[sm.JOBS_FAILED] == 1


def test_a_refused_launch_is_a_failed_job_of_its_stream(rt, handlers, context, capsys):
    # Refused before any job: nothing to restore from
    refused = handlers["launch"]({"action": "restore", "stream": "orders", "partition": 3}, context)
    assert refused["error"] == "not_found"
    # Refused by the runner: the job is created, then FAILED
    snapshot_of(rt, "payments", 100)
    use_runtime(replace(rt, runner=FakeRunner(refuse="quota exceeded")))
    failed = handlers["launch"](
        {"action": "restore", "stream": "payments", "partition": 3}, context
    )
    assert failed["state"] == "FAILED"
    # ... and asking again answers the same job without counting it twice
    handlers["launch"]({"action": "restore", "stream": "payments", "partition": 3}, context)
    assert emitted_stream_metrics(capsys.readouterr().out) == {
        (sm.JOBS_FAILED, "orders"): [1],
        (sm.JOBS_FAILED, "payments"): [1],
    }


def test_the_stuck_job_sweeper_counts_the_jobs_it_fails(rt, handlers, context, capsys):
    snapshot_of(rt, "orders", 100)
    runner = ScriptedRunner()
    use_runtime(replace(rt, runner=runner, gc=GcConfig(stuck_job_hours=1)))
    handlers["launch"]({"action": "restore", "stream": "orders", "partition": 3}, context)
    runner.state = "FAILED"  # its event never comes
    rt.clock.advance(timedelta(hours=2))
    capsys.readouterr()
    answer = handlers["gc"](sample_event("eventbridge-scheduled.json"), context)
    assert answer["report"]["counts"]["stuck_jobs_reconciled"] == 1
    assert emitted_stream_metrics(capsys.readouterr().out)[(sm.JOBS_FAILED, "orders")] == [1]


def test_gc_emits_each_lineages_staleness_and_each_streams_deletions(rt, handlers, context, capsys):
    # Given orders/3 with six snapshots a day apart (sizes known), payments/3 with one
    sizes = {}
    for n, lsn in enumerate(range(100, 700, 100)):
        key = write_snapshot(rt.store, "orders", 3, lsn)
        register_manifest(
            key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
        )
        if n == 0:
            snapshot_of(rt, "payments", 50)
        rt.clock.advance(timedelta(days=1))
    for record in rt.ledger.list_snapshots(ORDERS_3, limit=10).items:
        sizes[record.snapshot_id] = record.total_bytes
    rt.clock.advance(timedelta(hours=5))
    # When the schedule runs GC
    answer = handlers["gc"](sample_event("eventbridge-scheduled.json"), context)
    out = capsys.readouterr().out
    [lineage] = [r for r in answer["report"]["lineages"] if r["stream"] == "orders"]
    deleted = lineage["objects_deleted"]
    assert deleted, "the default policy deletes some of six daily snapshots"
    metrics = emitted_stream_metrics(out)
    # Then each lineage's latest is this old (orders' registered 1 day + 5 h ago, payments 6 d
    # + 5 h), and each stream's deletions are counted with their bytes
    assert metrics[(sm.SNAPSHOT_AGE_HOURS, "orders")] == [29.0]
    assert metrics[(sm.SNAPSHOT_AGE_HOURS, "payments")] == [149.0]
    assert metrics[(sm.GC_SNAPSHOTS_DELETED, "orders")] == [len(deleted)]
    assert metrics[(sm.GC_BYTES_DELETED, "orders")] == [sum(sizes[s] for s in deleted)]
    assert metrics[(sm.GC_BYTES_DELETED, "orders")][0] > 0
    assert metrics[(sm.GC_SNAPSHOTS_DELETED, "payments")] == [0]
    assert emitted_metrics(out)[sm.SNAPSHOT_AGE_HOURS] == 29.0 + 149.0  # one value each


def test_every_gc_run_reports_staleness_and_the_changelog_since_but_a_dry_run_no_deletions(
    rt, handlers, context, capsys
):
    snapshot_of(rt, "orders", 100)
    key = segment_key("orders", 3, 200, 349)  # 150 records past the latest, once tracked
    rt.store.put(key, b"segment")
    handlers["track_changelog"](s3_put_event(key), context)
    rt.clock.advance(timedelta(hours=3))
    capsys.readouterr()
    handlers["gc"]({"dry_run": True}, context)
    assert emitted_stream_metrics(capsys.readouterr().out) == {
        (sm.SNAPSHOT_AGE_HOURS, "orders"): [3.0],
        (sm.CHANGELOG_RECORDS_SINCE_SNAPSHOT, "orders"): [150.0],
    }


def test_each_counted_segment_reports_the_records_since_the_latest_snapshot(
    rt, handlers, context, capsys
):
    snapshot_of(rt, "orders", 100)  # the latest at LSN 100
    keys = [segment_key("orders", 3, 200, 349), segment_key("orders", 3, 350, 399)]
    for key in keys:
        rt.store.put(key, b"segment")
    capsys.readouterr()
    handlers["track_changelog"](s3_put_event(*keys), context)
    # Each tracked segment's answer: 150 records past the latest, then 200
    assert emitted_stream_metrics(capsys.readouterr().out) == {
        (sm.CHANGELOG_RECORDS_SINCE_SNAPSHOT, "orders"): [150.0, 200.0]
    }


def test_a_compaction_track_changelog_could_not_start_is_a_failed_job(
    rt, handlers, context, capsys
):
    from snapledger.core.compaction_trigger import CompactionConfig, CompactionThresholds

    snapshot_of(rt, "orders", 100)
    due = CompactionConfig(default=CompactionThresholds(records=10, bytes=2**62))
    use_runtime(replace(rt, thresholds=due, runner=FakeRunner(refuse="quota exceeded")))
    key = segment_key("orders", 3, 200, 299)
    rt.store.put(key, b"segment")
    capsys.readouterr()
    answer = handlers["track_changelog"](s3_put_event(key), context)
    [record] = answer["records"]
    assert record["compaction_failed"] is True and "quota exceeded" in record["reason"]
    assert emitted_stream_metrics(capsys.readouterr().out)[(sm.JOBS_FAILED, "orders")] == [1]
