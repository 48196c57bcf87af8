"""The six Lambda functions: one role each, granted only what that function touches.

Composes the parts: how each function is sized (function_specs.py), the queues around the
functions (function_queues.py), and what each role is granted (function_roles.py, in the
vocabulary of function_grants.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra import names
from infra.config import StackConfig
from infra.constants import FUNCTION_NAMES, METRICS_NAMESPACE, SERVICE_NAME
from infra.constructs.emr import SparkJobs
from infra.constructs.fluss_reach import reach_fluss
from infra.constructs.function_grants import Grants
from infra.constructs.function_parts import log_group_and_role
from infra.constructs.function_queues import (
    FailureQueue,
    build_dead_letter_queue,
    build_registration_queue,
    consume_registrations,
)
from infra.constructs.function_roles import grant_functions
from infra.constructs.function_specs import (
    ASYNC_MAX_EVENT_AGE,
    ASYNC_RETRY_ATTEMPTS,
    RUNTIME,
    SPECS,
    FunctionSpec,
    log_retention,
)
from infra.nag import acknowledge, iam5
from infra.packaging import stage_function_code
from snapledger import settings

# The functions that put (register) and release (gc) legal holds with ``protectLatest``.
LEGAL_HOLD_FUNCTIONS = ("register", "gc")
# Functions that read the layout map, SNAPLEDGER_LAYOUTS (-c layouts): register (the S3
# intake places a manifest; each layout's checks), gc (expiry, the orphan sweep, a layout's
# steps and retention horizon; heal and restore-from-chosen, console actions that write,
# come to gc), and query (answers about a rooted layout's lineages). Only register and gc
# touch the prefixes (each rooted layout's ``PrefixGrants.readers``, in the registry).
LAYOUT_FUNCTIONS = ("register", "gc", "query")
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
        self.log_retention = log_retention(config.log_retention_days)
        self.functions: dict[str, lambda_.Function] = {}
        self.dead_letter_queues: dict[str, sqs.Queue] = {}
        self.registration_queue, self.registration_failures = build_registration_queue(
            self, register_timeout=SPECS["register"].timeout
        )
        for name in FUNCTION_NAMES:
            self.functions[name] = self._build_function(SPECS[name])
        consume_registrations(self.functions["register"], self.registration_queue)
        if config.fluss is not None:
            reach_fluss(self, self.functions["gc"], config.fluss)
        grant_functions(
            Grants(
                table=inputs.table,
                bucket=inputs.bucket,
                spark=inputs.spark,
                rooted=config.rooted_grants,
            ),
            self.functions,
            registration_queue=self.registration_queue,
            protect_latest=config.protect_latest,
        )

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
        if name in LAYOUT_FUNCTIONS and self._config.layouts.entries:
            env[settings.ENV_LAYOUTS] = self._config.layouts.dumps()
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

    def _build_function(self, spec: FunctionSpec) -> lambda_.Function:
        construct_id = names.function_construct_id(spec.name)
        log_group, role = log_group_and_role(
            self,
            construct_id,
            retention=log_retention(self._config.log_retention_days),
            description=f"snapledger {spec.name} function",
        )
        on_failure: FailureQueue | None = None
        if spec.name in names.ASYNC_FUNCTIONS:
            queue = build_dead_letter_queue(self, construct_id)
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
