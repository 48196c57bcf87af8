"""Bring items an older release wrote to the current shape (one-off, after an upgrade).

What an older release did not write:

- a SNAP item's index keys (``dynamodb_codec.snapshot_lookup_keys``): ``kind`` (found by
  id through ``by_kind``) and ``registered_sk`` (REGISTERED: as of an LSN or a time;
  EXPIRING and REJECTED: read by GC's planning, through ``registered``);
- the TTL (``ttl``) of terminal items: DELETED and REJECTED snapshot records, events,
  finished jobs and their run-id pointers (``dynamodb_codec.*_expires``).

Until this has run, the lookups and GC do not see such records (GC then leaves their
files alone: an unknown prefix is claimed only if no record exists) and the terminal ones
never expire. This pass scans the table once and adds what is missing. It is idempotent
(an item that has it is skipped) and safe beside live traffic: each update is conditioned
on the item being the one read (its ``version`` and ``status``; an event, which never
changes, on existing), and an item a command rewrote meanwhile already has it.

**HEAD shards.** HEAD items written before the ``by_kind`` key was sharded carry
``kind = "HEAD"``; ``backfill_head_kinds`` moves each to its shard (``HEAD#{n}``), on the
same kind of precondition (``version`` and the legacy ``kind`` as read). Readers query the
legacy key too, so the lineage walk is complete before, during and after this pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.dynamodb_jobs import JOB_SK, RUN_PREFIX, run_pk
from snapledger.adapters.table_definition import (
    KIND_ATTRIBUTE,
    KIND_INDEX,
    PARTITION_KEY,
    REGISTERED_SK_ATTRIBUTE,
    SORT_KEY,
    TTL_ATTRIBUTE,
)
from snapledger.models.jobs import JobRecord

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Items that may lack something: SNAP items without a key or a TTL, events and JOB items
# without a TTL. Which keys a SNAP item should carry depends on its status: decided in
# Python from the record (a REJECTED one with an endless hold has no TTL, for instance).
_CANDIDATES = (
    "(begins_with(#sk, :snap) AND (attribute_not_exists(#kind) OR "
    "attribute_not_exists(#rsk) OR attribute_not_exists(#ttl))) OR "
    "((begins_with(#sk, :ev) OR #sk = :job) AND attribute_not_exists(#ttl))"
)
_NAMES = {
    "#sk": SORT_KEY,
    "#kind": KIND_ATTRIBUTE,
    "#rsk": REGISTERED_SK_ATTRIBUTE,
    "#ttl": TTL_ATTRIBUTE,
}


@dataclass(frozen=True)
class BackfillReport:
    updated: int
    skipped_changed: int  # rewritten by a command since the scan read it: has its keys


def backfill_items(
    client: DynamoDBClient,
    table_name: str,
    *,
    ttl_window: timedelta | None = codec.DEFAULT_TTL_WINDOW,
) -> BackfillReport:
    """Add the index keys and TTLs that items of ``table_name`` lack."""
    request: dict[str, Any] = {
        "TableName": table_name,
        "FilterExpression": _CANDIDATES,
        "ExpressionAttributeNames": _NAMES,
        "ExpressionAttributeValues": {
            ":snap": {"S": codec.SNAP_PREFIX},
            ":ev": {"S": codec.EVENT_PREFIX},
            ":job": {"S": JOB_SK},
        },
    }
    updates = (u for item in _items(client, "scan", request) for u in _updates(item, ttl_window))
    return _apply_all(client, table_name, updates)


def backfill_head_kinds(client: DynamoDBClient, table_name: str) -> BackfillReport:
    """Move every HEAD item still under the unsharded ``kind = "HEAD"`` to its shard."""
    request: dict[str, Any] = {
        "TableName": table_name,
        "IndexName": KIND_INDEX,
        "KeyConditionExpression": "#kind = :legacy",
        "ExpressionAttributeNames": {"#kind": KIND_ATTRIBUTE},
        "ExpressionAttributeValues": {":legacy": {"S": codec.LEGACY_HEAD_KIND}},
    }
    updates = (_to_shard(item) for item in _items(client, "query", request))
    return _apply_all(client, table_name, updates)


@dataclass(frozen=True)
class _Update:
    key: dict[str, Any]
    values: dict[str, Any]  # attribute -> value to SET
    condition: str
    names: dict[str, str]
    condition_values: dict[str, Any]


def _updates(item: dict[str, Any], window: timedelta | None) -> list[_Update]:
    """What ``item`` lacks, as conditional updates (none: it has it all)."""
    sk = item[SORT_KEY]["S"]
    key = codec.key(item[PARTITION_KEY]["S"], sk)
    if sk.startswith(codec.SNAP_PREFIX):
        record = codec.snapshot_from_item(item)
        wanted = dict(codec.snapshot_lookup_keys(record))
        expires = codec.snapshot_expires(record, window)
        if expires is not None:
            wanted[TTL_ATTRIBUTE] = codec.ttl_value(expires)
        return _if_still(key, _missing(item, wanted), record.version, record.status.value)
    if sk.startswith(codec.EVENT_PREFIX):
        # From ``at`` alone: an event of a type this release does not know expires too.
        expires = None if window is None else datetime.fromisoformat(item["at"]["S"]) + window
        if expires is None:
            return []
        # Events never change: existing is the whole precondition.
        values = {TTL_ATTRIBUTE: codec.ttl_value(expires)}
        return [_Update(key, values, "attribute_exists(#sk)", {"#sk": SORT_KEY}, {})]
    if item[PARTITION_KEY]["S"].startswith(RUN_PREFIX):
        return []  # a run-id pointer: given its TTL with its job's
    job = JobRecord.model_validate(codec.plain(item))
    expires = codec.job_expires(job, window)
    if expires is None:
        return []
    ttl = {TTL_ATTRIBUTE: codec.ttl_value(expires)}
    updates = _if_still(key, ttl, job.version, job.state.value, status_name="state")
    if job.run_id:  # its pointer, if it still names this job
        updates.append(
            _Update(
                codec.key(run_pk(job.run_id), JOB_SK),
                ttl,
                "#job = :job",
                {"#job": "job_id"},
                {":job": {"S": job.job_id}},
            )
        )
    return updates


def _missing(item: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in wanted.items() if name not in item}


def _if_still(
    key: dict[str, Any],
    values: dict[str, Any],
    version: int,
    status: str,
    *,
    status_name: str = "status",
) -> list[_Update]:
    if not values:
        return []
    return [
        _Update(
            key,
            values,
            # Precondition: the item is still the one read (a command rewriting it since
            # wrote what it needs with it).
            "#version = :version AND #status = :status",
            {"#version": "version", "#status": status_name},
            {":version": {"N": str(version)}, ":status": {"S": status}},
        )
    ]


def _to_shard(item: dict[str, Any]) -> _Update:
    head = codec.head_from_item(item)
    return _Update(
        codec.key(item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]),
        {KIND_ATTRIBUTE: {"S": codec.head_kind(head.lineage)}},
        # Precondition: still the HEAD read, still unsharded (a command rewriting it since
        # wrote its shard with it).
        "#version = :version AND #kind = :legacy",
        {"#version": "version", "#kind": KIND_ATTRIBUTE},
        {":version": {"N": str(head.version)}, ":legacy": {"S": codec.LEGACY_HEAD_KIND}},
    )


def _items(client: DynamoDBClient, read: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item the paged ``read`` (scan or query) of ``request`` returns."""
    what = f"the backfill's {read} of {request['TableName']!r}"
    while True:
        response = writes.read(getattr(client, read), what=what, **request)
        yield from response.get("Items", [])
        last = response.get("LastEvaluatedKey")
        if not last:
            return
        request["ExclusiveStartKey"] = last


def _apply_all(
    client: DynamoDBClient, table_name: str, updates: Iterator[_Update]
) -> BackfillReport:
    updated = skipped = 0
    for update in updates:
        if _apply(client, table_name, update):
            updated += 1
        else:
            skipped += 1
    return BackfillReport(updated=updated, skipped_changed=skipped)


def _apply(client: DynamoDBClient, table_name: str, update: _Update) -> bool:
    names = {f"#k{i}": name for i, name in enumerate(update.values)}
    values = {f":k{i}": value for i, value in enumerate(update.values.values())}
    precondition = writes.Matches(
        update.condition, {**names, **update.names}, {**values, **update.condition_values}
    )
    request = {
        "TableName": table_name,
        "Key": update.key,
        "UpdateExpression": "SET "
        + ", ".join(f"{n} = {v}" for n, v in zip(names, values, strict=True)),
        **writes.condition(precondition),
    }
    try:
        writes.write(client, "update_item", request, what=f"the backfill of {update.key}")
    except writes.PreconditionFailed:
        return False
    return True
