"""launch, job_state and track_changelog through their handlers, with AWS-shaped events."""

from __future__ import annotations

import copy
import importlib
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from snapledger.errors import JobStartError
from snapledger.layout import segment_key
from snapledger.models.ledger import LineageId
from snapledger.runtime import use_runtime
from snapledger.services.generations import request_stream_snapshot
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.functions.support import emitted_metrics, s3_put_event, sample_event
from tests.support import FakeRunner, write_segments, write_snapshot

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
# Every launch payload that starts a job (launch-snapshot-stream.json opens a generation,
# launch-producer-offsets-*.json change the producer-offsets registry).
LAUNCH_EVENTS = sorted(
    set(EVENTS_DIR.glob("launch-*.json"))
    - {EVENTS_DIR / "launch-snapshot-stream.json"}
    - set(EVENTS_DIR.glob("launch-producer-offsets-*.json"))
)


@pytest.fixture
def launch_handler(powertools_env):
    return importlib.import_module("functions.launch").handler


@pytest.fixture
def job_state_handler(powertools_env):
    return importlib.import_module("functions.job_state").handler


@pytest.fixture
def track_handler(powertools_env):
    return importlib.import_module("functions.track_changelog").handler


@pytest.fixture
def seeded(rt):
    """orders/3 with snapshots at LSN 100 and 200; changelog for orders/0..3 and payments/0..3;
    orders' generation 1 completed by a snapshot of each partition at LSN 150 + partition."""
    for partition in range(4):
        write_segments(rt.store, "orders", partition, (0, 99), (100, 199), (200, 399))
        write_segments(rt.store, "payments", partition, (0, 49), (50, 99))
    for lsn in (100, 200):
        key = write_snapshot(rt.store, "orders", 3, lsn)
        register_manifest(
            key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
        )
    request_stream_snapshot(rt.streams, "orders", range(4), clock=rt.clock)
    for partition in range(4):
        key = write_snapshot(
            rt.store, "orders", partition, 150 + partition, generation=1, offsets={"t": partition}
        )
        register_manifest(
            key,
            ledger=rt.ledger,
            store=rt.store,
            clock=rt.clock,
            streams=rt.streams,
            layouts=NATIVE_ONLY,
        )


def eventbridge_request(detail_type, detail, event_id="6a7e8feb-b491-4cf7-a9f1-bf3703467718"):
    """A custom EventBridge event as PutEvents delivers it (the envelope of AWS's samples)."""
    event = sample_event("eventbridge-scheduled.json")
    event.update(
        {"id": event_id, "source": "snapledger", "detail-type": detail_type, "detail": detail}
    )
    return event


@pytest.mark.parametrize("path", LAUNCH_EVENTS, ids=lambda p: p.stem)
def test_every_launch_console_payload_starts_a_job(seeded, rt, launch_handler, context, path):
    answer = launch_handler(json.loads(path.read_text()), context)
    assert answer["ok"] is True, answer
    assert answer["state"] == "SUBMITTED" and answer["job_id"] in rt.runner.started
    assert f"events/{path.name}" in (EVENTS_DIR.parent / "docs" / "console.md").read_text()


