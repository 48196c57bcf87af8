"""The job runner of a function deployed without the EMR Serverless settings: it starts
nothing and says which settings would let it (``snapledger.runtime`` builds it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapledger.errors import JobStartError

if TYPE_CHECKING:
    from datetime import datetime

    from snapledger.ports import FoundJobRun, JobRunSpec, JobRunStatus


class NoJobRunner:
    """The runner of a function deployed without the EMR Serverless settings."""

    def start(self, spec: JobRunSpec) -> str:
        raise JobStartError(
            "this function is not configured to start jobs: set SNAPLEDGER_EMR_APPLICATION_ID, "
            "SNAPLEDGER_EMR_JOB_ROLE_ARN and SNAPLEDGER_JOB_ENTRYPOINT"
        )

    def size(self, spec: JobRunSpec) -> None:
        return None

    def status(self, run_id: str) -> JobRunStatus:
        # Nothing to ask: callers keep what the event said (no reason is better than a
        # reason that describes this function's configuration instead of the job).
        # Imported here: the jobs family's classes are created only when a function uses it.
        from snapledger.models.jobs import reported_state
        from snapledger.ports.jobs import JobRunStatus

        return JobRunStatus(state=reported_state("UNKNOWN"), reason=None)

    def find_run(self, job_id: str, *, created_after: datetime) -> FoundJobRun | None:
        # Nothing to ask, so nothing may be concluded (a job is never failed as "never
        # started" by a function that cannot see the runs).
        raise JobStartError(
            f"this function cannot look for job {job_id}'s run: set "
            "SNAPLEDGER_EMR_APPLICATION_ID, SNAPLEDGER_EMR_JOB_ROLE_ARN and "
            "SNAPLEDGER_JOB_ENTRYPOINT"
        )
