"""The lineage walk over the sharded HEAD index key, before and after the backfill (moto)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_backfill import _move_head, backfill_head_kinds
from snapledger.adapters.dynamodb_lineages import DynamoLineageIndex
from snapledger.adapters.table_definition import KIND_ATTRIBUTE, KIND_INDEX
from snapledger.models.ledger import Head, LineageId
from tests.support import moto_ledger

STREAMS = ("orders", "payments", "users")
PARTITIONS = 14


@pytest.fixture
def ledger():
    with moto_ledger() as moto:
        yield moto


def put_heads(ledger, *, legacy: bool = False) -> list[LineageId]:
    """A HEAD per lineage, as a command writes it (or as releases before the shards did)."""
    lineages = [LineageId(stream=s, partition=p) for s in STREAMS for p in range(PARTITIONS)]
    at = datetime(2026, 1, 1, tzinfo=UTC)
    for lineage in lineages:
        head = Head(stream=lineage.stream, partition=lineage.partition, version=3, updated_at=at)
        item = codec.head_item(head)
        if legacy:
            item[KIND_ATTRIBUTE] = {"S": codec.LEGACY_HEAD_KIND}
        ledger.client.put_item(TableName=ledger.table_name, Item=item)
    return sorted(lineages, key=codec.lineage_pk)


def walk(index: DynamoLineageIndex, *, stream: str | None = None, limit: int) -> list[LineageId]:
    seen: list[LineageId] = []
    after = None
    while True:
        page = index.list_heads(stream=stream, after=after, limit=limit)
        seen += [h.lineage for h in page.heads]
        if not page.more:
            return seen
        after = seen[-1]


def kinds(ledger) -> Counter[str]:
    items = ledger.client.scan(TableName=ledger.table_name)["Items"]
    return Counter(i[KIND_ATTRIBUTE]["S"] for i in items if i["sk"]["S"] == codec.HEAD_SK)


def test_heads_spread_over_the_shards_and_a_lineage_stays_on_one():
    lineage = LineageId(stream="orders", partition=3)
    assert codec.head_kind(lineage) == codec.head_kind(lineage.model_copy())
    shards = Counter(codec.head_kind(LineageId(stream="orders", partition=p)) for p in range(1_000))
    assert set(shards) == set(codec.HEAD_KINDS) - {codec.LEGACY_HEAD_KIND}
    assert max(shards.values()) < 2 * 1_000 / codec.HEAD_KIND_SHARDS


@pytest.mark.parametrize("limit", [1, 5, 100])
def test_the_walk_merges_the_shards_in_lineage_order(ledger, limit):
    # Given 42 lineages' HEADs, spread over the shards
    lineages = put_heads(ledger)
    assert len(kinds(ledger)) > 1
    index = DynamoLineageIndex(ledger.table_name, client=ledger.client)
    # When GC walks them a page at a time, Then it sees each once, in pk order
    assert walk(index, limit=limit) == lineages
    # and one stream's walk sees that stream's only
    assert walk(index, stream="payments", limit=limit) == [
        lineage for lineage in lineages if lineage.stream == "payments"
    ]


def test_one_page_is_a_query_per_shard_and_one_of_the_unsharded_key(ledger):
    put_heads(ledger)
    index = DynamoLineageIndex(ledger.table_name, client=ledger.client)
    queries = []
    ledger.client.meta.events.register("before-call.dynamodb.Query", lambda **kw: queries.append(1))
    index.list_heads(limit=1000)
    assert len(queries) == codec.HEAD_KIND_SHARDS + 1


def test_unsharded_heads_are_walked_before_the_backfill_and_moved_by_it(ledger):
    # Given HEADs written before the sharding (kind = "HEAD")
    lineages = put_heads(ledger, legacy=True)
    index = DynamoLineageIndex(ledger.table_name, client=ledger.client)
    # Then the walk sees them all
    assert walk(index, limit=10) == lineages
    # When the backfill runs
    report = backfill_head_kinds(ledger.client, ledger.table_name)
    # Then every HEAD is on its shard, none on the unsharded key, and the walk is the same
    assert report.updated == len(lineages)
    assert kinds(ledger)[codec.LEGACY_HEAD_KIND] == 0
    for lineage in lineages:
        item = ledger.client.get_item(
            TableName=ledger.table_name, Key=codec.key(codec.lineage_pk(lineage), codec.HEAD_SK)
        )["Item"]
        assert item[KIND_ATTRIBUTE]["S"] == codec.head_kind(lineage)
    assert walk(index, limit=10) == lineages
    # and running it again changes nothing
    assert backfill_head_kinds(ledger.client, ledger.table_name).updated == 0


def test_the_backfill_leaves_a_head_a_command_rewrote_meanwhile(ledger):
    # Given an unsharded HEAD read by the backfill, then rewritten by a command (version 4)
    (lineage, *_) = put_heads(ledger, legacy=True)
    pk = codec.lineage_pk(lineage)
    old = ledger.client.query(
        TableName=ledger.table_name,
        IndexName=KIND_INDEX,
        KeyConditionExpression="#k = :k AND pk = :pk",
        ExpressionAttributeNames={"#k": KIND_ATTRIBUTE},
        ExpressionAttributeValues={":k": {"S": codec.LEGACY_HEAD_KIND}, ":pk": {"S": pk}},
    )["Items"][0]
    newer = codec.head_from_item(old).model_copy(update={"version": 4})
    ledger.client.put_item(TableName=ledger.table_name, Item=codec.head_item(newer))
    # When the backfill moves what it read, Then its precondition refuses the stale copy
    assert _move_head(ledger.client, ledger.table_name, old) is False
    item = ledger.client.get_item(TableName=ledger.table_name, Key=codec.key(pk, codec.HEAD_SK))[
        "Item"
    ]
    assert item["version"]["N"] == "4"
    assert item[KIND_ATTRIBUTE]["S"] == codec.head_kind(lineage)
