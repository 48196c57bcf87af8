"""Managed policies for the Kafka Streams steps that run outside the stack (issue 38).

``snapledger kafka-streams seed`` (the init container) and ``snapledger kafka-streams
snapshot`` (the snapshotter) run as the application's pod or task role, not as a role of
this stack. Their AWS calls, under the changelog topics of ``-c kafkaStreamsStreams`` only:

- both find the query function in this stack's outputs (``cloudformation:DescribeStacks`` on
  this stack) and ask it for the lineages' records (``lambda:InvokeFunction`` on it);
- both list a snapshot folder (``s3:ListBucket``, ``s3:prefix`` under the topics' lineages)
  and read its manifest and files (``s3:GetObject`` on the snapshot folders' objects);
- the snapshotter also writes a snapshot folder's files (``s3:PutObject``, multipart uploads
  included, ``s3:AbortMultipartUpload`` for a failed one). ``SnapshotWriter`` creates every
  object only if absent (If-None-Match on the PutObject, or on a multipart upload's
  CompleteMultipartUpload), which needs no other permission; a Deny holds ``_manifest.json``
  to it (``s3:if-none-match``): a manifest is never overwritten. The files cannot be held so:
  a multipart upload's UploadPart is authorized as ``s3:PutObject`` and carries no
  If-None-Match, so such a Deny would refuse every multipart upload. Neither policy reaches
  ``latest.json`` or ``generation.json`` (register writes them), nor any other prefix.

Kafka's own ACLs (the changelog topics' Describe, DescribeConfigs, Read) are not IAM here.
The stack outputs each policy's ARN; attach it to the role the step runs as
(docs/kafka-streams.md, "Set-up on AWS").
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import names
from infra.constructs.emr import listing_condition
from infra.nag import acknowledge, arn_of, iam5

SNAPSHOT_WRITE_ACTIONS = ("s3:PutObject", "s3:AbortMultipartUpload")
MANIFEST_WITHOUT_IF_NONE_MATCH = {"Null": {"s3:if-none-match": "true"}}


class KafkaStreamsPolicies(Construct):
    """The seeding and the snapshotting policies, and a stack output of each one's ARN."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        query: lambda_.IFunction,
        topics: tuple[str, ...],
    ) -> None:
        super().__init__(scope, construct_id)
        if not topics:
            raise ValueError("KafkaStreamsPolicies needs at least one changelog topic")
        self._bucket, self._topics = bucket, topics
        reads = self._read_statements(query)
        self.seed = self._policy(
            names.OUTPUT_KAFKA_STREAMS_SEED_POLICY,
            "snapledger kafka-streams seed (the init container)",
            reads,
        )
        self.snapshot = self._policy(
            names.OUTPUT_KAFKA_STREAMS_SNAPSHOT_POLICY,
            "snapledger kafka-streams snapshot (the snapshotter)",
            [*reads, *self._write_statements()],
        )

    def _files(self) -> list[str]:
        return [
            self._bucket.arn_for_objects(names.kafka_streams_snapshot_files(t))
            for t in self._topics
        ]

    def _read_statements(self, query: lambda_.IFunction) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                sid="FindTheQueryFunction",
                actions=["cloudformation:DescribeStacks"],
                resources=[Stack.of(self).stack_id],
            ),
            iam.PolicyStatement(
                sid="AskTheLedger",
                actions=["lambda:InvokeFunction"],
                resources=[query.function_arn],
            ),
            iam.PolicyStatement(
                sid="ListTheChangelogsSnapshots",
                actions=["s3:ListBucket"],
                resources=[self._bucket.bucket_arn],
                conditions=listing_condition(
                    tuple(f"{names.SNAPSHOTS_PREFIX}{t}/" for t in self._topics)
                ),
            ),
            iam.PolicyStatement(
                sid="ReadTheChangelogsSnapshots",
                actions=["s3:GetObject"],
                resources=self._files(),
            ),
        ]

    def _write_statements(self) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                sid="WriteSnapshotFiles",
                actions=list(SNAPSHOT_WRITE_ACTIONS),
                resources=self._files(),
            ),
            iam.PolicyStatement(
                sid="NeverOverwriteAManifest",
                effect=iam.Effect.DENY,
                actions=["s3:PutObject"],
                resources=[
                    self._bucket.arn_for_objects(names.kafka_streams_manifests(t))
                    for t in self._topics
                ],
                conditions=MANIFEST_WITHOUT_IF_NONE_MATCH,
            ),
        ]

    def _policy(
        self, output: str, step: str, statements: list[iam.PolicyStatement]
    ) -> iam.ManagedPolicy:
        policy = iam.ManagedPolicy(
            self,
            output,
            description=f"{step}: the snapshots of {', '.join(self._topics)} only",
            statements=statements,
        )
        acknowledge(
            policy,
            "A snapshot folder is named at run time (partition, LSN, snapshot id) and holds the "
            "RocksDB store's files: each object ARN ends in a wildcard inside the changelog "
            "topic's own lineages, and a manifest is only ever created (If-None-Match).",
            *(
                iam5(f"Resource::{arn_of(self._bucket)}/{pattern}")
                for t in self._topics
                for pattern in (names.kafka_streams_snapshot_files(t),)
            ),
        )
        CfnOutput(
            Stack.of(self),
            output,
            value=policy.managed_policy_arn,
            description=f"Managed policy for {step}: attach it to the role it runs as",
        )
        return policy
