"""Deployment parameters: read once from CDK context, with defaults fit for production."""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Node

from infra import names
from snapledger.settings import DEFAULT_LEDGER_TTL_DAYS


@dataclass(frozen=True, slots=True)
class StackConfig:
    """What a deployment may change with ``-c key=value``; everything else is fixed."""

    # Table deletion protection, and RETAIN for the table and buckets. Off only for
    # short-lived test stacks that must tear down cleanly.
    deletion_protection: bool = True
    # Reserved concurrency caps the functions that write the ledger, so an S3 burst queues
    # up in Lambda's async queue instead of throttling the table. Off by default: Lambda
    # keeps 100 executions unreserved, so reserving needs an account concurrency quota of
    # at least functions.REQUIRED_ACCOUNT_CONCURRENCY (new accounts start at 10 or 50, and
    # the deploy would fail).
    reserved_concurrency: bool = False
    # SNS topic every alarm notifies; none by default (alarms still show on the dashboard).
    alarm_topic_arn: str | None = None
    # Explicit Powertools layer ARN, overriding the public SSM parameter.
    powertools_layer_arn: str | None = None
    emr_max_vcpu: int = 16
    emr_max_memory_gb: int = 64
    log_retention_days: int = 30
    # Days terminal ledger items (events, DELETED/REJECTED records, finished jobs) stay
    # before DynamoDB's TTL removes them; 0 keeps them for ever (docs/ledger.md).
    ledger_ttl_days: int = DEFAULT_LEDGER_TTL_DAYS
    # Days the bus's archive keeps ledger events (replayable past the TTL); 0: for ever.
    event_archive_retention_days: int = 365
    # The latest protected in the bucket (docs/deploy.md): the data bucket is created with
    # S3 Object Lock (no default retention); register holds each snapshot's objects before
    # it commits, gc releases them once it deleted them. Object Lock is chosen when the
    # bucket is created: turning this on (or off) for a deployed stack replaces the bucket.
    protect_latest: bool = False

    @classmethod
    def from_context(cls, node: Node) -> StackConfig:
        """Build from CDK context (strings from ``-c``, or typed values from cdk.json)."""
        defaults = cls()
        return cls(
            deletion_protection=_as_bool(
                node.try_get_context(names.CTX_DELETION_PROTECTION), defaults.deletion_protection
            ),
            reserved_concurrency=_as_bool(
                node.try_get_context(names.CTX_RESERVED_CONCURRENCY),
                defaults.reserved_concurrency,
            ),
            alarm_topic_arn=node.try_get_context(names.CTX_ALARM_TOPIC_ARN) or None,
            powertools_layer_arn=node.try_get_context(names.CTX_POWERTOOLS_LAYER_ARN) or None,
            emr_max_vcpu=_as_int(
                node.try_get_context(names.CTX_EMR_MAX_VCPU), defaults.emr_max_vcpu
            ),
            emr_max_memory_gb=_as_int(
                node.try_get_context(names.CTX_EMR_MAX_MEMORY_GB), defaults.emr_max_memory_gb
            ),
            log_retention_days=_as_int(
                node.try_get_context(names.CTX_LOG_RETENTION_DAYS), defaults.log_retention_days
            ),
            ledger_ttl_days=_as_days(
                node.try_get_context(names.CTX_LEDGER_TTL_DAYS), defaults.ledger_ttl_days
            ),
            event_archive_retention_days=_as_days(
                node.try_get_context(names.CTX_EVENT_ARCHIVE_RETENTION_DAYS),
                defaults.event_archive_retention_days,
            ),
            protect_latest=_as_bool(
                node.try_get_context(names.CTX_PROTECT_LATEST), defaults.protect_latest
            ),
        )


def _as_bool(value: object, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise ValueError(f"expected true or false in CDK context, got {value!r}")


def _as_days(value: object, default: int) -> int:
    days = _as_int(value, default)
    if days < 0:
        raise ValueError(f"expected a number of days >= 0 (0: for ever) in CDK context, got {days}")
    return days


def _as_int(value: object, default: int) -> int:
    if value is None:
        return default
    try:
        return int(str(value))
    except ValueError as exc:
        raise ValueError(f"expected an integer in CDK context, got {value!r}") from exc
