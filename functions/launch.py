"""launch: start a bootstrap, restore or compaction job (console or EventBridge request).

Validates, resolves the snapshot, checks the changelog covers the range, pins, starts the
run with the job id as client token; idempotent by request id. Payloads: docs/console.md.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer, invalid_payload
from snapledger.entrypoints.launch import INVALID_METRIC, SUBJECT, answer_launch, parse_launch
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(correlation_id_path="id || request_id")
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    try:
        parsed = parse_launch(event, context.aws_request_id)
    except ValidationError as exc:
        return invalid_payload(exc, metrics, metric=INVALID_METRIC, subject=SUBJECT)
    return answer_launch(parsed, runtime(), metrics)
