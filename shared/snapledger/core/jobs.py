"""Job rules: on a lineage, requesting a job (pinning its base, one exclusive job at a
time) and recording its states; on the job record, its one transition (``advance_job``)."""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from snapledger.core.job_sizing import JobSize, Worker
from snapledger.core.state import LineageState, Sequencer
from snapledger.errors import InvalidRequestError, Suggestion
from snapledger.job_kinds import JOB_KINDS, JobKind
from snapledger.models.commands import RecordJobState, RequestJob
from snapledger.models.events import (
    JobFailed,
    JobRequested,
    JobStateChanged,
    JobSucceeded,
    LedgerEvent,
    SnapshotPinned,
    SnapshotUnpinned,
)
from snapledger.models.jobs import (
    TERMINAL_STATES,
    JobRecord,
    JobResources,
    JobState,
    JobTransition,
    WorkerSize,
    is_known,
)
from snapledger.models.ledger import (
    FINISHED_JOBS_KEPT,
    ActiveJob,
    Head,
    Pin,
    SnapshotRecord,
    SnapshotStatus,
    snapshot_sort_key,
)


def advance_job(
    job: JobRecord,
    state: JobState,
    now: datetime,
    *,
    run_id: str | None = None,
    reason: str | None = None,
    resources: JobResources | None = None,
) -> JobRecord | None:
    """The job record once its run reports ``state`` (as reported: a state this version
    does not know is recorded, never acted on), or None when that changes nothing.

    A terminal job never changes. A state already seen, or of a rank at or below the
    job's (a late or reordered report), moves nothing; it still fills in the run id and
    the resources the job lacks (a launch recording SUBMITTED after the runner's RUNNING
    arrived). A FAILED or CANCELLED state's reason is the job's failure reason.
    """
    if job.terminal:
        return None
    seen = any(t.state == state for t in job.transitions)
    moves = not seen and not state.is_stale_for(job.state)
    update: dict[str, object] = {}
    if job.run_id is None and run_id is not None:
        update["run_id"] = run_id
    if job.resources is None and resources is not None:
        update["resources"] = resources
    if moves:
        update["transitions"] = (
            *job.transitions,
            JobTransition(state=state, at=now, reason=reason),
        )
        if is_known(state):
            update["state"] = state
            if reason and state in (JobState.FAILED, JobState.CANCELLED):
                update["failure_reason"] = reason
    elif not update:
        return None
    return job.model_copy(update={**update, "updated_at": now, "version": job.version + 1})


def check_exclusive(head: Head, kind: JobKind) -> None:
    """Raise InvalidRequestError if ``kind`` runs one per lineage and HEAD names one
    running (``compaction_job_id``: set while such a job runs)."""
    running = head.compaction_job_id
    if running is not None and JOB_KINDS[kind].one_per_lineage:
        query = Suggestion("query", "job", {"job_id": running})
        raise InvalidRequestError(
            f"{head.lineage} already runs job {running}; a {kind} runs alone on its "
            f"lineage: wait for that job to end ({query.text}), then launch again",
            suggestion=query,
        )


def decide_request_job(state: LineageState, cmd: RequestJob, now: datetime) -> list[LedgerEvent]:
    head = state.head
    if cmd.job_id in head.active_jobs or cmd.job_id in head.finished_jobs:
        return []  # already requested: launch is idempotent by request id
    check_exclusive(head, cmd.job_kind)
    ev = Sequencer(state, cmd.command_id, now)
    events: list[LedgerEvent] = [
        JobRequested(
            **ev.next(),
            job_id=cmd.job_id,
            job_kind=cmd.job_kind,
            base_snapshot_id=cmd.base_snapshot_id,
            base_lsn=cmd.base_lsn,
            target_lsn=cmd.target_lsn,
        )
    ]
    if cmd.base_snapshot_id is not None and cmd.base_lsn is not None:
        base = state.snapshots.get(snapshot_sort_key(cmd.base_lsn, cmd.base_snapshot_id))
        if base is None or base.status is not SnapshotStatus.REGISTERED:
            status = "unknown" if base is None else base.status.value
            raise InvalidRequestError(
                f"snapshot {cmd.base_snapshot_id} of {head.lineage} is {status}, so it cannot be "
                "pinned for a job: pick a REGISTERED snapshot (list the lineage's snapshots)"
            )
        events.append(
            SnapshotPinned(
                **ev.next(), snapshot_id=base.snapshot_id, lsn=base.lsn, job_id=cmd.job_id
            )
        )
    return events


