"""Configuration from environment variables, parsed once per cold start.

The CDK app sets these on each function; local runs set them from the runtime. Plain
pydantic (no pydantic-settings) so the functions need nothing beyond the Powertools layer.
"""

import os
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Json, ValidationError, model_validator

from snapledger.core.job_sizing import Capacity
from snapledger.errors import InvalidRequestError
from snapledger.limits import MAX_COUNT, MAX_HOURS

if TYPE_CHECKING:
    from snapledger.core.compaction_trigger import CompactionConfig

ENV_PREFIX = "SNAPLEDGER_"
# The environment variable names, for the CDK app and the local runtime.
ENV_TABLE = "SNAPLEDGER_TABLE"
ENV_ROOT = "SNAPLEDGER_ROOT"
ENV_DYNAMODB_ENDPOINT = "SNAPLEDGER_DYNAMODB_ENDPOINT"
ENV_EMR_APPLICATION_ID = "SNAPLEDGER_EMR_APPLICATION_ID"
ENV_EMR_JOB_ROLE_ARN = "SNAPLEDGER_EMR_JOB_ROLE_ARN"
ENV_JOB_ENTRYPOINT = "SNAPLEDGER_JOB_ENTRYPOINT"
ENV_JOB_PY_FILES = "SNAPLEDGER_JOB_PY_FILES"
#: The EMR Serverless application's maximum capacity: jobs are sized within it.
ENV_EMR_MAX_VCPU = "SNAPLEDGER_EMR_MAX_VCPU"
ENV_EMR_MAX_MEMORY_GB = "SNAPLEDGER_EMR_MAX_MEMORY_GB"
ENV_EMR_MAX_DISK_GB = "SNAPLEDGER_EMR_MAX_DISK_GB"
ENV_EVENT_BUS = "SNAPLEDGER_EVENT_BUS"
ENV_REGISTRATION_QUEUE_URL = "SNAPLEDGER_REGISTRATION_QUEUE_URL"
ENV_EVENT_BUS_ARN = "SNAPLEDGER_EVENT_BUS_ARN"
ENV_EVENT_ARCHIVE_ARN = "SNAPLEDGER_EVENT_ARCHIVE_ARN"
ENV_LEDGER_TTL_DAYS = "SNAPLEDGER_LEDGER_TTL_DAYS"
#: The default compaction thresholds (``compaction_records``, ``compaction_bytes``).
ENV_COMPACTION_RECORDS = "SNAPLEDGER_COMPACTION_RECORDS"
ENV_COMPACTION_BYTES = "SNAPLEDGER_COMPACTION_BYTES"
#: "true": register holds each registered snapshot's objects, GC releases them (S3 Object
#: Lock; the CDK app sets it with ``-c protectLatest=true``).
ENV_PROTECT_LATEST = "SNAPLEDGER_PROTECT_LATEST"
#: The layout map: which layout each stream or bucket prefix has, a JSON object such as
#: ``{"restate/prod-1": {"layout": "restate", "stream": "orders"}}`` (``layouts/
#: layout_map.py``; the CDK app sets it from ``-c layouts``).
ENV_LAYOUTS = "SNAPLEDGER_LAYOUTS"
#: Fluss's ZooKeeper (its ``zookeeper.address``, ``host:port[,...][/chroot]``): GC reads and
#: drops the snapshot nodes of the fluss-kv layout's tables there (docs/fluss.md).
ENV_FLUSS_ZOOKEEPER = "SNAPLEDGER_FLUSS_ZOOKEEPER"
#: Deprecated (read into the layout map): Restate clusters' snapshot prefixes, each with
#: its stream name, a JSON object such as ``{"restate/prod-1": "orders"}``.
ENV_RESTATE_PREFIXES = "SNAPLEDGER_RESTATE_PREFIXES"
#: Deprecated (read into the layout map): Kafka Streams changelog topics, a JSON list such
#: as ``["totals-app-totals-changelog"]``.
ENV_KAFKA_STREAMS_STREAMS = "SNAPLEDGER_KAFKA_STREAMS_STREAMS"
#: What the deprecated settings are called in an error about them.
LEGACY_LAYOUT_SOURCE = f"{ENV_RESTATE_PREFIXES}/{ENV_KAFKA_STREAMS_STREAMS} (deprecated)"
#: How long terminal ledger items stay before TTL removes them, unless configured.
DEFAULT_LEDGER_TTL_DAYS = 30
#: The longest TTL window: the longest duration anything names (``limits.MAX_HOURS``).
MAX_LEDGER_TTL_DAYS = int(MAX_HOURS // 24)


class LedgerSettings(BaseModel):
    """What every function needs: the table and the object store root."""

    # Validators built on first use (a function reads one settings class, at its first
    # ``runtime()``): importing this module builds none of them (issue 29).
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    table: str = Field(min_length=3, max_length=255, description="DynamoDB table name")
    root: str = Field(description="Object store root: s3://bucket[/prefix] or file:///dir")
    dynamodb_endpoint: str | None = Field(
        default=None, description="Only for DynamoDB Local; unset in AWS"
    )
    ledger_ttl_days: int = Field(
        default=DEFAULT_LEDGER_TTL_DAYS,
        ge=0,
        le=MAX_LEDGER_TTL_DAYS,
        description="days terminal items (events, DELETED/REJECTED records, finished jobs) "
        "stay before DynamoDB's TTL removes them; 0 keeps them for ever",
    )
    event_bus_arn: str | None = Field(default=None, description="the snapledger bus's ARN")
    event_archive_arn: str | None = Field(
        default=None, description="the bus's archive of ledger events (replays past the TTL)"
    )
    compaction_records: int = Field(
        default=1_000_000, ge=1, le=MAX_COUNT, description="default threshold"
    )
    compaction_bytes: int = Field(
        default=256 * 1024 * 1024, ge=1, le=MAX_COUNT, description="default threshold"
    )
    compaction_streams: Json[dict[str, dict[str, int]]] = Field(
        default_factory=dict,
        description='per-stream thresholds, e.g. {"orders": {"records": 500000}}',
    )
    protect_latest: bool = Field(
        default=False,
        description="register puts a legal hold on every file of a snapshot it registers, "
        "before the ledger commit; GC releases them before it marks the snapshot DELETED. "
        "Needs an s3:// root in a bucket created with Object Lock (docs/deploy.md)",
    )
    layouts: Json[Any] = Field(
        default_factory=dict,
        description="the layout map: which layout each stream or bucket prefix has, e.g. "
        '{"restate/prod-1": {"layout": "restate", "stream": "orders"}, '
        '"totals-app-totals-changelog": {"layout": "kafka-streams"}} (docs/layouts.md); '
        "every other stream is native",
    )
    fluss_zookeeper: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="Fluss's zookeeper.address (host:port[,...][/chroot]): GC of the fluss-kv "
        "layout's snapshots reads and drops their ZooKeeper nodes there (unset: none collected)",
    )
    restate_prefixes: Json[dict[str, str]] = Field(
        default_factory=dict,
        description="deprecated (read into layouts): Restate prefixes and their streams, e.g. "
        '{"restate/prod-1": "orders"}',
    )
    kafka_streams_streams: Json[list[str]] = Field(
        default_factory=list,
        description="deprecated (read into layouts): Kafka Streams changelog topics, e.g. "
        '["totals-app-totals-changelog"]',
    )
    registration_queue_url: str | None = Field(
        default=None,
        description="register only: the SQS FIFO queue manifests are handed to (one message "
        "group per lineage); unset: manifests are registered in the invocation itself",
    )


