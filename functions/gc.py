"""gc: retention GC on a schedule (or a dry run from the console), holds and policies.

Plans and applies the minimum-retention rule on every lineage, sweeps orphan prefixes,
reconciles stuck jobs and advances trim points; stops cleanly when its time runs low and
resumes on the next run. Past one invocation it sends lineages in shards to its queue and
works the shards its SQS trigger delivers. Payloads: docs/console.md; the rule and the
fan-out: docs/retention.md.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.entrypoints.answers import Answer
from snapledger.entrypoints.gc import (
    GC_INTAKE,
    answer_gc,
    answer_shards,
    is_scheduled_run,
    is_shard_delivery,
)
from snapledger.runtime import runtime

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(correlation_id_path="id")
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> Answer:
    remaining_seconds = lambda: context.get_remaining_time_in_millis() / 1000  # noqa: E731
    if is_shard_delivery(event):
        return answer_shards(event, runtime(), metrics, remaining_seconds=remaining_seconds)
    return GC_INTAKE.answer(
        event,
        metrics,
        lambda request: answer_gc(
            request,
            runtime(),
            metrics,
            remaining_seconds=remaining_seconds,
            request_id=context.aws_request_id,
            console=not is_scheduled_run(event),
        ),
    )
