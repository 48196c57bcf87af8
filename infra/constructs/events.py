"""EventBridge: the snapledger bus, the ledger-events Pipe, and the rules that drive functions."""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import names
from infra.constants import EVENT_SOURCE, LAUNCH_DETAIL_TYPES, SERVICE_NAME
from infra.constructs.event_schemas import build_schema_registry
from infra.constructs.function_parts import log_group_and_role
from infra.nag import acknowledge, iam5
from snapledger.models.bus_events import LedgerEventUndecodable, event_type_name

PIPE_BATCH_SIZE = 10
PIPE_MAX_RETRIES = 10
TARGET_RETRY_ATTEMPTS = 4
TARGET_MAX_EVENT_AGE = Duration.hours(6)
# The enrichment only translates a batch of at most PIPE_BATCH_SIZE small records.
ENRICHMENT_MEMORY_MB = 256
ENRICHMENT_TIMEOUT = Duration.seconds(30)
# Every source of snapledger's own domain events (the ledger's: snapledger.ledger).
SNAPLEDGER_SOURCES = f"{EVENT_SOURCE}.*"
BUS_SOURCE_DENY_SID = "OnlySnapledgerPublishesItsSources"


@dataclass(frozen=True, slots=True)
class EnrichmentCode:
    """What the enrichment function runs: the functions' code asset and layer."""

    code: lambda_.Code
    layer: lambda_.ILayerVersion
    runtime: lambda_.Runtime
    log_retention: logs.RetentionDays


