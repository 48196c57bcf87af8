"""Queries: latest in one read, paginated lists and history, point-in-time look-ups."""

from __future__ import annotations

from datetime import timedelta

import pytest

from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.models.ledger import LineageId
from snapledger.services import queries
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)


@pytest.fixture
def registered(ledger, store, clock):
    """Snapshots at LSN 100..500 registered an hour apart, plus one rejected at 600."""
    ids = {}
    for lsn in (100, 200, 300, 400, 500):
        key = write_snapshot(store, lsn=lsn)
        ids[lsn] = register_manifest(
            key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
        ).snapshot_id
        clock.advance(timedelta(hours=1))
    bad = write_snapshot(store, lsn=600, files={"a": b"1"}, manifest=b"[]")
    register_manifest(bad, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    return ids


def test_latest_is_one_read(ledger, registered):
    calls = []
    ledger.client.meta.events.register(
        "before-call.dynamodb", lambda **kw: calls.append(kw["model"].name)
    )
    head = queries.latest(ledger, ORDERS_3)
    assert (head.latest_lsn, head.latest_snapshot_id) == (500, registered[500])
    assert calls == ["GetItem"]


def test_latest_of_an_unknown_lineage_says_what_to_do(ledger):
    with pytest.raises(NotFoundError, match="has no registered snapshot yet"):
        queries.latest(ledger, LineageId(stream="nope", partition=0))


def test_list_pages_through_every_snapshot_newest_first(ledger, registered):
    seen, cursor = [], None
    while True:
        page = queries.list_snapshots(ledger, ORDERS_3, limit=2, cursor=cursor)
        assert len(page.items) <= 2
        seen += [s.lsn for s in page.items]
        if page.cursor is None:
            break
        cursor = page.cursor
    assert seen == [600, 500, 400, 300, 200, 100]


def test_history_is_every_event_in_order(ledger, registered):
    first = queries.history(ledger, ORDERS_3, limit=4)
    rest = queries.history(ledger, ORDERS_3, limit=100, cursor=first.cursor)
    events = first.items + rest.items
    assert [e.seq for e in events] == list(range(1, 12))
    assert [e.type for e in events][:2] == ["SnapshotRegistered", "LatestAdvanced"]
    assert events[-1].type == "SnapshotRejected"
    assert [e.seq for e in queries.history(ledger, ORDERS_3, after_seq=9).items] == [10, 11]


def test_a_bad_cursor_is_a_validation_error(ledger, registered):
    with pytest.raises(InvalidRequestError, match="cursor"):
        queries.history(ledger, ORDERS_3, cursor="not-a-cursor!!")


def test_as_of_lsn_picks_the_newest_registered_at_or_below(ledger, registered):
    assert queries.as_of_lsn(ledger, ORDERS_3, 350).lsn == 300
    assert queries.as_of_lsn(ledger, ORDERS_3, 300).lsn == 300
    assert queries.as_of_lsn(ledger, ORDERS_3, 10**9).lsn == 500  # skips the rejected 600
    with pytest.raises(NotFoundError, match="at or below LSN 99"):
        queries.as_of_lsn(ledger, ORDERS_3, 99)


def test_as_of_time_uses_registry_time(ledger, registered, clock):
    start = clock.now() - timedelta(hours=5)  # when LSN 100 was registered
    assert queries.as_of_time(ledger, ORDERS_3, start + timedelta(minutes=90)).lsn == 200
    with pytest.raises(NotFoundError):
        queries.as_of_time(ledger, ORDERS_3, start - timedelta(seconds=1))


def test_by_id(ledger, registered):
    assert queries.by_id(ledger, ORDERS_3, registered[300]).lsn == 300


def test_readers_skip_what_a_newer_version_added(ledger, registered):
    # Given an event type and a HEAD field this version does not know
    pk = {"S": "LIN#orders#3"}
    ledger.client.put_item(
        TableName=ledger.table_name,
        Item={
            "pk": pk,
            "sk": {"S": "EV#000000000012"},
            "type": {"S": "FutureEvent"},
            "seq": {"N": "12"},
        },
    )
    ledger.client.update_item(
        TableName=ledger.table_name,
        Key={"pk": pk, "sk": {"S": "HEAD"}},
        UpdateExpression="SET future_field = :v",
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    # Then history skips the event and HEAD still reads
    assert [e.seq for e in queries.history(ledger, ORDERS_3, after_seq=10).items] == [11]
    assert queries.latest(ledger, ORDERS_3).latest_lsn == 500
