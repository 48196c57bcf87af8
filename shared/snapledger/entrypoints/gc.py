"""The gc function's payloads: a run (or dry run), holds, and retention policies.

- ``{"dry_run": true}`` / ``{"dry_run": false, "stream": "orders"}``: plan or run GC; the
  schedule delivers its EventBridge ``Scheduled Event``, which is a full run;
- ``{"action": "hold", "stream", "partition", "snapshot_id", "expires_at"?, "reason"?, "by"?}``;
- ``{"action": "release", "stream", "partition", "snapshot_id", "hold_id"?}``;
- an SQS event of GC shards (``Records`` with ``eventSource`` ``aws:sqs``): the queue a
  coordinating run fans out to; each message is one shard (``services/gc_fanout.py``),
  answered with ``batchItemFailures`` naming the shards to deliver again;
- ``{"action": "policy_get", "stream"}``, ``{"action": "policy_set", "stream", ...fields}``
  and ``{"action": "policy_reset", "stream"}``; a set or reset takes ``by``,
  ``expected_version`` and ``request_id`` (default: the Lambda request id, the same across
  Lambda's own retries of an asynchronous invocation);
- ``{"action": "restate_heal", ...}`` and ``{"action": "restate_restore", ...}``: a Restate
  stream's latests checked and healed, or repointed at a chosen snapshot
  (``entrypoints/restate_actions.py``).

Holds and policies are answered in ``entrypoints/retention_actions.py``.

Each action is one row of ``_ACTIONS``: its payload model and the function answering it.
"""

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field, ValidationError

from snapledger.core.compaction_trigger import backlog_since
from snapledger.entrypoints.actions import ActionTable
from snapledger.entrypoints.answers import (
    Answer,
    Intake,
    MetricSink,
    answer_for_error,
    as_object,
    count,
    ok,
)
from snapledger.entrypoints.payloads import ConsolePayload
from snapledger.entrypoints.register import manifest_registrar
from snapledger.entrypoints.restate_actions import (
    RestateHealRequest,
    RestateRestoreRequest,
    heal,
    restore,
)
from snapledger.entrypoints.retention_actions import (
    HoldRequest,
    PolicyGetRequest,
    PolicyResetRequest,
    PolicySetRequest,
    ReleaseRequest,
    answer_hold,
    answer_policy_get,
    answer_policy_reset,
    answer_policy_set,
    answer_release,
)
from snapledger.entrypoints.stream_metrics import RecordsSince, emit_gc_metrics
from snapledger.errors import SnapledgerError
from snapledger.layout import STREAM_PATTERN
from snapledger.services.gc import run_gc, run_gc_shard
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_fanout import GcShard
from snapledger.services.gc_report import GcReport
from snapledger.services.gc_steps import CollectedStrategy
from snapledger.services.producer_offsets import sweep as sweep_producer_offsets
from snapledger.stack_names import (
    GC_POINTERS_UNREPAIRED_METRIC,
    GC_RESTATE_LATESTS_BROKEN_METRIC,
    GC_STREAMS_FAILED_METRIC,
    STUCK_JOBS_METRIC,
)

if TYPE_CHECKING:
    from snapledger.runtime import Runtime

SUBJECT = "gc request"
INVALID_METRIC = "Gc_invalid"
#: Published by every run (named once, with the stack's alarms: snapledger/stack_names.py).
STREAMS_FAILED_METRIC = GC_STREAMS_FAILED_METRIC
POINTERS_UNREPAIRED_METRIC = GC_POINTERS_UNREPAIRED_METRIC
LATESTS_BROKEN_METRIC = GC_RESTATE_LATESTS_BROKEN_METRIC
SQS_SOURCE = "aws:sqs"

_log = logging.getLogger(__name__)


class GcRunFailedError(SnapledgerError):
    """A scheduled run finished with a part that failed: the invocation fails, so Lambda
    retries it, then keeps it in the failure queue, and the function's Errors alarm fires."""


class GcRun(ConsolePayload):
    dry_run: bool = False
    stream: str | None = Field(default=None, pattern=f"^{STREAM_PATTERN}$")


ActionRequest = (
    HoldRequest
    | ReleaseRequest
    | PolicyGetRequest
    | PolicySetRequest
    | PolicyResetRequest
    | RestateHealRequest
    | RestateRestoreRequest
)
GcRequest = GcRun | ActionRequest
ActionT = TypeVar("ActionT", bound=ConsolePayload)
#: What answers an action: its request, the runtime, the metrics and the invocation's
#: request id (the default identity of a change) -> the answer's fields.
ActionFn = Callable[[ActionT, "Runtime", MetricSink, str | None], dict[str, Any]]