def ttl_window(settings: LedgerSettings) -> timedelta | None:
    """The TTL window the adapters write, or None when terminal items are kept for ever."""
    days = settings.ledger_ttl_days
    return timedelta(days=days) if days else None


class JobSettings(LedgerSettings):
    """Functions that start jobs also need the EMR Serverless application."""

    emr_application_id: str = Field(min_length=1)
    emr_job_role_arn: str = Field(min_length=1)
    job_entrypoint: str = Field(min_length=1, description="s3:// URI of jobs/entrypoint.py")
    job_py_files: str = Field(default="", description="s3:// URI of the jobs zip")
    emr_max_vcpu: int | None = Field(default=None, ge=1, description="the application's")
    emr_max_memory_gb: int | None = Field(default=None, ge=1, description="maximum capacity;")
    emr_max_disk_gb: int | None = Field(
        default=None, ge=1, description="all three, or none: the default worker sizes"
    )

    @model_validator(mode="after")
    def _capacity_whole(self) -> "JobSettings":
        given = [self.emr_max_vcpu, self.emr_max_memory_gb, self.emr_max_disk_gb]
        if any(v is None for v in given) and any(v is not None for v in given):
            raise ValueError(
                "set all of EMR_MAX_VCPU, EMR_MAX_MEMORY_GB and EMR_MAX_DISK_GB (the EMR "
                "Serverless application's maximum capacity, to size jobs within), or none"
            )
        if self.emr_max_vcpu and self.emr_max_memory_gb and self.emr_max_disk_gb:
            Capacity(self.emr_max_vcpu, self.emr_max_memory_gb, self.emr_max_disk_gb)
        return self


SettingsT = TypeVar("SettingsT", bound=BaseModel)


def settings_from_env(
    model: type[SettingsT], environ: Mapping[str, str] | None = None
) -> SettingsT:
    """Read ``SNAPLEDGER_*`` variables into ``model``; a clear error names what is missing."""
    env = os.environ if environ is None else environ
    values = {
        key.removeprefix(ENV_PREFIX).lower(): value
        for key, value in env.items()
        if key.startswith(ENV_PREFIX)
    }
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{ENV_PREFIX}{'.'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
            for err in exc.errors()
        )
        raise InvalidRequestError(f"configuration is incomplete: {problems}") from exc


def compaction_config(settings: "LedgerSettings") -> "CompactionConfig":
    """The compaction thresholds the settings give: a default and per-stream overrides."""
    from snapledger.core.compaction_trigger import CompactionConfig, CompactionThresholds

    default = CompactionThresholds(
        records=settings.compaction_records, bytes=settings.compaction_bytes
    )
    return CompactionConfig(
        default=default,
        streams={
            stream: default.model_copy(update=values)
            for stream, values in settings.compaction_streams.items()
        },
    )


def emr_capacity(settings: JobSettings) -> Capacity | None:
    """The EMR Serverless application's maximum capacity, when the settings give it."""
    vcpu, memory, disk = settings.emr_max_vcpu, settings.emr_max_memory_gb, settings.emr_max_disk_gb
    if vcpu is None or memory is None or disk is None:
        return None
    return Capacity(vcpu, memory, disk)  # checked when the settings were read
