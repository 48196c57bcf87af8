"""launch: start a bootstrap, restore or compaction job (console or EventBridge request).

Validates, resolves the snapshot, checks the changelog covers the range, pins, starts the
run with the job id as client token; idempotent by request id. Payloads: docs/console.md.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer
from snapledger.entrypoints.launch import answer_launch, launch_intake
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(correlation_id_path="id || request_id")
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    return launch_intake(context.aws_request_id).answer(
        event, metrics, lambda parsed: answer_launch(parsed, runtime(), metrics)
    )
