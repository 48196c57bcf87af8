"""Jobs: bootstrap, restore and compaction runs, and the states EMR Serverless reports.

A job's kind (``JobKind``, job_kinds.py) and state (``JobState``) are typed in every model
that names them. A command that asks for a job names a kind this release has
(``JobKind``: any other is refused); what a runner reports, and what the ledger recorded,
may name one it does not (``ReportedState``, ``RecordedKind``): a newer EMR Serverless
state, or a kind an earlier or later release wrote. That value is kept as it is, an
*unknown* member (``known`` False) that is recorded and read back verbatim, never acted on.
"""

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Annotated, TypeVar

from pydantic import Field, PlainSerializer, PlainValidator

from snapledger.job_kinds import JobKind  # declared with its row there
from snapledger.models.base import Frozen

E = TypeVar("E", bound=StrEnum)


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

    @property
    def rank(self) -> int | None:
        """How far along a job in this state is (``STATE_RANK``); None for a state this
        version does not know, which is recorded and never compared."""
        return STATE_RANK.get(self)

    def is_stale_for(self, current: "JobState") -> bool:
        """A report of this state is stale for a job in ``current`` (a late or reordered
        delivery): both known, and this one of a rank at or below it."""
        rank, current_rank = self.rank, current.rank
        return rank is not None and current_rank is not None and rank <= current_rank


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


def as_reported(kind: type[E], value: str, normal: Callable[[str], str] = str) -> E:
    """The member of ``kind`` that ``value`` names (compared after ``normal``), or an
    *unknown* member holding ``value`` itself, so it is kept and written back unchanged."""
    for member in kind:
        if member.value == normal(value):
            return member
    unknown = str.__new__(kind, value)
    unknown._name_ = "UNKNOWN"
    unknown._value_ = value
    return unknown


def is_known(member: StrEnum) -> bool:
    """False for the unknown member ``as_reported`` made of a value this version lacks."""
    return member.value in type(member)._value2member_map_


def reported_state(raw: str) -> JobState:
    """A state as a runner reports it: its member (EMR Serverless spells them in capitals;
    any case is read), or an unknown one, recorded and never acted on."""
    return as_reported(JobState, raw, str.upper)


def _lenient(kind: type[E], parse: Callable[[str], E]) -> PlainValidator:
    def validate(value: object) -> E:
        if isinstance(value, kind):
            return value
        if isinstance(value, str):
            return parse(value)
        raise ValueError(f"a {kind.__name__} is a string, not {type(value).__name__}")

    # Published as a string, not as the enum: a value this version lacks is valid.
    return PlainValidator(validate, json_schema_input_type=str)


#: Written as the value it holds, known or not (the enum's own serializer knows only members).
_AS_VALUE = PlainSerializer(lambda member: member.value, return_type=str)
#: A state a runner reported, or the ledger recorded: a ``JobState``, unknown ones kept.
ReportedState = Annotated[JobState, _lenient(JobState, reported_state), _AS_VALUE]
#: A kind the ledger recorded (an event, HEAD's active job): a ``JobKind``, unknown kept.
RecordedKind = Annotated[
    JobKind, _lenient(JobKind, lambda raw: as_reported(JobKind, raw)), _AS_VALUE
]


class PartitionPlan(Frozen):
    """What a job does to one partition: from which base, up to which LSN."""

    partition: int = Field(ge=0)
    base_snapshot_id: str | None = None
    base_lsn: int | None = Field(default=None, ge=0)
    base_prefix: str | None = None
    target_lsn: int = Field(ge=0)
    epoch: int = Field(default=0, ge=0, description="The lineage's writer epoch at launch")


class JobTransition(Frozen):
    state: ReportedState
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
