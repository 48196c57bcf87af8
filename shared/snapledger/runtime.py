"""What a function runs on: the ledger, the object store and the clock, built once.

Every handler asks ``runtime()`` for its collaborators. The first call of a cold start
reads the settings (``SNAPLEDGER_*``), builds the boto3 clients and the adapters, and
keeps them for the warm invocations that follow (connections are reused). This is the
only place the functions' boto3 clients are built, and each reports an AccessDenied as
``AccessDeniedError`` naming the action and the resource.

Tests and the local runtime hand in their own with ``use_runtime(rt)`` (or the
``runtime_override`` context manager) and drop it again with ``reset_runtime()``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from snapledger.adapters.access_denied import report_access_denied
from snapledger.adapters.dynamodb_changelog import DynamoSegmentStore
from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.dynamodb_lineages import DynamoLineageIndex
from snapledger.adapters.dynamodb_policies import DynamoPolicyStore
from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.adapters.emr_serverless import EmrServerlessRunner
from snapledger.adapters.object_store import object_holds, open_object_store
from snapledger.adapters.sqs_gc_shards import SqsShardQueue
from snapledger.adapters.sqs_registration_queue import SqsRegistrationQueue
from snapledger.clock import Clock, SystemClock
from snapledger.core.compaction_trigger import CompactionConfig, CompactionThresholds
from snapledger.core.job_sizing import Capacity
from snapledger.errors import JobStartError
from snapledger.gc_settings import GcConfig
from snapledger.layouts.lineage import NATIVE_ONLY, LayoutCatalog
from snapledger.ports import (
    FoundJobRun,
    JobRunner,
    JobRunSpec,
    JobRunStatus,
    JobStore,
    Ledger,
    LineageIndex,
    ObjectHolds,
    ObjectStore,
    PolicyStore,
    RegistrationQueue,
    SegmentStore,
    ShardQueue,
    StreamLogStore,
)
from snapledger.settings import (
    ENV_EMR_APPLICATION_ID,
    JobSettings,
    LedgerSettings,
    settings_from_env,
    ttl_window,
)

if TYPE_CHECKING:
    from datetime import datetime

    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client


# Retries: botocore's standard mode (jittered backoff, throttles included); the ledger
# adds its own bounded retries on top for lost races. Timeouts well inside a function's.
CLIENT_CONFIG = Config(retries={"mode": "standard"}, connect_timeout=5, read_timeout=20)
# The ledger's requests are built by its adapters in a few fixed shapes, each exercised
# against DynamoDB Local (which validates as DynamoDB does); botocore's client-side
# validation of them costs more CPU than the rest of the request (a 35-item transaction:
# ~11 ms with it, ~5 ms without), so the DynamoDB clients skip it.
DYNAMODB_CLIENT_CONFIG = CLIENT_CONFIG.merge(Config(parameter_validation=False))
LOCAL_REGION = "us-east-1"


@dataclass(frozen=True)
class Runtime:
    """A function's collaborators."""

    ledger: Ledger
    store: ObjectStore
    clock: Clock
    jobs: JobStore
    runner: JobRunner
    segments: SegmentStore
    thresholds: CompactionConfig
    lineages: LineageIndex
    policies: PolicyStore
    gc: GcConfig
    streams: StreamLogStore
    gc_shards: ShardQueue | None = None  # SNAPLEDGER_GC_QUEUE_URL: GC fans out to it
    #: Where ``register`` hands manifests to, one message group per lineage (None: it
    #: registers them itself, as the local runtime does).
    registration_queue: RegistrationQueue | None = None
    event_archive: EventArchive | None = None  # where events past the TTL window are
    #: Legal holds on snapshot objects (SNAPLEDGER_PROTECT_LATEST); None: not protected.
    holds: ObjectHolds | None = None
    #: Each stream's snapshot layout (SNAPLEDGER_RESTATE_PREFIXES; native for the rest).
    layouts: LayoutCatalog = NATIVE_ONLY


@dataclass(frozen=True)
class EventArchive:
    """The bus's archive of ledger events: a ``history`` past the TTL points at it."""

    archive_arn: str
    bus_arn: str


class NoJobRunner:
    """The runner of a function deployed without the EMR Serverless settings."""

    def start(self, spec: JobRunSpec) -> str:
        raise JobStartError(
            "this function is not configured to start jobs: set SNAPLEDGER_EMR_APPLICATION_ID, "
            "SNAPLEDGER_EMR_JOB_ROLE_ARN and SNAPLEDGER_JOB_ENTRYPOINT"
        )

    def size(self, spec: JobRunSpec) -> None:
        return None

    def status(self, run_id: str) -> JobRunStatus:
        # Nothing to ask: callers keep what the event said (no reason is better than a
        # reason that describes this function's configuration instead of the job).
        return JobRunStatus(state="UNKNOWN", reason=None)

    def find_run(self, job_id: str, *, created_after: datetime) -> FoundJobRun | None:
        # Nothing to ask, so nothing may be concluded (a job is never failed as "never
        # started" by a function that cannot see the runs).
        raise JobStartError(
            f"this function cannot look for job {job_id}'s run: set "
            "SNAPLEDGER_EMR_APPLICATION_ID, SNAPLEDGER_EMR_JOB_ROLE_ARN and "
            "SNAPLEDGER_JOB_ENTRYPOINT"
        )