def is_scheduled_run(event: object) -> bool:
    """The EventBridge schedule's own event (not a console payload)."""
    return (
        isinstance(event, dict) and event.get("source") == "aws.events" and "detail-type" in event
    )


def is_shard_delivery(event: object) -> bool:
    """An SQS event (the shard queue's trigger), not a console payload or the schedule."""
    if not isinstance(event, dict):
        return False
    records = event.get("Records")
    return (
        isinstance(records, list)
        and bool(records)
        and all(isinstance(r, dict) and r.get("eventSource") == SQS_SOURCE for r in records)
    )


def answer_shards(
    event: dict[str, Any],
    rt: "Runtime",
    metrics: MetricSink,
    remaining_seconds: Callable[[], float] | None = None,
) -> Answer:
    """Run GC over each shard delivered; ``batchItemFailures`` lists the messages to
    deliver again: a shard cut short by the time budget, one that failed, one that is not
    a shard at all (after the queue's retries it waits in the dead-letter queue, which
    alarms). Lineages a redelivered shard already finished cost only their reads."""
    deps = _gc_deps(rt)
    budget = Budget(remaining_seconds, rt.gc.stop_with_seconds_left)
    failures: list[dict[str, str]] = []
    reports: list[dict[str, Any]] = []
    for record in event["Records"]:
        message_id = str(record.get("messageId", ""))
        if budget.exhausted():
            count(metrics, "Gc_shard_deferred")
            failures.append({"itemIdentifier": message_id})
            continue
        try:
            shard = GcShard.model_validate_json(str(record.get("body", "")))
        except ValidationError as exc:
            count(metrics, "Gc_shard_invalid")
            reports.append({"message_id": message_id, "error": f"not a GC shard: {exc}"})
            failures.append({"itemIdentifier": message_id})
            continue
        try:
            report = run_gc_shard(deps, shard, config=rt.gc, remaining_seconds=remaining_seconds)
        except SnapledgerError as exc:
            count(metrics, "Gc_shard_failed")
            reports.append({"message_id": message_id, "error": str(exc)})
            failures.append({"itemIdentifier": message_id})
            continue
        count(metrics, "Gc_shard")
        emit_gc_metrics(report, rt.clock.now(), _records_since(rt))
        _failure_metrics(report, metrics)
        reports.append({"message_id": message_id, "report": report.to_dict()})
        if not report.complete or report.failed:  # delivered again; then the DLQ alarms
            failures.append({"itemIdentifier": message_id})
    # What the trigger reads is batchItemFailures; the reports are for the logs and tests.
    return {"batchItemFailures": failures, "shards": reports}


def parse_gc(event: object) -> GcRequest:
    """The request a payload carries; a ValidationError naming the fields otherwise."""
    payload = as_object(event, SUBJECT)
    if is_scheduled_run(payload):
        return GcRun()  # the EventBridge schedule's own event shape: a full run
    if payload.get("action") is None:
        return GcRun.model_validate(payload)
    request: GcRequest = _ACTIONS.parse(payload)
    return request


GC_INTAKE = Intake(parse_gc, SUBJECT, INVALID_METRIC)


def answer_gc(
    request: GcRequest,
    rt: "Runtime",
    metrics: MetricSink,
    remaining_seconds: Callable[[], float] | None = None,
    request_id: str | None = None,
    *,
    console: bool = True,
) -> Answer:
    """Answer ``request``; ``request_id`` (the invocation's) identifies a policy change that
    names none, so a retried invocation applies it once. ``console``: False for the
    schedule's event (see ``answer_for_error``)."""
    try:
        body = _answer(request, rt, metrics, remaining_seconds, request_id)
    except SnapledgerError as exc:
        answer = answer_for_error(exc, console=console)
        if answer is None:
            raise
        count(metrics, "Gc_refused")
        return answer
    count(metrics, f"Gc_{getattr(request, 'action', 'run')}")
    report = body.get("report")
    if isinstance(report, dict) and report.get("failed"):
        summary = _failed_summary(report)
        _log.error("%s", summary)
        if not console:  # the schedule: fail the invocation (retried, then alarmed)
            raise GcRunFailedError(summary)
    return ok(**body)


def _failed_summary(report: dict[str, Any]) -> str:
    parts = [*report.get("failures", [])]
    parts += [f"stream {s}: {why}" for s, why in report.get("failed_streams", {}).items()]
    unrepaired = report.get("counts", {}).get("pointers_unrepaired", 0)
    if unrepaired:
        parts.append(f"{unrepaired} lagging latest.json GC could not repair")
    return f"GC run {report.get('run_id')} failed in part (the rest ran): " + "; ".join(parts)


