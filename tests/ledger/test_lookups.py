"""Every lookup is one request at any history length (issue 14): by id, as of an LSN, as
of a time, latest. Requests are counted on the client with botocore's ``before-call``
hook, on moto and on DynamoDB Local."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_backfill import backfill_items
from snapledger.errors import NotFoundError
from snapledger.models.gc_commands import ExpireSnapshots, ExpiryTarget
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from snapledger.services import queries
from snapledger.services.commands import execute
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import long_history, moto_ledger, write_history, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)
REGISTERED, DELETED = SnapshotStatus.REGISTERED, SnapshotStatus.DELETED
REJECTED, EXPIRING = SnapshotStatus.REJECTED, SnapshotStatus.EXPIRING


def counted(ledger, lookup, *args):
    """``lookup(ledger, ORDERS_3, *args)``'s answer (or error) and the requests it made."""
    calls: list[str] = []

    def count(model, **_):
        calls.append(model.name)

    ledger.client.meta.events.register("before-call.dynamodb", count)
    try:
        try:
            return lookup(ledger, ORDERS_3, *args), calls
        except NotFoundError as exc:
            return exc, calls
    finally:
        ledger.client.meta.events.unregister("before-call.dynamodb", count)


@pytest.mark.parametrize("length", [10, 5_000])
def test_every_lookup_is_one_request_at_any_history_length(ledger, clock, length):
    statuses = long_history(length)
    records = write_history(ledger, "orders", 3, statuses, clock.now())
    by_lsn = {r.lsn: r for r in records}
    registered = [r for r in records if r.status is REGISTERED]
    top, oldest_live = registered[-1], registered[0]
    deleted = next(r for r in records if r.status is DELETED)

    # by id: any status, one Query of by_kind
    for record in (top, deleted, next(r for r in records if r.status is REJECTED)):
        answer, calls = counted(ledger, queries.by_id, record.snapshot_id)
        assert answer == record and calls == ["Query"]
    answer, calls = counted(ledger, queries.by_id, "01NOSUCHSNAPSHOT0000000000")
    assert isinstance(answer, NotFoundError) and calls == ["Query"]

    # as of an LSN: the newest REGISTERED at or below, skipping EXPIRING / REJECTED
    answer, calls = counted(ledger, queries.as_of_lsn, top.lsn + 100)
    assert answer == top and calls == ["Query"]
    below_rejected = max(r.lsn for r in registered if r.lsn < length - 2)
    answer, calls = counted(ledger, queries.as_of_lsn, length - 2)  # the REJECTED one
    assert answer == by_lsn[below_rejected] and calls == ["Query"]
    answer, calls = counted(ledger, queries.as_of_lsn, oldest_live.lsn - 1)  # all history
    assert isinstance(answer, NotFoundError) and calls == ["Query"]

    # as of a time: the highest-LSN REGISTERED recorded by then
    answer, calls = counted(ledger, queries.as_of_time, oldest_live.registered_at)
    assert answer == oldest_live and calls == ["Query"]
    answer, calls = counted(ledger, queries.as_of_time, top.registered_at - timedelta(seconds=1))
    assert answer == registered[-2] and calls == ["Query"]
    answer, calls = counted(
        ledger, queries.as_of_time, oldest_live.registered_at - timedelta(seconds=1)
    )
    assert isinstance(answer, NotFoundError) and calls == ["Query"]

    # latest: HEAD
    answer, calls = counted(ledger, queries.latest)
    assert answer.latest_snapshot_id == top.snapshot_id and calls == ["GetItem"]


