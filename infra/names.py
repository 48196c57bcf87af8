"""Names the CDK app adds to ``infra/constants.py``: prefixes, context keys, metric names.

``constants.py`` holds the names the CLI shares with the app; this module holds the ones
only the app (and its tests) need. Storage prefixes come from ``snapledger.layout`` so the
bucket notifications, the IAM grants and the code that writes the keys cannot drift.
"""

from __future__ import annotations

import re
from pathlib import Path

from infra.constants import OUTPUT_FUNCTION_PREFIX
from snapledger import stack_names
from snapledger.adapters import dynamodb_codec
from snapledger.layout import (
    CHANGELOG,
    GENERATION_POINTER_NAME,
    LATEST_POINTER_NAME,
    MANIFEST_NAME,
    RESTORES,
    SNAPSHOTS,
)
from snapledger.layouts import restate
from snapledger.layouts.registry import LAYOUTS, PrefixGrants
from snapledger.models import bus_events

# --- Source tree: what the app packages -------------------------------------------------
REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
SHARED_PACKAGE_DIR = REPO_ROOT / "shared" / "snapledger"
JOBS_DIR = REPO_ROOT / "jobs"
JOB_ENTRYPOINT_NAME = "entrypoint.py"
EVENTS_DIR = REPO_ROOT / "events"
# Sub-packages of ``snapledger`` that only run on a workstation, never in Lambda.
LAMBDA_EXCLUDED_SUBPACKAGES = ("local", "cli", "client", "kafka_streams", "demos")
#: The modules of ``snapledger`` the job zip carries beside ``jobs/`` (standard library only):
#: the layout, ULIDs, errors and job kinds, and the checksum and Parquet footer rules, shared by the
#: functions and the jobs (tests/infra/test_units.py checks the jobs import no other).
JOB_SHARED_MODULES = (
    "__init__.py",
    "errors.py",
    "ids.py",
    "job_kinds.py",
    "layout.py",
    "limits.py",
    "core/__init__.py",
    "core/checksums.py",
    "core/coverage.py",
    "core/parquet_footer.py",
)

# --- Bucket layout (keys relative to the bucket root) -----------------------------------
SNAPSHOTS_PREFIX = f"{SNAPSHOTS}/"
CHANGELOG_PREFIX = f"{CHANGELOG}/"
RESTORES_PREFIX = f"{RESTORES}/"
MANIFEST_SUFFIX = MANIFEST_NAME
# Each lineage's latest.json (snapshots/{stream}/{partition}/latest.json): register writes it.
LATEST_POINTER_KEYS = f"{SNAPSHOTS}/*/*/{LATEST_POINTER_NAME}"
# Each stream's generation.json (snapshots/{stream}/generation.json): register writes it.
GENERATION_POINTER_KEYS = f"{SNAPSHOTS}/*/{GENERATION_POINTER_NAME}"
# Changelog segments are Parquet files; the suffix keeps folder markers and strays out.
CHANGELOG_SUFFIX = ".parquet"
EMR_LOGS_PREFIX = "emr-logs/"
ACCESS_LOGS_PREFIX = "snapshot-bucket/"
# The jobs' scratch space (``jobs/layout.py: staging_prefix``): Spark writes there, then
# the job renames (copy + delete) finished files into snapshots/ or restores/.
STAGING_PREFIX = "_staging/"
STAGING_EXPIRY_DAYS = 3
# EMRFS "folder" marker objects (``<dir>_$folder$``), which EMRFS removes from a prefix once
# files land in it: the only objects under snapshots/ the job role may delete.
EMRFS_FOLDER_MARKER = "*_$folder$"

# --- Lambda ------------------------------------------------------------------------------
# Functions whose triggers are asynchronous (S3 notifications, EventBridge): each gets an
# on-failure destination queue. ``query`` is only ever invoked synchronously.
ASYNC_FUNCTIONS = ("register", "track_changelog", "launch", "job_state", "gc")
# Functions that submit EMR Serverless job runs, and those that only read their state
# (gc reconciles stuck jobs; job_state asks for a failure's cause when the event has none).
JOB_STARTING_FUNCTIONS = ("launch", "track_changelog")
JOB_READING_FUNCTIONS = ("gc", "job_state")
JOB_FUNCTIONS = JOB_STARTING_FUNCTIONS + JOB_READING_FUNCTIONS
# Functions with shareable console test events (files ``events/{function}-{example}.json``).
CONSOLE_EVENT_FUNCTIONS = ("launch", "query", "gc")
LAMBDA_TEST_EVENT_REGISTRY = "lambda-testevent-schemas"

