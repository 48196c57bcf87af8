"""A managed policy per Restate prefix, for the nodes of the cluster that writes there.

Restate (1.7) writes a partition's snapshot as ``{prefix}/{partition}/lsn_{lsn:020d}-{id}/``
(SSTs, then metadata.json), evicts old ones by deleting their objects, reads them to
restore, and repoints ``{prefix}/{partition}/latest.json`` by compare-and-swap. Its nodes
get exactly that, under their own prefix and nowhere else in the bucket:

- list the prefix (``s3:prefix`` under it), read every object under it;
- write and delete a snapshot folder's objects (``{prefix}/*/lsn_*``), multipart uploads
  included (AbortMultipartUpload cleans up a failed one);
- write ``latest.json`` only as a conditional write: If-Match (the ETag compare-and-swap)
  or If-None-Match (its first creation); never delete it.

The stack outputs each policy's ARN (``RestateNodePolicy{Stream}``); attach it to the role
the Restate nodes run as (docs/deploy.md, "Restate").
"""

from __future__ import annotations

from aws_cdk import CfnOutput
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import names
from infra.constructs.emr import listing_condition
from infra.nag import acknowledge, arn_of, iam5

# latest.json: one Allow per conditional header (either suffices; none: refused).
LATEST_WRITE_CONDITIONS: dict[str, dict[str, dict[str, str]]] = {
    "RepointLatestByCompareAndSwap": {"Null": {"s3:if-match": "false"}},
    "CreateLatestIfAbsent": {"Null": {"s3:if-none-match": "false"}},
}
SNAPSHOT_WRITE_ACTIONS = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject")


class RestateNodePolicies(Construct):
    """One managed policy per ``prefix -> stream``, and a stack output of its ARN."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        restate_prefixes: dict[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.policies: dict[str, iam.ManagedPolicy] = {}  # prefix -> its policy
        for prefix, stream in sorted(restate_prefixes.items()):
            policy = self._build_policy(bucket, prefix, stream)
            self.policies[prefix] = policy
            CfnOutput(
                scope,
                names.restate_output_key(stream),
                value=policy.managed_policy_arn,
                description=f"Managed policy for the Restate nodes writing {prefix}/ "
                f"(stream {stream}): attach it to their role",
            )

    def _build_policy(self, bucket: s3.IBucket, prefix: str, stream: str) -> iam.ManagedPolicy:
        folders = names.restate_snapshot_folders(prefix)
        pointers = names.restate_latest_pointers(prefix)
        statements = [
            iam.PolicyStatement(
                sid="ListTheClustersPrefix",
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions=listing_condition((f"{prefix}/",)),
            ),
            iam.PolicyStatement(
                sid="ReadTheClustersSnapshots",
                actions=["s3:GetObject"],
                resources=[bucket.arn_for_objects(f"{prefix}/*")],
            ),
            iam.PolicyStatement(
                sid="WriteAndEvictSnapshotFolders",
                actions=list(SNAPSHOT_WRITE_ACTIONS),
                resources=[bucket.arn_for_objects(folders)],
            ),
            *(
                iam.PolicyStatement(
                    sid=sid,
                    actions=["s3:PutObject"],
                    resources=[bucket.arn_for_objects(pointers)],
                    conditions=condition,
                )
                for sid, condition in LATEST_WRITE_CONDITIONS.items()
            ),
        ]
        policy = iam.ManagedPolicy(
            self,
            names.restate_output_key(stream),
            description=f"Restate nodes of stream {stream}: their snapshots under {prefix}/ only",
            statements=statements,
        )
        acknowledge(
            policy,
            "Restate names its snapshot objects at run time (partition, LSN, snapshot id, SST "
            "number): each object ARN ends in a wildcard under the cluster's own prefix, and "
            "latest.json is written only by a conditional write.",
            *(
                iam5(f"Resource::{arn_of(bucket)}/{pattern}")
                for pattern in (f"{prefix}/*", folders, pointers)
            ),
        )
        return policy
