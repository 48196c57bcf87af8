"""Ledger benchmark: DynamoDB requests per registration and its cost against a bare PutItem.

Runs against DynamoDB Local (the real engine) in this process:
- ``ddb_requests_per_registration``: requests counted through botocore's event hooks on
  the common path (a new snapshot becoming latest); the floor is 2 (one read of HEAD with
  the snapshot's item, one transaction).
- ``registration_vs_bare_put``: time per registration ÷ time per single PutItem of an item
  of similar size, same engine, same run.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.table_definition import create_table_request
from snapledger.clock import SystemClock
from snapledger.local.clients import local_dynamodb_client
from snapledger.local.dynamodb_local import DynamoDBLocal
from snapledger.services.registration import Outcome, register_manifest

REGISTRATIONS = 300
WARMUP = 30


def run(config: Any) -> dict[str, object]:
    with DynamoDBLocal() as engine, tempfile.TemporaryDirectory() as tmp:
        client = local_dynamodb_client(engine.endpoint_url)
        client.create_table(**create_table_request("bench-ledger"))
        ledger = DynamoLedger("bench-ledger", client=client)
        store = FileObjectStore(Path(tmp))
        from tests.support import write_snapshot  # the same writer the tests use

        keys = [write_snapshot(store, "bench", 0, lsn) for lsn in range(REGISTRATIONS + WARMUP)]
        requests: list[str] = []
        client.meta.events.register(
            "before-call.dynamodb", lambda model, **_: requests.append(model.name)
        )
        clock = SystemClock()
        for key in keys[:WARMUP]:
            register_manifest(key, ledger=ledger, store=store, clock=clock)
        requests.clear()
        started = time.perf_counter()
        for key in keys[WARMUP:]:
            result = register_manifest(key, ledger=ledger, store=store, clock=clock)
            assert result.outcome is Outcome.BECAME_LATEST, result
        registration_s = (time.perf_counter() - started) / REGISTRATIONS
        per_registration = len(requests) / REGISTRATIONS
        kinds = sorted(set(requests))

        item = {"pk": {"S": "BENCH"}, "payload": {"S": "x" * 600}}
        put_times = []
        for n in range(REGISTRATIONS + WARMUP):
            started = time.perf_counter()
            client.put_item(TableName="bench-ledger", Item={**item, "sk": {"S": f"{n:08d}"}})
            put_times.append(time.perf_counter() - started)
        bare_put_s = statistics.fmean(put_times[WARMUP:])
    return {
        "ddb_requests_per_registration": per_registration,
        "ddb_requests_floor": 2,
        "ddb_request_kinds": ",".join(kinds),
        "registration_ms": registration_s * 1000,
        "bare_put_ms": bare_put_s * 1000,
        "registration_vs_bare_put": registration_s / bare_put_s,
    }