def test_a_restore_to_a_generation_starts_from_each_members_snapshot(
    seeded, rt, launch_handler, context
):
    answer = launch_handler(
        json.loads((EVENTS_DIR / "launch-restore-generation.json").read_text()), context
    )
    assert answer["ok"] is True, answer
    plans = answer["partitions"]
    assert [(p["partition"], p["base_lsn"], p["target_lsn"]) for p in plans] == [
        (0, 150, 399),
        (1, 151, 399),
        (2, 152, 399),
        (3, 153, 399),
    ]
    # a target per partition, for some members only
    answer = launch_handler(
        {
            "action": "restore",
            "stream": "orders",
            "partitions": [1, 2],
            "from": {"generation": 1},
            "target_lsns": {"1": 199},
            "request_id": "partial",
        },
        context,
    )
    assert [(p["partition"], p["target_lsn"]) for p in answer["partitions"]] == [(1, 199), (2, 399)]


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"from": {"generation": 2}}, None, "orders has no generation 2 (the newest is 1)"),
        ({"from": {"generation": 1}, "partitions": [5]}, None, "partitions [5] are not members"),
        (
            {"from": {"generation": 1}, "target_lsns": {"7": 1}},
            None,
            "partitions [7] are not members",
        ),
        ({"partition": 3, "target_lsns": {"2": 1}}, "target_lsns", "names partitions [2]"),
        ({"partition": 3, "target_lsn": 5, "target_lsns": {"3": 1}}, "target_lsn", "not both"),
    ],
)
def test_a_bad_generation_restore_is_answered_with_why(
    seeded, launch_handler, context, payload, field, message
):
    answer = launch_handler({"action": "restore", "stream": "orders", **payload}, context)
    assert answer["ok"] is False
    assert message in json.dumps(answer), answer
    if field:
        assert field in [f["field"] for f in answer["fields"]]


def test_an_open_or_failed_generation_cannot_be_restored(seeded, rt, launch_handler, context):
    request_stream_snapshot(rt.streams, "orders", [0, 1], clock=rt.clock)
    answer = launch_handler(
        {"action": "restore", "stream": "orders", "from": {"generation": 2}}, context
    )
    assert answer["ok"] is False and "generation 2 of orders is REQUESTED" in answer["message"]


def test_the_stream_snapshot_payload_opens_the_next_generation(seeded, rt, launch_handler, context):
    payload = json.loads((EVENTS_DIR / "launch-snapshot-stream.json").read_text())
    answer = launch_handler(payload, context)
    assert answer["ok"] is True, answer
    assert (answer["generation"], answer["status"], answer["created"]) == (2, "REQUESTED", True)
    assert answer["min_lsn"] == {"3": 200} and answer["missing"] == [0, 1, 2, 3]
    assert answer["deadline"] == (rt.clock.now() + timedelta(minutes=30)).isoformat()
    assert (
        "events/launch-snapshot-stream.json"
        in (EVENTS_DIR.parent / "docs" / "console.md").read_text()
    )
    # the same request again (its request id) opens nothing new
    again = launch_handler({**payload, "request_id": "same"}, context)
    repeat = launch_handler({**payload, "request_id": "same"}, context)
    assert (again["generation"], repeat["generation"], repeat["created"]) == (3, 3, False)


def test_the_stream_snapshot_arrives_as_an_eventbridge_request(seeded, rt, launch_handler, context):
    event = eventbridge_request(
        "SnapshotStreamRequested", {"stream": "orders", "partitions": [0, 1], "deadline_minutes": 5}
    )
    answer = launch_handler(event, context)
    assert answer["ok"] is True and answer["generation"] == 2
    head = rt.streams.get_head("orders")
    assert head.open_generation == 2


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"partitions": []}, "partitions"),
        ({"partitions": [1, 1]}, "partitions"),
        ({"partitions": [1], "min_lsn": {"2": 5}}, "min_lsn"),
        ({"partitions": [1], "deadline_minutes": 0}, "deadline_minutes"),
        (
            {"partitions": [1], "deadline": "2020-01-01T00:00:00Z", "deadline_minutes": 5},
            "deadline",
        ),
    ],
)
def test_a_malformed_stream_snapshot_request_names_its_field(
    launch_handler, rt, context, payload, field
):
    answer = launch_handler({"action": "snapshot_stream", "stream": "orders", **payload}, context)
    assert answer["ok"] is False
    assert field in [f["field"] for f in answer["fields"]], answer


def test_restore_latest_answers_what_it_resolved(seeded, launch_handler, context):
    answer = launch_handler({"action": "restore", "stream": "orders", "partition": 3}, context)
    [plan] = answer["partitions"]
    assert (plan["base_lsn"], plan["target_lsn"]) == (200, 399)


