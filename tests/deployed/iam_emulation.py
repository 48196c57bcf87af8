"""moto with IAM enforced, made to check what AWS checks for the calls snapledger makes.

moto authorizes every request once ``INITIAL_NO_AUTH_ACTION_COUNT`` requests have passed:
S3 per object and bucket ARN, but DynamoDB and EMR Serverless only against resource ``*``
(a table-scoped Allow is denied there) and with the X-Amz-Target name as the action. This
module closes those gaps, so a role that works here works in AWS for the same calls:

- DynamoDB requests are checked against the table (or index) ARN they name;
  ``TransactWriteItems`` is checked as AWS does, one ``PutItem``/``UpdateItem``/
  ``DeleteItem``/``ConditionCheckItem`` per item on its table (there is no IAM action of
  that name); ``TransactGetItems`` likewise as ``GetItem``.
- S3 ``DeleteObjects`` is checked per key, as AWS does (moto checks the bucket ARN).
- SQS ``SendMessageBatch`` is checked as ``sqs:SendMessage`` on the queue, as AWS does.
- EMR Serverless requests are checked against the application or job run ARN, and
  ``StartJobRun`` also needs ``iam:PassRole`` on the execution role, as AWS requires.
- S3 PutObjectLegalHold (``PUT ?legal-hold``) is checked as ``s3:PutObjectLegalHold``,
  as AWS does (moto's action map checks it as ``s3:PutObject``).
- SQS batch requests are checked as the action IAM knows (``SendMessageBatch`` as
  ``sqs:SendMessage``, ``DeleteMessageBatch`` as ``sqs:DeleteMessage``) on the queue.

What moto still does not evaluate: policy conditions (``iam:PassedToService``) and
``emr-serverless:TagResource`` for tag-on-create; docs/deploy.md says so.

Every decision is recorded (principal, action, resource, allowed), so a test can name the
refused call and list the granted actions no path used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from moto import settings
from moto.core.responses import ActionAuthenticatorMixin
from moto.dynamodb.responses import DynamoHandler
from moto.emrserverless.responses import EMRServerlessResponse
from moto.iam.access_control import IAMRequestBase
from moto.s3.responses import ACTION_MAP as S3_ACTION_MAP

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"
# The harness's own setup: create the admin user, give it a policy, mint its access key.
SETUP_REQUESTS = 3
_TRANSACT_WRITE_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


# SQS's batch APIs have no IAM action of their own: AWS checks the single one.
_SQS_BATCH_ACTIONS = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}


@dataclass(frozen=True)
class Decision:
    principal: str
    action: str
    resource: str
    allowed: bool


@dataclass
class DecisionLog:
    """Every authorization moto made while enforcement was on."""

    decisions: list[Decision] = field(default_factory=list)

    def denied(self) -> list[Decision]:
        return [d for d in self.decisions if not d.allowed]

    def allowed_for(self, principal_fragment: str) -> list[Decision]:
        return [d for d in self.decisions if d.allowed and principal_fragment in d.principal]


def table_arn(name: str) -> str:
    return f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{name}"


def application_arn(application_id: str) -> str:
    return f"arn:{PARTITION}:emr-serverless:{REGION}:{ACCOUNT}:/applications/{application_id}"


def _dynamodb_checks(action: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(IAM action, resource ARN) pairs AWS checks for one DynamoDB request."""
    if action == "TransactWriteItems":
        checks = []
        for item in body.get("TransactItems", []):
            for kind, request in item.items():
                checks.append(
                    (f"dynamodb:{_TRANSACT_WRITE_ACTIONS[kind]}", table_arn(request["TableName"]))
                )
        return checks
    if action == "TransactGetItems":
        return [
            ("dynamodb:GetItem", table_arn(item["Get"]["TableName"]))
            for item in body.get("TransactItems", [])
        ]
    if action in {"BatchWriteItem", "BatchGetItem"}:
        return [(f"dynamodb:{action}", table_arn(name)) for name in body.get("RequestItems", {})]
    if "TableName" not in body:
        return [(f"dynamodb:{action}", "*")]
    resource = table_arn(body["TableName"])
    if body.get("IndexName"):
        resource = f"{resource}/index/{body['IndexName']}"
    return [(f"dynamodb:{action}", resource)]


