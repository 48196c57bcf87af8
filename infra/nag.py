"""cdk-nag (v3): acknowledging findings, each with the reason it is safe.

cdk-nag 3 reports through CDK's policy-validation framework: a pack is registered with
``Validations.of(app).add_plugins(...)`` and a finding is acknowledged with
``Validations.of(construct).acknowledge(...)`` on the resource or an ancestor. Findings that
carry a detail are acknowledged one by one, e.g. ``AwsSolutions-IAM5[Resource::*]``; the
helpers here spell those ids from the constructs involved instead of hard-coding logical IDs.

Acknowledgments for resources this app defines live next to those resources. The ones in
``acknowledge_cdk_providers`` cover singleton provider functions that aws-cdk-lib adds to
the stack (bucket notifications, AwsCustomResource), whose code and roles CDK owns.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from constructs import IConstruct

BASIC_EXECUTION_ROLE = (
    "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
)
# Construct ids aws-cdk-lib gives its singleton providers (stable across versions).
BUCKET_NOTIFICATIONS_HANDLER = "BucketNotificationsHandler050a0587b7544547bf325f094a3db834"
AWS_CUSTOM_RESOURCE_PROVIDER = "AWS679f53fac002430cb0da5b7982bd2287"


# While ``acknowledgments_withheld`` is active: (construct path, rule id) of each
# acknowledgment the app asked for, which is not applied.
_withheld: list[tuple[str, str]] | None = None


@contextmanager
def acknowledgments_withheld() -> Iterator[list[tuple[str, str]]]:
    """Build an app whose acknowledgments are recorded instead of applied.

    cdk-nag then reports every finding, so a test can check that each acknowledgment still
    answers a finding on its construct (a stale one hides nothing today, but would silently
    hide a new finding of the same rule tomorrow).
    """
    global _withheld  # noqa: PLW0603 - one recording at a time, for tests
    _withheld = []
    try:
        yield _withheld
    finally:
        _withheld = None


def acknowledge(scope: IConstruct, reason: str, *rule_ids: str) -> None:
    """Acknowledge ``rule_ids`` on ``scope`` and everything under it, for ``reason``."""
    if not reason.strip():
        raise ValueError("every cdk-nag acknowledgment needs a written reason")
    if _withheld is not None:
        _withheld.extend((scope.node.path, rule) for rule in rule_ids)
        return
    Validations.of(scope).acknowledge(
        *(Acknowledgment(id=rule, reason=reason) for rule in rule_ids)
    )


def iam5(detail: str) -> str:
    """The id of one wildcard finding, e.g. ``iam5("Resource::*")``."""
    return f"AwsSolutions-IAM5[{detail}]"


def arn_of(construct: IConstruct) -> str:
    """How cdk-nag renders ``Fn::GetAtt [<resource>, Arn]`` in a finding: ``<LogicalId.Arn>``."""
    resource = construct.node.default_child if not isinstance(construct, CfnResource) else construct
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource")
    return f"<{Stack.of(resource).get_logical_id(resource)}.Arn>"


def acknowledge_cdk_providers(stack: Stack) -> None:
    """Acknowledge findings on CDK-owned provider functions present in ``stack``."""
    notifications = stack.node.try_find_child(BUCKET_NOTIFICATIONS_HANDLER)
    if notifications is not None:
        acknowledge(
            notifications,
            "CDK's bucket-notifications handler (sets the snapshot bucket's notifications at "
            "deploy time) uses AWSLambdaBasicExecutionRole only to write its own logs.",
            f"AwsSolutions-IAM4[{BASIC_EXECUTION_ROLE}]",
        )
    provider = stack.node.try_find_child(AWS_CUSTOM_RESOURCE_PROVIDER)
    if provider is not None:
        acknowledge(
            provider,
            "CDK's AwsCustomResource provider (creates the Lambda test-event schema registry "
            "if missing) uses AWSLambdaBasicExecutionRole only to write its own logs; its SDK "
            "call has a separate policy scoped to that registry.",
            f"AwsSolutions-IAM4[{BASIC_EXECUTION_ROLE}]",
        )
