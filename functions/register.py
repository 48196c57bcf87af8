"""register: S3 object arrivals of ``snapshots/**/_manifest.json`` → the ledger.

Triggered by the bucket's event notifications (a batch of records, keys URL-encoded) or
by EventBridge's ``Object Created`` events; both shapes are accepted. Every record gets
an answer; if any failed unexpectedly the invoke raises after the others, to be retried.

In AWS it has two roles (``docs/ledger.md``, "Hot lineages"): **intake**, on S3 events,
sends each manifest to the registration FIFO queue with its lineage as message group;
**consumer**, on that queue's SQS events, registers a delivery's manifests, each
lineage's in one transaction, and answers the messages to redeliver
(``batchItemFailures``). Without the queue (the local runtime) intake registers itself.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer
from snapledger.entrypoints.register import (
    ARRIVALS_INTAKE,
    QUEUED_INTAKE,
    register_arrivals,
    register_queued,
)
from snapledger.entrypoints.registration_queue import QueuedMessage, is_sqs_event
from snapledger.entrypoints.s3_events import CORRELATION_ID_PATH
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(correlation_id_path=CORRELATION_ID_PATH)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    if is_sqs_event(event):
        return _consume(event)
    return ARRIVALS_INTAKE.answer(
        event,
        metrics,
        lambda arrivals: register_arrivals(arrivals, runtime(), metrics).answer_or_raise(),
    )


def _consume(event: dict[str, Any]) -> Answer:
    return QUEUED_INTAKE.answer(event, metrics, _register_queued)


def _register_queued(messages: list[QueuedMessage]) -> Answer:
    batch, retry = register_queued(messages, runtime(), metrics)
    answer = batch.answer(failed=len(retry))
    # ReportBatchItemFailures: only these messages return to the queue.
    return {**answer, "batchItemFailures": [{"itemIdentifier": m} for m in retry]}
