"""A function whose role lacks a permission says which action on which resource was
refused, in its answer and its log, instead of a stack trace (issue 13, bad input)."""

from __future__ import annotations

import logging

import pytest

from snapledger.errors import AccessDeniedError
from snapledger.models.ledger import LineageId
from tests.deployed.conftest import Deployed
from tests.deployed.deployment import BUCKET, TABLE
from tests.deployed.scenario import STREAM, _s3_event
from tests.functions.support import sample_event
from tests.support import write_snapshot

pytestmark = pytest.mark.slow


def test_a_console_answer_names_the_refused_action_and_resource(
    deployed: Deployed, caplog: pytest.LogCaptureFixture
) -> None:
    # Given query's role without dynamodb:Query (a deployment mistake)
    deployed.app.withdraw("query", "dynamodb:Query")
    mark = len(deployed.iam.decisions)
    try:
        # When an operator lists a lineage from the console
        with caplog.at_level(logging.ERROR):
            answer = deployed.app.invoke(
                "query", {"action": "list", "stream": STREAM, "partition": 3}
            )
    finally:
        del deployed.iam.decisions[mark:]
    # Then the answer and the log name the action and the table, and what to do
    assert answer["ok"] is False and answer["error"] == "access_denied"
    assert answer["action"] == "dynamodb:Query"
    assert TABLE in answer["resource"]
    assert "Grant it to the role" in answer["message"]
    assert any("dynamodb:Query" in r.getMessage() for r in caplog.records)


def test_an_event_the_role_cannot_process_fails_naming_the_object(deployed: Deployed) -> None:
    # Given register's role without s3:GetObject
    deployed.app.withdraw("register", "s3:GetObject")
    key = write_snapshot(deployed.app.store, STREAM, 5, 100)
    mark = len(deployed.iam.decisions)
    try:
        # When a manifest arrives (intake queues it) and the consumer gets it
        queued = deployed.app.invoke("register", _s3_event(key))
        (answer,) = deployed.app.poll_registrations()
    finally:
        del deployed.iam.decisions[mark:]
    # Then its message returns to the queue (redelivered, then kept in the failure queue)
    # and the answer names the refused action and object
    assert queued["counts"] == {"queued": 1}
    assert len(answer["batchItemFailures"]) == 1
    (record,) = answer["records"]
    assert record["outcome"] == "failed"
    assert "s3:GetObject" in record["reason"]
    assert f"arn:aws:s3:::{BUCKET}/{key}" in record["reason"]


def test_a_refused_job_start_fails_the_job_naming_the_action_and_releases_its_pins(
    deployed: Deployed,
) -> None:
    # Given launch's role without emr-serverless:StartJobRun
    deployed.app.withdraw("launch", "emr-serverless:StartJobRun")
    mark = len(deployed.iam.decisions)
    try:
        # When an operator restores the latest snapshot
        answer = deployed.app.invoke(
            "launch", {"action": "restore", "stream": STREAM, "partition": 3, "from": "latest"}
        )
    finally:
        del deployed.iam.decisions[mark:]
    # Then the job is recorded FAILED with the refused action in its reason, and the
    # snapshot it pinned is free again for GC
    assert answer["state"] == "FAILED", answer
    assert "emr-serverless:StartJobRun" in answer["failure_reason"]
    (partition,) = answer["partitions"]
    snapshots = deployed.app.ledger.list_snapshots(
        LineageId(stream=STREAM, partition=3), limit=100
    ).items
    pinned_by_it = [s for s in snapshots for pin in s.pins if pin.job_id == answer["job_id"]]
    assert partition["base_snapshot_id"] and pinned_by_it == []


def test_the_gc_schedule_fails_its_invocation_and_the_console_gets_an_answer(
    deployed: Deployed,
) -> None:
    # Given gc's role without dynamodb:Query (it lists lineages and jobs with it)
    deployed.app.withdraw("gc", "dynamodb:Query")
    mark = len(deployed.iam.decisions)
    try:
        # When the schedule runs gc, Then the invocation fails (retried, then kept in gc's
        # failure queue; the Errors alarm fires), naming the action
        with pytest.raises(AccessDeniedError, match="dynamodb:Query"):
            deployed.app.invoke("gc", sample_event("eventbridge-scheduled.json"))
        # and an operator's dry run from the console is answered with it
        answer = deployed.app.invoke("gc", {"dry_run": True})
    finally:
        del deployed.iam.decisions[mark:]
    assert answer["error"] == "access_denied" and answer["action"] == "dynamodb:Query"