def compaction_config(settings: LedgerSettings) -> CompactionConfig:
    """The thresholds from the settings: a default and per-stream overrides."""
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


def build_runtime(settings: LedgerSettings) -> Runtime:
    """The AWS (or DynamoDB Local) runtime the settings describe."""
    s3_client = _s3_client() if settings.root.startswith("s3://") else None
    dynamodb = _dynamodb_client(settings.dynamodb_endpoint)
    runner: JobRunner = NoJobRunner()
    if isinstance(settings, JobSettings):
        runner = EmrServerlessRunner(
            settings.emr_application_id,
            settings.emr_job_role_arn,
            settings.job_entrypoint,
            settings.job_py_files,
            client=report_access_denied(boto3.client("emr-serverless", config=CLIENT_CONFIG)),
            capacity=emr_capacity(settings),
        )
    window = ttl_window(settings)
    gc = settings_from_env(GcConfig)
    shards = None
    if gc.gc_queue_url is not None:
        sqs = report_access_denied(boto3.client("sqs", config=CLIENT_CONFIG))
        shards = SqsShardQueue(gc.gc_queue_url, client=sqs)
    store = open_object_store(settings.root, s3_client=s3_client)
    return Runtime(
        ledger=DynamoLedger(settings.table, client=dynamodb, ttl_window=window),
        store=store,
        clock=SystemClock(),
        jobs=DynamoJobStore(settings.table, client=dynamodb, ttl_window=window),
        runner=runner,
        segments=DynamoSegmentStore(settings.table, client=dynamodb),
        thresholds=compaction_config(settings),
        lineages=DynamoLineageIndex(settings.table, client=dynamodb),
        policies=DynamoPolicyStore(settings.table, client=dynamodb),
        streams=DynamoStreamLog(settings.table, client=dynamodb, ttl_window=window),
        gc=gc,
        gc_shards=shards,
        registration_queue=(
            SqsRegistrationQueue(
                settings.registration_queue_url,
                client=report_access_denied(boto3.client("sqs", config=CLIENT_CONFIG)),
            )
            if settings.registration_queue_url
            else None
        ),
        event_archive=_event_archive(settings),
        holds=object_holds(store) if settings.protect_latest else None,
        layouts=LayoutCatalog(settings.restate_prefixes),
    )


def _event_archive(settings: LedgerSettings) -> EventArchive | None:
    if not (settings.event_archive_arn and settings.event_bus_arn):
        return None
    return EventArchive(archive_arn=settings.event_archive_arn, bus_arn=settings.event_bus_arn)


_override: Runtime | None = None


def runtime() -> Runtime:
    """The runtime of this process: the injected one, else the one built from settings."""
    return _override if _override is not None else _from_environment()


def use_runtime(rt: Runtime) -> None:
    """Make every later ``runtime()`` call answer ``rt`` (tests, the local runtime)."""
    global _override  # noqa: PLW0603 - the one injection point of the process
    _override = rt


def reset_runtime() -> None:
    """Forget the injected runtime and the one built from settings."""
    global _override  # noqa: PLW0603 - the one injection point of the process
    _override = None
    _from_environment.cache_clear()


@contextmanager
def runtime_override(rt: Runtime) -> Iterator[Runtime]:
    """``use_runtime(rt)`` for the duration of a ``with`` block, then reset."""
    use_runtime(rt)
    try:
        yield rt
    finally:
        reset_runtime()


@lru_cache(maxsize=1)
def _from_environment() -> Runtime:
    # Once per cold start: the settings, the clients and their connection pools.
    model = JobSettings if os.environ.get(ENV_EMR_APPLICATION_ID) else LedgerSettings
    return build_runtime(settings_from_env(model))


def _dynamodb_client(endpoint: str | None) -> DynamoDBClient:
    if endpoint is None:
        return report_access_denied(boto3.client("dynamodb", config=DYNAMODB_CLIENT_CONFIG))
    # DynamoDB Local accepts any credentials; fixed ones keep a workstation without an
    # AWS profile working, and the region only has to be set.
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=os.environ.get("AWS_REGION") or LOCAL_REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - DynamoDB Local accepts any credentials
        config=DYNAMODB_CLIENT_CONFIG,
    )


def _s3_client() -> S3Client:
    return report_access_denied(boto3.client("s3", config=CLIENT_CONFIG))
