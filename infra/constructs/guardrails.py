"""Explicit denies every snapledger role carries: the bucket's history cannot be rewritten.

The snapshot bucket is versioned so that a bad delete can be undone. A role that could
delete object versions, suspend versioning or change the lifecycle rules could undo that
protection, whatever its Allow statements say; an explicit Deny wins over any Allow,
including one added later by mistake.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

HISTORY_REWRITE_ACTIONS = (
    "s3:DeleteObjectVersion",
    "s3:PutBucketVersioning",
    "s3:PutLifecycleConfiguration",
)
DENY_SID = "NeverRewriteBucketHistory"


def deny_history_rewrites(role: iam.IRole, bucket: s3.IBucket) -> None:
    """Deny ``role`` every action that could purge versions or change versioning/lifecycle."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid=DENY_SID,
            effect=iam.Effect.DENY,
            actions=list(HISTORY_REWRITE_ACTIONS),
            resources=[bucket.bucket_arn, bucket.arn_for_objects("*")],
        )
    )
