"""Stuck jobs: reconciled with the runner; never-started ones failed; pins released."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from snapledger.adapters.emr_serverless import EmrServerlessRunner
from snapledger.errors import StoreUnavailableError
from snapledger.gc_settings import GcConfig
from snapledger.models.jobs import JobState, reported_state
from snapledger.models.ledger import LineageId
from snapledger.models.requests import LaunchRequest
from snapledger.ports import JobRunStatus
from snapledger.services.gc import run_gc
from snapledger.services.launch import LaunchDeps, launch
from tests.gc.support import event_types, gc_deps, records, register
from tests.support import FakeRunner, moto_ledger, write_segments

ORDERS_3 = LineageId(stream="orders", partition=3)
CONFIG = GcConfig(stuck_job_hours=1)


class ScriptedRunner(FakeRunner):
    """Starts like FakeRunner; reports whatever state it is told."""

    def __init__(self, state: str = "RUNNING", reason: str | None = None) -> None:
        super().__init__()
        self.state, self.reason, self.asked = state, reason, []

    def status(self, run_id: str) -> JobRunStatus:
        self.asked.append(run_id)
        return JobRunStatus(state=reported_state(self.state), reason=self.reason)


class DyingRunner(FakeRunner):
    """The launch dies while starting the run (a crash, not a refusal)."""

    def start(self, spec):
        raise KeyboardInterrupt  # anything but JobStartError: the launch stops there


@pytest.fixture
def snapshot(ledger, store, clock):
    write_segments(store, "orders", 3, (0, 99), (100, 199))
    return register(ledger, store, clock, 99)


def restore(deps, runner, request_id="req-1"):
    request = LaunchRequest.model_validate(
        {"action": "restore", "stream": "orders", "partition": 3, "from": "latest"}
    )
    launch_deps = LaunchDeps(
        ledger=deps.ledger, jobs=deps.jobs, runner=runner, store=deps.store, clock=deps.clock
    )
    return launch(request, request_id=request_id, deps=launch_deps).job


def pins(ledger) -> list[str]:
    return [p.job_id for p in records(ledger)[99].pins]


def test_a_job_whose_end_was_never_reported_is_reconciled_and_unpinned(
    ledger, store, clock, snapshot
):
    # Given a submitted restore that failed on the runner, but whose event never came
    runner = ScriptedRunner()
    deps = gc_deps(ledger, store, clock, runner)
    job = restore(deps, runner)
    assert pins(ledger) == [job.job_id]
    runner.state, runner.reason = "FAILED", "Executor lost: out of memory"
    clock.advance(timedelta(hours=2))
    # When GC runs
    report = run_gc(deps, config=CONFIG)
    # Then the runner was asked, and the failure recorded as if the event had come
    assert runner.asked == [job.run_id]
    [stuck] = report.stuck_jobs
    assert (stuck.action, stuck.new_state) == ("reconciled", "FAILED")
    assert report.counts()["stuck_jobs_found"] == 1
    stored = deps.jobs.get(job.job_id)
    assert stored.state is JobState.FAILED and "out of memory" in stored.failure_reason
    assert pins(ledger) == []
    assert event_types(ledger)[-4:] == [
        "JobStateChanged",
        "JobFailed",
        "SnapshotUnpinned",
        "TrimPointAdvanced",  # the lineage pass, after the jobs
    ]


def test_a_job_that_never_started_is_failed_with_a_clear_reason(ledger, store, clock, snapshot):
    # Given a launch that died after pinning, before the runner accepted the run
    deps = gc_deps(ledger, store, clock, ScriptedRunner())
    with pytest.raises(KeyboardInterrupt):
        restore(deps, DyingRunner())
    [job] = deps.jobs.list_jobs().items
    assert (job.state, job.run_id, pins(ledger)) == (JobState.REQUESTED, None, [job.job_id])
    # When GC runs before, then after the limit
    assert run_gc(deps, config=CONFIG).stuck_jobs == []
    clock.advance(timedelta(hours=2))
    report = run_gc(deps, config=CONFIG)
    # Then it is FAILED with the reason, keeps no run id, and its pin is released
    [stuck] = report.stuck_jobs
    assert stuck.action == "failed_never_started"
    stored = deps.jobs.get(job.job_id)
    assert stored.state is JobState.FAILED and stored.run_id is None
    assert "never started" in stored.failure_reason and "new request id" in stored.failure_reason
    assert pins(ledger) == []


def test_a_lost_state_is_caught_up_and_a_job_still_running_is_counted_not_changed(
    ledger, store, clock, snapshot
):
    # Given a submitted job that the runner reports RUNNING (that event was lost)
    runner = ScriptedRunner("RUNNING")
    deps = gc_deps(ledger, store, clock, runner)
    job = restore(deps, runner)
    clock.advance(timedelta(minutes=30))
    assert run_gc(deps, config=CONFIG).stuck_jobs == []  # not over the limit yet
    clock.advance(timedelta(hours=2))
    # When GC runs: RUNNING is recorded
    report = run_gc(deps, config=CONFIG)
    assert [(s.action, s.new_state) for s in report.stuck_jobs] == [("reconciled", "RUNNING")]
    assert deps.jobs.get(job.job_id).state is JobState.RUNNING
    # When it runs again past the limit, the runner still saying RUNNING
    clock.advance(timedelta(hours=2))
    before = event_types(ledger)
    report = run_gc(deps, config=CONFIG)
    # Then it is counted as stuck, and nothing is written
    assert [(s.job_id, s.action) for s in report.stuck_jobs] == [(job.job_id, "still_running")]
    assert report.counts()["stuck_jobs_found"] == 1
    assert event_types(ledger) == before
    assert pins(ledger) == [job.job_id]


def test_a_dry_run_reports_stuck_jobs_and_asks_no_one(ledger, store, clock, snapshot):
    runner = ScriptedRunner("FAILED", "x")
    deps = gc_deps(ledger, store, clock, runner)
    restore(deps, runner)
    clock.advance(timedelta(hours=2))
    report = run_gc(deps, config=CONFIG, dry_run=True)
    assert [s.action for s in report.stuck_jobs] == ["found"]
    assert runner.asked == [] and pins(ledger) != []


def test_a_lineage_left_behind_by_a_crash_is_settled(ledger, store, clock, snapshot):
    # Given a job item recorded FAILED whose lineage never heard (a crash between writes)
    runner = ScriptedRunner()
    deps = gc_deps(ledger, store, clock, runner)
    job = restore(deps, runner)
    stored = deps.jobs.get(job.job_id)
    failed = stored.model_copy(
        update={"state": JobState.FAILED, "failure_reason": "boom", "version": stored.version + 1}
    )
    assert deps.jobs.replace(stored, failed)
    assert pins(ledger) == [job.job_id]
    # When GC passes over the lineage
    report = run_gc(deps, config=CONFIG)
    # Then the lineage records the end and releases the pin
    assert report.lineages[0].jobs_settled == [job.job_id]
    assert pins(ledger) == []
    assert ledger.get_head(ORDERS_3).active_jobs == {}


# --- issue 27 row 5: a run the launch started but never recorded is adopted -------------


class StartsThenDies(ScriptedRunner):
    """The runner accepts the run, then the launch dies before recording SUBMITTED."""

    def __init__(self, state: str = "RUNNING", reason: str | None = None) -> None:
        super().__init__(state, reason)
        self.dying = True

    def start(self, spec):
        run_id = super().start(spec)
        if self.dying:
            raise KeyboardInterrupt  # the crash: after StartJobRun, before SUBMITTED
        return run_id


class CannotTell(StartsThenDies):
    def find_run(self, job_id, *, created_after):
        raise StoreUnavailableError("EMR Serverless is busy (ThrottlingException): retry")


def crashed_after_start(deps, runner):
    with pytest.raises(KeyboardInterrupt):
        restore(deps, runner)
    [job] = deps.jobs.list_jobs().items
    assert (job.state, job.run_id, pins(deps.ledger)) == (JobState.REQUESTED, None, [job.job_id])
    return job


def test_a_running_run_whose_launch_died_is_adopted_and_keeps_its_pin(
    ledger, store, clock, snapshot
):
    # Given a launch that died after the runner accepted the run (no SUBMITTED recorded;
    # EMR's events lost), the run still RUNNING
    runner = StartsThenDies("RUNNING")
    deps = gc_deps(ledger, store, clock, runner)
    job = crashed_after_start(deps, runner)
    # When GC runs past the stuck-job limit
    clock.advance(timedelta(hours=2))
    report = run_gc(deps, config=CONFIG)
    # Then the run is adopted: recorded RUNNING with its run id, never failed; pin kept
    [stuck] = report.stuck_jobs
    assert (stuck.action, stuck.new_state, stuck.run_id) == (
        "adopted",
        "RUNNING",
        f"run-{job.job_id}",
    )
    assert report.counts()["stuck_jobs_reconciled"] == 1
    stored = deps.jobs.get(job.job_id)
    assert (stored.state, stored.run_id) == (JobState.RUNNING, f"run-{job.job_id}")
    assert stored.failure_reason is None
    assert pins(ledger) == [job.job_id]
    assert "JobFailed" not in event_types(ledger)
    # And when the run later ends, the usual path (GetJobRun by its run id) releases the pin
    runner.state, runner.reason = "SUCCESS", None
    clock.advance(timedelta(hours=2))
    report = run_gc(deps, config=CONFIG)
    assert [(s.action, s.new_state) for s in report.stuck_jobs] == [("reconciled", "SUCCESS")]
    assert runner.asked[-1] == f"run-{job.job_id}"
    assert pins(ledger) == []


def test_a_run_that_ended_while_unrecorded_is_adopted_in_its_end_state(
    ledger, store, clock, snapshot
):
    runner = StartsThenDies("FAILED", "Executor lost: out of memory")
    deps = gc_deps(ledger, store, clock, runner)
    job = crashed_after_start(deps, runner)
    clock.advance(timedelta(hours=2))
    [stuck] = run_gc(deps, config=CONFIG).stuck_jobs
    assert (stuck.action, stuck.new_state) == ("adopted", "FAILED")
    stored = deps.jobs.get(job.job_id)
    assert stored.state is JobState.FAILED and stored.run_id == f"run-{job.job_id}"
    assert "out of memory" in stored.failure_reason  # the run's reason, not "never started"
    assert pins(ledger) == []


def test_a_job_whose_run_cannot_be_looked_for_is_left_requested_with_its_pin(
    ledger, store, clock, snapshot
):
    runner = CannotTell()
    deps = gc_deps(ledger, store, clock, runner)
    job = crashed_after_start(deps, runner)
    clock.advance(timedelta(hours=2))
    report = run_gc(deps, config=CONFIG)
    [stuck] = report.stuck_jobs
    assert stuck.action == "error" and "ThrottlingException" in stuck.note
    assert deps.jobs.get(job.job_id).state is JobState.REQUESTED
    assert pins(ledger) == [job.job_id]


# --- the same on (moto's) EMR Serverless: ListJobRuns under the EMR adapter -------------

ROLE_ARN = "arn:aws:iam::123456789012:role/snapledger-job"


class EmrStartsThenDies(EmrServerlessRunner):
    """The EMR adapter, but the launch dies right after StartJobRun answered."""

    dying = True

    def start(self, spec):
        run_id = super().start(spec)
        if self.dying:
            raise KeyboardInterrupt
        return run_id


@pytest.fixture
def emr():
    """A moto account: the ledger table, and an EMR Serverless application."""
    with moto_ledger() as ledger:
        client = boto3.client("emr-serverless", region_name="us-east-1")
        app = client.create_application(name="spark", releaseLabel="emr-7.0.0", type="SPARK")
        yield ledger, client, app["applicationId"]


def set_run_state(application_id: str, run_id: str, state: str) -> None:
    """moto's runs are SUCCESS from the start: make one RUNNING (what EMR would say)."""
    from moto.emrserverless.models import emrserverless_backends

    backend = emrserverless_backends["123456789012"]["us-east-1"]
    [run] = [r for r in backend.job_runs[application_id] if r.id == run_id]
    run.state = state