def decide_job_state(state: LineageState, cmd: RecordJobState, now: datetime) -> list[LedgerEvent]:
    active = state.head.active_jobs.get(cmd.job_id)
    if active is None or cmd.state == active.state:
        return []  # not a job of this lineage, already ended, or a repeat: a late delivery
    new_state = cmd.state
    if new_state.is_stale_for(active.state):
        return []  # stale or repeated: the job is already at or past this state
    ev = Sequencer(state, cmd.command_id, now)
    events: list[LedgerEvent] = [
        JobStateChanged(**ev.next(), job_id=cmd.job_id, state=cmd.state, run_id=cmd.run_id)
    ]
    if new_state not in TERMINAL_STATES:
        return events
    if new_state is JobState.SUCCESS:
        events.append(JobSucceeded(**ev.next(), job_id=cmd.job_id))
    else:
        events.append(
            JobFailed(
                **ev.next(),
                job_id=cmd.job_id,
                state=cmd.state,
                reason=cmd.reason or f"the job ended {cmd.state} without a reason",
            )
        )
    if active.base_snapshot_id is not None and active.base_lsn is not None:
        base = state.snapshots.get(snapshot_sort_key(active.base_lsn, active.base_snapshot_id))
        if base is not None and any(p.job_id == cmd.job_id for p in base.pins):
            events.append(
                SnapshotUnpinned(
                    **ev.next(), snapshot_id=base.snapshot_id, lsn=base.lsn, job_id=cmd.job_id
                )
            )
    return events


def evolve_job(
    head: Head,
    snapshots: dict[str, SnapshotRecord],
    event: JobRequested
    | JobStateChanged
    | JobSucceeded
    | JobFailed
    | SnapshotPinned
    | SnapshotUnpinned,
) -> Head:
    match event:
        case JobRequested():
            job = ActiveJob(
                kind=event.job_kind,
                state=JobState.REQUESTED,
                base_snapshot_id=event.base_snapshot_id,
                base_lsn=event.base_lsn,
                target_lsn=event.target_lsn,
            )
            update: dict[str, object] = {"active_jobs": {**head.active_jobs, event.job_id: job}}
            # A kind this release lacks (recorded by another) never ran alone here.
            if is_known(event.job_kind) and JOB_KINDS[event.job_kind].one_per_lineage:
                update["compaction_job_id"] = event.job_id
            head = head.model_copy(update=update)
        case JobStateChanged():
            active = head.active_jobs[event.job_id]
            moved = active.model_copy(update={"state": event.state})
            head = head.model_copy(
                update={"active_jobs": {**head.active_jobs, event.job_id: moved}}
            )
        case JobSucceeded() | JobFailed():
            remaining = {k: v for k, v in head.active_jobs.items() if k != event.job_id}
            finished = (*head.finished_jobs, event.job_id)[-FINISHED_JOBS_KEPT:]
            update = {"active_jobs": remaining, "finished_jobs": finished}
            if head.compaction_job_id == event.job_id:
                update["compaction_job_id"] = None
            head = head.model_copy(update=update)
        case SnapshotPinned() | SnapshotUnpinned():
            key = snapshot_sort_key(event.lsn, event.snapshot_id)
            record = snapshots[key]
            pins = tuple(p for p in record.pins if p.job_id != event.job_id)
            if isinstance(event, SnapshotPinned):
                pins = (*pins, Pin(job_id=event.job_id, at=event.at))
            snapshots[key] = record.model_copy(update={"pins": pins, "version": event.seq})
        case _:
            assert_never(event)
    return head


def recorded_resources(size: JobSize) -> JobResources:
    """The workers a job run was started with, as its record keeps them."""
    return JobResources(
        driver=_worker(size.driver),
        executor=_worker(size.executor),
        executors=size.executors,
        shuffle_partitions=size.shuffle_partitions,
    )


def _worker(worker: Worker) -> WorkerSize:
    return WorkerSize(vcpu=worker.vcpu, memory_gb=worker.memory_gb, disk_gb=worker.disk_gb)