class LedgerEventBus(Construct):
    """A custom bus: the ledger's events as domain events, and launch requests.

    A Pipe reads the ledger table's stream (INSERTs of ``EV#`` items with a ``type``), hands
    each batch to the ``ledger_events`` enrichment function and puts what it returns on the
    bus. Subscribers match ``source = snapledger.ledger`` and the event type as
    ``detail-type`` (``SnapshotRegistered``, ``LatestAdvanced``, ``TrimPointAdvanced``, ...);
    ``detail`` is the event in plain JSON, its model's ``model_dump(mode="json")``: ``type``,
    ``seq``, ``at``, ``stream``, ``partition``, ``command_id`` and the type's own fields. Each
    type's JSON Schema (``docs/events/``) is in the schema registry
    ``{stack name}-ledger-events``. A record the enrichment cannot decode is published as
    ``LedgerEventUndecodable`` (naming its key) and also lands in the Pipe's failure queue,
    whose alarm fires. Launch requests use the same bus with ``source = snapledger``.

    Built in two steps, because the enrichment runs the functions' code asset and the
    functions need the bus first: the constructor makes the bus, the Pipe's role and
    failure queue and the schema registry; ``publish_ledger_events`` adds the enrichment
    and the Pipe.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        archive_retention_days: int = 365,
    ) -> None:
        super().__init__(scope, construct_id)
        self._table = table
        self.bus = events.EventBus(self, "Bus", description="snapledger ledger events and requests")
        self.archive = self._build_archive(archive_retention_days)
        self.pipe_dead_letter_queue = self._build_dead_letter_queue()
        self.pipe_name = f"{Stack.of(self).stack_name}-ledger-events"
        self.pipe_role = self._build_pipe_role(table)
        self._only_the_pipe_publishes_ledger_events()
        self.schema_registry, self.schemas = build_schema_registry(self, self.pipe_name)
        self.undecodable_rule = self._build_undecodable_rule()
        self.enrichment: lambda_.Function | None = None
        self.pipe: pipes.CfnPipe | None = None

    def _build_archive(self, retention_days: int) -> events.Archive:
        """The ledger's events, kept past the table's TTL window: ``aws events start-replay``
        replays them (docs/ledger.md). ``retention_days`` 0 keeps them for ever."""
        return self.bus.archive(
            "Archive",
            description="snapledger ledger events, replayable past the ledger's TTL window",
            event_pattern=events.EventPattern(source=[names.LEDGER_EVENT_SOURCE]),
            retention=Duration.days(retention_days) if retention_days else None,
        )

    def publish_ledger_events(self, enrichment_code: EnrichmentCode) -> lambda_.Function:
        """Add the enrichment function and the Pipe (stream → enrichment → bus); returns the
        enrichment function."""
        if self.pipe is not None:
            raise ValueError("the ledger events are already published")
        self.enrichment = self._build_enrichment(enrichment_code)
        self.pipe_role.add_to_policy(
            iam.PolicyStatement(
                sid="InvokeTheEnrichment",
                actions=["lambda:InvokeFunction"],
                resources=[self.enrichment.function_arn],
            )
        )
        self.pipe = self._build_pipe(self._table, self.enrichment)
        return self.enrichment

    def _build_dead_letter_queue(self) -> sqs.Queue:
        queue = sqs.Queue(
            self,
            "PipeFailures",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        acknowledge(
            queue,
            "This queue is itself the Pipe's dead-letter queue for stream records it could not "
            "deliver (and the target of LedgerEventUndecodable events); it has nothing further "
            "to forward to.",
            "AwsSolutions-SQS3",
        )
        return queue

    def _build_pipe_role(self, table: dynamodb.ITable) -> iam.Role:
        stack = Stack.of(self)
        # Built from the name (not the resource) so the trust policy does not depend on the pipe.
        pipe_arn = stack.format_arn(service="pipes", resource="pipe", resource_name=self.pipe_name)
        role = iam.Role(
            self,
            "PipeRole",
            description="snapledger Pipe: ledger table stream -> event bus",
            assumed_by=iam.ServicePrincipal(
                "pipes.amazonaws.com",
                conditions={
                    "StringEquals": {
                        "aws:SourceAccount": stack.account,
                        "aws:SourceArn": pipe_arn,
                    }
                },
            ),
        )
        table.grant_stream_read(role)
        self.bus.grant_put_events_to(role)
        # Pipes delivers a record it gave up on with SendMessage alone (grant_send_messages
        # would add GetQueueAttributes and GetQueueUrl, which it never calls).
        role.add_to_policy(
            iam.PolicyStatement(
                sid="DeliverUndeliverableRecords",
                actions=["sqs:SendMessage"],
                resources=[self.pipe_dead_letter_queue.queue_arn],
            )
        )
        acknowledge(
            role,
            "dynamodb:ListStreams has no resource-level permissions (it only lists stream "
            "ARNs); reading records is limited to this table's stream ARN.",
            iam5("Resource::*"),
        )
        return role

    def _only_the_pipe_publishes_ledger_events(self) -> None:
        """The bus refuses an event whose source is ``snapledger.*`` (the ledger's events)
        from any principal but the Pipe's role, whatever that principal's own policies
        allow: a forged ``TrimPointAdvanced`` never reaches a subscriber. Launch requests
        (``source = snapledger``) are not ``snapledger.*`` and stay open to callers with
        ``events:PutEvents``."""
        self.bus.add_to_resource_policy(
            iam.PolicyStatement(
                sid=BUS_SOURCE_DENY_SID,
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["events:PutEvents"],
                resources=[self.bus.event_bus_arn],
                conditions={
                    # PutEvents carries up to 10 entries: any one of them suffices.
                    "ForAnyValue:StringLike": {"events:source": [SNAPLEDGER_SOURCES]},
                    "ArnNotEquals": {"aws:PrincipalArn": [self.pipe_role.role_arn]},
                },
            )
        )

    def _build_undecodable_rule(self) -> events.Rule:
        # Into the Pipe's failure queue, whose depth alarm then fires: an operator looks.
        return events.Rule(
            self,
            "UndecodableLedgerEvents",
            description="Ledger stream records the enrichment could not decode -> Pipe failures",
            event_bus=self.bus,
            event_pattern=events.EventPattern(
                source=[names.LEDGER_EVENT_SOURCE],
                detail_type=[event_type_name(LedgerEventUndecodable)],
            ),
            targets=[targets.SqsQueue(self.pipe_dead_letter_queue)],
        )

    def _build_enrichment(self, code: EnrichmentCode) -> lambda_.Function:
        construct_id = names.function_construct_id(names.ENRICHMENT_FUNCTION)
        # No data access: it translates the records it is given. Its role writes its logs.
        log_group, role = log_group_and_role(
            self,
            construct_id,
            retention=code.log_retention,
            description=f"snapledger {names.ENRICHMENT_FUNCTION} function (Pipe enrichment)",
        )
        function = lambda_.Function(
            self,
            construct_id,
            description="Events Pipe enrichment: ledger stream records -> domain events",
            runtime=code.runtime,
            architecture=lambda_.Architecture.ARM_64,
            handler=f"functions.{names.ENRICHMENT_FUNCTION}.handler",
            code=code.code,
            layers=[code.layer],
            memory_size=ENRICHMENT_MEMORY_MB,
            timeout=ENRICHMENT_TIMEOUT,
            role=role,
            log_group=log_group,
            environment={"POWERTOOLS_SERVICE_NAME": SERVICE_NAME},
        )
        acknowledge(
            function,
            "Same runtime as the other snapledger functions, deliberately: it runs their code "
            "asset with the official Powertools v3 layer published per Python version "
            "(python3.12); runtime and layer move together.",
            "AwsSolutions-L1",
        )
        return function

    def _build_pipe(self, table: dynamodb.ITable, enrichment: lambda_.IFunction) -> pipes.CfnPipe:
        if table.table_stream_arn is None:  # pragma: no cover - the table always has a stream
            raise ValueError("the ledger table needs a stream for the events Pipe")
        only_event_items = {
            "eventName": ["INSERT"],
            "dynamodb": {
                "Keys": {"sk": {"S": [{"prefix": names.EVENT_ITEM_PREFIX}]}},
                "NewImage": {names.EVENT_TYPE_ATTRIBUTE: {"S": [{"exists": True}]}},
            },
        }
        pipe = pipes.CfnPipe(
            self,
            "Pipe",
            name=self.pipe_name,
            description="Ledger events (EV# items) -> domain events on the snapledger bus",
            role_arn=self.pipe_role.role_arn,
            source=table.table_stream_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                    starting_position="LATEST",
                    batch_size=PIPE_BATCH_SIZE,
                    maximum_retry_attempts=PIPE_MAX_RETRIES,
                    dead_letter_config=pipes.CfnPipe.DeadLetterConfigProperty(
                        arn=self.pipe_dead_letter_queue.queue_arn
                    ),
                ),
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
                    filters=[pipes.CfnPipe.FilterProperty(pattern=json.dumps(only_event_items))]
                ),
            ),
            # The enrichment returns one domain event per record; each becomes one event.
            enrichment=enrichment.function_arn,
            target=self.bus.event_bus_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                event_bridge_event_bus_parameters=pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                    source=names.LEDGER_EVENT_SOURCE,
                    detail_type=f"$.{names.EVENT_TYPE_ATTRIBUTE}",
                )
            ),
        )
        # The role's policy must exist before the pipe first polls the stream (the role ARN
        # alone orders only the role).
        policy = self.pipe_role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            pipe.node.add_dependency(policy)
        return pipe


class EventRouting(Construct):
    """Rules that invoke functions: the GC schedule, EMR job state changes, launch requests.

    Every target has a retry policy and the function's failure queue as its dead-letter
    queue, so an event EventBridge cannot deliver is kept, not dropped.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bus: events.IEventBus,
        emr_application_id: str,
        functions: dict[str, lambda_.Function],
        dead_letter_queues: dict[str, sqs.Queue],
    ) -> None:
        super().__init__(scope, construct_id)
        self._functions = functions
        self._queues = dead_letter_queues
        self.gc_schedule = self._build_gc_schedule()
        self.job_state_rule = self._build_job_state_rule(emr_application_id)
        self.launch_rule = self._build_launch_rule(bus)

    def _target(
        self, name: str, event: events.RuleTargetInput | None = None
    ) -> targets.LambdaFunction:
        return targets.LambdaFunction(
            self._functions[name],
            event=event,
            dead_letter_queue=self._queues[name],
            retry_attempts=TARGET_RETRY_ATTEMPTS,
            max_event_age=TARGET_MAX_EVENT_AGE,
        )

    def _build_gc_schedule(self) -> events.Rule:
        return events.Rule(
            self,
            "GcSchedule",
            description="Runs retention GC",
            schedule=events.Schedule.rate(Duration.hours(names.GC_SCHEDULE_HOURS)),
            # The schedule's own Scheduled Event: gc runs in full, and tells it from a console
            # payload (an access denial fails the invocation instead of being answered).
            targets=[self._target("gc")],
        )

    def _build_job_state_rule(self, emr_application_id: str) -> events.Rule:
        return events.Rule(
            self,
            "JobStateChanges",
            description="EMR Serverless job run state changes of this application -> job_state",
            event_pattern=events.EventPattern(
                source=[names.EMR_STATE_CHANGE_SOURCE],
                detail_type=[names.EMR_STATE_CHANGE_DETAIL_TYPE],
                detail={"applicationId": [emr_application_id]},
            ),
            targets=[self._target("job_state")],
        )

    def _build_launch_rule(self, bus: events.IEventBus) -> events.Rule:
        return events.Rule(
            self,
            "LaunchRequests",
            description="Bootstrap, restore and compaction requests -> launch",
            event_bus=bus,
            event_pattern=events.EventPattern(
                source=[EVENT_SOURCE], detail_type=list(LAUNCH_DETAIL_TYPES)
            ),
            targets=[self._target("launch")],
        )
