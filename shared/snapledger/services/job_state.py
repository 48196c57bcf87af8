"""Record a job run's state change (EMR Serverless events, or the local runner's).

Events are best effort and may come twice, late or out of order: a state at or below the
job's current rank changes nothing; a terminal state unpins the job's base snapshots and
records the failure reason. Unknown future states are recorded, never acted on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from snapledger.clock import Clock
from snapledger.models.commands import RecordJobState
from snapledger.models.jobs import (
    STATE_RANK,
    JobRecord,
    JobTransition,
    PartitionPlan,
    parse_state,
)
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
    """Apply one reported state of run ``run_id`` to its job and its lineages."""
    job = (jobs.get(job_name) if job_name else None) or jobs.find_by_run_id(run_id)
    if job is None:
        return JobStateResult(None, state, False, f"run {run_id} is not a snapledger job")
    if job.run_id is not None and job.run_id != run_id:
        return JobStateResult(job.job_id, state, False, f"run {run_id} is not this job's run")
    job, changed = _update_job(
        job, run_id=run_id, raw_state=state, reason=reason, jobs=jobs, clock=clock
    )
    # The lineages are updated even when the job item already was: a crash between the
    # two writes then converges on the redelivery (each lineage command is idempotent).
    record_on_lineages(
        ledger, job, job.partitions, state=state, run_id=run_id, reason=reason, clock=clock
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
    state: str,
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


def _update_job(
    job: JobRecord, *, run_id: str, raw_state: str, reason: str | None, jobs: JobStore, clock: Clock
) -> tuple[JobRecord, bool]:
    for _ in range(MAX_JOB_UPDATE_ATTEMPTS):
        new_state = parse_state(raw_state)
        seen = any(t.state == raw_state for t in job.transitions)
        if seen or job.terminal:
            return job, False
        if new_state is not None and STATE_RANK[new_state] <= STATE_RANK[job.state]:
            return job, False
        now = clock.now()
        update: dict[str, object] = {
            "run_id": job.run_id or run_id,
            "updated_at": now,
            "transitions": (
                *job.transitions,
                JobTransition(state=raw_state, at=now, reason=reason),
            ),
            "version": job.version + 1,
        }
        if new_state is not None:
            update["state"] = new_state
            if reason and new_state.value in ("FAILED", "CANCELLED"):
                update["failure_reason"] = reason
        updated = job.model_copy(update=update)
        if jobs.replace(job, updated):
            return updated, True
        fresh = jobs.get(job.job_id)
        if fresh is None:
            return job, False
        job = fresh
    return job, False
