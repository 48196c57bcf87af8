"""Retention policies on the ledger table: ``STREAM#{stream}`` / ``POLICY``, read by GC.

The policy travels as one JSON string attribute (hours are floats, which the DynamoDB
type serializer refuses as numbers). It is written only by the stream's log
(``dynamodb_stream_log.py``), in the transaction that appends ``PolicySet`` or
``PolicyReset``, so every change is an event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_writes as writes
from snapledger.models.policy import StoredPolicy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoPolicyStore:
    """Per-stream retention policies (the same table and client as the ledger)."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

    def get(self, stream: str) -> StoredPolicy | None:
        """The stream's stored policy (consistent read), or None if it has none."""
        response = writes.read(
            self.client.get_item,
            what=f"the read of {stream}'s policy",
            TableName=self.table_name,
            Key=codec.key(codec.stream_pk(stream), codec.POLICY_SK),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return codec.policy_from_item(item) if item else None