def test_the_same_eventbridge_request_delivered_twice_starts_one_job(
    seeded, rt, launch_handler, context
):
    event = eventbridge_request(
        "RestoreRequested", {"stream": "orders", "partition": 3, "from": {"lsn": 150}}
    )
    first = launch_handler(event, context)
    second = launch_handler(copy.deepcopy(event), context)
    assert first["ok"] and second["ok"] and first["job_id"] == second["job_id"]
    assert second["created"] is False and len(rt.runner.started) == 1


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        ({"action": "restore", "stream": "orders"}, ["partition", "partitions"]),
        ({"action": "bootstrap", "stream": "o", "partitions": [1, 1]}, ["partitions"]),
        ({"action": "bootstrap", "stream": "o", "partition": 1, "from": {"lsn": 5}}, ["from"]),
    ],
)
def test_a_rule_over_several_fields_names_each_field_at_fault(
    rt, launch_handler, context, payload, fields
):
    answer = launch_handler(payload, context)
    assert answer["error"] == "validation", answer
    assert [f["field"] for f in answer["fields"]] == fields
    assert "(payload)" not in answer["message"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"action": "restore", "partition": 3}, "stream"),
        ({"action": "restore", "stream": "orders", "partition": 3, "partitions": [3]}, "partition"),
        ({"action": "rewind", "stream": "orders", "partition": 3}, "action"),
        ({"action": "restore", "stream": "orders", "partition": -1}, "partition"),
        ({"action": "restore", "stream": "orders", "partition": 3, "from": {"lsn": "x"}}, "from"),
        ([1, 2], "(payload)"),
    ],
)
def test_malformed_launch_payloads_get_validation_answers_and_write_nothing(
    seeded, rt, launch_handler, context, payload, field
):
    answer = launch_handler(payload, context)
    assert answer["ok"] is False and answer["error"] == "validation", answer
    assert any(f["field"].startswith(field) for f in answer["fields"]), answer
    assert rt.runner.started == {} and rt.jobs.list_jobs().items == []


def test_a_bad_detail_type_is_named(launch_handler, context):
    answer = launch_handler(eventbridge_request("RewindRequested", {"stream": "orders"}), context)
    assert answer["error"] == "validation" and answer["fields"][0]["field"] == "detail-type"


def test_a_gap_is_refused_with_a_clear_message(seeded, launch_handler, context):
    payload = {"action": "restore", "stream": "orders", "partition": 3, "target_lsn": 900}
    answer = launch_handler(payload, context)
    assert answer == answer | {"ok": False, "error": "invalid_request"}
    assert "cannot reach the target LSN 900" in answer["message"]
    # naming the segment at fault and the missing LSNs (docs/console.md)
    last = "changelog/orders/3/00000000000000000200-00000000000000000399.parquet"
    assert answer["message"].startswith(f"{last}: the changelog ends at LSN 399")
    assert "LSNs 400..900 are missing" in answer["message"]


def test_restore_without_snapshots_is_not_found(seeded, launch_handler, context):
    answer = launch_handler({"action": "restore", "stream": "payments", "partition": 0}, context)
    assert answer["error"] == "not_found" and "bootstrap" in answer["message"]


def emr_event(run_id, state, details=None):
    event = sample_event("emr-serverless-job-run-state-change.json")
    event["detail"].update({"jobRunId": run_id, "state": state})
    if details:
        event["detail"]["stateDetails"] = details
    return event


def test_job_state_events_in_any_order_end_the_same(
    seeded, rt, launch_handler, job_state_handler, context
):
    job = launch_handler({"action": "restore", "stream": "orders", "partition": 3}, context)
    answers = [
        job_state_handler(emr_event(job["run_id"], s), context)
        for s in ("SUCCESS", "RUNNING", "SUCCESS")
    ]
    assert [a["recorded"] for a in answers] == [True, False, False]
    assert rt.jobs.get(job["job_id"]).state.value == "SUCCESS"


def test_failure_reason_from_the_event_is_recorded(
    seeded, rt, launch_handler, job_state_handler, context
):
    job = launch_handler({"action": "restore", "stream": "orders", "partition": 3}, context)
    job_state_handler(
        emr_event(job["run_id"], "FAILED", "Job failed, ExitCode: 3. error: bad data"), context
    )
    assert "bad data" in rt.jobs.get(job["job_id"]).failure_reason


