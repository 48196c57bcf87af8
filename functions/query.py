"""query: console-invoked answers about a lineage (latest, list, history, as of, by id).

Payloads and answers are documented in docs/console.md; ready test events are
``events/query-*.json``. A malformed payload gets a validation answer naming the fields.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer, invalid_payload
from snapledger.entrypoints.query import INVALID_METRIC, SUBJECT, answer_query, parse_query
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    try:
        request = parse_query(event)
    except ValidationError as exc:
        return invalid_payload(exc, metrics, metric=INVALID_METRIC, subject=SUBJECT)
    return answer_query(request, runtime(), metrics)
