"""What a function runs on: the ledger, the object store and the clock, built once.

Every handler asks ``runtime()`` for its collaborators. The first call of a cold start
reads the settings (``SNAPLEDGER_*``); each collaborator (an adapter, its boto3 client,
the GC settings) is built the first time the function asks for it and kept for the warm
invocations that follow (connections are reused). A function's cold start therefore
imports and builds only the adapters its invocations use: query never loads the EMR,
SQS or S3 adapters, nor builds their clients. This is the only place the functions'
boto3 clients are built, and each reports an AccessDenied as ``AccessDeniedError``
naming the action and the resource.

``build_runtime`` is the one composition root: the functions' cold start, the local runtime
(``local up``, ``--local``, the demos, the benches) and the tests build with it. A caller may
hand in adapters, never what decides a registration or a GC run (``DECIDED``): those come
from the ``SNAPLEDGER_*`` settings, so runtimes given the same settings decide alike.

Tests and the local runtime hand in their own with ``use_runtime(rt)`` (or the
``runtime_override`` context manager) and drop it again with ``reset_runtime()``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, Literal

import boto3
from botocore.config import Config

from snapledger.adapters.access_denied import report_access_denied
from snapledger.clock import Clock, SystemClock
from snapledger.settings import (
    ENV_EMR_APPLICATION_ID,
    JobSettings,
    LedgerSettings,
    compaction_config,
    emr_capacity,
    settings_from_env,
    ttl_window,
)

if TYPE_CHECKING:
    from datetime import timedelta

    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

    from snapledger.core.compaction_trigger import CompactionConfig
    from snapledger.gc_settings import GcConfig
    from snapledger.layouts.layout_map import LayoutMap
    from snapledger.ports import (
        JobRunner,
        JobStore,
        Ledger,
        LineageIndex,
        ObjectHolds,
        ObjectStore,
        PolicyStore,
        ProducerOffsetsStore,
        RegistrationQueue,
        SegmentStore,
        ShardQueue,
        StreamLogStore,
    )
    from snapledger.strategies.catalog import LayoutCatalog


# Retries: botocore's standard mode (jittered backoff, throttles included); the ledger
# adds its own bounded retries on top for lost races. Timeouts well inside a function's.
CLIENT_CONFIG = Config(retries={"mode": "standard"}, connect_timeout=5, read_timeout=20)
# The ledger's requests are built by its adapters in a few fixed shapes, each exercised
# against DynamoDB Local (which validates as DynamoDB does); botocore's client-side
# validation of them costs more CPU than the rest of the request (a 35-item transaction:
# ~11 ms with it, ~5 ms without), so the DynamoDB clients skip it.
DYNAMODB_CLIENT_CONFIG = CLIENT_CONFIG.merge(Config(parameter_validation=False))
LOCAL_REGION = "us-east-1"


def _catalog(layouts: LayoutMap | None = None, fluss_zookeeper: str | None = None) -> LayoutCatalog:
    """Each stream's layout strategy (``strategies/catalog.py``), built from the layout map
    the first time a function asks for it: the strategies load the registration checks and
    the GC steps they bind, which a function that reads no snapshot never imports (issue 29)."""
    from snapledger.strategies.catalog import LayoutCatalog

    bindings = {}
    if fluss_zookeeper and layouts is not None and layouts.of("fluss-kv"):
        from snapledger.adapters.zookeeper_fluss import ZooKeeperFlussNodes

        bindings["fluss-kv"] = {"nodes": ZooKeeperFlussNodes(fluss_zookeeper)}
    return LayoutCatalog(layouts, bindings)


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
    #: Each stream's snapshot layout (the layout map, SNAPLEDGER_LAYOUTS; native for the rest).
    layouts: LayoutCatalog = field(default_factory=_catalog)
    producer_offsets: ProducerOffsetsStore | None = None  # the Fluss producers' registry


@dataclass(frozen=True)
class EventArchive:
    """The bus's archive of ledger events: a ``history`` past the TTL points at it."""

    archive_arn: str
    bus_arn: str


#: The collaborators that decide what a registration or a GC run does: built from the
#: settings by ``build_runtime`` alone, never handed in.
DECIDED = frozenset({"layouts", "gc", "thresholds"})


def build_runtime(
    settings: LedgerSettings, *, environ: Mapping[str, str] | None = None, **adapters: Any
) -> Runtime:
    """The composition root: the runtime the settings describe, each collaborator built
    when first asked for. ``adapters`` (``Runtime`` fields: ledger, store, clock, runner,
    ...) are used instead of the ones the settings would build; GC's configuration is read
    from ``environ`` (default: this process's environment). Handing in one of ``DECIDED``
    is a TypeError: they come from the settings only."""
    return ComposedRuntime(settings, environ=environ, adapters=adapters)


