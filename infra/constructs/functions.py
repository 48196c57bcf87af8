"""The six Lambda functions: one role each, granted only what that function touches."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import jsii
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra import names
from infra.config import StackConfig
from infra.constants import FUNCTION_NAMES, METRICS_NAMESPACE, SERVICE_NAME
from infra.constructs.emr import EMR_SERVICE_PRINCIPAL, SparkJobs, listing_condition
from infra.constructs.function_parts import log_group_and_role
from infra.nag import acknowledge, arn_of, iam5
from infra.packaging import stage_function_code
from snapledger import settings
from snapledger.adapters.table_definition import KIND_INDEX, REGISTERED_INDEX
from snapledger.layout import GENERATION_POINTER_NAME, LATEST_POINTER_NAME

RUNTIME = lambda_.Runtime.PYTHON_3_12
ASYNC_RETRY_ATTEMPTS = 2
ASYNC_MAX_EVENT_AGE = Duration.hours(6)
DLQ_RETENTION = Duration.days(14)
# The registration FIFO queue (docs/ledger.md, "Hot lineages" and "Sizing"). Lambda asks
# for a visibility timeout of at least six times the function's timeout; a manifest that
# fails five deliveries goes to the FIFO failure queue. The event source mapping takes 10
# messages a batch (SQS's most for FIFO) and runs at most REGISTRATION_CONSUMERS batches at
# once (under register's reservation, which intake shares).
REGISTRATION_BATCH_SIZE = 10
REGISTRATION_CONSUMERS = 20
REGISTRATION_MAX_RECEIVES = 5
# The functions that put (register) and release (gc) legal holds with ``protectLatest``.
LEGAL_HOLD_FUNCTIONS = ("register", "gc")
# The prefixes each function's code lists (s3:prefix of its ListBucket): register a
# snapshot's files, track_changelog and launch a lineage's changelog (coverage), gc both
# (expiry, the orphan sweep, segments below the trim point). tests/deployed runs each.
LISTED_PREFIXES: dict[str, tuple[str, ...]] = {
    "register": (names.SNAPSHOTS_PREFIX,),
    "track_changelog": (names.CHANGELOG_PREFIX,),
    "launch": (names.CHANGELOG_PREFIX,),
    "gc": (names.SNAPSHOTS_PREFIX, names.CHANGELOG_PREFIX),
}
# Functions that read SNAPLEDGER_RESTATE_PREFIXES (-c restatePrefixes): register (the S3
# intake places a metadata.json; the consumer registers it), gc (expiry, the orphan sweep,
# pruning latest.json; heal and restore-from-chosen, console actions that write, come to
# gc), and query (answers about Restate lineages). Only register and gc touch the prefixes.
RESTATE_FUNCTIONS = ("register", "gc", "query")
RESTATE_READERS = ("register", "gc")
# gc's writes under a Restate prefix: latest.json only with If-Match (IAM's s3:if-match
# condition key: present), the compare-and-swap Restate itself uses.
RESTATE_POINTER_WRITE_SID = "RewriteRestateLatestOnlyByCompareAndSwap"
IF_MATCH_ONLY = {"Null": {"s3:if-match": "false"}}
# Keys named like a pointer deeper than a pointer's place: never register's to write.
NOT_A_POINTER_KEYS = (
    f"{names.SNAPSHOTS_PREFIX}*/*/*/{LATEST_POINTER_NAME}",
    f"{names.SNAPSHOTS_PREFIX}*/*/{GENERATION_POINTER_NAME}",
)
REGISTER_POINTER_DENY_SID = "OnlyTheLineagesOwnPointers"
# What Lambda's SQS poller calls with the function's role (never the function's code).
ESM_POLLER_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")


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

# The table calls each function's code makes, and nothing else. Writes are conditional
# Puts (alone, or inside TransactWriteItems, which IAM checks item by item as PutItem or
# DeleteItem); GetItem reads one item (a job), BatchGetItem loads a log's HEAD and items for
# a command, Query reads events, segments and pages. gc's DeleteItem removes its resume
# checkpoint when a run completes, and a stream's POLICY item on policy_reset (inside the
# stream log's transaction); its ConditionChecks (IAM: ConditionCheckItem) are the snapshots
# an expiry or a mark read without writing (the witnesses, the trim point's snapshot); its
# Query reads each lineage's tracked segments past its latest snapshot (the changelog
# records since it, a per-stream metric). tests/deployed runs every path.
_GET, _BATCH_GET, _QUERY = "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"
_PUT, _DELETE, _CHECK = "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"
# A job's UpdateItem sets its run-id pointer's TTL as the job finishes (inside the job's
# transaction: dynamodb_jobs._pointer_expiry).
_UPDATE = "dynamodb:UpdateItem"
LEDGER_ACTIONS: dict[str, tuple[str, ...]] = {
    "register": (_BATCH_GET, _PUT),
    "track_changelog": (_GET, _BATCH_GET, _QUERY, _PUT),
    # launch reads snapshots through the indexes only (INDEX_READERS).
    "launch": (_GET, _BATCH_GET, _PUT),
    "job_state": (_GET, _BATCH_GET, _PUT, _UPDATE),
    "query": (_GET, _QUERY),
    "gc": (_GET, _BATCH_GET, _QUERY, _PUT, _DELETE, _CHECK, _UPDATE),
}
# The ledger's sparse indexes each function queries: by_kind lists all lineages or jobs
# and finds a snapshot by id (query; launch's base snapshot; gc's holds); registered finds
# the snapshot as of an LSN or a time (query; launch's base snapshot) and a lineage's live
# records (gc's planning).
INDEX_READERS: dict[str, tuple[str, ...]] = {
    "query": (KIND_INDEX, REGISTERED_INDEX),
    "launch": (KIND_INDEX, REGISTERED_INDEX),
    "gc": (KIND_INDEX, REGISTERED_INDEX),
}
_XRAY_REASON = (
    "Active X-Ray tracing (Powertools Tracer): xray:PutTraceSegments and "
    "xray:PutTelemetryRecords do not support resource-level permissions."
)


@dataclass(frozen=True, slots=True)
class FunctionInputs:
    """What the functions are wired to."""

    table: dynamodb.ITable
    bucket: s3.IBucket
    root_uri: str
    event_bus_name: str
    event_bus_arn: str
    event_archive_arn: str
    spark: SparkJobs
    functions_dir: Path
    shared_package_dir: Path


class LedgerFunctions(Construct):
    """Builds every function in ``FUNCTION_NAMES`` from one code asset and the Powertools layer.

    Asynchronous triggers (S3 notifications, EventBridge) end, after Lambda's retries, in a
    per-function encrypted SQS queue (on-failure destination) — no event is dropped silently.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, inputs: FunctionInputs, config: StackConfig
    ) -> None:
        super().__init__(scope, construct_id)
        self._inputs = inputs
        self._config = config
        self.code = lambda_.Code.from_asset(
            str(
                stage_function_code(
                    inputs.functions_dir,
                    inputs.shared_package_dir,
                    names.LAMBDA_EXCLUDED_SUBPACKAGES,
                )
            )
        )
        self.powertools = self._build_powertools_layer()
        # For functions built elsewhere from the same code (the events Pipe's enrichment).
        self.log_retention = _retention(config.log_retention_days)
        self.functions: dict[str, lambda_.Function] = {}
        self.dead_letter_queues: dict[str, sqs.Queue] = {}
        self.registration_queue, self.registration_failures = self._build_registration_queue()
        for name in FUNCTION_NAMES:
            self.functions[name] = self._build_function(SPECS[name])
        self._consume_registrations()
        self._grant()

    # --- building --------------------------------------------------------------------------

    def _build_powertools_layer(self) -> lambda_.ILayerVersion:
        arn = self._config.powertools_layer_arn or ssm.StringParameter.value_for_string_parameter(
            self, names.POWERTOOLS_LAYER_SSM_PARAMETER
        )
        return lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", arn)

    def _environment(self, name: str) -> dict[str, str]:
        inputs = self._inputs
        env = {
            "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            settings.ENV_TABLE: inputs.table.table_name,
            settings.ENV_ROOT: inputs.root_uri,
            settings.ENV_EVENT_BUS: inputs.event_bus_name,
            settings.ENV_LEDGER_TTL_DAYS: str(self._config.ledger_ttl_days),
        }
        if name in ("register", "gc"):  # gc hands unrecorded manifests to registration
            env[settings.ENV_REGISTRATION_QUEUE_URL] = self.registration_queue.queue_url
        if self._config.protect_latest and name in LEGAL_HOLD_FUNCTIONS:
            env[settings.ENV_PROTECT_LATEST] = "true"
        if name in RESTATE_FUNCTIONS and self._config.restate_prefixes:
            env[settings.ENV_RESTATE_PREFIXES] = json.dumps(
                self._config.restate_prefixes, sort_keys=True, separators=(",", ":")
            )
        if name == "query":  # a history past the TTL window points at the archive
            env |= {
                settings.ENV_EVENT_BUS_ARN: inputs.event_bus_arn,
                settings.ENV_EVENT_ARCHIVE_ARN: inputs.event_archive_arn,
            }
        if name in names.JOB_FUNCTIONS:
            env |= {
                settings.ENV_EMR_APPLICATION_ID: inputs.spark.application_id,
                settings.ENV_EMR_JOB_ROLE_ARN: inputs.spark.job_role.role_arn,
                settings.ENV_JOB_ENTRYPOINT: inputs.spark.code.entrypoint_uri,
                settings.ENV_JOB_PY_FILES: inputs.spark.code.py_files_uri,
            }
        if name in names.JOB_STARTING_FUNCTIONS:  # each job sized within the application's
            env |= {  # maximum capacity (snapledger.core.job_sizing)
                settings.ENV_EMR_MAX_VCPU: str(inputs.spark.max_vcpu),
                settings.ENV_EMR_MAX_MEMORY_GB: str(inputs.spark.max_memory_gb),
                settings.ENV_EMR_MAX_DISK_GB: str(inputs.spark.max_disk_gb),
            }
        return env

    def _build_dead_letter_queue(self, construct_id: str) -> sqs.Queue:
        queue = sqs.Queue(
            self,
            f"{construct_id}Failures",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DLQ_RETENTION,
        )
        acknowledge(
            queue,
            "This queue is itself the on-failure destination of the function's asynchronous "
            "invocations (a dead-letter queue); it has nothing further to forward to.",
            "AwsSolutions-SQS3",
        )
        return queue

    def _build_registration_queue(self) -> tuple[sqs.Queue, sqs.Queue]:
        """The FIFO queue ``register``'s intake sends manifests to, and its failure queue.

        S3 cannot notify a FIFO queue, hence the intake. High-throughput FIFO (deduplication
        and throughput per message group): the groups are lineages, thousands of them.
        """
        failures = sqs.Queue(
            self,
            "RegistrationFailures",
            fifo=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DLQ_RETENTION,
        )
        # (cdk-nag's SQS3 recognizes a queue's dead-letter queue: nothing to acknowledge.)
        queue = sqs.Queue(
            self,
            "Registrations",
            fifo=True,
            content_based_deduplication=False,  # intake sets the id: the object write
            deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
            fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(6 * SPECS["register"].timeout.to_seconds()),
            retention_period=DLQ_RETENTION,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=failures, max_receive_count=REGISTRATION_MAX_RECEIVES
            ),
        )
        return queue, failures

    def _consume_registrations(self) -> None:
        """register consumes the queue: one batch per message group (lineage) at a time.

        The mapping is declared without CDK's SqsEventSource, whose grant adds GetQueueUrl
        and ChangeMessageVisibility: Lambda's poller calls only the three actions of AWS's
        AWSLambdaSQSQueueExecutionRole, with the function's role.
        """
        register = self.functions["register"]
        register.add_event_source_mapping(
            "Registrations",
            event_source_arn=self.registration_queue.queue_arn,
            batch_size=REGISTRATION_BATCH_SIZE,
            report_batch_item_failures=True,
            max_concurrency=REGISTRATION_CONSUMERS,
        )
        register.add_to_role_policy(
            iam.PolicyStatement(
                sid="PollRegistrations",
                actions=list(ESM_POLLER_ACTIONS),
                resources=[self.registration_queue.queue_arn],
            )
        )

    def _build_function(self, spec: FunctionSpec) -> lambda_.Function:
        construct_id = names.function_construct_id(spec.name)
        log_group, role = log_group_and_role(
            self,
            construct_id,
            retention=_retention(self._config.log_retention_days),
            description=f"snapledger {spec.name} function",
        )
        on_failure: FailureQueue | None = None
        if spec.name in names.ASYNC_FUNCTIONS:
            queue = self._build_dead_letter_queue(construct_id)
            self.dead_letter_queues[spec.name] = queue
            on_failure = FailureQueue(queue)
        function = lambda_.Function(
            self,
            construct_id,
            description=spec.description,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler=f"functions.{spec.name}.handler",
            code=self.code,
            layers=[self.powertools],
            memory_size=spec.memory_mb,
            timeout=spec.timeout,
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
            environment=self._environment(spec.name),
            reserved_concurrent_executions=spec.reserved
            if self._config.reserved_concurrency
            else None,
            on_failure=on_failure,
            retry_attempts=ASYNC_RETRY_ATTEMPTS if on_failure else None,
            max_event_age=ASYNC_MAX_EVENT_AGE if on_failure else None,
        )
        acknowledge(
            function,
            "Pinned to python3.12 on purpose: AWS publishes the official Powertools v3 layer "
            "per Python version (python312-arm64) and the project is tested on 3.11-3.13; "
            "runtime and layer move together, deliberately, not whenever a newer runtime ships.",
            "AwsSolutions-L1",
        )
        acknowledge(role, _XRAY_REASON, iam5("Resource::*"))
        return function

    # --- grants ----------------------------------------------------------------------------
    #
    # Each function is granted exactly the calls its code makes, spelled out (no CDK grant_*
    # action groups): tests/deployed runs every path of every function under the role
    # synthesized here, with IAM enforced, and fails on a refused call or an unused grant.

    def _grant(self) -> None:
        fn = self.functions
        snapshots, changelog = names.SNAPSHOTS_PREFIX, names.CHANGELOG_PREFIX

        # register: intake sends manifests to the registration queue (SendMessageBatch is
        # authorized as SendMessage); the consumer reads the manifest, lists the snapshot's
        # files; never deletes objects. (The event source mapping's ReceiveMessage,
        # DeleteMessage, ChangeMessageVisibility, GetQueueAttributes: granted by CDK.)
        fn["register"].add_to_role_policy(
            iam.PolicyStatement(
                sid="QueueRegistrations",
                actions=["sqs:SendMessage"],
                resources=[self.registration_queue.queue_arn],
            )
        )
        self._grant_ledger("register")
        self._grant_objects(
            fn["register"],
            "s3:GetObject",
            (snapshots,),
            "reads manifests, file footers and checksums, and latest.json",
        )
        self._grant_listing(fn["register"], "register")
        # register writes each lineage's latest.json and each stream's generation.json
        # (conditional PutObjects), nothing else.
        self._grant_objects(
            fn["register"],
            "s3:PutObject",
            (names.LATEST_POINTER_KEYS, names.GENERATION_POINTER_KEYS),
            "writes each lineage's latest.json and each stream's generation.json pointer",
            wildcard=False,
        )
        # IAM's * crosses '/': the grant above also matches a latest.json inside a snapshot
        # prefix (snapshots/s/0/<lsn>-<id>/latest.json) and a generation.json inside a
        # lineage. Only the lineage's own pointer and the stream's own are register's.
        self._deny_deeper_pointers(fn["register"])

        # track_changelog: heads segment objects, records counts, starts compactions (which
        # lists the changelog for coverage).
        self._grant_ledger("track_changelog")
        self._grant_objects(
            fn["track_changelog"], "s3:GetObject", (changelog,), "reads a segment's size (HEAD)"
        )
        self._grant_listing(fn["track_changelog"], "track_changelog")

        # launch: resolves the snapshot in the ledger, lists the changelog for coverage,
        # pins, starts the job.
        self._grant_ledger("launch")
        self._grant_listing(fn["launch"], "launch")

        # job_state: the ledger only (and GetJobRun, below).
        self._grant_ledger("job_state")

        # query: read only; the sparse indexes list lineages and jobs and find snapshots.
        self._grant_ledger("query")

        # gc: the only function that deletes objects: expired and orphaned snapshots, and
        # changelog segments below the trim point (delete_changelog_below_trim). DeleteItem
        # removes its resume checkpoint when a run completes.
        self._grant_ledger("gc")
        self._grant_listing(fn["gc"], "gc")
        self._grant_objects(
            fn["gc"],
            "s3:DeleteObject",
            (snapshots, changelog),
            "deletes expired and orphaned snapshots and segments below the trim point",
        )
        # gc keeps what latest.json and generation.json name, and repairs a latest.json
        # that lags the ledger (reading the latest's manifest, writing the pointer by
        # conditional PutObject); the pointers only, as register's grant.
        self._grant_objects(
            fn["gc"],
            "s3:GetObject",
            (snapshots,),
            "reads latest.json and generation.json, and the latest's manifest to repair one",
        )
        self._grant_objects(
            fn["gc"],
            "s3:PutObject",
            (names.LATEST_POINTER_KEYS,),
            "repairs a lineage's latest.json that lags the ledger",
            wildcard=False,
        )
        self._deny_deeper_pointers(fn["gc"])
        # ... and hands a manifest the ledger never recorded to the registration queue
        # (the orphan sweep never deletes a prefix holding one).
        fn["gc"].add_to_role_policy(
            iam.PolicyStatement(
                sid="QueueUnrecordedManifests",
                actions=["sqs:SendMessage"],
                resources=[self.registration_queue.queue_arn],
            )
        )

        if self._config.restate_prefixes:
            self._grant_restate()
        if self._config.protect_latest:
            self._grant_legal_holds()

        for name in names.JOB_STARTING_FUNCTIONS:
            self._grant_job_starts(fn[name])
        for name in names.JOB_READING_FUNCTIONS:
            self._grant_job_reads(fn[name])
        # gc's stuck-job sweeper looks for the run of a job whose launch stopped before
        # recording it (ListJobRuns is on the application: run ids are what it finds).
        fn["gc"].add_to_role_policy(
            iam.PolicyStatement(
                sid="ListJobsOfThisApplication",
                actions=["emr-serverless:ListJobRuns"],
                resources=[self._inputs.spark.application_arn],
            )
        )

    def _grant_restate(self) -> None:
        """Under each Restate prefix (``-c restatePrefixes``): register reads a snapshot's
        metadata.json and SST tails and lists its folder, and writes nothing there; gc
        reads, deletes snapshot folders' objects only (never a partition's latest.json),
        and rewrites latest.json only by compare-and-swap (If-Match). Their ListBucket
        (``_grant_listing``) covers the prefixes too."""
        fn = self.functions
        prefixes = tuple(f"{prefix}/" for prefix in self._config.restate_prefixes)
        for name in RESTATE_READERS:
            self._grant_objects(
                fn[name],
                "s3:GetObject",
                prefixes,
                "reads Restate's metadata.json, SST footers and latest.json",
            )
        self._grant_objects(
            fn["gc"],
            "s3:DeleteObject",
            tuple(map(names.restate_snapshot_folders, self._config.restate_prefixes)),
            "deletes expired and orphaned Restate snapshots' objects (snapshot folders only)",
            wildcard=False,
        )
        self._grant_objects(
            fn["gc"],
            "s3:PutObject",
            tuple(map(names.restate_latest_pointers, self._config.restate_prefixes)),
            "rewrites Restate's latest.json by compare-and-swap (If-Match)",
            wildcard=False,
            sid=RESTATE_POINTER_WRITE_SID,
            conditions=IF_MATCH_ONLY,
        )

    def _listed(self, name: str) -> tuple[str, ...]:
        """The prefixes ``name``'s code lists: its own, and each Restate prefix's."""
        restate = tuple(f"{p}/" for p in self._config.restate_prefixes)
        return LISTED_PREFIXES[name] + (restate if name in RESTATE_READERS else ())

    def _deny_deeper_pointers(self, function: lambda_.Function) -> None:
        """Deny PutObject on a latest.json or generation.json anywhere but a lineage's own
        and a stream's own: IAM's * crosses '/', so the pointer grants alone would match."""
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid=REGISTER_POINTER_DENY_SID,
                effect=iam.Effect.DENY,
                actions=["s3:PutObject"],
                resources=[
                    self._inputs.bucket.arn_for_objects(pattern)
                    for pattern in (
                        *NOT_A_POINTER_KEYS,
                        *map(names.restate_deeper_pointers, self._config.restate_prefixes),
                    )
                ],
            )
        )

    def _grant_legal_holds(self) -> None:
        """The latest protected in the bucket (``protectLatest``): register holds every file
        of a snapshot it registers; gc lists a deleted snapshot's versions and releases
        them. PutObjectLegalHold sets ON or OFF alike: IAM has one action for both. Neither
        role may delete a version (``guardrails.py`` denies s3:DeleteObjectVersion)."""
        fn = self.functions
        snapshots = names.SNAPSHOTS_PREFIX
        self._grant_objects(
            fn["register"],
            "s3:PutObjectLegalHold",
            (snapshots,),
            "holds the files of each snapshot it registers",
        )
        self._grant_objects(
            fn["gc"],
            "s3:PutObjectLegalHold",
            (snapshots,),
            "releases the legal holds of the snapshots it deletes",
        )
        # ListBucketVersions, like ListBucket, is a bucket-level action: key names and
        # version ids, never data.
        fn["gc"].add_to_role_policy(
            iam.PolicyStatement(
                sid="ListTheBucketVersions",
                actions=["s3:ListBucketVersions"],
                resources=[self._inputs.bucket.bucket_arn],
                conditions=listing_condition((snapshots,)),
            )
        )

    def _grant_ledger(self, function_name: str) -> None:
        function = self.functions[function_name]
        table_arn = self._inputs.table.table_arn
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="Ledger", actions=list(LEDGER_ACTIONS[function_name]), resources=[table_arn]
            )
        )
        for index in INDEX_READERS.get(function_name, ()):
            # One statement per index, so an index a function no longer reads shows as unused.
            function.add_to_role_policy(
                iam.PolicyStatement(
                    sid=f"LedgerIndex{index.title().replace('_', '')}",
                    actions=["dynamodb:Query"],
                    resources=[f"{table_arn}/index/{index}"],
                )
            )

    def _grant_listing(self, function: lambda_.Function, name: str) -> None:
        # ListBucket is a bucket-level action: it returns key names (never data) of this
        # bucket only, and only under the prefixes the function's code lists (s3:prefix).
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListTheBucket",
                actions=["s3:ListBucket"],
                resources=[self._inputs.bucket.bucket_arn],
                conditions=listing_condition(self._listed(name)),
            )
        )

    def _grant_objects(
        self,
        function: lambda_.Function,
        action: str,
        prefixes: tuple[str, ...],
        what: str,
        *,
        wildcard: bool = True,
        sid: str | None = None,
        conditions: dict[str, dict[str, str]] | None = None,
    ) -> None:
        """``action`` on the objects under ``prefixes`` (``wildcard``), or on the keys that
        match them as patterns (e.g. ``snapshots/*/*/latest.json``), under ``conditions``."""
        bucket = self._inputs.bucket
        patterns = [f"{p}*" if wildcard else p for p in prefixes]
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid=sid,
                actions=[action],
                resources=[bucket.arn_for_objects(p) for p in patterns],
                conditions=conditions,
            )
        )
        acknowledge(
            _role(function),
            f"The function {what} ({action}) under {', '.join(prefixes)}: object keys are "
            "known only at run time, so each object ARN ends in its prefix wildcard.",
            *(iam5(f"Resource::{arn_of(bucket)}/{p}") for p in patterns),
        )

    def _grant_job_starts(self, function: lambda_.Function) -> None:
        spark = self._inputs.spark
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="StartJobsOnThisApplication",
                actions=["emr-serverless:StartJobRun"],
                resources=[spark.application_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="TagTheJobsItStarts",
                # StartJobRun tags the run it creates (snapledger:job-id): tag-on-create
                # needs TagResource on the new run.
                actions=["emr-serverless:TagResource"],
                resources=[spark.job_runs_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassOnlyTheJobRole",
                actions=["iam:PassRole"],
                resources=[spark.job_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": EMR_SERVICE_PRINCIPAL}},
            )
        )
        self._acknowledge_job_runs(
            function, "emr-serverless:TagResource (tag-on-create of StartJobRun)"
        )

    def _grant_job_reads(self, function: lambda_.Function) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadJobsOfThisApplication",
                actions=["emr-serverless:GetJobRun"],
                resources=[self._inputs.spark.job_runs_arn],
            )
        )
        self._acknowledge_job_runs(function, "emr-serverless:GetJobRun")

    def _acknowledge_job_runs(self, function: lambda_.Function, what: str) -> None:
        spark = self._inputs.spark
        acknowledge(
            _role(function),
            f"{what} is limited to this application's job runs; run ids are minted by "
            "StartJobRun, so the ARN ends in jobruns/*.",
            iam5(f"Resource::{arn_of(spark.application)}/jobruns/*"),
        )


