"""Jobs: bootstrap, restore and compaction runs, and the states EMR Serverless reports."""

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from snapledger.job_kinds import JobKind  # declared with its row there
from snapledger.models.base import Frozen


class JobState(StrEnum):
    """snapledger's REQUESTED, then every state EMR Serverless documents."""

    REQUESTED = "REQUESTED"  # recorded by launch, not yet accepted by the runner
    SUBMITTED = "SUBMITTED"
    QUEUED = "QUEUED"
    PENDING = "PENDING"
    SCHEDULED = "SCHEDULED"
    RUNNING = "RUNNING"
    CANCELLING = "CANCELLING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


TERMINAL_STATES = frozenset({JobState.SUCCESS, JobState.FAILED, JobState.CANCELLED})

#: How far along a job is: a state event of a lower rank than the job's is stale (a
#: late or reordered delivery) and changes nothing.
STATE_RANK = {
    JobState.REQUESTED: 0,
    JobState.SUBMITTED: 1,
    JobState.QUEUED: 2,
    JobState.PENDING: 3,
    JobState.SCHEDULED: 4,
    JobState.RUNNING: 5,
    JobState.CANCELLING: 6,
    JobState.SUCCESS: 7,
    JobState.FAILED: 7,
    JobState.CANCELLED: 7,
}


def parse_state(raw: str) -> JobState | None:
    """The state, or None for a state this version does not know (recorded, not acted on)."""
    try:
        return JobState(raw.upper())
    except ValueError:
        return None


class PartitionPlan(Frozen):
    """What a job does to one partition: from which base, up to which LSN."""

    partition: int = Field(ge=0)
    base_snapshot_id: str | None = None
    base_lsn: int | None = Field(default=None, ge=0)
    base_prefix: str | None = None
    target_lsn: int = Field(ge=0)
    epoch: int = Field(default=0, ge=0, description="The lineage's writer epoch at launch")


class JobTransition(Frozen):
    state: str
    at: datetime
    reason: str | None = None


class WorkerSize(Frozen):
    """One EMR Serverless worker: vCPU, memory and disk."""

    vcpu: int = Field(ge=1)
    memory_gb: int = Field(ge=1)
    disk_gb: int = Field(ge=1)


class JobResources(Frozen):
    """The workers a job run was started with, sized from its input (the EMR runner's
    rule, ``snapledger.core.job_sizing``); a job without it ran on the application's or
    the local session's defaults."""

    driver: WorkerSize
    executor: WorkerSize
    executors: int = Field(ge=0)
    shuffle_partitions: int = Field(ge=1)


class JobRecord(Frozen):
    """The ``JOB#{job_id}`` item: one job over one or more partitions of a stream."""

    job_id: str
    request_id: str
    job_kind: JobKind
    stream: str
    partitions: tuple[PartitionPlan, ...]
    state: JobState = JobState.REQUESTED
    run_id: str | None = None
    resources: JobResources | None = None  # set with the run id, when the runner sizes it
    failure_reason: str | None = None
    requested_at: datetime
    updated_at: datetime
    transitions: tuple[JobTransition, ...] = ()
    version: int = Field(default=1, ge=1)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES
