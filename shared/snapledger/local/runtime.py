"""The embedded default: DynamoDB Local + a ``file://`` store + local Spark, one machine.

``LocalRuntime`` starts what is not running (DynamoDB Local on a free port, with its data
kept under the home folder unless ``in_memory``), creates the ledger table from the same
definition the CDK app deploys, and hands the functions a ``Runtime`` that uses them.
When ``snapledger local up`` is running it has written ``runtime.json`` in the home
folder, and other processes (the CLI) use its DynamoDB Local instead of starting one.

Given ``s3_endpoint`` (``local up --s3-port``: moto's server on loopback, an endpoint a
Restate node can write to), the object store is ``s3://snapledger-local`` there instead
of the ``file://`` root, so Restate's objects and snapledger's are in one bucket as in AWS.
Other processes attaching to that ``local up`` use the same store (``runtime.json``).

The runtime is built by the functions' composition root (``snapledger.runtime.
build_runtime``) from ``SNAPLEDGER_*`` settings read as the functions read them: this
process's environment, ``settings`` over it (a demo's choices), and the layout map joined
by ``layouts`` (``local up --layout``; ``restate_prefixes``, ``kafka_streams``: shorthands)
and a running ``local up``'s ``runtime.json`` (``layout_settings.py``). The local runtime
hands in its own adapters (DynamoDB Local's client, the store, local Spark); what a
registration or a GC decides (the layouts, GC's configuration, the compaction thresholds)
comes from the settings, so it decides as the deployed functions given the same settings do.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from aws_lambda_powertools.metrics.provider import cold_start
from botocore.exceptions import ClientError

from snapledger.adapters.dynamodb_backfill import backfill_head_kinds, backfill_items
from snapledger.adapters.dynamodb_changelog import DynamoSegmentStore
from snapledger.adapters.dynamodb_codec import DEFAULT_TTL_WINDOW
from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.dynamodb_lineages import DynamoLineageIndex
from snapledger.adapters.dynamodb_policies import DynamoPolicyStore
from snapledger.adapters.dynamodb_producer_offsets import DynamoProducerOffsets
from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.adapters.object_store import open_object_store
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.table_definition import (
    DEFAULT_TABLE_NAME,
    TTL_ATTRIBUTE,
    create_table_request,
    time_to_live_request,
)
from snapledger.clock import SystemClock
from snapledger.gc_settings import GcConfig
from snapledger.layouts.layout_map import LayoutMap, layout_map, legacy_entries
from snapledger.local import layout_settings
from snapledger.local.aws_events import LOCAL_BUCKET
from snapledger.local.clients import ensure_bucket, local_dynamodb_client, local_s3_client
from snapledger.local.dynamodb_local import REPO_ROOT, DynamoDBLocal, free_port, require_checkout
from snapledger.ports import JobRunner, ObjectStore
from snapledger.runtime import Runtime, build_runtime, replaced, reset_runtime, use_runtime
from snapledger.settings import (
    ENV_DYNAMODB_ENDPOINT,
    ENV_ROOT,
    ENV_TABLE,
    LedgerSettings,
    settings_from_env,
)
from snapledger.stack_names import METRICS_NAMESPACE

DEFAULT_HOME = REPO_ROOT / ".local" / "state"
RUNTIME_FILE = "runtime.json"
#: What the Lambda environment would give the functions' Powertools; locally no X-Ray,
#: no EMF metrics on stdout, and only warnings logged (each can be overridden).
POWERTOOLS_LOCAL_ENV = {
    "POWERTOOLS_SERVICE_NAME": "snapledger",
    "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


def local_home(home: str | Path | None = None) -> Path:
    """The local runtime's folder: ``--home``, ``$SNAPLEDGER_LOCAL_HOME`` or .local/state.
    Outside a checkout (installed from a wheel) there is no local runtime: NotACheckoutError."""
    require_checkout()
    chosen = home or os.environ.get("SNAPLEDGER_LOCAL_HOME") or DEFAULT_HOME
    return Path(chosen).resolve()


def ensure_table(
    client: Any, table: str, *, ttl_window: timedelta | None = DEFAULT_TTL_WINDOW
) -> None:
    """Create the ledger table if it does not exist yet (idempotent), TTL on; upgrade one
    an older version created: add the indexes it lacks, turn TTL on, then backfill the
    keys and TTLs its items lack (``backfill_items``), and move unsharded HEADs to
    their ``by_kind`` shard."""
    request = create_table_request(table)
    created = True
    try:
        client.create_table(**request)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceInUseException":
            raise
        created = False
    client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 0.2})
    indexes_added = not created and _add_missing_indexes(client, table, request)
    ttl_turned_on = enable_ttl(client, table)
    if indexes_added or (ttl_turned_on and not created):
        backfill_items(client, table, ttl_window=ttl_window)
    if not created:
        backfill_head_kinds(client, table)  # HEADs of an older version: to their shards


def enable_ttl(client: Any, table: str) -> bool:
    """Turn the table's TTL on (``TTL_ATTRIBUTE``) unless it is on; True if it was off."""
    described = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    on = described.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
    if on and described.get("AttributeName") == TTL_ATTRIBUTE:
        return False
    client.update_time_to_live(**time_to_live_request(table))
    return True


