"""Job ports: running a data-plane job (EMR Serverless in AWS, a local SparkSession on one
machine) and the job items the ledger keeps for it."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from snapledger.ports.ledger import Page

if TYPE_CHECKING:
    from snapledger.core.job_sizing import JobSize, PartitionInput
    from snapledger.job_kinds import JobKind
    from snapledger.models.jobs import JobRecord, JobState, PartitionPlan


@dataclass(frozen=True)
class JobRunSpec:
    """What the runner needs to start a job: its id (the client token) and arguments,
    and what it reads, by partition (its base's and its changelog's bytes, which size it
    on EMR Serverless); empty when unknown: the application's default sizes. ``size``: the
    workers the launch chose, once (the runner's ``size``); None: the runner's defaults."""

    job_id: str
    kind: JobKind
    stream: str
    root: str
    partitions: builtins.list[PartitionPlan]
    inputs: dict[int, PartitionInput] = field(default_factory=dict)
    size: JobSize | None = None


@dataclass(frozen=True)
class JobRunStatus:
    state: JobState  # as reported: models.jobs.reported_state
    reason: str | None = None


@dataclass(frozen=True)
class FoundJobRun:
    """A run the runner holds for a job: its id and its current state."""

    run_id: str
    state: JobState
    reason: str | None = None


class JobRunner(Protocol):
    """Runs data-plane jobs: EMR Serverless in AWS, a local SparkSession on one machine."""

    def start(self, spec: JobRunSpec) -> str:
        """Start the job and return its run id; the same ``job_id`` starts it only once."""
        ...

    def size(self, spec: JobRunSpec) -> JobSize | None:
        """The workers this runner gives the job, from what it reads; None when it runs
        every job on its defaults. The launch asks once and passes the answer to ``start``
        in ``spec.size``, which ``start`` uses as it is."""
        ...

    def status(self, run_id: str) -> JobRunStatus:
        """The run's current state and, when it failed, why."""
        ...

    def find_run(self, job_id: str, *, created_after: datetime) -> FoundJobRun | None:
        """The run ``start`` created for ``job_id`` (named by it) no earlier than
        ``created_after``, or None when there is none (one still running first, if several).
        Raises (a ``SnapledgerError``) when it cannot tell: nothing may be concluded then."""
        ...


class JobStore(Protocol):
    """Job items (``JOB#{job_id}``): each update conditioned on the version read."""

    def create(self, job: JobRecord) -> JobRecord:
        """Create the job, or return the one already stored under its id."""
        ...

    def get(self, job_id: str) -> JobRecord | None: ...

    def replace(self, old: JobRecord, new: JobRecord) -> bool:
        """Write ``new`` if the stored version is still ``old.version``; False if not."""
        ...

    def find_by_run_id(self, run_id: str) -> JobRecord | None: ...

    def list_jobs(self, *, limit: int = 100, cursor: str | None = None) -> Page[JobRecord]: ...