def _failure_metrics(report: GcReport, metrics: MetricSink) -> None:
    counts = report.counts()
    metrics.add_metric(
        name=STREAMS_FAILED_METRIC, unit="Count", value=counts.get("streams_failed", 0)
    )
    metrics.add_metric(
        name=POINTERS_UNREPAIRED_METRIC, unit="Count", value=counts.get("pointers_unrepaired", 0)
    )
    metrics.add_metric(
        name=LATESTS_BROKEN_METRIC, unit="Count", value=counts.get("latests_broken", 0)
    )


def _answer(
    request: GcRequest,
    rt: "Runtime",
    metrics: MetricSink,
    remaining_seconds: Callable[[], float] | None,
    request_id: str | None,
) -> dict[str, Any]:
    if isinstance(request, GcRun):
        report = run_gc(
            _gc_deps(rt),
            dry_run=request.dry_run,
            stream=request.stream,
            config=rt.gc,
            remaining_seconds=remaining_seconds,
        )
        counts = report.counts()
        emit_gc_metrics(report, rt.clock.now(), _records_since(rt))
        metrics.add_metric(
            name=STUCK_JOBS_METRIC, unit="Count", value=counts.get("stuck_jobs_found", 0)
        )
        _failure_metrics(report, metrics)
        body: dict[str, Any] = {"report": report.to_dict()}
        done = not request.dry_run and report.resume_after is None
        if done and rt.producer_offsets is not None:
            # Expired producer offsets, once a run completes (DynamoDB's TTL removes them
            # too, some time later; a run stopped for time leaves them to the next).
            body["producer_offsets_swept"] = sweep_producer_offsets(rt.producer_offsets, rt.clock)
        return body
    if isinstance(request, RestateHealRequest):  # the one action bounded by the time left
        budget = Budget(remaining_seconds, rt.gc.stop_with_seconds_left)
        body = _restate_heal(request, rt, metrics, request_id, budget=budget)
        return {"action": request.action, **body}
    answer = _ACTIONS.answer_for(request)
    return {"action": request.action, **answer(request, rt, metrics, request_id)}


def _restate_heal(
    request: RestateHealRequest,
    rt: "Runtime",
    metrics: MetricSink,
    request_id: str | None,
    *,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Heal's answer; ``budget`` (``_answer`` gives the invocation's) bounds a heal of
    every partition, whose answer then says where to continue."""
    run = heal(rt, request, budget)
    if not request.dry_run:  # what a run's heal check publishes: alarmed at >= 1
        broken = sum(1 for outcome in run.outcomes if outcome.broken)
        metrics.add_metric(name=LATESTS_BROKEN_METRIC, unit="Count", value=broken)
    body: dict[str, Any] = {
        "stream": request.stream,
        "dry_run": request.dry_run,
        "outcomes": [outcome.to_dict() for outcome in run.outcomes],
        "complete": run.complete,
    }
    if run.after_partition is not None:  # out of time: pass it back to continue
        body["after_partition"] = run.after_partition
    return body


def _restate_restore(
    request: RestateRestoreRequest, rt: "Runtime", metrics: MetricSink, request_id: str | None
) -> dict[str, Any]:
    return {"stream": request.stream, **restore(rt, request, request_id).to_dict()}


#: Each action: its payload model (whose ``action`` Literal names it) and its answer.
_ACTIONS: ActionTable[ActionFn[Any]] = ActionTable(
    SUBJECT,
    (
        (HoldRequest, answer_hold),
        (ReleaseRequest, answer_release),
        (PolicyGetRequest, answer_policy_get),
        (PolicySetRequest, answer_policy_set),
        (PolicyResetRequest, answer_policy_reset),
        (RestateHealRequest, _restate_heal),
        (RestateRestoreRequest, _restate_restore),
    ),
    otherwise=", or none for a GC run",
)


def actions() -> list[str]:
    """The console actions' names, sorted (a GC run takes none)."""
    return _ACTIONS.names()


def _records_since(rt: "Runtime") -> RecordsSince:
    """The changelog records a lineage's tracked segments hold past ``lsn``."""
    return lambda lineage, lsn: backlog_since(lsn, rt.segments.ending_after(lineage, lsn)).records


def _gc_deps(rt: "Runtime") -> GcDeps[CollectedStrategy]:
    return GcDeps(
        ledger=rt.ledger,
        store=rt.store,
        clock=rt.clock,
        lineages=rt.lineages,
        policies=rt.policies,
        jobs=rt.jobs,
        runner=rt.runner,
        shards=rt.gc_shards,
        streams=rt.streams,
        holds=rt.holds,
        register=manifest_registrar(rt),
        layouts=rt.layouts,
    )