class ComposedRuntime(Runtime):
    """The runtime composed from a function's settings: each collaborator is built (its
    adapter's import, its boto3 client) when the function first asks for it, by a
    ``cached_property`` named as the ``Runtime`` field it provides (found before the field's
    default; once built, the instance's own value). Two threads may both build it; one is
    kept, harmless here. ``dataclasses.replace`` needs a plain ``Runtime``: ``replaced``. An
    adapter handed in is set as the instance's own value at once (found before the property).
    """

    settings: LedgerSettings
    _environ: Mapping[str, str] | None

    def __init__(
        self,
        settings: LedgerSettings,
        *,
        environ: Mapping[str, str] | None = None,
        adapters: Mapping[str, Any] | None = None,
    ) -> None:
        # Not the dataclass __init__: nothing is built until asked for.
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "_environ", environ)
        for name, adapter in (adapters or {}).items():
            if name in DECIDED or name not in _FIELDS:
                raise TypeError(
                    f"build_runtime() cannot be handed {name!r}: give an adapter among "
                    f"{sorted(_FIELDS - DECIDED)}; {sorted(DECIDED)} come from the settings"
                )
            object.__setattr__(self, name, adapter)
        if settings.protect_latest:
            # Set only on the functions that hold objects: a store that cannot hold is a
            # misconfiguration they report at once, not at their first hold.
            self.holds  # noqa: B018 - built for its check

    @cached_property
    def ledger(self) -> Ledger:
        from snapledger.adapters.dynamodb_ledger import DynamoLedger

        return DynamoLedger(self.settings.table, client=self._dynamodb, ttl_window=self._window)

    @cached_property
    def store(self) -> ObjectStore:
        from snapledger.adapters.object_store import open_object_store

        root = self.settings.root
        return open_object_store(root, s3_client=_s3_client() if root.startswith("s3://") else None)

    @cached_property
    def clock(self) -> Clock:
        return SystemClock()

    @cached_property
    def jobs(self) -> JobStore:
        from snapledger.adapters.dynamodb_jobs import DynamoJobStore

        return DynamoJobStore(self.settings.table, client=self._dynamodb, ttl_window=self._window)

    @cached_property
    def runner(self) -> JobRunner:
        settings = self.settings
        if not isinstance(settings, JobSettings):
            from snapledger.adapters.no_job_runner import NoJobRunner

            return NoJobRunner()
        from snapledger.adapters.emr_serverless import EmrServerlessRunner

        return EmrServerlessRunner(
            settings.emr_application_id,
            settings.emr_job_role_arn,
            settings.job_entrypoint,
            settings.job_py_files,
            client=_aws_client("emr-serverless"),
            capacity=emr_capacity(settings),
        )

    @cached_property
    def segments(self) -> SegmentStore:
        from snapledger.adapters.dynamodb_changelog import DynamoSegmentStore

        return DynamoSegmentStore(self.settings.table, client=self._dynamodb)

    @cached_property
    def thresholds(self) -> CompactionConfig:
        return compaction_config(self.settings)

    @cached_property
    def lineages(self) -> LineageIndex:
        from snapledger.adapters.dynamodb_lineages import DynamoLineageIndex

        return DynamoLineageIndex(self.settings.table, client=self._dynamodb)

    @cached_property
    def policies(self) -> PolicyStore:
        from snapledger.adapters.dynamodb_policies import DynamoPolicyStore

        return DynamoPolicyStore(self.settings.table, client=self._dynamodb)

    @cached_property
    def producer_offsets(self) -> ProducerOffsetsStore:
        from snapledger.adapters.dynamodb_producer_offsets import DynamoProducerOffsets as Store

        return Store(self.settings.table, client=self._dynamodb)

    @cached_property
    def streams(self) -> StreamLogStore:
        from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog

        return DynamoStreamLog(self.settings.table, client=self._dynamodb, ttl_window=self._window)

    @cached_property
    def gc(self) -> GcConfig:
        from snapledger.gc_settings import GcConfig

        return settings_from_env(GcConfig, self._environ)

    @cached_property
    def gc_shards(self) -> ShardQueue | None:
        url = self.gc.gc_queue_url
        if url is None:
            return None
        from snapledger.adapters.sqs_gc_shards import SqsShardQueue

        return SqsShardQueue(url, client=_aws_client("sqs"))

    @cached_property
    def registration_queue(self) -> RegistrationQueue | None:
        url = self.settings.registration_queue_url
        if not url:
            return None
        from snapledger.adapters.sqs_registration_queue import SqsRegistrationQueue

        return SqsRegistrationQueue(url, client=_aws_client("sqs"))

    @cached_property
    def event_archive(self) -> EventArchive | None:
        return _event_archive(self.settings)

    @cached_property
    def holds(self) -> ObjectHolds | None:
        if not self.settings.protect_latest:
            return None
        from snapledger.adapters.object_store import object_holds

        return object_holds(self.store)

    @cached_property
    def layouts(self) -> LayoutCatalog:
        from snapledger.layouts.layout_map import settings_layout_map

        return _catalog(settings_layout_map(self.settings), self.settings.fluss_zookeeper)

    @cached_property
    def _dynamodb(self) -> DynamoDBClient:
        # One client (one connection pool) for every DynamoDB adapter of the function.
        return _dynamodb_client(self.settings.dynamodb_endpoint)

    @cached_property
    def _window(self) -> timedelta | None:
        return ttl_window(self.settings)


_FIELDS = frozenset(f.name for f in fields(Runtime))


def replaced(rt: Runtime, **changes: Any) -> Runtime:
    """``dataclasses.replace`` for any runtime, a composed one included: a plain ``Runtime``
    with ``changes`` in place of those adapters and the others taken from ``rt`` (a composed
    runtime builds them now). An unknown name, or one of ``DECIDED``, is a TypeError."""
    if decided := sorted(DECIDED & changes.keys()):
        raise TypeError(f"replaced() cannot change {decided}: build_runtime builds them")
    kept = {f.name: getattr(rt, f.name) for f in fields(Runtime) if f.name not in changes}
    return Runtime(**kept, **changes)


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


def _aws_client(service: Literal["emr-serverless", "sqs"]) -> Any:
    return report_access_denied(boto3.client(service, config=CLIENT_CONFIG))
