"""Stuck jobs: reconciled with the runner; never-started ones failed; pins released."""

from __future__ import annotations

from datetime import timedelta

import pytest

from snapledger.gc_settings import GcConfig
from snapledger.models.jobs import JobState
from snapledger.models.ledger import LineageId
from snapledger.models.requests import LaunchRequest
from snapledger.ports import JobRunStatus
from snapledger.services.gc import run_gc
from snapledger.services.launch import LaunchDeps, launch
from tests.gc.support import event_types, gc_deps, records, register
from tests.support import FakeRunner, write_segments

ORDERS_3 = LineageId(stream="orders", partition=3)
CONFIG = GcConfig(stuck_job_hours=1)


class ScriptedRunner(FakeRunner):
    """Starts like FakeRunner; reports whatever state it is told."""

    def __init__(self, state: str = "RUNNING", reason: str | None = None) -> None:
        super().__init__()
        self.state, self.reason, self.asked = state, reason, []

    def status(self, run_id: str) -> JobRunStatus:
        self.asked.append(run_id)
        return JobRunStatus(state=self.state, reason=self.reason)


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
