"""The snapledger stack: composes one construct per capability and publishes its outputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Annotations, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra import names
from infra.config import StackConfig
from infra.constants import (
    FUNCTION_NAMES,
    OUTPUT_BUCKET,
    OUTPUT_EMR_APPLICATION,
    OUTPUT_EVENT_BUS,
    OUTPUT_TABLE,
)
from infra.constructs.console_events import ConsoleTestEvents
from infra.constructs.emr import SparkJobs
from infra.constructs.events import EnrichmentCode, EventRouting, LedgerEventBus
from infra.constructs.function_specs import RUNTIME, SPECS
from infra.constructs.functions import FunctionInputs, LedgerFunctions
from infra.constructs.gc_shards import GcShardQueue
from infra.constructs.guardrails import deny_history_rewrites
from infra.constructs.kafka_streams_policies import KafkaStreamsPolicies
from infra.constructs.ledger_table import LedgerTable
from infra.constructs.observability import Observability
from infra.constructs.restate_nodes import RestateNodePolicies
from infra.constructs.storage import SnapshotStorage
from infra.constructs.stream_alarms import StreamAlarms
from infra.nag import acknowledge_cdk_providers


@dataclass(frozen=True, slots=True)
class SourcePaths:
    """Where the packaged code and the console events come from (the repository by default)."""

    functions_dir: Path = names.FUNCTIONS_DIR
    shared_package_dir: Path = names.SHARED_PACKAGE_DIR
    jobs_dir: Path = names.JOBS_DIR
    events_dir: Path = names.EVENTS_DIR


class SnapledgerStack(Stack):
    """Everything ``cdk deploy`` installs: storage, ledger, functions, jobs, events, alarms."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig | None = None,
        sources: SourcePaths | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description="snapledger: snapshot registry and lifecycle manager for stream processors",
            **kwargs,
        )
        config = config or StackConfig.from_context(self.node)
        sources = sources or SourcePaths()

        self.storage = SnapshotStorage(
            self,
            "Storage",
            retain=config.deletion_protection,
            object_lock=config.protect_latest,
        )
        self.ledger = LedgerTable(self, "Ledger", deletion_protection=config.deletion_protection)
        self.spark = SparkJobs(
            self,
            "Spark",
            bucket=self.storage.bucket,
            jobs_dir=sources.jobs_dir,
            shared_package_dir=sources.shared_package_dir,
            max_vcpu=config.emr_max_vcpu,
            max_memory_gb=config.emr_max_memory_gb,
        )
        self.events = LedgerEventBus(
            self,
            "Events",
            table=self.ledger.table,
            archive_retention_days=config.event_archive_retention_days,
        )
        self.functions = LedgerFunctions(
            self,
            "Functions",
            inputs=FunctionInputs(
                table=self.ledger.table,
                bucket=self.storage.bucket,
                root_uri=self.storage.root_uri,
                event_bus_name=self.events.bus.event_bus_name,
                event_bus_arn=self.events.bus.event_bus_arn,
                event_archive_arn=self.events.archive.archive_arn,
                spark=self.spark,
                functions_dir=sources.functions_dir,
                shared_package_dir=sources.shared_package_dir,
            ),
            config=config,
        )
        fns = self.functions.functions
        self.gc_shards = GcShardQueue(
            self, "GcShards", function=fns["gc"], function_timeout=SPECS["gc"].timeout
        )
        self.enrichment = enrichment = self.events.publish_ledger_events(
            EnrichmentCode(
                code=self.functions.code,
                layer=self.functions.powertools,
                runtime=RUNTIME,
                log_retention=self.functions.log_retention,
            )
        )
        self.storage.route_object_created(
            register=fns["register"],
            track_changelog=fns["track_changelog"],
            rooted=config.rooted_manifests,
        )
        self.restate_nodes = RestateNodePolicies(
            self,
            "RestateNodes",
            bucket=self.storage.bucket,
            restate_prefixes=config.restate_prefixes,
        )
        self.kafka_streams = (
            KafkaStreamsPolicies(
                self,
                "KafkaStreams",
                bucket=self.storage.bucket,
                query=fns["query"],
                topics=config.kafka_streams_streams,
            )
            if config.kafka_streams_streams
            else None
        )
        self.routing = EventRouting(
            self,
            "Routing",
            bus=self.events.bus,
            emr_application_id=self.spark.application_id,
            functions=fns,
            dead_letter_queues=self.functions.dead_letter_queues,
        )
        self.observability = Observability(
            self,
            "Observability",
            functions={**fns, names.ENRICHMENT_FUNCTION: enrichment},
            queues={
                **self.functions.dead_letter_queues,
                "pipe": self.events.pipe_dead_letter_queue,
                "gc_shards": self.gc_shards.dead_letter_queue,
                "registrations": self.functions.registration_failures,
            },
            table=self.ledger.table,
            alarm_topic_arn=config.alarm_topic_arn,
        )
        self.stream_alarms = StreamAlarms(
            self,
            "StreamAlarms",
            stale_after_hours_default=config.stale_after_hours_default,
            stale_after_hours=config.stale_after_hours,
            add_action=self.observability.route,
        )
        self.console_events = ConsoleTestEvents(
            self, "ConsoleEvents", functions=fns, events_dir=sources.events_dir
        )
        for name in names.CONSOLE_EVENT_FUNCTIONS:
            if name not in self.console_events.schemas:
                Annotations.of(self).add_warning_v2(
                    "snapledger:console-events",
                    f"no console test events for {name}: add {sources.events_dir}/{name}-*.json",
                )
        for role in self.own_roles():
            deny_history_rewrites(role, self.storage.bucket)
        self._build_outputs()
        acknowledge_cdk_providers(self)

    def own_roles(self) -> list[iam.IRole]:
        """Every role snapledger's own code or services run as (not CDK's deploy helpers)."""
        roles: list[iam.IRole] = [self.spark.job_role, self.events.pipe_role]
        for function in (*self.functions.functions.values(), self.enrichment):
            if function.role is not None:
                roles.append(function.role)
        return roles

    def _build_outputs(self) -> None:
        CfnOutput(
            self, OUTPUT_TABLE, value=self.ledger.table.table_name, description="Ledger table"
        )
        CfnOutput(
            self,
            OUTPUT_BUCKET,
            value=self.storage.bucket.bucket_name,
            description="Snapshot bucket (the object store root)",
        )
        CfnOutput(
            self,
            OUTPUT_EVENT_BUS,
            value=self.events.bus.event_bus_name,
            description="Bus for launch requests and ledger events",
        )
        CfnOutput(
            self,
            OUTPUT_EMR_APPLICATION,
            value=self.spark.application_id,
            description="EMR Serverless application",
        )
        CfnOutput(
            self,
            names.OUTPUT_EVENT_SCHEMA_REGISTRY,
            value=self.events.schema_registry.attr_registry_name,
            description="Schema registry of the ledger events on the bus (docs/events.md)",
        )
        for name in FUNCTION_NAMES:
            CfnOutput(
                self,
                names.function_output_key(name),
                value=self.functions.functions[name].function_name,
                description=f"The {name} function",
            )
