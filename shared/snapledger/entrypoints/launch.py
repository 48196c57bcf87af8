"""The launch function's parsing and answering: console payloads and EventBridge requests.

Console: ``{"action": "restore", "stream": "orders", "partition": 3, "from": "latest"}``.
EventBridge: source ``snapledger``, detail-type ``BootstrapRequested`` /
``RestoreRequested`` / ``CompactionRequested``, the same fields in ``detail`` (``action``
implied). The request id is the payload's ``request_id``, else the EventBridge event id,
else the Lambda request id (stable across Lambda's own retries): the same request twice
starts one job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snapledger.entrypoints.answers import (
    Answer,
    MetricSink,
    answer_for_error,
    as_object,
    count,
    ok,
    payload_error,
)
from snapledger.errors import SnapledgerError
from snapledger.models.requests import DETAIL_TYPE_ACTIONS, LaunchRequest
from snapledger.runtime import Runtime
from snapledger.services.launch import LaunchDeps, launch

SUBJECT = "launch request"
INVALID_METRIC = "Launch_invalid"
EVENT_SOURCE = "snapledger"


@dataclass(frozen=True)
class ParsedLaunch:
    request: LaunchRequest
    request_id: str
    from_event: bool = False  # an EventBridge request (no one reads the answer)


def parse_launch(event: object, lambda_request_id: str) -> ParsedLaunch:
    """The request an event or console payload carries; ValidationError naming fields."""
    payload = as_object(event, SUBJECT)
    if "detail-type" in payload:
        return _from_eventbridge(payload)
    return ParsedLaunch(
        request=LaunchRequest.model_validate(payload),
        request_id=str(payload.get("request_id") or lambda_request_id),
    )


def _from_eventbridge(event: Mapping[str, Any]) -> ParsedLaunch:
    detail_type = event.get("detail-type")
    problems = []
    if event.get("source") != EVENT_SOURCE:
        problems.append(("source", f"must be {EVENT_SOURCE!r} for a launch request"))
    if detail_type not in DETAIL_TYPE_ACTIONS:
        known = ", ".join(DETAIL_TYPE_ACTIONS)
        problems.append(("detail-type", f"{detail_type!r} is not one of {known}"))
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        problems.append(("detail", "must be a JSON object with the request's fields"))
    if problems:
        raise payload_error(SUBJECT, problems, event)
    assert isinstance(detail, Mapping) and isinstance(detail_type, str)
    action = DETAIL_TYPE_ACTIONS[detail_type].value
    if detail.get("action", action) != action:
        raise payload_error(
            SUBJECT, [("detail.action", f"contradicts detail-type {detail_type}")], event
        )
    request = LaunchRequest.model_validate({**detail, "action": action})
    return ParsedLaunch(
        request=request,
        request_id=str(detail.get("request_id") or event["id"]),
        from_event=True,
    )


def answer_launch(parsed: ParsedLaunch, rt: Runtime, metrics: MetricSink) -> Answer:
    """Start (or find) the job; expected refusals are answers, the rest raises."""
    deps = LaunchDeps(
        ledger=rt.ledger, jobs=rt.jobs, runner=rt.runner, store=rt.store, clock=rt.clock
    )
    try:
        result = launch(parsed.request, request_id=parsed.request_id, deps=deps)
    except SnapledgerError as exc:
        answer = answer_for_error(exc, console=not parsed.from_event)
        if answer is None:
            raise
        count(metrics, "Launch_refused")
        return answer
    count(metrics, f"Launch_{result.job.job_kind.value}")
    return ok(**result.to_dict())
