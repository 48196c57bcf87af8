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

- Policies are evaluated here, not by moto (whose statements ignore most conditions and
  refuse an Allow whose condition fails instead of skipping it): an explicit Deny wins,
  else a matching Allow grants, else the call is refused. ``Condition`` blocks are
  evaluated as IAM does (``String*``, ``Arn*``, ``Bool``, ``Null``, ``...IfExists``,
  ``ForAnyValue:``/``ForAllValues:``; a negated operator holds when its key is absent) on
  the context keys the request carries: ``s3:prefix`` (a listing's ``prefix``),
  ``s3:if-none-match`` and ``s3:if-match`` (the headers), ``s3:x-amz-copy-source``,
  ``s3:ObjectCreationOperation`` (true for PutObject, CopyObject and
  CompleteMultipartUpload; false for CreateMultipartUpload and UploadPart), and
  ``iam:PassedToService`` at ``StartJobRun``. An operator this module does not know fails
  the call loudly rather than guessing. ``evaluate`` also judges a resource policy (the
  event bus's) for a principal and a request context.

What moto still does not check: ``emr-serverless:TagResource`` for tag-on-create;
docs/deploy.md says so.

Every decision is recorded (principal, action, resource, allowed), so a test can name the
refused call and list the granted actions no path used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse
from xml.etree import ElementTree

from moto import settings
from moto.core.responses import ActionAuthenticatorMixin
from moto.dynamodb.responses import DynamoHandler
from moto.emrserverless.responses import EMRServerlessResponse
from moto.iam.access_control import IAMPolicy, IAMRequestBase
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


EMR_SERVICE = "emr-serverless.amazonaws.com"


@dataclass(frozen=True)
class Decision:
    principal: str
    action: str
    resource: str
    allowed: bool
    # The request's condition keys (s3:prefix, s3:if-none-match, ...), as evaluated.
    context: Mapping[str, str | list[str]] = field(default_factory=dict, compare=False)


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


# --- policy evaluation ------------------------------------------------------------------

ALLOW, DENY, NEUTRAL = "allow", "deny", "neutral"


class UnknownConditionError(ValueError):
    """A policy uses a condition operator this emulation does not evaluate."""


def _wildcard(pattern: str, value: str, *, case: bool = True) -> bool:
    """IAM's ``*`` (any characters, ``/`` included) and ``?`` (one character)."""
    regex = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, value, re.DOTALL if case else re.IGNORECASE | re.DOTALL) is not None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


_STRING_TESTS = {
    "StringEquals": lambda want, got: want == got,
    "StringEqualsIgnoreCase": lambda want, got: want.lower() == got.lower(),
    "StringLike": _wildcard,
    "ArnEquals": lambda want, got: want == got,
    "ArnLike": _wildcard,
    "Bool": lambda want, got: want.lower() == got.lower(),
}
_NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
}


def _condition_holds(
    operator: str, key: str, wanted: Any, context: Mapping[str, str | list[str]]
) -> bool:
    qualifier, _, name = operator.rpartition(":")
    if_exists = name.endswith("IfExists")
    name = name.removesuffix("IfExists")
    wanted_values = [str(w) for w in _as_list(wanted)]
    present = key in context
    if name == "Null":
        (want,) = wanted_values
        return (not present) == (want.lower() == "true")
    if not present:
        # IAM: a missing key fails a positive operator and satisfies a negated one.
        return if_exists or name in _NEGATED or qualifier == "ForAllValues"
    got_values = [str(g) for g in _as_list(context[key])]
    negated = name in _NEGATED
    test = _STRING_TESTS.get(_NEGATED.get(name, name))
    if test is None or qualifier not in ("", "ForAnyValue", "ForAllValues"):
        raise UnknownConditionError(f"condition operator {operator!r} is not evaluated here")

    def matches(got: str) -> bool:
        return any(test(want, got) for want in wanted_values)

    if qualifier == "ForAllValues":
        hit = all(matches(got) for got in got_values)
        return not hit if negated else hit
    if negated:  # no value of the key matches any listed value
        return not any(matches(got) for got in got_values)
    return any(matches(got) for got in got_values)


def _conditions_hold(conditions: Mapping[str, Any], context: Mapping[str, Any]) -> bool:
    return all(
        _condition_holds(operator, key, wanted, context)
        for operator, keys in conditions.items()
        for key, wanted in keys.items()
    )


