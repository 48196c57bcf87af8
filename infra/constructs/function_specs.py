"""How each of the six Lambda functions is sized, run and logged: runtime, memory, timeout,
reserved concurrency, asynchronous retries, and log retention."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from infra import names
from infra.constants import FUNCTION_NAMES

RUNTIME = lambda_.Runtime.PYTHON_3_12
ASYNC_RETRY_ATTEMPTS = 2
ASYNC_MAX_EVENT_AGE = Duration.hours(6)


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """How one function is sized; ``reserved`` caps its concurrency (None: uncapped)."""

    name: str
    description: str
    memory_mb: int
    timeout: Duration
    reserved: int | None


SPECS: dict[str, FunctionSpec] = {
    spec.name: spec
    for spec in (
        FunctionSpec(
            "register",
            "Queues manifest arrivals per lineage (S3) and records them in the ledger (SQS)",
            512,
            Duration.seconds(60),
            # 100 registrations/s sustained: docs/ledger.md, "Sizing" (about 13 busy, x2).
            reserved=30,
        ),
        FunctionSpec(
            "track_changelog",
            "Counts changelog records since the latest snapshot; starts compactions",
            512,
            Duration.seconds(60),
            reserved=5,
        ),
        FunctionSpec(
            "launch",
            "Validates a bootstrap/restore/compaction request, pins, starts the Spark job",
            512,
            Duration.seconds(60),
            reserved=5,
        ),
        FunctionSpec(
            "job_state",
            "Records EMR Serverless job state changes and releases pins",
            256,
            Duration.seconds(30),
            reserved=5,
        ),
        FunctionSpec(
            "query",
            "Answers latest, list, history, GC plan and job questions (read only)",
            512,
            Duration.seconds(30),
            reserved=None,
        ),
        FunctionSpec(
            "gc",
            "Applies the retention policy: expires and deletes snapshots, sweeps orphans",
            1024,
            Duration.minutes(15),
            # The scheduled coordinator and the shard workers its SQS trigger runs.
            reserved=1 + names.GC_SHARD_WORKERS,
        ),
    )
}
# Lambda refuses a reservation that leaves fewer than this many executions unreserved.
UNRESERVED_MINIMUM = 100
RESERVED_TOTAL = sum(spec.reserved or 0 for spec in SPECS.values())
# The account concurrency quota -c reservedConcurrency=true needs (docs/deploy.md).
REQUIRED_ACCOUNT_CONCURRENCY = RESERVED_TOTAL + UNRESERVED_MINIMUM
if set(SPECS) != set(FUNCTION_NAMES):  # pragma: no cover - a programming error
    raise RuntimeError("infra FunctionSpec names must match constants.FUNCTION_NAMES")


_RETENTION_BY_DAYS = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def log_retention(days: int) -> logs.RetentionDays:
    """The functions' log retention for ``-c logRetentionDays`` (one CloudWatch allows)."""
    try:
        return _RETENTION_BY_DAYS[days]
    except KeyError:
        raise ValueError(
            f"log retention must be one of {sorted(_RETENTION_BY_DAYS)} days, got {days}"
        ) from None
