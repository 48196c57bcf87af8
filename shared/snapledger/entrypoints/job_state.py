"""The job_state function's parsing: EMR Serverless ``Job Run State Change`` events.

Every documented state is accepted and so is any state AWS adds later (recorded, not
acted on). Events are best effort and may repeat or arrive out of order.
"""

import logging
from typing import TYPE_CHECKING

from pydantic import Field

from snapledger.entrypoints.answers import Answer, Intake, MetricSink, count, ok
from snapledger.entrypoints.payloads import AwsEvent
from snapledger.entrypoints.stream_metrics import JOBS_FAILED, emit_for_stream
from snapledger.errors import SnapledgerError
from snapledger.models.jobs import JobState
from snapledger.services.job_state import record_job_state

if TYPE_CHECKING:
    from snapledger.runtime import Runtime

_log = logging.getLogger(__name__)

SUBJECT = "EMR Serverless job run state change"
INVALID_METRIC = "JobState_malformed_event"
FAILED_STATES = ("FAILED", "CANCELLED")


class JobRunDetail(AwsEvent):
    job_run_id: str = Field(alias="jobRunId", min_length=1)
    job_run_name: str | None = Field(default=None, alias="jobRunName")
    application_id: str = Field(alias="applicationId", min_length=1)
    state: str = Field(min_length=1)
    previous_state: str | None = Field(default=None, alias="previousState")
    state_details: str | None = Field(default=None, alias="stateDetails")


class JobRunStateChange(AwsEvent):
    id: str
    source: str
    detail_type: str = Field(alias="detail-type")
    detail: JobRunDetail


JOB_STATE_INTAKE = Intake(JobRunStateChange.model_validate, SUBJECT, INVALID_METRIC)


def answer_job_state(event: JobRunStateChange, rt: "Runtime", metrics: MetricSink) -> Answer:
    detail = event.detail
    reason = detail.state_details or None
    if reason is None and detail.state.upper() in FAILED_STATES:
        # The event may omit the cause: ask the runner once (best effort).
        reason = _cause_from_runner(rt, detail.job_run_id, detail.state)
    result = record_job_state(
        run_id=detail.job_run_id,
        job_name=detail.job_run_name,
        state=detail.state,
        reason=reason,
        jobs=rt.jobs,
        ledger=rt.ledger,
        clock=rt.clock,
    )
    count(metrics, f"JobState_{detail.state.lower()}")
    if result.recorded and result.stream is not None and result.state == JobState.FAILED.value:
        emit_for_stream(JOBS_FAILED, result.stream, 1)  # once: a repeated event is stale
    return ok(**result.to_dict())


def _cause_from_runner(rt: "Runtime", run_id: str, state: str) -> str | None:
    """What the runner says of the run; a failed look-up becomes part of the cause.

    The event is recorded either way: a run that is not snapledger's is ignored by
    ``record_job_state`` and a known job is marked failed, whatever the look-up answered.
    Raising here would retry the event into the dead-letter queue and lose the failure.
    """
    try:
        return rt.runner.status(run_id).reason
    except SnapledgerError as exc:
        _log.warning("could not read the cause of %s run %s: %s", state, run_id, exc)
        return f"{state} (the event gave no cause, and reading the job run failed: {exc})"
