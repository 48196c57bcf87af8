"""All lineages, a page at a time, through the sparse ``by_kind`` index; and GC's checkpoint.

HEAD items carry ``kind = "HEAD#{n}"``, one of ``HEAD_KIND_SHARDS`` shards (a stable hash
of the lineage: ``dynamodb_codec.head_kind``), or the unsharded ``"HEAD"`` if no command
has rewritten them since the sharding (until the backfill runs). The index's range key is
the lineage's ``pk``, so one stream's lineages are a ``begins_with`` on it and a page can
resume *after* any lineage (the exclusive start key is built from the lineage id, not an
opaque token). A page queries every shard from that point, ``limit`` items each, and
merges them in ``pk`` order: ``1 + HEAD_KIND_SHARDS`` Queries a page. Index reads are
eventually consistent: GC re-reads HEAD consistently before every write.

The checkpoint (``GC`` / ``CHECKPOINT``) is written only on ``version = :read`` (or if
absent), so of two runs that stop at once only one moves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.table_definition import KIND_ATTRIBUTE, KIND_INDEX, PARTITION_KEY
from snapledger.errors import InvalidRequestError
from snapledger.models.gc import GcCheckpoint, HeadPage
from snapledger.models.ledger import LineageId

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CHECKPOINT_PK = "GC"
CHECKPOINT_SK = "CHECKPOINT"


class DynamoLineageIndex:
    """Pages of HEAD items (all lineages, or one stream's) and GC's checkpoint item."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

    def list_heads(
        self, *, stream: str | None = None, after: LineageId | None = None, limit: int = 100
    ) -> HeadPage:
        """Up to ``limit`` HEADs after ``after`` (in ``pk`` order), optionally of one stream."""
        if not 1 <= limit <= 1000:
            raise InvalidRequestError(f"limit must be between 1 and 1000, got {limit}")
        items: list[dict[str, Any]] = []
        more = False
        for kind in codec.HEAD_KINDS:
            response = self._call("query", **self._shard_query(kind, stream, after, limit))
            items += response.get("Items", [])
            more = more or bool(response.get("LastEvaluatedKey"))
        items.sort(key=lambda item: item[PARTITION_KEY]["S"])
        heads = [codec.head_from_item(item) for item in items[:limit]]
        return HeadPage(heads, more=more or len(items) > limit)

    def _shard_query(
        self, kind: str, stream: str | None, after: LineageId | None, limit: int
    ) -> dict[str, Any]:
        condition = "#kind = :head"
        values: dict[str, Any] = {":head": {"S": kind}}
        if stream is not None:
            condition += " AND begins_with(#pk, :prefix)"
            values[":prefix"] = {"S": f"LIN#{stream}#"}
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": KIND_INDEX,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#kind": KIND_ATTRIBUTE}
            | ({"#pk": PARTITION_KEY} if stream is not None else {}),
            "ExpressionAttributeValues": values,
            "Limit": limit,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {
                KIND_ATTRIBUTE: {"S": kind},
                **codec.key(codec.lineage_pk(after), codec.HEAD_SK),
            }
        return request

    def load_checkpoint(self) -> GcCheckpoint | None:
        response = self._call(
            "get_item",
            TableName=self.table_name,
            Key=codec.key(CHECKPOINT_PK, CHECKPOINT_SK),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return GcCheckpoint.model_validate(codec.plain(item)) if item else None

    def save_checkpoint(self, checkpoint: GcCheckpoint, *, read_version: int | None) -> bool:
        """Write ``checkpoint`` if the stored one is still ``read_version`` (None: absent)."""
        item = codec.to_item(CHECKPOINT_PK, CHECKPOINT_SK, checkpoint)
        return self._conditional(
            "put_item", writes.put(self.table_name, item, writes.expecting(read_version))
        )

    def clear_checkpoint(self, *, read_version: int) -> bool:
        """Delete the checkpoint if it is still ``read_version``: the next run starts over."""
        key = codec.key(CHECKPOINT_PK, CHECKPOINT_SK)
        return self._conditional(
            "delete_item", writes.delete(self.table_name, key, writes.AtVersion(read_version))
        )

    def _conditional(self, operation: str, request: dict[str, Any]) -> bool:
        try:
            writes.write(self.client, operation, request, what="GC's checkpoint")
        except writes.PreconditionFailed:
            return False
        return True

    def _call(self, operation: str, **kwargs: Any) -> Any:
        return writes.read(
            getattr(self.client, operation), what="a read of the lineages' index", **kwargs
        )
