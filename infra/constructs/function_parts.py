"""What every snapledger Lambda function is built with: its own log group and its own role.

Shared by the six functions (functions.py) and the events Pipe's enrichment (events.py), so
each function's logs and permissions start from the same place: a log group it alone writes
(deleted with the stack) and a role that Lambda alone may assume, with nothing else
granted yet.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct


def log_group_and_role(
    scope: Construct, construct_id: str, *, retention: logs.RetentionDays, description: str
) -> tuple[logs.LogGroup, iam.Role]:
    """The function's log group and role; the role may write to that log group only."""
    log_group = logs.LogGroup(
        scope,
        f"{construct_id}Logs",
        retention=retention,
        removal_policy=RemovalPolicy.DESTROY,
    )
    role = iam.Role(
        scope,
        f"{construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=description,
    )
    log_group.grant_write(role)
    return log_group, role
