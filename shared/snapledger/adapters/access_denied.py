"""AccessDenied from any AWS call, raised as ``AccessDeniedError`` naming action and resource.

``report_access_denied(client)`` hooks a boto3 client: when IAM refuses a call, the client
raises ``AccessDeniedError`` instead of a ``ClientError``, with the IAM action
(``dynamodb:Query``) and the resource: the one AWS names in its message where it does
("... not authorized to perform: X on resource: Y"), else the one the request names (the
table, the bucket and key, the application and job run). Answers and logs then say what to
grant, instead of a stack trace from deep inside an adapter.

Only a refusal is translated: a 403 without an AccessDenied code (S3 HEAD on a missing key
without ListBucket) stays a ClientError for its adapter, which knows what it means.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from snapledger.errors import AccessDeniedError

ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException"})
_REQUEST_KEY = "snapledger_request"
_ON_RESOURCE = re.compile(r"on resource:?\s+(\S+)")
_PERFORM = re.compile(r"not authorized to perform:?\s+([\w-]+:\w+)")
# IAM's action where it is not the API's name. IAM has no TransactWriteItems action: it
# checks each item's own (iam_action).
_IAM_ACTIONS = {
    "s3:HeadObject": "s3:GetObject",
    "s3:ListObjectsV2": "s3:ListBucket",
    "s3:ListObjectVersions": "s3:ListBucketVersions",
    "s3:DeleteObjects": "s3:DeleteObject",
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "dynamodb:TransactGetItems": "dynamodb:GetItem",
}
_TRANSACTION_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


ClientT = TypeVar("ClientT")


def report_access_denied(client: ClientT) -> ClientT:
    """Hook ``client`` (any boto3 client) so an AccessDenied raises ``AccessDeniedError``."""
    events = client.meta.events  # type: ignore[attr-defined]  # every boto3 client has it
    events.register("before-parameter-build.*.*", _remember_request)
    events.register("after-call.*.*", _raise_if_denied)
    return client


def _remember_request(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    context[_REQUEST_KEY] = params


def _raise_if_denied(
    http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
) -> None:
    error = parsed.get("Error") or {}
    code = str(error.get("Code", ""))
    message = str(error.get("Message", ""))
    denied = code in ACCESS_DENIED_CODES or (
        getattr(http_response, "status_code", None) == 403 and "AccessDenied" in message
    )
    if not denied:
        return
    params = context.get(_REQUEST_KEY) or {}
    performed = _PERFORM.search(message)
    if performed:
        action = performed.group(1)
    else:
        action = iam_action(f"{model.service_model.signing_name}:{model.name}", params)
    named = _ON_RESOURCE.search(message)
    resource = named.group(1).strip("\"'.,") if named else requested_resource(params)
    raise AccessDeniedError(action, resource, detail=code or "HTTP 403")


def iam_action(api_action: str, params: dict[str, Any]) -> str:
    """The IAM action (or actions) IAM checks for one API call."""
    if api_action == "dynamodb:TransactWriteItems":
        kinds = {kind for item in params.get("TransactItems", []) for kind in item}
        checked = sorted(
            _TRANSACTION_ITEM_ACTIONS[k] for k in kinds & _TRANSACTION_ITEM_ACTIONS.keys()
        )
        return " or ".join(checked) or api_action
    return _IAM_ACTIONS.get(api_action, api_action)


def requested_resource(params: dict[str, Any]) -> str:
    """The resource a request names: an object, a table (or several), a job run."""
    if "Bucket" in params:
        return f"arn:aws:s3:::{params['Bucket']}/{params.get('Key', '')}".rstrip("/")
    tables = sorted({params["TableName"]} if "TableName" in params else _transaction_tables(params))
    if tables:
        return ", ".join(f"table {name}" for name in tables)
    if "applicationId" in params:
        run = params.get("jobRunId")
        return f"EMR Serverless application {params['applicationId']}" + (
            f", job run {run}" if run else ""
        )
    return "(the request names no resource)"


def _transaction_tables(params: dict[str, Any]) -> set[str]:
    tables = set(params.get("RequestItems", {}))
    for item in params.get("TransactItems", []):
        for request in item.values():
            tables.add(request.get("TableName", ""))
    return tables - {""}
