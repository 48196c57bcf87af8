"""bench/ddb_replay.py: the replayed work leaves the copy as the work left the table."""

from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError

from bench.ddb_replay import Recorder, copy_table, replay
from snapledger.clock import ManualClock
from snapledger.services.registration import register_manifest
from tests.support import create_ledger, local_client, write_snapshot


def _items(client, table: str) -> list[dict]:
    pages = client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    return sorted(
        (item for page in pages for item in page["Items"]),
        key=lambda item: (item["pk"]["S"], item["sk"]["S"]),
    )


@pytest.mark.parametrize("parallel", [False, True])
def test_a_replay_on_a_copy_ends_where_the_recorded_work_ended(dynamodb_local, tmp_path, parallel):
    from snapledger.adapters.object_store_file import FileObjectStore

    client = local_client(dynamodb_local.endpoint_url)
    ledger = create_ledger(client)
    store, clock = FileObjectStore(tmp_path), ManualClock()
    register = lambda lsn: register_manifest(  # noqa: E731
        write_snapshot(store, "orders", 0, lsn), ledger=ledger, store=store, clock=clock
    )
    register(100)
    copy = f"{ledger.table_name}-copy"
    assert copy_table(client, ledger.table_name, copy) == len(_items(client, ledger.table_name))

    with Recorder(client) as recorded:
        # One lineage's requests from two threads, one after the other, as GC's workers
        # hand a lineage's marks on: the replay keeps the lineage's order, not a thread's.
        for lsn in (200, 300):
            worker = threading.Thread(target=register, args=(lsn,))
            worker.start()
            worker.join()
        with pytest.raises(ClientError):  # a refused request is not part of the work
            client.put_item(
                TableName=ledger.table_name,
                Item={"pk": {"S": "x"}, "sk": {"S": "y"}},
                ConditionExpression="attribute_exists(pk)",
            )
    assert recorded.calls and all(c.operation != "PutItem" for c in recorded.calls)
    assert any(c.operation == "TransactWriteItems" for c in recorded.calls)

    assert replay(client, recorded.calls, ledger.table_name, copy, parallel=parallel) > 0
    assert _items(client, copy) == _items(client, ledger.table_name)

    # Verbatim, conditions included: the same work again on the same copy is refused.
    with pytest.raises(ClientError):
        replay(client, recorded.calls, ledger.table_name, copy, parallel=parallel)