@jsii.implements(lambda_.IDestination)
class FailureQueue:
    """An SQS on-failure destination granting only ``sqs:SendMessage``, the one call Lambda
    makes with the function's role to deliver a failed asynchronous event.

    (``aws_lambda_destinations.SqsDestination`` also grants GetQueueAttributes and
    GetQueueUrl, which delivery never calls.)
    """

    def __init__(self, queue: sqs.IQueue) -> None:
        self.queue = queue

    def bind(
        self,
        scope: Construct,
        fn: lambda_.IFunction,
        *,
        type: lambda_.DestinationType | None = None,
    ) -> lambda_.DestinationConfig:
        del scope, type
        fn.add_to_role_policy(
            iam.PolicyStatement(
                sid="DeliverFailedEvents",
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
            )
        )
        return lambda_.DestinationConfig(destination=self.queue.queue_arn)


def _role(function: lambda_.Function) -> iam.IRole:
    if function.role is None:  # pragma: no cover - every function is given its own role
        raise ValueError(f"{function.node.path} has no role")
    return function.role


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


def _retention(days: int) -> logs.RetentionDays:
    try:
        return _RETENTION_BY_DAYS[days]
    except KeyError:
        raise ValueError(
            f"log retention must be one of {sorted(_RETENTION_BY_DAYS)} days, got {days}"
        ) from None
