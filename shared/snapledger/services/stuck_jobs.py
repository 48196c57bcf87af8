"""Jobs whose state events never came: reconciled with the runner (EMR's are best effort).

A job not terminal for longer than the limit (by its last update) is *stuck*:

- with a run id, the runner is asked (``JobRunner.status``, i.e. ``GetJobRun``) and a
  state it has moved to is recorded exactly as a delivered event would be
  (``record_job_state``: the job item, each lineage, pins released when it ended);
- still REQUESTED with no run id, the launch stopped before it recorded the run: the
  runner is asked for a run of the job (``JobRunner.find_run``, i.e. ``ListJobRuns`` from
  the job's request time, matched by the run's name, its job id). A run it finds is
  adopted: its state is recorded as a delivered event would be (SUBMITTED, RUNNING, ...
  keep the pins; a terminal state releases them). Only when the runner answers that there
  is no run is the job failed "never started" and its pins released; when it cannot tell
  (an error), the job is left as it is, pins kept, for the next run.

A job item that is already terminal while a lineage's HEAD still lists it active (a crash
between the two writes of ``record_job_state``) is settled by replaying its final state
on that lineage (``settle_lineage_jobs``, called from the lineage pass).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from snapledger.core.jobs import advance_job
from snapledger.errors import SnapledgerError
from snapledger.gc_settings import GcConfig
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.models.jobs import JobRecord, JobState
from snapledger.models.ledger import Head
from snapledger.ports import FoundJobRun
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_report import StuckJob
from snapledger.services.job_state import record_job_state, update_job

NO_RUN_ID = ""  # record_job_state's run id for a job the runner never accepted
#: A run is looked for among those created since its job's request less this (the
#: function's and the runner's clocks may differ; the run is created after the request).
RUN_LOOKUP_MARGIN = timedelta(minutes=15)


def reconcile_stuck_jobs(
    deps: GcDeps[LayoutStrategy],
    config: GcConfig,
    *,
    stream: str | None,
    dry_run: bool,
    budget: Budget,
) -> list[StuckJob]:
    """Find the stuck jobs (of ``stream``, or all) and, unless a dry run, reconcile them."""
    found: list[StuckJob] = []
    cursor: str | None = None
    while not budget.exhausted():
        page = deps.jobs.list_jobs(limit=config.page_size, cursor=cursor)
        now = deps.clock.now()
        for job in page.items:
            if job.terminal or (stream is not None and job.stream != stream):
                continue
            if budget.exhausted():
                return found  # the next run finds the rest
            stuck_for = now - job.updated_at
            if stuck_for <= config.stuck_job_after:
                continue
            entry = StuckJob(
                job_id=job.job_id,
                stream=job.stream,
                state=job.state,
                run_id=job.run_id,
                stuck_for_hours=stuck_for.total_seconds() / 3600,
                action="found",
            )
            if not dry_run:
                try:
                    _reconcile(deps, job, entry, now)
                except SnapledgerError as exc:
                    entry.action, entry.note = "error", str(exc)
            found.append(entry)
        if page.cursor is None:
            break
        cursor = page.cursor
    return found


def settle_lineage_jobs(
    deps: GcDeps[LayoutStrategy], head: Head, *, dry_run: bool, budget: Budget | None = None
) -> list[str]:
    """Replay the final state of jobs HEAD lists as active but whose job item has ended
    (until ``budget`` runs out: the next run settles the rest)."""
    settled: list[str] = []
    for job_id in sorted(head.active_jobs):
        if budget is not None and budget.exhausted():
            return settled
        job = deps.jobs.get(job_id)
        if job is None or not job.terminal:
            continue
        settled.append(job_id)
        if not dry_run:
            record_job_state(
                run_id=job.run_id or NO_RUN_ID,
                job_name=job.job_id,
                state=job.state,
                reason=job.failure_reason,
                jobs=deps.jobs,
                ledger=deps.ledger,
                clock=deps.clock,
            )
    return settled


def _reconcile(
    deps: GcDeps[LayoutStrategy], job: JobRecord, entry: StuckJob, now: datetime
) -> None:
    if job.run_id is None:
        if job.state is not JobState.REQUESTED:
            entry.note = f"{job.state.value} without a run id: left for an operator"
            return
        if deps.runner is not None:
            since = job.requested_at - RUN_LOOKUP_MARGIN
            found = deps.runner.find_run(job.job_id, created_after=since)
            if found is not None:
                _adopt(deps, job, found, entry)
                return
        _fail_never_started(deps, job, entry, now)
        return
    if deps.runner is None:
        entry.note = "no job runner configured: reported only"
        return
    status = deps.runner.status(job.run_id)
    if status.state is job.state:
        entry.action, entry.note = "still_running", f"the runner still reports {status.state}"
        return
    record_job_state(
        run_id=job.run_id,
        job_name=job.job_id,
        state=status.state,
        reason=status.reason,
        jobs=deps.jobs,
        ledger=deps.ledger,
        clock=deps.clock,
    )
    entry.action, entry.new_state = "reconciled", status.state


def _adopt(deps: GcDeps[LayoutStrategy], job: JobRecord, run: FoundJobRun, entry: StuckJob) -> None:
    """The launch stopped after the runner accepted ``run``: record it as the job's run, in
    the state the runner reports (pins kept while it runs, released when it has ended)."""
    result = record_job_state(
        run_id=run.run_id,
        job_name=job.job_id,
        state=run.state,
        reason=run.reason,
        jobs=deps.jobs,
        ledger=deps.ledger,
        clock=deps.clock,
    )
    stored = deps.jobs.get(job.job_id)
    if stored is None or stored.run_id != run.run_id:
        entry.action = "error"
        entry.note = (
            f"found run {run.run_id} ({run.state}) but could not record it as this job's "
            f"run ({result.note or 'the job changed'}): left, pins kept, for the next run"
        )
        return
    entry.action, entry.new_state, entry.run_id = "adopted", run.state, run.run_id
    entry.note = (
        f"the launch stopped after the runner accepted run {run.run_id} ({run.state}): "
        "recorded as this job's run"
    )


def _fail_never_started(
    deps: GcDeps[LayoutStrategy], job: JobRecord, entry: StuckJob, now: datetime
) -> None:
    reason = (
        f"never started: requested at {job.requested_at.isoformat()} and still without a run "
        f"after {entry.stuck_for_hours:.1f}h (the launch stopped before the runner accepted "
        "it); launch it again with a new request id"
    )

    def fail(current: JobRecord, _: datetime) -> JobRecord | None:
        if current.version != job.version:
            return None  # it changed since it was found stuck: look again next run
        # Dated when the sweep found it stuck, as the reason says.
        return advance_job(current, JobState.FAILED, now, reason=reason)

    _, failed = update_job(deps.jobs, job, deps.clock, fail)
    if not failed:
        entry.note = "the job changed meanwhile: left for the next run"
        return
    # The job item is FAILED; now each lineage records it and releases the pins. A crash
    # in between is settled by the lineage pass (settle_lineage_jobs).
    record_job_state(
        run_id=NO_RUN_ID,
        job_name=job.job_id,
        state=JobState.FAILED,
        reason=reason,
        jobs=deps.jobs,
        ledger=deps.ledger,
        clock=deps.clock,
    )
    entry.action, entry.new_state, entry.note = "failed_never_started", "FAILED", reason