def test_on_emr_serverless_a_run_is_found_by_its_name_and_adopted(emr, store, clock):
    ledger, client, application_id = emr
    write_segments(store, "orders", 3, (0, 99), (100, 199))
    register(ledger, store, clock, 99)
    runner = EmrStartsThenDies(application_id, ROLE_ARN, "s3://b/job.py", client=client)
    deps = gc_deps(ledger, store, clock, runner)
    # Given a launch that died after StartJobRun, its run RUNNING on EMR Serverless
    job = crashed_after_start(deps, runner)
    [run] = client.list_job_runs(applicationId=application_id)["jobRuns"]
    assert run["name"] == job.job_id
    set_run_state(application_id, run["id"], "RUNNING")
    # and another request whose launch died before StartJobRun (no run at all)
    with pytest.raises(KeyboardInterrupt):
        restore(deps, DyingRunner(), request_id="req-2")
    # When GC runs past the limit
    clock.advance(timedelta(hours=2))
    report = run_gc(deps, config=CONFIG)
    # Then the first is adopted with EMR's run id and keeps its pin; the second is failed
    actions = {s.job_id: (s.action, s.new_state) for s in report.stuck_jobs}
    other = next(j for j in actions if j != job.job_id)
    assert actions == {
        job.job_id: ("adopted", "RUNNING"),
        other: ("failed_never_started", "FAILED"),
    }
    stored = deps.jobs.get(job.job_id)
    assert (stored.state, stored.run_id) == (JobState.RUNNING, run["id"])
    assert pins(ledger) == [job.job_id]
    assert deps.jobs.get(other).state is JobState.FAILED


def test_the_emr_adapter_lists_from_the_request_time_and_prefers_a_running_run(emr):
    _, client, application_id = emr
    runner = EmrServerlessRunner(application_id, ROLE_ARN, "s3://b/job.py", client=client)
    driver = {"sparkSubmit": {"entryPoint": "s3://b/job.py"}}
    runs = [
        client.start_job_run(
            applicationId=application_id,
            clientToken=f"t{i}",
            executionRoleArn=ROLE_ARN,
            name=name,
            jobDriver=driver,
        )["jobRunId"]
        for i, name in enumerate(["restore-a", "restore-a", "restore-b"])
    ]
    set_run_state(application_id, runs[1], "RUNNING")
    long_ago = datetime(2000, 1, 1, tzinfo=UTC)
    found = runner.find_run("restore-a", created_after=long_ago)
    assert (found.run_id, found.state) == (runs[1], "RUNNING")
    assert runner.find_run("restore-c", created_after=long_ago) is None
    # runs created before the window are not looked at
    assert runner.find_run("restore-a", created_after=datetime.now(UTC) + timedelta(days=1)) is None
