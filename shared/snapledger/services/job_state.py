"""Record a job run's state change (EMR Serverless events, or the local runner's).

Events are best effort and may come twice, late or out of order: a state at or below the
job's current rank changes nothing; a terminal state unpins the job's base snapshots and
records the failure reason. Unknown future states are recorded, never acted on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from snapledger.clock import Clock
from snapledger.core.jobs import advance_job
from snapledger.models.commands import RecordJobState
from snapledger.models.jobs import JobRecord, JobState, PartitionPlan, reported_state
from snapledger.models.ledger import snapshot_sort_key
from snapledger.ports import JobStore, LedgerStore
from snapledger.services.commands import execute

MAX_JOB_UPDATE_ATTEMPTS = 10


@dataclass(frozen=True)
class JobStateResult:
    job_id: str | None
    state: str
    recorded: bool  # False: stale, repeated, or not one of ours
    note: str = ""
    stream: str | None = None  # the job's (None: not one of ours); not in the answer

    def to_dict(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "state": self.state,
            "recorded": self.recorded,
            "note": self.note,
        }


def record_job_state(
    *,
    run_id: str,
    job_name: str | None,
    state: str,
    reason: str | None,
    jobs: JobStore,
    ledger: LedgerStore,
    clock: Clock,
) -> JobStateResult:
    """Apply one reported state of run ``run_id`` to its job and its lineages (``state`` as
    the runner spells it: one this version does not know is recorded, never acted on)."""
    reported = reported_state(state)
    job = (jobs.get(job_name) if job_name else None) or jobs.find_by_run_id(run_id)
    if job is None:
        return JobStateResult(None, state, False, f"run {run_id} is not a snapledger job")
    if job.run_id is not None and job.run_id != run_id:
        return JobStateResult(job.job_id, state, False, f"run {run_id} is not this job's run")
    job, changed = update_job(
        jobs,
        job,
        clock,
        lambda current, now: advance_job(current, reported, now, run_id=run_id, reason=reason),
    )
    # The lineages are updated even when the job item already was: a crash between the
    # two writes then converges on the redelivery (each lineage command is idempotent).
    # An ended job's lineages get its recorded end, never a late report that contradicts
    # it (a SUCCESS after a dead local process was recorded FAILED, or the reverse).
    if job.terminal:
        reported, reason = job.state, job.failure_reason
    record_on_lineages(
        ledger, job, job.partitions, state=reported, run_id=run_id, reason=reason, clock=clock
    )
    note = "" if changed else "stale"
    return JobStateResult(job.job_id, job.state.value, changed, note, stream=job.stream)


def base_keys(plan: PartitionPlan) -> tuple[str, ...]:
    """The sort key of the plan's base snapshot, if it has one (what its pin is on)."""
    if plan.base_snapshot_id is None or plan.base_lsn is None:
        return ()
    return (snapshot_sort_key(plan.base_lsn, plan.base_snapshot_id),)


def record_on_lineages(
    ledger: LedgerStore,
    job: JobRecord,
    plans: Iterable[PartitionPlan],
    *,
    state: JobState,
    clock: Clock,
    run_id: str | None = None,
    reason: str | None = None,
) -> None:
    """Record a state of ``job`` on each of its lineages (idempotent per lineage)."""
    for plan in plans:
        execute(
            ledger,
            RecordJobState(
                stream=job.stream,
                partition=plan.partition,
                job_id=job.job_id,
                state=state,
                run_id=run_id,
                reason=reason,
            ),
            clock.now(),
            snapshot_keys=base_keys(plan),
        )


def update_job(
    jobs: JobStore,
    job: JobRecord,
    clock: Clock,
    change: Callable[[JobRecord, datetime], JobRecord | None],
) -> tuple[JobRecord, bool]:
    """Write ``change`` of the job item, conditioned on the version it was read at; on a
    lost race, read it again and apply ``change`` to that. The job as it now is, and
    whether this call changed it (False: ``change`` had nothing to do, the item is gone,
    or the races outlasted the attempts)."""
    current = job
    for _ in range(MAX_JOB_UPDATE_ATTEMPTS):
        updated = change(current, clock.now())
        if updated is None:
            return current, False
        if jobs.replace(current, updated):
            return updated, True
        fresh = jobs.get(current.job_id)
        if fresh is None:
            return current, False
        current = fresh
    return current, False
