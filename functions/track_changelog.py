"""track_changelog: S3 arrivals under ``changelog/`` → segment counts → compaction.

Each segment is counted once; past the stream's threshold (records or bytes) and with no
compaction in flight, a compaction job starts. One bad record does not lose the others.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer
from snapledger.entrypoints.changelog import ARRIVALS_INTAKE, track_arrivals
from snapledger.entrypoints.s3_events import CORRELATION_ID_PATH
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(correlation_id_path=CORRELATION_ID_PATH)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    return ARRIVALS_INTAKE.answer(
        event, metrics, lambda arrivals: track_arrivals(arrivals, runtime(), metrics)
    )
