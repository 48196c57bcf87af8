"""Every path of every function, run once under the synthesized roles in one emulated account.

``run_scenario`` drives the functions as AWS would (S3 notifications, EventBridge events,
console payloads) and keeps each answer by path name; the test module asserts on them, on
the authorization log, and on which granted actions no path used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_jobs import JOB_SK, DynamoJobStore, run_pk
from snapledger.clock import ManualClock
from snapledger.layout import latest_pointer_key, segment_key, snapshot_prefix
from snapledger.models.jobs import JobState, JobTransition
from tests.deployed.deployment import BUCKET, TABLE, EmulatedDeployment
from tests.functions.support import s3_put_event, sample_event
from tests.support import manifest_document, write_segments, write_snapshot

STREAM = "orders"
PARTITION = 3
# Above the default compaction threshold (1,000,000 records): a segment's key says how
# many records it holds, so one segment ending here crosses it.
THRESHOLD_LAST_LSN = 1_200_000


@dataclass
class Scenario:
    answers: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, path: str) -> Any:
        return self.answers[path]


def _s3_event(*keys: str) -> dict[str, Any]:
    event = s3_put_event(*keys)
    for record in event["Records"]:
        record["s3"]["bucket"]["name"] = BUCKET
        record["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{BUCKET}"
    return event


def _register(app: EmulatedDeployment, *keys: str, sequencer: str | None = None) -> dict[str, Any]:
    """Manifests the AWS way: S3 → register (intake) → the FIFO queue → register (consumer).

    ``sequencer`` names another write of the same keys (S3 notifying a re-upload).
    """
    event = _s3_event(*keys)
    if sequencer is not None:
        for record in event["Records"]:
            record["s3"]["object"]["sequencer"] = sequencer
    intake = app.invoke("register", event)
    consumed = app.poll_registrations()
    return {
        "ok": intake["ok"] and all(answer["ok"] for answer in consumed),
        "intake": intake,
        "records": [record for answer in consumed for record in answer["records"]],
        "batchItemFailures": [f for answer in consumed for f in answer["batchItemFailures"]],
    }


def _emr_event(app: EmulatedDeployment, run_id: str, state: str) -> dict[str, Any]:
    """AWS's sample state-change event (no ``stateDetails``) for one of our runs."""
    event = sample_event("emr-serverless-job-run-state-change.json")
    event["detail"].update(
        {"jobRunId": run_id, "applicationId": app.application_id, "state": state}
    )
    return event


def _eventbridge(detail_type: str, detail: dict[str, Any]) -> dict[str, Any]:
    event = sample_event("eventbridge-scheduled.json")
    event.update({"source": "snapledger", "detail-type": detail_type, "detail": detail})
    return event


def _admin_jobs(app: EmulatedDeployment) -> DynamoJobStore:
    return DynamoJobStore(TABLE, client=app.admin.client("dynamodb"))


def _crash_before_submitted(app: EmulatedDeployment, job_id: str) -> None:
    """Set the job back to what a launch that died right after ``StartJobRun`` leaves:
    REQUESTED, no run id, requested when its run was created (moto dates every run at
    midnight; EMR creates the run just after the request)."""
    jobs = _admin_jobs(app)
    job = jobs.get(job_id)
    assert job is not None and job.run_id is not None, job
    run = app.admin.client("emr-serverless").get_job_run(
        applicationId=app.application_id, jobRunId=job.run_id
    )["jobRun"]
    at = run["createdAt"].astimezone(UTC)
    crashed = job.model_copy(
        update={
            "state": JobState.REQUESTED,
            "run_id": None,
            "resources": None,
            "requested_at": at,
            "updated_at": at,
            "transitions": (JobTransition(state=JobState.REQUESTED.value, at=at),),
            "version": job.version + 1,
        }
    )
    assert jobs.replace(job, crashed)
    # ... and without the run-id pointer recording SUBMITTED wrote beside it
    app.admin.client("dynamodb").delete_item(
        TableName=TABLE, Key=codec.key(run_pk(job.run_id), JOB_SK)
    )


