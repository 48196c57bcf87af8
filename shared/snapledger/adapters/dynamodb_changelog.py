"""Changelog segments seen, per lineage: ``SEG#{last:020d}#{first:020d}`` items.

Keyed by the *last* LSN so "segments ending after the latest snapshot" is one range
query. Each segment is written once (``attribute_not_exists``): a redelivered S3 event
is recognised and not counted twice. These are plain counters beside the event log.

A file in a lineage's changelog folder that is not a segment gets a
``REJSEG#{key}`` marker once its ``ChangelogSegmentRejected`` event is in the log, so a
redelivery records it once (outside the ``SEG#`` range: never counted).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.table_definition import SORT_KEY
from snapledger.layout import LSN_WIDTH, SegmentLocation
from snapledger.models.ledger import LineageId

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SEGMENT_PREFIX = "SEG#"
REJECTED_SEGMENT_PREFIX = "REJSEG#"


def segment_sk(segment: SegmentLocation) -> str:
    return f"{SEGMENT_PREFIX}{segment.last_lsn:0{LSN_WIDTH}d}#{segment.first_lsn:0{LSN_WIDTH}d}"


class DynamoSegmentStore:
    """Segments seen, on the ledger table."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

    def record(self, segment: SegmentLocation, size: int, at: datetime) -> bool:
        """Remember the segment; False if it had been seen before (a redelivery)."""
        lineage = LineageId(stream=segment.stream, partition=segment.partition)
        item = {
            **codec.key(codec.lineage_pk(lineage), segment_sk(segment)),
            "first_lsn": {"N": str(segment.first_lsn)},
            "last_lsn": {"N": str(segment.last_lsn)},
            "size": {"N": str(size)},
            "at": {"S": at.isoformat()},
        }
        return self._put_once(item, what=f"the segment {segment.key}")  # counted once

    def ending_after(self, lineage: LineageId, lsn: int | None) -> Iterator[tuple[int, int, int]]:
        """(first, last, size) of every recorded segment whose last LSN is above ``lsn``."""
        low = SEGMENT_PREFIX if lsn is None else f"{SEGMENT_PREFIX}{lsn:0{LSN_WIDTH}d}#\uffff"
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": SORT_KEY},
            "ExpressionAttributeValues": {
                ":pk": {"S": codec.lineage_pk(lineage)},
                ":lo": {"S": low},
                ":hi": {"S": SEGMENT_PREFIX + "\uffff"},
            },
        }
        while True:
            response = writes.read(
                self.client.query, what=f"a read of {lineage}'s segments", **request
            )
            for item in response.get("Items", []):
                yield (
                    int(item["first_lsn"]["N"]),
                    int(item["last_lsn"]["N"]),
                    int(item["size"]["N"]),
                )
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    def rejection_recorded(self, lineage: LineageId, key: str) -> bool:
        """Whether the non-segment file at ``key`` was recorded rejected (one GetItem)."""
        response = writes.read(
            self.client.get_item,
            what=f"a read of the rejected segment {key}",
            TableName=self.table_name,
            Key=codec.key(codec.lineage_pk(lineage), REJECTED_SEGMENT_PREFIX + key),
            ConsistentRead=True,
        )
        return "Item" in response

    def record_rejection(self, lineage: LineageId, key: str, reason: str, at: datetime) -> bool:
        """Mark the file at ``key`` recorded rejected; False if it was already marked."""
        item = {
            **codec.key(codec.lineage_pk(lineage), REJECTED_SEGMENT_PREFIX + key),
            "reason": {"S": reason},
            "at": {"S": at.isoformat()},
        }
        return self._put_once(item, what=f"the rejected segment {key}")

    def _put_once(self, item: dict[str, Any], *, what: str) -> bool:
        """Put ``item`` unless it exists; False if it did (the first write stays)."""
        try:
            # Precondition: absent, so a redelivery never writes (or counts) it again.
            request = writes.put(self.table_name, item, writes.ABSENT)
            writes.write(self.client, "put_item", request, what=what)
        except writes.PreconditionFailed:
            return False
        return True