def test_the_indexes_follow_what_commands_do(ledger, store, clock):
    """Registration puts a snapshot in the REGISTERED index; expiry takes it out (the SNAP
    item's own Put carries its keys: no extra item in the transaction)."""
    ids = {}
    for lsn in (100, 200, 300, 400):
        key = write_snapshot(store, lsn=lsn)
        ids[lsn] = register_manifest(
            key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
        ).snapshot_id
        clock.advance(timedelta(hours=1))
    start = clock.now() - timedelta(hours=4)
    assert queries.as_of_lsn(ledger, ORDERS_3, 250).snapshot_id == ids[200]
    assert queries.as_of_time(ledger, ORDERS_3, start + timedelta(minutes=90)).lsn == 200

    clock.advance(timedelta(days=3))
    targets = [queries.by_id(ledger, ORDERS_3, ids[lsn]) for lsn in (100, 200)]
    witnesses = [queries.by_id(ledger, ORDERS_3, ids[lsn]) for lsn in (300, 400)]
    command = ExpireSnapshots(
        stream="orders",
        partition=3,
        run_id="run-1",
        targets=tuple(ExpiryTarget(sort_key=t.sort_key, cause="unprotected") for t in targets),
        witnesses=tuple(w.sort_key for w in witnesses),
        policy=RetentionPolicy(min_count=2),
        grace_hours=24,
    )
    execute(ledger, command, clock.now(), snapshot_keys=command.snapshot_keys)

    answer, calls = counted(ledger, queries.by_id, ids[200])
    assert answer.status is EXPIRING and calls == ["Query"]
    answer, calls = counted(ledger, queries.as_of_lsn, 250)
    assert isinstance(answer, NotFoundError) and calls == ["Query"]
    answer, calls = counted(ledger, queries.as_of_time, start + timedelta(minutes=90))
    assert isinstance(answer, NotFoundError) and calls == ["Query"]
    assert queries.as_of_time(ledger, ORDERS_3, clock.now()).lsn == 400


def test_backfill_gives_older_records_their_lookup_keys(ledger, clock):
    """Records written before the indexes are found once the one-off backfill has run;
    running it again changes nothing."""
    records = write_history(
        ledger,
        "orders",
        3,
        [DELETED, REGISTERED, REJECTED, REGISTERED],
        clock.now(),
        lookup_keys=False,
    )
    old, top = records[0], records[3]
    with pytest.raises(NotFoundError):
        queries.by_id(ledger, ORDERS_3, old.snapshot_id)
    with pytest.raises(NotFoundError):
        queries.as_of_lsn(ledger, ORDERS_3, 10)

    report = backfill_items(ledger.client, ledger.table_name)

    assert (report.updated, report.skipped_changed) == (4, 0)
    assert queries.by_id(ledger, ORDERS_3, old.snapshot_id) == old
    assert queries.as_of_lsn(ledger, ORDERS_3, 10) == top
    assert queries.as_of_lsn(ledger, ORDERS_3, 3) == records[1]
    assert queries.as_of_time(ledger, ORDERS_3, top.registered_at) == top
    # GC's live read sees the REJECTED one too; the terminal ones got their TTL
    assert [r.lsn for r in queries.live_snapshots(ledger, ORDERS_3)] == [4, 3, 2]
    ttls = {
        int(i["lsn"]["N"]): codec.ttl_of(i)
        for i in ledger.client.scan(TableName=ledger.table_name)["Items"]
        if i["sk"]["S"].startswith("SNAP#")
    }
    window = codec.DEFAULT_TTL_WINDOW
    assert ttls == {  # a DELETED record without deleted_at counts from its registry time
        1: int((old.registered_at + window).timestamp()),
        2: None,
        3: int((records[2].registered_at + window).timestamp()),
        4: None,
    }
    assert backfill_items(ledger.client, ledger.table_name).updated == 0


def test_the_backfill_command_names_what_it_did(capsys, clock):
    from snapledger.backfill import main

    with moto_ledger() as ledger:
        write_history(ledger, "orders", 3, [DELETED, REGISTERED], clock.now(), lookup_keys=False)
        assert main(["--table", ledger.table_name, "--region", "us-east-1"]) == 0
        assert queries.as_of_lsn(ledger, ORDERS_3, 2).lsn == 2
    assert "2 items given their lookup keys or TTL" in capsys.readouterr().out


