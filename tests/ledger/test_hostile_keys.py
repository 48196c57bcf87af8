"""Issue 27 row 9 on the engine itself (moto and DynamoDB Local): a query cursor snapledger
did not give for that query is refused as "not a cursor this query gave" before DynamoDB
sees it, and a manifest key too long for a sort key is recorded once, under its hash."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_cursors as cursors
from snapledger.adapters.dynamodb_jobs import JOBS_CURSOR, DynamoJobStore
from snapledger.errors import InvalidRequestError
from snapledger.limits import MAX_CURSOR_CHARS, MAX_SORT_KEY_BYTES
from snapledger.models.ledger import LineageId
from snapledger.services import queries
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)
ORDERS_4 = LineageId(stream="orders", partition=4)
NOT_OURS = "not a cursor this query gave"
AT = datetime(2026, 11, 26, tzinfo=UTC)


def b64(document: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode()


def bound(scope: cursors.CursorScope, key: dict[str, object]) -> str:
    """A cursor carrying ``scope``'s digest (anyone can compute it) and any key."""
    return b64({"q": scope.digest(), "k": key})


def list_scope(lineage: LineageId) -> cursors.CursorScope:
    """What ``list_snapshots`` (newest first) binds its cursors to, taken from a page."""
    from snapledger.adapters.dynamodb_log import _cursor_scope

    upper = {"S": codec.SNAP_PREFIX + "\uffff"}
    values = {":lo": {"S": codec.SNAP_PREFIX}, ":hi": upper}
    return _cursor_scope(codec.lineage_pk(lineage), values, forward=False, index=None)


@pytest.fixture
def two_lineages(ledger, store, clock):
    for lineage in (ORDERS_3, ORDERS_4):
        for lsn in (100, 200, 300):
            key = write_snapshot(store, lineage.stream, lineage.partition, lsn)
            register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)


PK3 = codec.lineage_pk(ORDERS_3)
CRAFTED = {
    # the shape cursors had before: a DynamoDB key in its wire format
    "wire key": b64({"pk": {"S": PK3}, "sk": {"S": "SNAP#1"}}),
    "not a key": b64({"a": 1}),
    "empty object": b64({}),
    "a list": b64([1, 2]),
    "a number": b64(12),
    "wrong digest": b64({"q": "0" * 32, "k": {"pk": PK3, "sk": "SNAP#1"}}),
    "extra field": b64({"q": "x", "k": {}, "more": 1}),
    "nested very deep": base64.urlsafe_b64encode(b"[" * 5000 + b"]" * 5000).decode(),
    "not base64": "not-a-cursor!!",
    "not UTF-8": base64.urlsafe_b64encode(b"\xff\xfe{}").decode(),
    "unicode text": "курсор✓",
    "over the length bound": "A" * (MAX_CURSOR_CHARS + 4),
}


@pytest.mark.parametrize("cursor", CRAFTED.values(), ids=CRAFTED.keys())
def test_a_crafted_cursor_is_refused_not_raised(ledger, two_lineages, cursor):
    for ask in (
        lambda: queries.list_snapshots(ledger, ORDERS_3, limit=1, cursor=cursor),
        lambda: queries.history(ledger, ORDERS_3, limit=1, cursor=cursor),
        lambda: ledger.list_live(ORDERS_3, limit=1, cursor=cursor),
        lambda: DynamoJobStore(ledger.table_name, ledger.client).list_jobs(cursor=cursor),
    ):
        with pytest.raises(InvalidRequestError, match=NOT_OURS):
            ask()


def test_a_cursor_bound_to_the_query_with_a_hostile_key_is_refused(ledger, two_lineages):
    scope = list_scope(ORDERS_3)
    ok = {"pk": PK3, "sk": "SNAP#00000000000000000200#x"}
    assert queries.list_snapshots(ledger, ORDERS_3, limit=5, cursor=bound(scope, ok)).items
    hostile = [
        {**ok, "pk": codec.lineage_pk(ORDERS_4)},  # another partition
        {**ok, "sk": "EV#000000000001"},  # outside the key condition's range
        {**ok, "sk": ""},  # DynamoDB refuses an empty key
        {**ok, "sk": 200},  # not a string
        {**ok, "sk": "\ud800"},  # a lone surrogate: not UTF-8
        {**ok, "sk": "SNAP#" + "x" * MAX_SORT_KEY_BYTES},  # past a key's bytes
        {**ok, "registered_sk": "SNAP#1"},  # not this table's key
        {"pk": PK3},  # a key attribute missing
    ]
    for key in hostile:
        with pytest.raises(InvalidRequestError, match=NOT_OURS):
            queries.list_snapshots(ledger, ORDERS_3, limit=5, cursor=bound(scope, key))


