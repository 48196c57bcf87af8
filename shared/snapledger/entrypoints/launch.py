"""The launch function's parsing and answering: console payloads and EventBridge requests.

Console: ``{"action": "restore", "stream": "orders", "partition": 3, "from": "latest"}``,
or ``{"action": "snapshot_stream", "stream": "orders", "partitions": [0, 1, 2, 3]}`` to ask
for a stream snapshot. EventBridge: source ``snapledger``, detail-type
``BootstrapRequested`` / ``RestoreRequested`` / ``CompactionRequested`` /
``SnapshotStreamRequested``, the same fields in ``detail`` (``action`` implied). The
request id is the payload's ``request_id``, else the EventBridge event id,
else the Lambda request id (stable across Lambda's own retries): the same request twice
starts one job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from annotated_types import MaxLen

from snapledger.entrypoints.actions import ActionTable
from snapledger.entrypoints.answers import (
    Answer,
    Intake,
    MetricSink,
    answer_for_error,
    as_object,
    count,
    ok,
    payload_error,
)
from snapledger.entrypoints.producer_offsets import (
    DeleteProducerOffsets,
    RegisterProducerOffsets,
    answer_change,
)
from snapledger.entrypoints.stream_metrics import JOBS_FAILED, emit_for_stream
from snapledger.errors import SnapledgerError
from snapledger.models.jobs import JobState
from snapledger.models.requests import (
    DETAIL_TYPE_ACTIONS,
    SNAPSHOT_STREAM_ACTION,
    SNAPSHOT_STREAM_DETAIL_TYPE,
    LaunchRequest,
    StreamSnapshotRequest,
)
from snapledger.services.generation_reads import describe as describe_generation
from snapledger.services.generations import request_stream_snapshot
from snapledger.services.launch import LaunchDeps, launch

SUBJECT = "launch request"
INVALID_METRIC = "Launch_invalid"
EVENT_SOURCE = "snapledger"
STREAM_DETAIL_TYPES = {SNAPSHOT_STREAM_DETAIL_TYPE: SNAPSHOT_STREAM_ACTION}
#: An EventBridge event's id stands for the request id: it has ``request_id``'s bound.
MAX_REQUEST_ID = next(
    m.max_length for m in LaunchRequest.model_fields["request_id"].metadata if isinstance(m, MaxLen)
)

if TYPE_CHECKING:
    from snapledger.runtime import Runtime


@dataclass(frozen=True)
class ParsedLaunch:
    request: LaunchRequest | StreamSnapshotRequest | RegisterProducerOffsets | DeleteProducerOffsets
    request_id: str
    from_event: bool = False  # an EventBridge request (no one reads the answer)


def parse_launch(event: object, lambda_request_id: str) -> ParsedLaunch:
    """The request an event or console payload carries; ValidationError naming fields."""
    payload = as_object(event, SUBJECT)
    if "detail-type" in payload:
        return _from_eventbridge(payload)
    return ParsedLaunch(
        request=_ACTIONS.parse(payload),
        request_id=str(payload.get("request_id") or lambda_request_id),
    )


def launch_intake(lambda_request_id: str) -> Intake[ParsedLaunch]:
    """The launch function's intake; ``lambda_request_id`` is the request id of last resort."""
    return Intake(lambda event: parse_launch(event, lambda_request_id), SUBJECT, INVALID_METRIC)


def _from_eventbridge(event: Mapping[str, Any]) -> ParsedLaunch:
    detail_type = event.get("detail-type")
    problems = []
    if event.get("source") != EVENT_SOURCE:
        problems.append(("source", f"must be {EVENT_SOURCE!r} for a launch request"))
    actions = {**{t: a.value for t, a in DETAIL_TYPE_ACTIONS.items()}, **STREAM_DETAIL_TYPES}
    if not isinstance(detail_type, str) or detail_type not in actions:
        known = ", ".join(actions)
        problems.append(("detail-type", f"{detail_type!r} is not one of {known}"))
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        problems.append(("detail", "must be a JSON object with the request's fields"))
    if problems:
        raise payload_error(SUBJECT, problems, event)
    assert isinstance(detail, Mapping) and isinstance(detail_type, str)
    action = actions[detail_type]
    if detail.get("action", action) != action:
        raise payload_error(
            SUBJECT, [("detail.action", f"contradicts detail-type {detail_type}")], event
        )
    body = {**detail, "action": action}
    request: LaunchRequest | StreamSnapshotRequest = _ACTIONS.parse(body)
    event_id = event.get("id")
    if request.request_id is None and not _is_event_id(event_id):
        problem = (
            "required: the EventBridge event's id (1 to 128 characters), or a "
            "detail.request_id naming the request"
        )
        raise payload_error(SUBJECT, [("id", problem)], event)
    return ParsedLaunch(
        request=request,
        request_id=request.request_id or str(event_id),
        from_event=True,
    )


def _is_event_id(value: object) -> bool:
    """An EventBridge event id: a string of at most ``MAX_REQUEST_ID`` characters."""
    return isinstance(value, str) and 1 <= len(value) <= MAX_REQUEST_ID


def answer_launch(parsed: ParsedLaunch, rt: Runtime, metrics: MetricSink) -> Answer:
    """Start (or find) the job, or ask for a stream snapshot; expected refusals are
    answers, the rest raises."""
    return _ACTIONS.answer_for(parsed.request)(parsed, parsed.request, rt, metrics)


def _answer_job(
    parsed: ParsedLaunch, request: LaunchRequest, rt: Runtime, metrics: MetricSink
) -> Answer:
    deps = LaunchDeps(
        ledger=rt.ledger,
        jobs=rt.jobs,
        runner=rt.runner,
        store=rt.store,
        clock=rt.clock,
        streams=rt.streams,
    )
    try:
        result = launch(request, request_id=parsed.request_id, deps=deps)
    except SnapledgerError as exc:
        answer = answer_for_error(exc, console=not parsed.from_event)
        if answer is None:
            raise
        count(metrics, "Launch_refused")
        emit_for_stream(JOBS_FAILED, request.stream, 1)
        return answer
    count(metrics, f"Launch_{result.job.job_kind.value}")
    if result.created and result.job.state is JobState.FAILED:  # the runner refused it
        emit_for_stream(JOBS_FAILED, result.job.stream, 1)
    return ok(**result.to_dict())


def _answer_stream_snapshot(
    parsed: ParsedLaunch, request: StreamSnapshotRequest, rt: Runtime, metrics: MetricSink
) -> Answer:
    now = rt.clock.now()
    deadline = request.deadline
    if request.deadline_minutes is not None:
        deadline = now + timedelta(minutes=request.deadline_minutes)
    try:
        result = request_stream_snapshot(
            rt.streams,
            request.stream,
            request.partitions,
            clock=rt.clock,
            deadline=deadline,
            min_lsn=request.min_lsn,
            by=request.by,
            request_id=parsed.request_id,
        )
    except SnapledgerError as exc:
        answer = answer_for_error(exc, console=not parsed.from_event)
        if answer is None:
            raise
        count(metrics, "Launch_refused")
        emit_for_stream(JOBS_FAILED, request.stream, 1)
        return answer
    count(metrics, "Launch_snapshot_stream")
    return ok(
        action=SNAPSHOT_STREAM_ACTION,
        created=result.created,
        **describe_generation(result.generation, rt.clock.now()),
    )


#: Each action: a job kind's request (one row, an action per kind), a stream snapshot's, or
#: a change to the producer-offsets registry (entrypoints/producer_offsets.py).
_ACTIONS: ActionTable[Callable[..., Answer]] = ActionTable(
    SUBJECT,
    (
        (LaunchRequest, _answer_job),
        (StreamSnapshotRequest, _answer_stream_snapshot),
        (RegisterProducerOffsets, answer_change),
        (DeleteProducerOffsets, answer_change),
    ),
)