def _emr_checks(action: str, path: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    parts = [p for p in path.split("/") if p]
    # /applications/{id}[/jobruns[/{run}]]
    resource = "*"
    if len(parts) >= 2 and parts[0] == "applications":
        resource = application_arn(parts[1])
        if len(parts) >= 4 and parts[2] == "jobruns":
            resource = f"{resource}/jobruns/{parts[3]}"
    checks = [(f"emr-serverless:{action}", resource)]
    if action == "StartJobRun" and body.get("executionRoleArn"):
        checks.append(("iam:PassRole", body["executionRoleArn"]))
    return checks


class _Resource(str):
    """A resource marker carrying the exact (action, resource) checks of one request."""

    checks: list[tuple[str, str]]


def _delete_objects_checks(bucket_arn: str, body: bytes) -> list[tuple[str, str]]:
    """S3 DeleteObjects: AWS checks ``s3:DeleteObject`` on every key it names."""
    root = ElementTree.fromstring(body)
    keys = [element.text or "" for element in root.iter() if element.tag.endswith("Key")]
    return [("s3:DeleteObject", f"{bucket_arn}/{key}") for key in keys]


def _dynamodb_resource(handler: DynamoHandler) -> str:
    marker = _Resource("*")
    marker.checks = _dynamodb_checks(handler._get_action(), getattr(handler, "body", {}) or {})
    return marker


def _emr_resource(handler: EMRServerlessResponse) -> str:
    try:
        body = json.loads(handler.body or "{}")
    except (TypeError, ValueError):
        body = {}
    marker = _Resource("*")
    marker.checks = _emr_checks(handler._get_action(), handler.path, body)
    return marker


@contextmanager
def enforced_iam() -> Iterator[DecisionLog]:
    """Inside ``mock_aws``: authorize every request after the harness's setup requests."""
    log = DecisionLog()
    original_check = IAMRequestBase.check_action_permitted

    def check(self: IAMRequestBase, resource: str) -> None:
        action = _SQS_BATCH_ACTIONS.get(self._action, self._action)
        checks = getattr(resource, "checks", None) or [(action, resource)]
        if self._action == "s3:DeleteObject" and self._body and b"<Delete" in self._body:
            # moto checks DeleteObjects once, on the bucket, and then each key against the
            # bucket policy only; AWS checks the caller's policy for every key.
            checks = _delete_objects_checks(resource, self._body)
        if self._action == "sqs:SendMessageBatch":
            # IAM has no SendMessageBatch action: AWS checks sqs:SendMessage on the queue.
            checks = [("sqs:SendMessage", resource)]
        principal = self._access_key.arn
        requested = self._action
        try:
            for action, arn in checks:
                self._action = action
                try:
                    original_check(self, arn)
                except Exception:
                    log.decisions.append(Decision(principal, action, arn, allowed=False))
                    raise
                log.decisions.append(Decision(principal, action, arn, allowed=True))
        finally:
            self._action = requested

    original_signature = IAMRequestBase.check_signature

    def check_signature(self: IAMRequestBase) -> None:
        # moto signs a body-less request over its parsed path parameters (``data``), so a
        # REST GET such as EMR Serverless GetJobRun never matches: sign the empty body.
        if not self._body and self._method == "GET":
            self._data = {}
        original_signature(self)

    saved = (
        settings.INITIAL_NO_AUTH_ACTION_COUNT,
        ActionAuthenticatorMixin.request_count,
    )
    settings.INITIAL_NO_AUTH_ACTION_COUNT = SETUP_REQUESTS
    ActionAuthenticatorMixin.request_count = 0
    IAMRequestBase.check_action_permitted = check  # type: ignore[method-assign]
    IAMRequestBase.check_signature = check_signature  # type: ignore[method-assign]
    DynamoHandler._determine_resource = _dynamodb_resource  # type: ignore[attr-defined]
    EMRServerlessResponse._determine_resource = _emr_resource  # type: ignore[attr-defined]
    object_puts = S3_ACTION_MAP["KEY"]["PUT"]
    object_puts["legal-hold"] = "PutObjectLegalHold"
    try:
        yield log
    finally:
        IAMRequestBase.check_action_permitted = original_check  # type: ignore[method-assign]
        IAMRequestBase.check_signature = original_signature  # type: ignore[method-assign]
        del DynamoHandler._determine_resource  # type: ignore[attr-defined]
        del EMRServerlessResponse._determine_resource  # type: ignore[attr-defined]
        del object_puts["legal-hold"]
        settings.INITIAL_NO_AUTH_ACTION_COUNT, ActionAuthenticatorMixin.request_count = saved