# Official Powertools for AWS Lambda (Python) v3 layer, built from ``aws-lambda-powertools[all]``
# (pydantic v2 included; boto3 comes with the runtime). Resolved at deploy time from AWS's public
# SSM parameter, so synth needs no credentials. Keep in step with the pin in pyproject.toml;
# a test checks the two agree.
POWERTOOLS_VERSION = "3.37.0"
POWERTOOLS_LAYER_SSM_PARAMETER = (
    f"/aws/service/powertools/python/arm64/python3.12/{POWERTOOLS_VERSION}"
)

# --- EventBridge -------------------------------------------------------------------------
EMR_STATE_CHANGE_SOURCE = "aws.emr-serverless"
EMR_STATE_CHANGE_DETAIL_TYPE = "EMR Serverless Job Run State Change"
# Ledger events the Pipe forwards: their own source, so they can never match the launch rule.
# Source, item prefix and type attribute come from the code that writes and reads the items.
LEDGER_EVENT_SOURCE = bus_events.LEDGER_EVENT_SOURCE
EVENT_ITEM_PREFIX = dynamodb_codec.EVENT_PREFIX
# Attribute of an ``EV#`` item naming its event type (``SnapshotRegistered``, ...).
EVENT_TYPE_ATTRIBUTE = bus_events.EVENT_TYPE_ATTRIBUTE
# The Pipe's enrichment function (``functions/ledger_events.py``): not one of FUNCTION_NAMES,
# which have data access, failure queues and console outputs; it has none of those.
ENRICHMENT_FUNCTION = "ledger_events"
OUTPUT_EVENT_SCHEMA_REGISTRY = "EventSchemaRegistryName"
GC_SCHEDULE_HOURS = 6
# GC shards worked at once by the gc function's SQS trigger (MaximumConcurrency, >= 2);
# the gc function's reserved concurrency leaves one more for the scheduled coordinator.
GC_SHARD_WORKERS = 4

# --- Metrics -----------------------------------------------------------------------------
# Emitted by gc (Powertools Metrics, EMF) with the default ``service`` dimension: named
# once, with the functions that emit them (snapledger/stack_names.py).
STUCK_JOBS_METRIC = stack_names.STUCK_JOBS_METRIC
GC_STREAMS_FAILED_METRIC = stack_names.GC_STREAMS_FAILED_METRIC
GC_POINTERS_UNREPAIRED_METRIC = stack_names.GC_POINTERS_UNREPAIRED_METRIC
GC_RESTATE_LATESTS_BROKEN_METRIC = stack_names.GC_RESTATE_LATESTS_BROKEN_METRIC
SERVICE_DIMENSION = "service"

# --- Context keys (``cdk deploy -c key=value``) -------------------------------------------
CTX_DELETION_PROTECTION = "deletionProtection"
CTX_RESERVED_CONCURRENCY = "reservedConcurrency"
CTX_ALARM_TOPIC_ARN = "alarmTopicArn"
CTX_POWERTOOLS_LAYER_ARN = "powertoolsLayerArn"
CTX_EMR_MAX_VCPU = "emrMaxVcpu"
CTX_EMR_MAX_MEMORY_GB = "emrMaxMemoryGb"
CTX_LOG_RETENTION_DAYS = "logRetentionDays"
CTX_LEDGER_TTL_DAYS = "ledgerTtlDays"
CTX_EVENT_ARCHIVE_RETENTION_DAYS = "eventArchiveRetentionDays"
CTX_PROTECT_LATEST = "protectLatest"
CTX_STALE_AFTER_HOURS = "staleAfterHours"
CTX_STALE_AFTER_HOURS_DEFAULT = "staleAfterHoursDefault"
# The layout map (a JSON object; snapledger's ``layouts/layout_map.py``): which layout each
# stream or bucket prefix has, ``-c layouts='{"restate/prod-1": {"layout": "restate",
# "stream": "payments"}}'`` (docs/deploy.md, "Layouts").
CTX_LAYOUTS = "layouts"
# Deprecated, read into the layout map: Restate clusters' snapshot prefixes, each with its
# stream name (``-c restatePrefixes='{"restate/prod-1": "payments"}'``), and Kafka Streams
# changelog topics (``-c kafkaStreamsStreams='["totals-app-totals-changelog"]'``).
CTX_RESTATE_PREFIXES = "restatePrefixes"
CTX_KAFKA_STREAMS_STREAMS = "kafkaStreamsStreams"
#: How the gc function reaches Fluss's ZooKeeper (infra/fluss_network.py, docs/fluss.md).
CTX_FLUSS = "fluss"

