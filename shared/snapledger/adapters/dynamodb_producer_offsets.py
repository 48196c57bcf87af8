"""The producer-offsets registry on the ledger table: ``PRODUCER#{producer_id}`` /
``OFFSETS``, one item per producer holding its offsets (docs/fluss.md).

Registration is one conditional PutItem: created only if no item is there
(``attribute_not_exists``), or, replacing an expired entry, only if the item still holds
that entry (its ``expires_at``); a lost race is a failed condition and nothing is written.
The item carries ``ttl`` = its expiry, so DynamoDB removes an expired entry by itself (some
time after; readers treat it as absent at once), and ``kind`` = ``PRODUCER_OFFSETS``, so the
sweep pages through the entries on the ``by_kind`` index without a scan. The offsets live in
the item: no object is written, so there are no offset files to orphan.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.table_definition import KIND_ATTRIBUTE, KIND_INDEX
from snapledger.models.producer_offsets import ProducerOffsets

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: How many entries one page of the sweep's Query reads.
SWEEP_PAGE = 100


def producer_key(producer_id: str) -> dict[str, Any]:
    return codec.key(f"{codec.PRODUCER_PREFIX}{producer_id}", codec.PRODUCER_OFFSETS_SK)


def offsets_item(entry: ProducerOffsets) -> dict[str, Any]:
    return codec.to_item(
        f"{codec.PRODUCER_PREFIX}{entry.producer_id}",
        codec.PRODUCER_OFFSETS_SK,
        entry,
        kind=codec.PRODUCER_OFFSETS_KIND,
        expires=entry.expires_at,
    )


def offsets_from_item(item: dict[str, Any]) -> ProducerOffsets:
    return ProducerOffsets.model_validate(codec.plain(item))


def _same_entry(entry: ProducerOffsets) -> writes.Matches:
    """The stored entry is the one read: the same ``expires_at`` (as the codec wrote it)."""
    stored = entry.model_dump(mode="json", include={"expires_at"})["expires_at"]
    return writes.Matches(
        "#expires = :expires", {"#expires": "expires_at"}, {":expires": {"S": stored}}
    )


class DynamoProducerOffsets:
    """Producers' registered offsets (the same table and client as the ledger)."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

    def get(self, producer_id: str) -> ProducerOffsets | None:
        response = writes.read(
            self.client.get_item,
            what=f"the read of producer {producer_id}'s offsets",
            TableName=self.table_name,
            Key=producer_key(producer_id),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return offsets_from_item(item) if item else None

    def create(self, entry: ProducerOffsets, *, replacing: ProducerOffsets | None) -> bool:
        precondition = writes.ABSENT if replacing is None else _same_entry(replacing)
        request = writes.put(self.table_name, offsets_item(entry), precondition)
        try:
            writes.write(
                self.client,
                "put_item",
                request,
                what=f"the registration of producer {entry.producer_id}'s offsets",
            )
        except writes.PreconditionFailed:
            return False
        return True

    def delete(self, producer_id: str, *, only: ProducerOffsets | None = None) -> bool:
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": producer_key(producer_id),
            "ReturnValues": "ALL_OLD",
        }
        if only is not None:
            request.update(writes.condition(_same_entry(only)))
        what = f"the deletion of producer {producer_id}'s offsets"
        try:
            response = self.client.delete_item(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise writes.translate(exc, what=what, table=self.table_name) from exc
        except writes.LOST_RESPONSE as exc:
            raise writes.translate(exc, what=what) from exc
        return bool(response.get("Attributes"))

    def expired(self, now: datetime, *, limit: int) -> builtins.list[ProducerOffsets]:
        found: list[ProducerOffsets] = []
        start: dict[str, Any] | None = None
        while len(found) < limit:
            request: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": KIND_INDEX,
                "KeyConditionExpression": "#kind = :kind",
                "ExpressionAttributeNames": {"#kind": KIND_ATTRIBUTE},
                "ExpressionAttributeValues": {":kind": {"S": codec.PRODUCER_OFFSETS_KIND}},
                "Limit": SWEEP_PAGE,
            }
            if start:
                request["ExclusiveStartKey"] = start
            page = writes.read(
                self.client.query, what="the listing of producers' offsets", **request
            )
            for item in page.get("Items", []):
                entry = offsets_from_item(item)
                if entry.expired(now) and len(found) < limit:
                    found.append(entry)
            start = page.get("LastEvaluatedKey")
            if not start:
                break
        return found
