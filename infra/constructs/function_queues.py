"""The queues around the functions: each asynchronous function's on-failure queue, and the
registration FIFO queue ``register``'s intake fills and its consumer drains."""

from __future__ import annotations

import jsii
from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge

DLQ_RETENTION = Duration.days(14)
# The registration FIFO queue (docs/ledger.md, "Hot lineages" and "Sizing"). Lambda asks
# for a visibility timeout of at least six times the function's timeout; a manifest that
# fails five deliveries goes to the FIFO failure queue. The event source mapping takes 10
# messages a batch (SQS's most for FIFO) and runs at most REGISTRATION_CONSUMERS batches at
# once (under register's reservation, which intake shares).
REGISTRATION_BATCH_SIZE = 10
REGISTRATION_CONSUMERS = 20
REGISTRATION_MAX_RECEIVES = 5
# What Lambda's SQS poller calls with the function's role (never the function's code).
ESM_POLLER_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")


def build_dead_letter_queue(scope: Construct, construct_id: str) -> sqs.Queue:
    """The on-failure queue of the function ``construct_id`` (its asynchronous events)."""
    queue = sqs.Queue(
        scope,
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


def build_registration_queue(
    scope: Construct, *, register_timeout: Duration
) -> tuple[sqs.Queue, sqs.Queue]:
    """The FIFO queue ``register``'s intake sends manifests to, and its failure queue.

    S3 cannot notify a FIFO queue, hence the intake. High-throughput FIFO (deduplication
    and throughput per message group): the groups are lineages, thousands of them.
    """
    failures = sqs.Queue(
        scope,
        "RegistrationFailures",
        fifo=True,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=DLQ_RETENTION,
    )
    # (cdk-nag's SQS3 recognizes a queue's dead-letter queue: nothing to acknowledge.)
    queue = sqs.Queue(
        scope,
        "Registrations",
        fifo=True,
        content_based_deduplication=False,  # intake sets the id: the object write
        deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
        fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        visibility_timeout=Duration.seconds(6 * register_timeout.to_seconds()),
        retention_period=DLQ_RETENTION,
        dead_letter_queue=sqs.DeadLetterQueue(
            queue=failures, max_receive_count=REGISTRATION_MAX_RECEIVES
        ),
    )
    return queue, failures


def consume_registrations(register: lambda_.Function, queue: sqs.IQueue) -> None:
    """register consumes the queue: one batch per message group (lineage) at a time.

    The mapping is declared without CDK's SqsEventSource, whose grant adds GetQueueUrl
    and ChangeMessageVisibility: Lambda's poller calls only the three actions of AWS's
    AWSLambdaSQSQueueExecutionRole, with the function's role.
    """
    register.add_event_source_mapping(
        "Registrations",
        event_source_arn=queue.queue_arn,
        batch_size=REGISTRATION_BATCH_SIZE,
        report_batch_item_failures=True,
        max_concurrency=REGISTRATION_CONSUMERS,
    )
    register.add_to_role_policy(
        iam.PolicyStatement(
            sid="PollRegistrations",
            actions=list(ESM_POLLER_ACTIONS),
            resources=[queue.queue_arn],
        )
    )
