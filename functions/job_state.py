"""job_state: EMR Serverless job run state changes → the job and its lineages' ledgers.

Records each transition, unpins on a terminal state and records the failure reason.
Events are best effort: gc also reconciles jobs whose events never came.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer
from snapledger.entrypoints.job_state import JOB_STATE_INTAKE, answer_job_state
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(correlation_id_path="id")
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    return JOB_STATE_INTAKE.answer(
        event, metrics, lambda change: answer_job_state(change, runtime(), metrics)
    )