def run_scenario(app: EmulatedDeployment) -> Scenario:
    done = Scenario()
    answers = done.answers
    store = app.store

    # --- register: valid, duplicate, rejected ---------------------------------------------
    write_segments(store, STREAM, PARTITION, (0, 999), (1_000, 2_000))
    first = write_snapshot(store, STREAM, PARTITION, 500)
    second = write_snapshot(store, STREAM, PARTITION, 1_000)
    answers["register.valid"] = _register(app, first, second)
    # The same manifest uploaded again (a new write: SQS does not deduplicate it)
    answers["register.duplicate"] = _register(app, first, sequencer="0C0F6F405D6ED209F0")
    bad = write_snapshot(
        store,
        STREAM,
        PARTITION,
        1_500,
        manifest=manifest_document(
            STREAM, PARTITION, 1_500, "01JW8Z3K9Q7N4M2P6R8T0V2X4Y", {"part-00000.parquet": b"x"}
        ),
    )
    answers["register.rejected"] = _register(app, bad)
    late = write_snapshot(store, STREAM, PARTITION, 700)
    answers["register.late"] = _register(app, late)
    fenced = write_snapshot(store, STREAM, PARTITION, 1_200, epoch=0)
    answers["register.fenced"] = _register(app, fenced)
    # A key that names no lineage: intake records it itself (no message group for it)
    stray = "snapshots/orders/not-a-partition/x/_manifest.json"
    store.put(stray, b"{}")
    answers["register.unplaceable"] = _register(app, stray)
    # A snapshot that references a file of its lineage's shared/ folder: registration reads
    # the lineage's live records (the registered index) to decide on it
    shared_lineage = PARTITION + 1
    store.put(f"snapshots/{STREAM}/{shared_lineage}/shared/000009.sst", b"s" * 9)
    sharing = write_snapshot(
        store,
        STREAM,
        shared_lineage,
        50,
        files={"CURRENT": b"MANIFEST-1\n"},
        format="opaque",
        references=[{"path": "shared/000009.sst", "size": 9}],
    )
    answers["register.references"] = _register(app, sharing)

    # --- track_changelog: a segment, then one that crosses the threshold -> a compaction --
    small = segment_key(STREAM, PARTITION, 2_001, 2_000 + 10)
    store.put(small, b"segment")
    answers["track_changelog.segment"] = app.invoke("track_changelog", _s3_event(small))
    big = segment_key(STREAM, PARTITION, 2_011, THRESHOLD_LAST_LSN)
    store.put(big, b"segment")
    answers["track_changelog.threshold"] = app.invoke("track_changelog", _s3_event(big))
    # A file that is not a segment (its lineage's log says so) and a key with no lineage
    misnamed = "changelog/payments/1/segment-1.parquet"
    store.put(misnamed, b"not a segment")
    answers["track_changelog.rejected"] = app.invoke("track_changelog", _s3_event(misnamed))
    unplaced = "changelog/payments/not-a-partition/x.parquet"
    store.put(unplaced, b"not a segment")
    answers["track_changelog.unplaceable"] = app.invoke("track_changelog", _s3_event(unplaced))

    # --- launch: bootstrap (console) and restore (EventBridge request) ---------------------
    write_segments(store, "payments", 0, (0, 49), (50, 99))
    answers["launch.bootstrap"] = app.invoke(
        "launch", {"action": "bootstrap", "stream": "payments", "partitions": [0]}
    )
    answers["launch.restore"] = app.invoke(
        "launch",
        _eventbridge(
            "RestoreRequested",
            {"stream": STREAM, "partition": PARTITION, "from": {"lsn": 500}, "target_lsn": 2_000},
        ),
    )

    # A launch that died after StartJobRun, before it recorded SUBMITTED (and EMR's events
    # lost): the job item is set back as that crash leaves it. GC's sweeper must find the
    # run (ListJobRuns, under gc's role) and adopt it, not fail it "never started".
    answers["launch.crashed_after_start"] = app.invoke(
        "launch",
        {
            "action": "bootstrap",
            "stream": "payments",
            "partitions": [0],
            "request_id": "scenario-crashed-after-start",
        },
    )
    _crash_before_submitted(app, answers["launch.crashed_after_start"]["job_id"])

    # --- job_state: a run succeeds; another fails without a cause (GetJobRun is asked) ----
    answers["job_state.success"] = app.invoke(
        "job_state", _emr_event(app, answers["launch.restore"]["run_id"], "SUCCESS")
    )
    answers["job_state.failed"] = app.invoke(
        "job_state", _emr_event(app, answers["launch.bootstrap"]["run_id"], "FAILED")
    )

    # --- query: every action ----------------------------------------------------------------
    lineage = {"stream": STREAM, "partition": PARTITION}
    answers["query.latest"] = app.invoke("query", {"action": "latest", **lineage})
    answers["query.list"] = app.invoke("query", {"action": "list", **lineage, "limit": 20})
    answers["query.history"] = app.invoke("query", {"action": "history", **lineage})
    answers["query.as_of"] = app.invoke("query", {"action": "as_of", **lineage, "lsn": 700})
    answers["query.as_of_time"] = app.invoke(
        "query", {"action": "as_of", **lineage, "as_of_time": datetime.now(UTC).isoformat()}
    )
    snapshot_id = answers["query.latest"]["head"]["latest_snapshot_id"]
    answers["query.snapshot"] = app.invoke(
        "query", {"action": "snapshot", **lineage, "snapshot_id": snapshot_id}
    )
    answers["query.jobs"] = app.invoke("query", {"action": "jobs", "limit": 20})
    answers["query.job"] = app.invoke(
        "query", {"action": "job", "job_id": answers["launch.restore"]["job_id"]}
    )

    # --- the producer-offsets registry: launch registers and deletes, query reads, gc's run
    # sweeps the expired entry (docs/fluss.md) --------------------------------------------
    offsets = [{"table_id": 3, "bucket": b, "offset": 100 * b} for b in range(3)]
    register = {"action": "producer_offsets_register", "offsets": offsets}
    answers["launch.producer_offsets_expiring"] = app.invoke(
        "launch", {**register, "producer_id": "scenario-expiring", "ttl_seconds": 60}
    )
    answers["launch.producer_offsets_created"] = app.invoke(
        "launch", {**register, "producer_id": "scenario-job"}
    )
    answers["launch.producer_offsets_exists"] = app.invoke(
        "launch", {**register, "producer_id": "scenario-job"}
    )
    answers["query.producer_offsets"] = app.invoke(
        "query", {"action": "producer_offsets", "producer_id": "scenario-job"}
    )
    answers["launch.producer_offsets_delete"] = app.invoke(
        "launch", {"action": "producer_offsets_delete", "producer_id": "scenario-job"}
    )

    # --- gc: policy, dry run, expiry + changelog below the trim point, orphans, stuck jobs -
    answers["gc.policy_set"] = app.invoke(
        "gc",
        {
            "action": "policy_set",
            "stream": STREAM,
            "min_count": 1,
            "min_age_hours": 0,
            "delete_changelog_below_trim": True,
        },
    )
    answers["gc.policy_get"] = app.invoke("gc", {"action": "policy_get", "stream": STREAM})
    # A third snapshot becomes latest, so the first two may go.
    third = write_snapshot(store, STREAM, PARTITION, 2_000)
    pointer = latest_pointer_key(STREAM, PARTITION)
    before_third = store.get(pointer)
    answers["register.third"] = _register(app, third)
    # latest.json left naming the previous latest (as if its write had kept failing): GC
    # keeps what it names and repairs it (GetObject, conditional PutObject under gc's role).
    store.put(pointer, before_third)
    # A snapshot whose notification was lost: its manifest was never recorded. GC hands it
    # to the registration queue (SendMessage under gc's role) and never deletes it.
    answers["unrecorded"] = write_snapshot(
        store, STREAM, PARTITION, 900, snapshot_id="01JW8Z3K9Q7N4M2P6R8T0V2X5A"
    )
    # An upload that never finished: files, no manifest.
    orphan_prefix = snapshot_prefix(STREAM, PARTITION, 800, "01JW8Z3K9Q7N4M2P6R8T0V2X4Z")
    store.put(orphan_prefix + "part-00000.parquet", b"never registered")
    later = ManualClock(datetime.now(UTC) + timedelta(days=30))
    answers["gc.dry_run"] = app.invoke("gc", {"dry_run": True}, clock=later)
    # A run out of time saves where the next one resumes; the next one finishes and clears it.
    answers["gc.stopped"] = app.invoke("gc", {"dry_run": False}, clock=later, remaining_ms=1_000)
    answers["gc.run"] = app.invoke("gc", sample_event("eventbridge-scheduled.json"), clock=later)
    answers["gc.policy_reset"] = app.invoke("gc", {"action": "policy_reset", "stream": STREAM})
    crashed = _admin_jobs(app).get(answers["launch.crashed_after_start"]["job_id"])
    answers["job.crashed_after_start"] = crashed.model_dump(mode="json") if crashed else None
    answers["query.stream_history"] = app.invoke("query", {"action": "history", "stream": STREAM})

    # --- stream snapshots: request (launch), count and complete (register), query, restore --
    answers["launch.snapshot_stream"] = app.invoke(
        "launch",
        {
            "action": "snapshot_stream",
            "stream": "ledgers",
            "partitions": [0, 1],
            "min_lsn": {"1": 50},
            "request_id": "scenario-stream-snapshot",
        },
    )
    members = [write_snapshot(store, "ledgers", p, 100, generation=1) for p in (0, 1)]
    write_segments(store, "ledgers", 0, (0, 200))
    write_segments(store, "ledgers", 1, (0, 200))
    answers["register.members"] = _register(app, *members)
    answers["query.generation"] = app.invoke("query", {"action": "generation", "stream": "ledgers"})
    answers["query.generations"] = app.invoke(
        "query", {"action": "generations", "stream": "ledgers"}
    )
    answers["launch.restore_generation"] = app.invoke(
        "launch",
        {
            "action": "restore",
            "stream": "ledgers",
            "from": {"generation": 1},
            "target_lsns": {"1": 150},
            "request_id": "scenario-restore-generation",  # not another test's request
        },
    )
    done.answers["objects_after_gc"] = sorted(info.key for info in store.list(""))
    # --- launch: the base snapshot by id (the by_kind index) --------------------------------
    latest_id = app.invoke("query", {"action": "latest", **lineage})["head"]["latest_snapshot_id"]
    answers["launch.restore_by_id"] = app.invoke(
        "launch",
        {
            "action": "restore",
            **lineage,
            "from": {"snapshot_id": latest_id},
            "target_lsn": 2_000,
            # Its own request id: the job is not one another test's console request makes.
            "request_id": "scenario-restore-by-id",
        },
    )
    # --- gc fan-out: the scheduled run sends shards, gc's SQS trigger works each --------
    # Four more snapshots: under the default policy (min_count 3) the first of them may go.
    newer = [write_snapshot(store, STREAM, PARTITION, lsn) for lsn in (2_500, 3_000, 3_500, 4_000)]
    answers["register.newer"] = _register(app, *newer)
    answers["gc.coordinator"] = app.invoke(
        "gc",
        sample_event("eventbridge-scheduled.json"),
        clock=later,
        settings={"SNAPLEDGER_GC_FAN_OUT_ABOVE_LINEAGES": "0"},  # fan out at any size
    )
    answers["gc.shards"] = app.deliver_gc_shards(clock=later)
    return done