def _add_missing_indexes(client: Any, table: str, request: dict[str, Any]) -> bool:
    """Add the indexes the table lacks; True if it lacked any."""
    described = client.describe_table(TableName=table)["Table"]
    present = {index["IndexName"] for index in described.get("GlobalSecondaryIndexes", [])}
    missing = [i for i in request["GlobalSecondaryIndexes"] if i["IndexName"] not in present]
    for index in missing:  # one at a time, as DynamoDB requires
        client.update_table(
            TableName=table,
            AttributeDefinitions=request["AttributeDefinitions"],
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
        for _ in range(300):
            indexes = client.describe_table(TableName=table)["Table"]["GlobalSecondaryIndexes"]
            if all(i["IndexStatus"] == "ACTIVE" for i in indexes):
                break
            time.sleep(0.2)
    return bool(missing)


def running_runtime(home: Path) -> dict[str, Any] | None:
    """What a running ``local up`` for ``home`` wrote in ``runtime.json`` (its pid, DynamoDB
    Local endpoint, and S3 endpoint and Restate prefixes if it has them), if one runs."""
    path = home / RUNTIME_FILE
    if not path.is_file():
        return None
    try:
        info = json.loads(path.read_text())
        pid = int(info["pid"])
        os.kill(pid, 0)  # raises if that process is gone
    except (ValueError, KeyError, TypeError, OSError):
        return None
    return info if isinstance(info, dict) else None


def running_endpoint(home: Path) -> str | None:
    """The DynamoDB Local endpoint of a running ``local up`` for ``home``, if any."""
    info = running_runtime(home)
    endpoint = None if info is None else info.get("endpoint")
    return str(endpoint) if endpoint else None


@dataclass
class LocalRuntime:
    """Everything a function needs, locally; a context manager that cleans up after itself."""

    home: Path
    in_memory: bool = False
    table: str = DEFAULT_TABLE_NAME
    runner: JobRunner | None = None
    ttl_window: timedelta | None = DEFAULT_TTL_WINDOW
    #: The local S3 endpoint: the store is ``s3://snapledger-local`` there (None: file://).
    s3_endpoint: str | None = None
    #: ``SNAPLEDGER_*`` variables over this process's environment (e.g. a demo's
    #: ``SNAPLEDGER_COMPACTION_RECORDS``), read as the functions read theirs.
    settings: Mapping[str, str] = field(default_factory=dict)
    #: The layout map's entries besides ``SNAPLEDGER_LAYOUTS``' (``local up --layout``).
    layouts: LayoutMap = field(default_factory=LayoutMap)
    #: Shorthands read into the map: Restate prefixes (each with its stream name) and
    #: Kafka Streams changelog topics.
    restate_prefixes: Mapping[str, str] = field(default_factory=dict)
    kafka_streams: tuple[str, ...] = ()
    #: The layout map it applies, once started (``local up`` writes it in runtime.json).
    applied_layouts: LayoutMap = field(default_factory=LayoutMap)
    #: A DynamoDB Local to use (a job's process: its CLI's); None: ``local up``'s, or our own.
    endpoint: str | None = None
    _engine: DynamoDBLocal | None = None
    _saved_env: dict[str, str | None] = field(default_factory=dict)
    runtime: Runtime | None = None

    @property
    def root(self) -> Path:
        return self.home / "root"

    @property
    def store_uri(self) -> str:
        """Where the functions' objects are: the bucket on the S3 endpoint, or the root."""
        return f"s3://{LOCAL_BUCKET}" if self.s3_endpoint else self.root.as_uri()

    def _open_store(self) -> ObjectStore:
        if self.s3_endpoint is None:
            return FileObjectStore(self.root)
        s3 = local_s3_client(self.s3_endpoint)
        ensure_bucket(s3, LOCAL_BUCKET)
        return open_object_store(self.store_uri, s3_client=s3)

    def start(self) -> Runtime:
        self._saved_env = {name: os.environ.get(name) for name in POWERTOOLS_LOCAL_ENV}
        for name, value in POWERTOOLS_LOCAL_ENV.items():
            os.environ.setdefault(name, value)
        # Powertools prints a cold-start EMF metric to stdout even with metrics disabled;
        # in one long local process there is no cold start to report, and the line would
        # garble the CLI's --json output.
        cold_start.is_cold_start = False
        self.home.mkdir(parents=True, exist_ok=True)
        running = None if self.in_memory else running_runtime(self.home)
        endpoint = self.endpoint or (None if running is None else running.get("endpoint"))
        if running is not None and self.s3_endpoint is None:  # its store
            self.s3_endpoint = running.get("s3_endpoint")
        environ = self._environ(running)  # a bad setting fails before anything starts
        if endpoint is None:
            data_dir = None if self.in_memory else self.home / "dynamodb"
            self._engine = DynamoDBLocal(port=free_port(), data_dir=data_dir).start()
            endpoint = self._engine.endpoint_url
        self.endpoint = endpoint
        client = local_dynamodb_client(endpoint)
        ensure_table(client, self.table, ttl_window=self.ttl_window)
        store = self._open_store()
        if self.runner is None:
            from snapledger.local.spark_runner import LocalSparkRunner

            self.runner = LocalSparkRunner()
        environ[ENV_DYNAMODB_ENDPOINT] = endpoint
        composed = build_runtime(
            settings_from_env(LedgerSettings, environ),
            environ=environ,
            ledger=DynamoLedger(self.table, client=client, ttl_window=self.ttl_window),
            store=store,
            clock=SystemClock(),
            jobs=DynamoJobStore(self.table, client=client, ttl_window=self.ttl_window),
            runner=self.runner,
            segments=DynamoSegmentStore(self.table, client=client),
            lineages=DynamoLineageIndex(self.table, client=client),
            policies=DynamoPolicyStore(self.table, client=client),
            streams=DynamoStreamLog(self.table, client=client, ttl_window=self.ttl_window),
            # No AWS here: no queues, no archive, no Object Lock (whatever SNAPLEDGER_* says).
            gc_shards=None,
            registration_queue=None,
            event_archive=None,
            holds=None,
            producer_offsets=DynamoProducerOffsets(self.table, client=client),
        )
        self.runtime = replaced(composed)  # every collaborator built now: a bad setting fails here
        use_runtime(self.runtime)
        return self.runtime

    def _environ(self, running: Mapping[str, Any] | None) -> dict[str, str]:
        """The ``SNAPLEDGER_*`` settings the runtime is built from: this process's
        environment, ``settings`` over it, this runtime's table and store, and the layouts
        joined by ``local up``'s (``layout_settings.py``); its DynamoDB Local is added once
        known."""
        environ = {**os.environ, **self.settings, ENV_TABLE: self.table, ENV_ROOT: self.store_uri}
        environ.pop(ENV_DYNAMODB_ENDPOINT, None)
        shorthands = legacy_entries(self.restate_prefixes, self.kafka_streams)
        own = self.layouts.joined(layout_map(shorthands), source="local up's options")
        self.applied_layouts = (
            layout_settings.from_settings(settings_from_env(LedgerSettings, environ))
            .joined(own, source="local up's options")
            .joined(layout_settings.from_runtime_file(running), source="runtime.json")
        )
        environ.update(layout_settings.environment(self.applied_layouts))
        settings_from_env(GcConfig, environ)  # checked now too: GC is built after the start
        return environ

    @property
    def endpoint_url(self) -> str | None:
        return self._engine.endpoint_url if self._engine else None

    def hand_over_engine(self) -> DynamoDBLocal | None:
        """The DynamoDB Local this runtime started, left running by ``stop`` from now on
        (a job's process still uses it and stops it when done); None if it started none."""
        engine, self._engine = self._engine, None
        return engine

    def stop(self) -> None:
        reset_runtime()
        for name, value in self._saved_env.items():  # leave the process as we found it
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env = {}
        close = getattr(self.runner, "close", None)
        if close is not None:
            close()
        if self._engine is not None:
            self._engine.stop()
            self._engine = None

    def __enter__(self) -> Runtime:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
