"""Changelog tracking: each segment counted once, compaction started past the threshold."""

from __future__ import annotations

import pytest

from snapledger.adapters.dynamodb_changelog import DynamoSegmentStore
from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.core.compaction_trigger import CompactionConfig, CompactionThresholds, backlog_since
from snapledger.layout import segment_key
from snapledger.models.ledger import LineageId
from snapledger.services.changelog_tracking import track_segment
from snapledger.services.launch import LaunchDeps
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import FakeRunner, write_segments, write_snapshot

THRESHOLDS = CompactionConfig(
    default=CompactionThresholds(records=10**9),
    streams={"orders": CompactionThresholds(records=250)},
)


@pytest.fixture
def deps(ledger, store, clock):
    return LaunchDeps(
        ledger=ledger,
        jobs=DynamoJobStore(ledger.table_name, client=ledger.client),
        runner=FakeRunner(),
        store=store,
        clock=clock,
    )


@pytest.fixture
def segments(ledger):
    return DynamoSegmentStore(ledger.table_name, client=ledger.client)


def arrive(store, deps, segments, first, last, size=1000):
    write_segments(store, "orders", 3, (first, last))
    return track_segment(
        segment_key("orders", 3, first, last),
        size,
        segments=segments,
        deps=deps,
        thresholds=THRESHOLDS,
    )


def test_redelivered_segment_is_not_counted_twice(deps, segments, store):
    first = arrive(store, deps, segments, 0, 99)
    again = arrive(store, deps, segments, 0, 99)
    assert (first.outcome, again.outcome) == ("counted", "duplicate")
    assert again.backlog_records == 100


def test_threshold_crossing_starts_one_compaction_from_the_latest(
    deps, segments, store, ledger, clock
):
    # Given a latest snapshot at LSN 99 and the changelog after it
    register_manifest(
        write_snapshot(store, lsn=99), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    arrive(store, deps, segments, 0, 99)
    below = arrive(store, deps, segments, 100, 299)
    assert below.backlog_records == 200 and below.compaction_job_id is None
    # When the backlog crosses 250 records
    crossing = arrive(store, deps, segments, 300, 399)
    later = arrive(store, deps, segments, 400, 499)
    # Then one compaction started, from the latest snapshot to the end of the changelog
    assert crossing.compaction_job_id is not None
    assert later.compaction_job_id == crossing.compaction_job_id
    assert list(deps.runner.started) == [crossing.compaction_job_id]
    [plan] = deps.runner.started[crossing.compaction_job_id].partitions
    assert (plan.base_lsn, plan.target_lsn) == (99, 399)


def test_a_lineage_without_snapshots_is_bootstrapped(deps, segments, store):
    result = arrive(store, deps, segments, 0, 299)
    assert result.compaction_job_id.startswith("bootstrap-")


def track(key, deps, segments, size=1):
    return track_segment(key, size, segments=segments, deps=deps, thresholds=THRESHOLDS)


def test_a_file_that_is_not_a_segment_is_rejected_on_its_lineage_once(deps, segments, ledger):
    key = "changelog/orders/3/segment-1.parquet"
    # When a misnamed file arrives twice (S3 redelivers)
    first, again = track(key, deps, segments, size=77), track(key, deps, segments, size=77)
    # Then it is rejected with the layout it breaks, never counted
    assert (first.outcome, again.outcome) == ("rejected", "rejected")
    assert "changelog layout" in first.reason
    lineage = LineageId(stream="orders", partition=3)
    assert list(segments.ending_after(lineage, None)) == []
    # And its lineage's log says so once, with the file, its size and the reason
    events = ledger.list_events(lineage).items
    assert [(e.type, e.segment_key, e.size) for e in events] == [
        ("ChangelogSegmentRejected", key, 77)
    ]
    assert events[0].reason == first.reason and events[0].command_id.endswith(key)


def test_a_segment_whose_first_lsn_is_above_its_last_is_rejected(deps, segments):
    backwards = "changelog/orders/3/" + "0" * 18 + "10-" + "0" * 19 + "5.parquet"
    result = track(backwards, deps, segments)
    assert result.outcome == "rejected" and "first LSN 10 is above last LSN 5" in result.reason


def test_a_changelog_key_that_names_no_lineage_is_kept_unplaced(deps, segments, ledger):
    key = "changelog/orders/x/bad.parquet"
    result = track(key, deps, segments)
    assert result.outcome == "rejected" and "changelog layout" in result.reason
    item = ledger.client.get_item(
        TableName=ledger.table_name,
        Key={"pk": {"S": "REJECTED"}, "sk": {"S": "KEY#" + key}},
    )["Item"]
    assert "changelog layout" in item["reason"]["S"]


def test_backlog_counts_only_past_the_snapshot():
    backlog = backlog_since(149, [(0, 99, 100), (100, 199, 100), (200, 299, 100)])
    assert (backlog.records, backlog.bytes, backlog.segments) == (150, 150, 2)
    assert backlog_since(None, [(5, 9, 10)]).records == 5