def test_a_cursor_of_another_query_is_refused(ledger, two_lineages):
    # Given a real cursor of orders/4's listing, and one of orders/3's
    other = queries.list_snapshots(ledger, ORDERS_4, limit=1).cursor
    mine = queries.list_snapshots(ledger, ORDERS_3, limit=1).cursor
    history = queries.history(ledger, ORDERS_3, limit=1).cursor
    assert other and mine and history
    # Then orders/3's listing refuses orders/4's, the history refuses the listing's, and
    # the same history from another point refuses it too
    with pytest.raises(InvalidRequestError, match=NOT_OURS):
        queries.list_snapshots(ledger, ORDERS_3, limit=1, cursor=other)
    with pytest.raises(InvalidRequestError, match=NOT_OURS):
        queries.history(ledger, ORDERS_3, limit=1, cursor=mine)
    with pytest.raises(InvalidRequestError, match=NOT_OURS):
        queries.history(ledger, ORDERS_3, after_seq=5, cursor=history)
    with pytest.raises(InvalidRequestError, match=NOT_OURS):
        queries.list_snapshots(ledger, ORDERS_3, newest_first=False, limit=1, cursor=mine)
    # while its own cursor still pages on
    rest = queries.list_snapshots(ledger, ORDERS_3, limit=10, cursor=mine)
    assert [s.lsn for s in rest.items] == [200, 100]


def test_a_jobs_cursor_outside_the_jobs_is_refused(ledger):
    jobs = DynamoJobStore(ledger.table_name, ledger.client)
    for key in (
        {"kind": "HEAD", "pk": "JOB#a", "sk": "JOB"},
        {"kind": "JOB", "pk": PK3, "sk": "HEAD"},
    ):
        with pytest.raises(InvalidRequestError, match=NOT_OURS):
            jobs.list_jobs(cursor=bound(JOBS_CURSOR, key))
    fine = {"kind": "JOB", "pk": "JOB#a", "sk": "JOB"}
    assert jobs.list_jobs(cursor=bound(JOBS_CURSOR, fine)).items == []


def unplaceable(ledger, key: str) -> dict[str, object] | None:
    response = ledger.client.get_item(
        TableName=ledger.table_name,
        Key=codec.key(codec.UNPLACEABLE_PK, codec.unplaceable_sk(key)),
        ConsistentRead=True,
    )
    return response.get("Item")


def key_of(n_bytes: int, filler: str = "x") -> str:
    """A manifest key naming no lineage, ``n_bytes`` long in UTF-8."""
    head, tail = "snapshots/", "/_manifest.json"
    width = len(filler.encode())
    room = n_bytes - len(head) - len(tail)
    return head + filler * (room // width) + "y" * (room % width) + tail


@pytest.mark.parametrize(
    "key",
    [key_of(1020), key_of(1021), key_of(1024), key_of(1024, "é"), key_of(1023, "✓"), key_of(4000)],
    ids=["1020", "1021", "1024", "1024-2-byte", "1023-3-byte", "4000"],
)
def test_an_unplaceable_key_of_any_length_is_recorded_once(ledger, key):
    # When a manifest at a key naming no lineage is recorded, and redelivered
    first = ledger.record_unplaceable_manifest(key, "names no lineage", AT)
    again = ledger.record_unplaceable_manifest(key, "names no lineage", AT)
    # Then it is recorded once, under a sort key DynamoDB holds, with the whole key
    assert (first, again) == (True, False)
    item = unplaceable(ledger, key)
    assert item is not None and item["manifest_key"]["S"] == key
    sort_key = item["sk"]["S"]
    assert len(sort_key.encode()) <= MAX_SORT_KEY_BYTES
    verbatim = len(("KEY#" + key).encode()) <= MAX_SORT_KEY_BYTES
    assert (sort_key == "KEY#" + key) is verbatim
    assert verbatim or sort_key.startswith("KEY#sha256:")


def test_two_long_keys_sharing_a_long_prefix_are_two_records(ledger):
    one, two = key_of(1100) + "1", key_of(1100) + "2"
    assert ledger.record_unplaceable_manifest(one, "r", AT)
    assert ledger.record_unplaceable_manifest(two, "r", AT)
    assert unplaceable(ledger, one)["manifest_key"]["S"] == one
    assert unplaceable(ledger, two)["manifest_key"]["S"] == two