def test_as_of_a_time_is_the_highest_lsn_recorded_by_then_late_arrivals_included(
    ledger, store, clock
):
    """A snapshot registered late (below the latest) never answers for a time at which a
    higher LSN was already recorded; one a lookup by id still finds."""
    ids = {}
    for lsn in (100, 300, 200):  # 200 arrives after 300
        key = write_snapshot(store, lsn=lsn)
        ids[lsn] = register_manifest(
            key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
        ).snapshot_id
        clock.advance(timedelta(hours=1))
    start = clock.now() - timedelta(hours=3)

    assert queries.as_of_time(ledger, ORDERS_3, start + timedelta(minutes=30)).lsn == 100
    assert queries.as_of_time(ledger, ORDERS_3, start + timedelta(minutes=90)).lsn == 300
    answer, calls = counted(ledger, queries.as_of_time, clock.now())
    assert answer.lsn == 300 and calls == ["Query"]
    assert queries.as_of_lsn(ledger, ORDERS_3, 250).snapshot_id == ids[200]
    assert queries.by_id(ledger, ORDERS_3, ids[200]).lsn == 200


@pytest.mark.ddblocal
def test_the_local_runtime_upgrades_a_table_an_older_version_created(dynamodb_local, clock):
    """``local up`` on a persisted table from before the lookup indexes: the missing index
    is added and the older records backfilled, so they are found."""
    from snapledger.adapters.dynamodb_ledger import DynamoLedger
    from snapledger.adapters.table_definition import create_table_request
    from snapledger.local.runtime import ensure_table
    from tests.support import local_client

    client = local_client(dynamodb_local.endpoint_url)
    name = f"older-{uuid.uuid4().hex[:8]}"
    older = create_table_request(name)
    older["GlobalSecondaryIndexes"] = older["GlobalSecondaryIndexes"][:1]  # by_kind only
    older["AttributeDefinitions"] = older["AttributeDefinitions"][:3]
    client.create_table(**older)
    ledger = DynamoLedger(name, client=client)
    records = write_history(
        ledger, "orders", 3, [DELETED, REGISTERED], clock.now(), lookup_keys=False
    )

    ensure_table(client, name)

    indexes = client.describe_table(TableName=name)["Table"]["GlobalSecondaryIndexes"]
    assert sorted(i["IndexName"] for i in indexes) == ["by_kind", "registered"]
    assert queries.by_id(ledger, ORDERS_3, records[0].snapshot_id) == records[0]
    assert queries.as_of_lsn(ledger, ORDERS_3, 5) == records[1]
    ensure_table(client, name)  # again: nothing to do


@pytest.mark.ddblocal
def test_the_local_runtime_turns_ttl_on_and_backfills_a_table_from_before_it(dynamodb_local, clock):
    """A persisted table with both indexes but no TTL (the release before): ``local up``
    turns TTL on (``ttl``) and gives the older items their live-index keys and TTL."""
    from snapledger.adapters.dynamodb_ledger import DynamoLedger
    from snapledger.adapters.table_definition import create_table_request
    from snapledger.local.runtime import ensure_table
    from tests.support import local_client

    client = local_client(dynamodb_local.endpoint_url)
    name = f"nottl-{uuid.uuid4().hex[:8]}"
    client.create_table(**create_table_request(name))
    ledger = DynamoLedger(name, client=client)
    write_history(
        ledger, "orders", 3, [DELETED, REJECTED, REGISTERED], clock.now(), lookup_keys=False
    )

    ensure_table(client, name)
    ensure_table(client, name)  # again: nothing to do

    described = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert (described["TimeToLiveStatus"], described["AttributeName"]) == ("ENABLED", "ttl")
    assert [r.lsn for r in queries.live_snapshots(ledger, ORDERS_3)] == [3, 2]
    items = client.scan(TableName=name)["Items"]
    with_ttl = sorted(int(i["lsn"]["N"]) for i in items if "lsn" in i and codec.ttl_of(i))
    assert with_ttl == [1, 2]
