"""GC's fan-out: the shard queue the scheduled gc run sends to, and the gc function's SQS
trigger that works the shards (docs/retention.md, *Scaling out*).

- the queue: SQS-managed encryption, TLS only; a shard is retried ``MAX_RECEIVES`` times
  (a shard cut short by the time budget is reported as a batch item failure and comes
  back), then it waits in the dead-letter queue, which alarms (``Observability``);
- the trigger: one shard per invocation, at most ``names.GC_SHARD_WORKERS`` at once
  (MaximumConcurrency), ``ReportBatchItemFailures``;
- the grants, spelled out: the coordinator only sends (``sqs:SendMessage``, which is what
  IAM checks for SendMessageBatch); the trigger polls with the function's role, which
  needs ``sqs:ReceiveMessage``, ``sqs:DeleteMessage`` and ``sqs:GetQueueAttributes``
  (Lambda Developer Guide, *Using Lambda with Amazon SQS*, execution role permissions).
  CDK's ``SqsEventSource`` would also grant ChangeMessageVisibility and GetQueueUrl,
  which the trigger never calls.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import names
from snapledger.gc_settings import ENV_GC_QUEUE_URL

MAX_RECEIVES = 3
# Lambda wants a source queue's visibility timeout at least the function's timeout; AWS
# recommends six times it, so a throttled or retried batch is not seen twice meanwhile.
VISIBILITY_PER_FUNCTION_TIMEOUT = 6
SHARD_RETENTION = Duration.days(1)  # a shard older than the next few runs is stale anyway
DEAD_LETTER_RETENTION = Duration.days(14)
CONSUME_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")


class GcShardQueue(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        function_timeout: Duration,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue = _private_queue(
            self, "DeadLetters", retention_period=DEAD_LETTER_RETENTION
        )
        self.queue = _private_queue(
            self,
            "Shards",
            retention_period=SHARD_RETENTION,
            visibility_timeout=Duration.seconds(
                function_timeout.to_seconds() * VISIBILITY_PER_FUNCTION_TIMEOUT
            ),
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=MAX_RECEIVES, queue=self.dead_letter_queue
            ),
        )
        self.trigger = lambda_.EventSourceMapping(
            self,
            "Trigger",
            target=function,
            event_source_arn=self.queue.queue_arn,
            batch_size=1,
            max_concurrency=names.GC_SHARD_WORKERS,
            report_batch_item_failures=True,
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="SendGcShards", actions=["sqs:SendMessage"], resources=[self.queue.queue_arn]
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PollGcShards", actions=list(CONSUME_ACTIONS), resources=[self.queue.queue_arn]
            )
        )
        function.add_environment(ENV_GC_QUEUE_URL, self.queue.queue_url)


def _private_queue(scope: Construct, construct_id: str, **props: Any) -> sqs.Queue:
    """A queue encrypted with SSE-SQS that refuses requests without TLS."""
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        **props,
    )
