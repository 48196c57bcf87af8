"""Every function path, executed under the role CDK synthesizes for it (invariant 10).

The scenario (scenario.py) runs register, track_changelog, launch, job_state, query and gc
through their handlers with their synthesized environment and their role's credentials,
in an emulated account that enforces IAM (iam_emulation.py). A refused call fails here
with the action, the resource and the role; a granted action no path used fails too,
unless it is one the Lambda service itself uses on the function's behalf (listed below).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from infra.constants import FUNCTION_NAMES
from infra.constructs.guardrails import HISTORY_REWRITE_ACTIONS
from tests.deployed.conftest import Deployed
from tests.deployed.deployment import (
    BUCKET,
    CODE_STATEMENTS,
    REGISTRATION_QUEUE,
    USED_BY_THE_PLATFORM,
)
from tests.deployed.iam_emulation import Decision

pytestmark = pytest.mark.slow


def _role_of(decision: Decision) -> str:
    # arn:aws:sts::<account>:assumed-role/snapledger-<function>/<session>
    return decision.principal.split("/")[1].removeprefix("snapledger-")


def _records(answer: dict[str, Any]) -> list[dict[str, Any]]:
    assert answer["ok"], answer
    return answer["records"]  # type: ignore[no-any-return]


def test_no_call_of_any_path_was_refused(deployed: Deployed) -> None:
    refused = [
        f"{_role_of(d)}: {d.action} on {d.resource}"
        for d in deployed.iam.denied()
        if "assumed-role" in d.principal
    ]
    assert refused == []


def test_register_paths(deployed: Deployed) -> None:
    answers = deployed.scenario
    assert [r["outcome"] for r in _records(answers["register.valid"])] == [
        "became_latest",
        "became_latest",
    ]
    assert [r["outcome"] for r in _records(answers["register.duplicate"])] == ["duplicate"]
    assert [r["outcome"] for r in _records(answers["register.rejected"])] == ["rejected"]
    assert [r["outcome"] for r in _records(answers["register.late"])] == ["recorded"]
    assert [r["outcome"] for r in _records(answers["register.fenced"])] == ["fenced"]
    assert [r["outcome"] for r in _records(answers["register.references"])] == ["became_latest"]
    # every manifest went through the queue (intake), one lineage's batch at a time
    valid = answers["register.valid"]
    assert valid["intake"]["counts"] == {"queued": 2}
    assert valid["batchItemFailures"] == []
    unplaceable = answers["register.unplaceable"]
    assert unplaceable["intake"]["counts"] == {"rejected": 1}
    assert unplaceable["records"] == []  # nothing queued
    # and the queue's calls were authorized under register's role, on the queue only
    sqs_calls = {
        (d.action, d.resource.rsplit(":", 1)[-1])
        for d in deployed.iam.allowed_for("assumed-role/snapledger-register/")
        if d.action.startswith("sqs:")
    }
    assert sqs_calls == {
        (action, REGISTRATION_QUEUE)
        for action in (
            "sqs:SendMessage",  # intake's SendMessageBatch
            "sqs:ReceiveMessage",  # the event source mapping's poller
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        )
    }


def test_track_changelog_counts_and_starts_a_compaction(deployed: Deployed) -> None:
    (small,) = _records(deployed.scenario["track_changelog.segment"])
    assert small["outcome"] == "counted" and "compaction_job_id" not in small
    (big,) = _records(deployed.scenario["track_changelog.threshold"])
    assert big["compaction_job_id"].startswith("compaction-")
    runs = deployed.app.admin.client("emr-serverless").list_job_runs(
        applicationId=deployed.app.application_id
    )["jobRuns"]
    assert big["compaction_job_id"] in {run["name"] for run in runs}


def test_track_changelog_rejects_a_file_that_is_not_a_segment(deployed: Deployed) -> None:
    for path in ("track_changelog.rejected", "track_changelog.unplaceable"):
        (record,) = _records(deployed.scenario[path])
        assert record["outcome"] == "rejected" and "changelog layout" in record["reason"]


def test_launch_starts_bootstrap_and_restore_runs(deployed: Deployed) -> None:
    for path in ("launch.bootstrap", "launch.restore"):
        answer = deployed.scenario[path]
        assert answer["ok"] and answer["state"] == "SUBMITTED" and answer["run_id"], answer


def test_job_state_records_success_and_a_failure_whose_cause_it_asked_for(
    deployed: Deployed,
) -> None:
    assert deployed.scenario["job_state.success"]["state"] == "SUCCESS"
    failed = deployed.scenario["job_state.failed"]
    assert failed["recorded"] and failed["state"] == "FAILED"
    asked = [
        d
        for d in deployed.iam.allowed_for("snapledger-job_state")
        if d.action == "emr-serverless:GetJobRun"
    ]
    assert asked, "job_state never asked EMR Serverless for the failure's cause"


def test_a_stream_snapshot_is_requested_completed_and_restored(deployed: Deployed) -> None:
    answers = deployed.scenario.answers
    assert answers["launch.snapshot_stream"]["generation"] == 1
    assert answers["query.generation"]["generation"]["status"] == "COMPLETED"
    assert [g["generation"] for g in answers["query.generations"]["generations"]] == [1]
    restore = answers["launch.restore_generation"]
    assert restore["ok"] is True, restore
    assert [(p["partition"], p["target_lsn"]) for p in restore["partitions"]] == [
        (0, 200),
        (1, 150),
    ]
    # generation.json was written by the register function, under its role
    assert "snapshots/ledgers/generation.json" in answers["objects_after_gc"]


def test_the_producer_offsets_registry_runs_under_launch_query_and_gc(deployed: Deployed) -> None:
    answers = deployed.scenario
    assert answers["launch.producer_offsets_created"]["result"] == "CREATED"
    assert answers["launch.producer_offsets_exists"]["result"] == "ALREADY_EXISTS"
    assert answers["query.producer_offsets"]["found"] is True
    assert answers["launch.producer_offsets_delete"]["deleted"] is True
    # gc's scheduled run, 30 days on, swept the entry that expired after 60 s
    assert answers["gc.run"]["producer_offsets_swept"] == ["scenario-expiring"]


def test_every_query_answers(deployed: Deployed) -> None:
    paths = [p for p in deployed.scenario.answers if p.startswith("query.")]
    assert len(paths) == 12
    events = deployed.scenario["query.stream_history"]["events"]
    assert [e["type"] for e in events] == ["PolicySet", "PolicyReset"]
    for path in paths:
        assert deployed.scenario[path]["ok"], (path, deployed.scenario[path])


def test_gc_expires_sweeps_trims_the_changelog_and_reconciles_stuck_jobs(
    deployed: Deployed,
) -> None:
    assert deployed.scenario["gc.dry_run"]["report"]["counts"]["objects_deleted"] == 0
    assert deployed.scenario["gc.policy_reset"]["ok"]
    stopped = deployed.scenario["gc.stopped"]["report"]
    assert not stopped["complete"] and stopped["resume_after"]
    report = deployed.scenario["gc.run"]["report"]
    counts = report["counts"]
    assert report["complete"] and counts["errors"] == 0, report
    assert counts["snapshots_deleted"] >= 2
    assert counts["orphans_deleted"] == 1
    # orders/3's (the scenario's lineage) and orders/4's (its snapshot with a reference:
    # its first trim point)
    assert counts["trim_points_advanced"] == 2
    assert counts["segments_deleted"] >= 1
    assert counts["stuck_jobs_reconciled"] >= 1
    left = deployed.scenario["objects_after_gc"]
    # the segment wholly below the trim point (the latest snapshot's LSN, 2,000) is gone
    assert "changelog/orders/3/00000000000000000000-00000000000000000999.parquet" not in left
    assert not [key for key in left if "00000000000000000800-" in key]  # the orphan
    # latest.json lagging the ledger was repaired under gc's role (issue 27 row 4)
    runs = [deployed.scenario[name]["report"] for name in ("gc.stopped", "gc.run")]
    assert sum(run["counts"]["pointers_repaired"] for run in runs) == 1
    # the unrecorded manifest was handed to the registration queue, never deleted (row 1)
    unrecorded = deployed.scenario["unrecorded"].removesuffix("_manifest.json")
    actions = [
        (orphan["prefix"], orphan["action"])
        for run in runs
        for lineage in run["lineages"]
        for orphan in lineage["orphans"]
    ]
    assert (unrecorded, "registered") in actions, actions
    assert [key for key in left if key.startswith(unrecorded)]


def test_gc_adopts_the_run_of_a_launch_that_died_after_starting_it(deployed: Deployed) -> None:
    # Issue 27 row 5: the sweeper found the run with ListJobRuns under gc's own role and
    # recorded it (moto's runs end SUCCESS at once), rather than failing "never started".
    launched = deployed.scenario["launch.crashed_after_start"]
    job = deployed.scenario["job.crashed_after_start"]
    assert (job["state"], job["run_id"]) == ("SUCCESS", launched["run_id"]), job
    assert "never started" not in (job["failure_reason"] or "")
    listed = [
        d
        for d in deployed.iam.allowed_for("snapledger-gc")
        if d.action == "emr-serverless:ListJobRuns"
    ]
    assert listed and all(
        d.resource.endswith(f"/applications/{deployed.app.application_id}") for d in listed
    )


def test_gc_fans_out_shards_and_its_sqs_trigger_works_them(deployed: Deployed) -> None:
    coordinator = deployed.scenario["gc.coordinator"]["report"]
    assert coordinator["complete"] and coordinator["counts"]["errors"] == 0, coordinator
    assert coordinator["counts"]["shards_sent"] >= 1
    assert coordinator["counts"]["lineages"] == 0  # it worked none itself
    shards = deployed.scenario["gc.shards"]
    assert len(shards) == coordinator["counts"]["shards_sent"]
    assert all(answer["batchItemFailures"] == [] for answer in shards)
    reports = [entry["report"] for answer in shards for entry in answer["shards"]]
    assert {r["run_id"] for r in reports} == {coordinator["run_id"]}
    lineages = sum(r["counts"]["lineages"] for r in reports)
    assert lineages == coordinator["counts"]["lineages_sent"]
    assert sum(r["counts"]["snapshots_deleted"] for r in reports) >= 1


def test_every_granted_action_is_used_by_a_path_or_by_the_platform(deployed: Deployed) -> None:
    used: dict[str, list[Decision]] = {}
    for decision in deployed.iam.decisions:
        if decision.allowed and "assumed-role" in decision.principal:
            used.setdefault(_role_of(decision), []).append(decision)
    unused = []
    for name in FUNCTION_NAMES:
        for statement in deployed.app.role_statements(name):
            if statement["Effect"] != "Allow":
                continue
            actions = _as_list(statement["Action"])
            resources = _as_list(statement["Resource"])
            for action in actions:
                if action in USED_BY_THE_PLATFORM and statement.get("Sid") not in CODE_STATEMENTS:
                    continue
                if not any(
                    d.action == action
                    and any(fnmatch.fnmatchcase(d.resource, r) for r in resources)
                    for d in used.get(name, [])
                ):
                    unused.append(f"{name}: {action} on {resources}")
    assert unused == []


def test_no_allow_added_later_lets_gc_purge_versions_or_change_versioning(
    deployed: Deployed,
) -> None:
    # Given a versioned object under snapshots/ (where gc may delete: a delete marker), and
    # an Allow of the history-rewriting actions added to gc's role by a later mistake
    app = deployed.app
    mark = len(deployed.iam.decisions)
    admin_s3 = app.admin.client("s3")
    admin_s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    key = "snapshots/guard/0/probe"
    version = admin_s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")["VersionId"]
    s3 = app.client_as("gc", "s3")
    mistake = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": list(HISTORY_REWRITE_ACTIONS),
                "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"],
            }
        ],
    }
    iam = app.admin.client("iam")
    iam.put_role_policy(
        RoleName="snapledger-gc", PolicyName="a-mistake", PolicyDocument=json.dumps(mistake)
    )
    try:
        # When gc's role deletes that exact version, suspends versioning or sets lifecycle
        # Then the synthesized explicit deny refuses each one
        with pytest.raises(ClientError, match="AccessDenied"):
            s3.delete_object(Bucket=BUCKET, Key=key, VersionId=version)
        with pytest.raises(ClientError, match="AccessDenied"):
            s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Suspended"})
        with pytest.raises(ClientError, match="AccessDenied"):
            s3.put_bucket_lifecycle_configuration(
                Bucket=BUCKET,
                LifecycleConfiguration={
                    "Rules": [
                        {"ID": "x", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}}
                    ]
                },
            )
        # while a plain delete (a delete marker) is what gc is for
        s3.delete_object(Bucket=BUCKET, Key=key)
        assert admin_s3.get_object(Bucket=BUCKET, Key=key, VersionId=version)["Body"].read()
    finally:
        iam.delete_role_policy(RoleName="snapledger-gc", PolicyName="a-mistake")
        del deployed.iam.decisions[mark:]  # a probe, not a path of the function


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