def _principal_matches(principal: Any, principal_arn: str | None) -> bool:
    if principal == "*":
        return True
    if principal_arn is None or not isinstance(principal, dict):
        return False
    accepted = [str(p) for p in _as_list(principal.get("AWS", []))]
    account = principal_arn.split(":")[4]
    return any(
        p in ("*", principal_arn, account, f"arn:{PARTITION}:iam::{account}:root") for p in accepted
    )


def evaluate(
    statements: Sequence[Mapping[str, Any]],
    action: str,
    resource: str,
    context: Mapping[str, str | list[str]],
    *,
    principal_arn: str | None = None,
) -> str:
    """ALLOW, DENY (an explicit Deny) or NEUTRAL (nothing matched: an implicit deny).

    ``principal_arn`` judges a resource policy's ``Principal`` (None: an identity policy).
    """
    result = NEUTRAL
    for statement in statements:
        if "Principal" in statement and not _principal_matches(
            statement["Principal"], principal_arn
        ):
            continue
        if "NotAction" in statement:
            if any(_wildcard(a, action, case=False) for a in _as_list(statement["NotAction"])):
                continue
        elif not any(_wildcard(a, action, case=False) for a in _as_list(statement["Action"])):
            continue
        if "NotResource" in statement:
            if any(_wildcard(r, resource) for r in _as_list(statement["NotResource"])):
                continue
        elif not any(_wildcard(r, resource) for r in _as_list(statement.get("Resource", "*"))):
            continue
        if not _conditions_hold(statement.get("Condition", {}), context):
            continue
        if statement["Effect"] == "Deny":
            return DENY
        result = ALLOW
    return result


def _policy_statements(policy: Any) -> list[Mapping[str, Any]]:
    document = IAMPolicy(policy)._policy_json
    return _as_list(document["Statement"])


def _s3_context(request: IAMRequestBase, action: str) -> dict[str, str | list[str]]:
    """The S3 condition keys of one request (those snapledger's policies use)."""
    query = parse_qs(urlparse(request._path).query, keep_blank_values=True)
    headers = {k.lower(): v for k, v in request._headers.items()}
    context: dict[str, str | list[str]] = {}
    if action in ("s3:ListBucket", "s3:ListBucketVersions") and "prefix" in query:
        context["s3:prefix"] = query["prefix"][0]
    if action == "s3:PutObject":
        for header in ("if-none-match", "if-match"):
            if header in headers:
                context[f"s3:{header}"] = headers[header]
        if "x-amz-copy-source" in headers:
            context["s3:x-amz-copy-source"] = unquote(headers["x-amz-copy-source"]).lstrip("/")
        # CreateMultipartUpload (POST ?uploads) and UploadPart/UploadPartCopy (PUT
        # ?partNumber&uploadId) create no object; PutObject, CopyObject and
        # CompleteMultipartUpload (POST ?uploadId) do.
        creates = not ("uploads" in query or (request._method == "PUT" and "uploadId" in query))
        context["s3:ObjectCreationOperation"] = "true" if creates else "false"
    return context


def _role_arn(principal: str) -> str:
    """aws:PrincipalArn: an assumed-role session's role, else the principal itself."""
    if ":assumed-role/" in principal:
        account = principal.split(":")[4]
        return f"arn:{PARTITION}:iam::{account}:role/{principal.split('/')[1]}"
    return principal


def _authorize(
    request: IAMRequestBase, action: str, resource: str, context: Mapping[str, Any]
) -> bool:
    statements = [s for p in request._access_key.collect_policies() for s in _policy_statements(p)]
    return evaluate(statements, action, resource, context) == ALLOW


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
                if action.startswith("sts:") or self._is_assuming_role_operation(arn):
                    # The harness's own role assumption (trust policies): moto's check.
                    try:
                        original_check(self, arn)
                    except Exception:
                        log.decisions.append(Decision(principal, action, arn, allowed=False))
                        raise
                    log.decisions.append(Decision(principal, action, arn, allowed=True))
                    continue
                context: dict[str, Any] = {"aws:PrincipalArn": _role_arn(principal)}
                if action.startswith("s3:"):
                    context |= _s3_context(self, action)
                if action == "iam:PassRole" and requested.startswith("emr-serverless:"):
                    context["iam:PassedToService"] = EMR_SERVICE
                allowed = _authorize(self, action, arn, context)
                log.decisions.append(Decision(principal, action, arn, allowed, context))
                if not allowed:
                    self._raise_access_denied()
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
