"""track_changelog: S3 arrivals under ``changelog/`` → segment counts → compaction.

Each segment is counted once; past the stream's threshold (records or bytes) and with no
compaction in flight, a compaction job starts. One bad record does not lose the others.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer, invalid_payload
from snapledger.entrypoints.changelog import track_arrivals
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
    except ValidationError as exc:
        return invalid_payload(
            exc,
            metrics,
            metric="Changelog_malformed_event",
            subject=S3_NOTIFICATION,
            expected=EXPECTED_SHAPES,
        )
    return track_arrivals(arrivals, runtime(), metrics)
