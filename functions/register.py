"""register: S3 object arrivals of ``snapshots/**/_manifest.json`` → the ledger.

Triggered by the bucket's event notifications (a batch of records, keys URL-encoded) or
by EventBridge's ``Object Created`` events; both shapes are accepted. Every record gets
an answer; if any failed unexpectedly the invoke raises after the others, to be retried.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from snapledger.entrypoints.answers import Answer, invalid_payload
from snapledger.entrypoints.register import MALFORMED_EVENT_METRIC, register_arrivals
from snapledger.entrypoints.s3_events import (
    CORRELATION_ID_PATH,
    EXPECTED_SHAPES,
    S3_NOTIFICATION,
    parse_object_arrivals,
)
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(correlation_id_path=CORRELATION_ID_PATH)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    try:
        arrivals = parse_object_arrivals(event)
    except ValidationError as exc:  # neither shape: it will never succeed, so not retried
        return invalid_payload(
            exc,
            metrics,
            metric=MALFORMED_EVENT_METRIC,
            subject=S3_NOTIFICATION,
            expected=EXPECTED_SHAPES,
        )
    return register_arrivals(arrivals, runtime(), metrics).answer_or_raise()
