"""query: console-invoked answers about a lineage (latest, list, history, as of, by id).

Payloads and answers are documented in docs/console.md; ready test events are
``events/query-*.json``. A malformed payload gets a validation answer naming the fields.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer
from snapledger.entrypoints.query import QUERY_INTAKE, answer_query
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    return QUERY_INTAKE.answer(
        event, metrics, lambda query: answer_query(query, runtime(), metrics)
    )
