"""EventBridge: the snapledger bus, the ledger-events Pipe, and the rules that drive functions."""

from __future__ import annotations

import json

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import names
from infra.constants import EVENT_SOURCE, LAUNCH_DETAIL_TYPES
from infra.nag import acknowledge, iam5

PIPE_BATCH_SIZE = 10
PIPE_MAX_RETRIES = 10
TARGET_RETRY_ATTEMPTS = 4
TARGET_MAX_EVENT_AGE = Duration.hours(6)


class LedgerEventBus(Construct):
    """A custom bus, fed by a Pipe with the ledger's ``EV#`` items as they are appended.

    Subscribers match ``source = snapledger.ledger`` and the event type as ``detail-type``
    (``SnapshotRegistered``, ``LatestAdvanced``, ``TrimPointAdvanced``, ...); ``detail`` is
    the DynamoDB stream record, the item under ``dynamodb.NewImage``. Launch requests use the
    same bus with ``source = snapledger``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: dynamodb.ITable) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", description="snapledger ledger events and requests")
        self.pipe_dead_letter_queue = self._build_dead_letter_queue()
        self.pipe_name = f"{Stack.of(self).stack_name}-ledger-events"
        self.pipe_role = self._build_pipe_role(table)
        self.pipe = self._build_pipe(table)

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
            "deliver; it has nothing further to forward to.",
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
        self.pipe_dead_letter_queue.grant_send_messages(role)
        acknowledge(
            role,
            "dynamodb:ListStreams has no resource-level permissions (it only lists stream "
            "ARNs); reading records is limited to this table's stream ARN.",
            iam5("Resource::*"),
        )
        return role

    def _build_pipe(self, table: dynamodb.ITable) -> pipes.CfnPipe:
        if table.table_stream_arn is None:  # pragma: no cover - the table always has a stream
            raise ValueError("the ledger table needs a stream for the events Pipe")
        type_path = f"$.dynamodb.NewImage.{names.EVENT_TYPE_ATTRIBUTE}.S"
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
            description="Forwards ledger events (EV# items) to the snapledger bus",
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
            target=self.bus.event_bus_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                event_bridge_event_bus_parameters=pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                    source=names.LEDGER_EVENT_SOURCE, detail_type=type_path
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
            # The same shape as the console's "gc dry run" event, with the dry run off.
            targets=[self._target("gc", events.RuleTargetInput.from_object({"dry_run": False}))],
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
