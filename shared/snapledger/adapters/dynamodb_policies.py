"""Retention policies on the ledger table: ``STREAM#{stream}`` / ``POLICY``.

The policy travels as one JSON string attribute (hours are floats, which the DynamoDB
type serializer refuses as numbers). Every write states its precondition:

    first write        attribute_not_exists(sk)
    later writes       version = :read           (the version the caller read)

so two operators editing one stream's policy cannot overwrite each other unseen.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.table_definition import SORT_KEY
from snapledger.errors import StoreUnavailableError
from snapledger.models.policy import StoredPolicy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

POLICY_SK = "POLICY"


def policy_pk(stream: str) -> str:
    return f"STREAM#{stream}"


class DynamoPolicyStore:
    """Per-stream retention policies (the same table and client as the ledger)."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

    def get(self, stream: str) -> StoredPolicy | None:
        """The stream's stored policy (consistent read), or None if it has none."""
        try:
            response = self.client.get_item(
                TableName=self.table_name,
                Key=codec.key(policy_pk(stream), POLICY_SK),
                ConsistentRead=True,
            )
        except ClientError as exc:
            raise _unavailable(exc) from exc
        item = response.get("Item")
        if not item:
            return None
        return StoredPolicy.model_validate_json(item["document"]["S"])

    def put(self, policy: StoredPolicy) -> bool:
        """Store ``policy`` if the stored version is ``policy.version - 1``; False if not."""
        item: dict[str, Any] = {
            **codec.key(policy_pk(policy.stream), POLICY_SK),
            "document": {"S": json.dumps(policy.model_dump(mode="json"), sort_keys=True)},
            "version": {"N": str(policy.version)},
        }
        condition: dict[str, Any]
        if policy.version == 1:
            condition = {
                "ConditionExpression": "attribute_not_exists(#sk)",
                "ExpressionAttributeNames": {"#sk": SORT_KEY},
            }
        else:
            condition = {
                "ConditionExpression": "#version = :read",
                "ExpressionAttributeNames": {"#version": "version"},
                "ExpressionAttributeValues": {":read": {"N": str(policy.version - 1)}},
            }
        try:
            self.client.put_item(TableName=self.table_name, Item=item, **condition)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise _unavailable(exc) from exc
        return True


def _unavailable(exc: ClientError) -> StoreUnavailableError:
    code = exc.response.get("Error", {}).get("Code", "")
    return StoreUnavailableError(f"DynamoDB refused the policy read or write ({code}): {exc}")