class RunnerThatCannotReadRuns(FakeRunner):
    """Starts jobs, but GetJobRun is refused (AccessDenied, or the run is not found)."""

    def status(self, run_id):
        raise JobStartError(f"EMR Serverless could not read job run {run_id} (AccessDenied): no")


def test_a_failed_event_without_a_cause_for_a_run_that_cannot_be_read_is_recorded(
    seeded, rt, launch_handler, job_state_handler, context
):
    # Given a job whose run GetJobRun cannot read, and an unknown run
    use_runtime(replace(rt, runner=RunnerThatCannotReadRuns()))
    job = launch_handler({"action": "restore", "stream": "orders", "partition": 3}, context)
    # When FAILED arrives for each in AWS's sample shape (no stateDetails)
    known = job_state_handler(emr_event(job["run_id"], "FAILED"), context)
    foreign = job_state_handler(emr_event("00f1cbn5g4bb0c01", "FAILED"), context)
    # Then the known job is FAILED with the look-up's error in its cause; the other ignored
    assert known["ok"] and known["recorded"]
    recorded = rt.jobs.get(job["job_id"])
    assert recorded.state.value == "FAILED"
    assert "reading the job run failed" in recorded.failure_reason
    assert "AccessDenied" in recorded.failure_reason
    assert foreign["ok"] and not foreign["recorded"]


def test_malformed_job_state_event_names_the_field(job_state_handler, context):
    event = emr_event("run", "RUNNING")
    del event["detail"]["jobRunId"]
    answer = job_state_handler(event, context)
    assert answer["error"] == "validation" and answer["fields"][0]["field"] == "detail.jobRunId"


def test_changelog_segments_are_counted_once(rt, track_handler, context):
    key = segment_key("orders", 3, 0, 99)
    rt.store.put(key, b"x" * 10)
    first = track_handler(s3_put_event(key), context)
    again = track_handler(s3_put_event(key), context)
    assert first["records"][0]["outcome"] == "counted"
    assert again["records"][0]["outcome"] == "duplicate"
    assert again["records"][0]["backlog_records"] == 100


@pytest.mark.parametrize(
    "event",
    [{"foo": 1}, {"Records": "nope"}, [1]],
    ids=["neither-shape", "records-not-a-list", "not-an-object"],
)
def test_malformed_changelog_event_names_the_field_and_writes_nothing(
    rt, track_handler, context, event
):
    answer = track_handler(event, context)
    assert answer["ok"] is False and answer["error"] == "validation", answer
    assert answer["fields"] and all(f["field"] for f in answer["fields"])
    assert rt.jobs.list_jobs().items == []


def test_a_bad_record_does_not_lose_the_good_one(rt, track_handler, context):
    key = segment_key("orders", 3, 0, 99)
    rt.store.put(key, b"x")
    event = s3_put_event(key)
    event["Records"].insert(0, {"eventSource": "aws:s3"})
    answer = track_handler(event, context)
    outcomes = [r["outcome"] for r in answer["records"]]
    assert outcomes == ["invalid_record", "counted"]


def test_a_file_that_is_not_a_segment_is_rejected_with_a_metric_and_an_event(
    rt, track_handler, context, capsys
):
    # Given a file under a lineage's changelog folder whose name is not a segment's
    key = "changelog/orders/3/segment-1.parquet"
    rt.store.put(key, b"x" * 5)
    # When S3 notifies track_changelog
    answer = track_handler(s3_put_event(key), context)
    # Then it is answered rejected with the reason, counted in a metric, and on the log
    (record,) = answer["records"]
    assert record["outcome"] == "rejected" and "changelog layout" in record["reason"]
    assert emitted_metrics(capsys.readouterr().out)["Changelog_rejected"] == 1
    (event,) = rt.ledger.list_events(LineageId(stream="orders", partition=3)).items
    assert (event.type, event.segment_key, event.size) == ("ChangelogSegmentRejected", key, 5)
