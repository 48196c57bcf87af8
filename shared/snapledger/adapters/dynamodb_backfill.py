"""Give items written before an index key changed their keys (one-off, after an upgrade).

**Lookup keys.**
Every SNAP item written since carries ``kind`` (found by id through ``by_kind``) and, while
REGISTERED, ``registered_sk`` (found as of an LSN or a time through ``registered``):
``dynamodb_codec.snapshot_lookup_keys``. Older items lack them, so the lookups would not
see them until a command rewrote them. This pass scans the table's SNAP items once and
adds the missing keys. It is idempotent (an item that has its keys is skipped) and safe
beside live traffic: each update is conditioned on the item's ``version`` and ``status``
being the ones read, and an item a command rewrote meanwhile already has its keys.

**HEAD shards.** HEAD items written before the ``by_kind`` key was sharded carry
``kind = "HEAD"``; ``backfill_head_kinds`` moves each to its shard (``HEAD#{n}``), on the
same kind of precondition (``version`` and the legacy ``kind`` as read). Readers query the
legacy key too, so the lineage walk is complete before, during and after this pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.table_definition import (
    KIND_ATTRIBUTE,
    KIND_INDEX,
    REGISTERED_SK_ATTRIBUTE,
    SORT_KEY,
)
from snapledger.errors import StoreUnavailableError
from snapledger.models.ledger import SnapshotStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# SNAP items missing a key they should carry: ``kind`` always, ``registered_sk`` while
# REGISTERED.
_MISSING_KEYS = (
    "begins_with(#sk, :snap) AND (attribute_not_exists(#kind) OR "
    "(#status = :registered AND attribute_not_exists(#rsk)))"
)
_NAMES = {
    "#sk": SORT_KEY,
    "#kind": KIND_ATTRIBUTE,
    "#rsk": REGISTERED_SK_ATTRIBUTE,
    "#status": "status",
}


@dataclass(frozen=True)
class BackfillReport:
    updated: int
    skipped_changed: int  # rewritten by a command since the scan read it: has its keys


def backfill_lookup_keys(client: DynamoDBClient, table_name: str) -> BackfillReport:
    """Add the lookup keys to every SNAP item of ``table_name`` that lacks them."""
    request: dict[str, Any] = {
        "TableName": table_name,
        "FilterExpression": _MISSING_KEYS,
        "ExpressionAttributeNames": _NAMES,
        "ExpressionAttributeValues": {
            ":snap": {"S": codec.SNAP_PREFIX},
            ":registered": {"S": SnapshotStatus.REGISTERED.value},
        },
    }
    return _update_each(client, "scan", request, _add_keys)


def _add_keys(client: DynamoDBClient, table_name: str, item: dict[str, Any]) -> bool:
    record = codec.snapshot_from_item(item)
    keys = codec.snapshot_lookup_keys(record)
    names = {f"#k{i}": name for i, name in enumerate(keys)}
    values = {f":k{i}": value for i, value in enumerate(keys.values())}
    try:
        client.update_item(
            TableName=table_name,
            Key=codec.key(item["pk"]["S"], item[SORT_KEY]["S"]),
            UpdateExpression="SET " + ", ".join(f"#k{i} = :k{i}" for i in range(len(keys))),
            # Precondition: the item is still the one read (a command rewriting it since
            # wrote its keys with it).
            ConditionExpression="#version = :version AND #status = :status",
            ExpressionAttributeNames={**names, "#version": "version", "#status": "status"},
            ExpressionAttributeValues={
                **values,
                ":version": {"N": str(record.version)},
                ":status": {"S": record.status.value},
            },
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise StoreUnavailableError(f"could not update {item[SORT_KEY]['S']}: {exc}") from exc
    return True


def backfill_head_kinds(client: DynamoDBClient, table_name: str) -> BackfillReport:
    """Move every HEAD item still under the unsharded ``kind = "HEAD"`` to its shard."""
    request: dict[str, Any] = {
        "TableName": table_name,
        "IndexName": KIND_INDEX,
        "KeyConditionExpression": "#kind = :legacy",
        "ExpressionAttributeNames": {"#kind": KIND_ATTRIBUTE},
        "ExpressionAttributeValues": {":legacy": {"S": codec.LEGACY_HEAD_KIND}},
    }
    return _update_each(client, "query", request, _move_head)


def _update_each(
    client: DynamoDBClient,
    read: str,
    request: dict[str, Any],
    update: Callable[[DynamoDBClient, str, dict[str, Any]], bool],
) -> BackfillReport:
    """``update`` every item the paged ``read`` (scan or query) of ``request`` returns."""
    table_name = request["TableName"]
    updated = skipped = 0
    while True:
        try:
            response = getattr(client, read)(**request)
        except ClientError as exc:
            raise StoreUnavailableError(f"could not {read} {table_name!r}: {exc}") from exc
        for item in response.get("Items", []):
            if update(client, table_name, item):
                updated += 1
            else:
                skipped += 1
        last = response.get("LastEvaluatedKey")
        if not last:
            return BackfillReport(updated=updated, skipped_changed=skipped)
        request["ExclusiveStartKey"] = last


def _move_head(client: DynamoDBClient, table_name: str, item: dict[str, Any]) -> bool:
    head = codec.head_from_item(item)
    try:
        client.update_item(
            TableName=table_name,
            Key=codec.key(item["pk"]["S"], item[SORT_KEY]["S"]),
            UpdateExpression="SET #kind = :shard",
            # Precondition: still the HEAD read, still unsharded (a command rewriting it
            # since wrote its shard with it).
            ConditionExpression="#version = :version AND #kind = :legacy",
            ExpressionAttributeNames={"#kind": KIND_ATTRIBUTE, "#version": "version"},
            ExpressionAttributeValues={
                ":shard": {"S": codec.head_kind(head.lineage)},
                ":legacy": {"S": codec.LEGACY_HEAD_KIND},
                ":version": {"N": str(head.version)},
            },
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise StoreUnavailableError(f"could not update {item['pk']['S']} HEAD: {exc}") from exc
    return True