# --- Restate (issue 28, "Deploy") ----------------------------------------------------------
# Under each Restate prefix: ``{prefix}/{partition}/lsn_{lsn:020d}-{id}/...`` (the snapshot
# folders, which GC and Restate's eviction delete) and ``{prefix}/{partition}/latest.json``
# (Restate's pointer, only ever rewritten by a conditional write, never deleted).
RESTATE_METADATA_SUFFIX = restate.METADATA_NAME
# Stack output of each prefix's managed policy for its Restate nodes: this + its stream.
OUTPUT_RESTATE_NODE_POLICY_PREFIX = "RestateNodePolicy"


# --- Kafka Streams (issue 38, "Set-up on AWS") ---------------------------------------------
# Managed policies for the init container (``snapledger kafka-streams seed``) and the
# snapshotter (``snapledger kafka-streams snapshot``), output under these keys.
OUTPUT_KAFKA_STREAMS_SEED_POLICY = "KafkaStreamsSeedPolicy"
OUTPUT_KAFKA_STREAMS_SNAPSHOT_POLICY = "KafkaStreamsSnapshotPolicy"
# The most topics ``kafkaStreamsStreams`` takes: each adds its resources to both policies,
# and a managed policy holds at most 6,144 characters (tests/infra/test_kafka_streams_policies.py
# checks the worst case fits).
MAX_KAFKA_STREAMS_STREAMS = 5
# A snapshot folder's LSN: ``{lsn:020d}`` (snapledger.layout), matched digit by digit.
_LSN_PATTERN = "?" * 20


def kafka_streams_snapshot_files(topic: str) -> str:
    """The objects of every snapshot folder of a changelog topic's lineages (IAM pattern):
    ``snapshots/{topic}/{partition}/{lsn:020d}-{id}/{file}``, so neither ``latest.json`` nor
    ``generation.json``, which snapledger writes."""
    return f"{SNAPSHOTS}/{topic}/*/{_LSN_PATTERN}-*/*"


def kafka_streams_manifests(topic: str) -> str:
    """Every ``_manifest.json`` under a changelog topic's lineages (IAM pattern)."""
    return f"{SNAPSHOTS}/{topic}/*/{MANIFEST_NAME}"


def _restate_grants() -> PrefixGrants:
    declared = LAYOUTS["restate"].grants
    assert declared is not None and declared.pointers and declared.deeper_pointers
    return declared


def restate_snapshot_folders(prefix: str) -> str:
    """The keys of every snapshot folder's objects under a Restate prefix (IAM pattern; the
    registry's ``PrefixGrants.deleted``)."""
    return f"{prefix}/{_restate_grants().deleted}"


def restate_latest_pointers(prefix: str) -> str:
    """Each partition's latest.json under a Restate prefix (IAM pattern; ``*`` crosses '/')."""
    return f"{prefix}/{_restate_grants().pointers}"


def restate_deeper_pointers(prefix: str) -> str:
    """A latest.json deeper than a partition's own (inside a snapshot folder): never ours."""
    return f"{prefix}/{_restate_grants().deeper_pointers}"


def restate_output_key(stream: str) -> str:
    """The output holding the Restate node policy of ``stream``'s prefix, e.g.
    ``RestateNodePolicyPayments`` (``stream`` in CamelCase, letters and digits only)."""
    parts = re.split(r"[^A-Za-z0-9]+", stream)
    return OUTPUT_RESTATE_NODE_POLICY_PREFIX + "".join(p[:1].upper() + p[1:] for p in parts)


def function_output_key(function_name: str) -> str:
    """Stack output key holding a function's physical name, e.g. ``FunctionTrackChangelog``."""
    return OUTPUT_FUNCTION_PREFIX + function_construct_id(function_name)


def function_construct_id(function_name: str) -> str:
    """Construct id of a function, e.g. ``TrackChangelog``."""
    return "".join(part.title() for part in function_name.split("_"))
