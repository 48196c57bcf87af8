"""Ledger benchmark: DynamoDB requests per registration and its cost against a bare PutItem.

Runs against DynamoDB Local (the real engine) in this process:
- ``ddb_requests_per_registration``: requests counted through botocore's event hooks on
  the common path (a new snapshot becoming latest); the floor is 2 (one read of HEAD with
  the snapshot's item, one transaction).
- ``registration_vs_bare_put``: time per registration ÷ time per single PutItem of an item
  of similar size, same engine, same run: ``ROUNDS`` interleaved rounds (a block of
  registrations, then a block of puts), each round's ratio taken within the round (both
  blocks under the same load) and the best round reported; every round's ratio is kept
  in ``registration_vs_bare_put_rounds``.
- ``registration_requests_per_file``: S3 requests registration makes per data file of a
  manifest whose files state checksums, at 1 / 10 / 100 / 1,000 files (moto S3, counted
  at the client). Its floor, from S3's limits: one GetObject of the manifest, one
  ListObjectsV2 per 1,000 keys, one HeadObject (checksum mode) per file, and ``latest.json``
  (one GET, one conditional PUT: the snapshot becomes latest); the schema check adds one
  ranged GetObject of each file's footer, reported apart.
"""

from __future__ import annotations

import json
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
from snapledger.strategies.catalog import NATIVE_ONLY

REGISTRATIONS = 100  # per round
ROUNDS = 3
WARMUP = 30
_PUT_ITEM = {"pk": {"S": "BENCH"}, "payload": {"S": "x" * 600}}


def run(config: Any) -> dict[str, object]:
    with DynamoDBLocal() as engine, tempfile.TemporaryDirectory() as tmp:
        client = local_dynamodb_client(engine.endpoint_url)
        client.create_table(**create_table_request("bench-ledger"))
        ledger = DynamoLedger("bench-ledger", client=client)
        store = FileObjectStore(Path(tmp))
        from tests.support import write_snapshot  # the same writer the tests use

        total = WARMUP + ROUNDS * REGISTRATIONS
        keys = [write_snapshot(store, "bench", 0, lsn) for lsn in range(total)]
        requests: list[str] = []
        client.meta.events.register(
            "before-call.dynamodb", lambda model, **_: requests.append(model.name)
        )
        clock = SystemClock()

        registration_requests: list[str] = []

        def register(batch: list[str]) -> float:
            requests.clear()
            started = time.perf_counter()
            for key in batch:
                result = register_manifest(
                    key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
                )
                assert result.outcome is Outcome.BECAME_LATEST, result
            elapsed = time.perf_counter() - started
            registration_requests.extend(requests)
            return elapsed / len(batch)

        def put(first: int, count: int) -> float:
            started = time.perf_counter()
            for n in range(first, first + count):
                client.put_item(
                    TableName="bench-ledger", Item={**_PUT_ITEM, "sk": {"S": f"{n:08d}"}}
                )
            return (time.perf_counter() - started) / count

        register(keys[:WARMUP])
        put(0, WARMUP)
        registration_requests.clear()
        registration_rounds, put_rounds = [], []
        for r in range(ROUNDS):
            batch = keys[WARMUP + r * REGISTRATIONS : WARMUP + (r + 1) * REGISTRATIONS]
            registration_rounds.append(register(batch))
            put_rounds.append(put(WARMUP + r * REGISTRATIONS, REGISTRATIONS))
        per_registration = len(registration_requests) / (ROUNDS * REGISTRATIONS)
        kinds = sorted(set(registration_requests))
    per_file = _s3_requests_per_file()
    ratios = [reg / bare for reg, bare in zip(registration_rounds, put_rounds, strict=True)]
    best = ratios.index(min(ratios))
    registration_s, bare_put_s = registration_rounds[best], put_rounds[best]
    return {
        "ddb_requests_per_registration": per_registration,
        "ddb_requests_floor": 2,
        "ddb_request_kinds": ",".join(kinds),
        "registration_ms": registration_s * 1000,
        "bare_put_ms": bare_put_s * 1000,
        "registration_vs_bare_put": registration_s / bare_put_s,
        "registration_vs_bare_put_rounds": [round(ratio, 2) for ratio in ratios],
        **per_file,
    }


FILE_COUNTS = (1, 10, 100, 1_000)


def _s3_requests_per_file() -> dict[str, object]:
    """S3 requests of registering manifests of 1 to 1,000 checksummed kv-parquet files."""
    import boto3
    from moto import mock_aws

    from snapledger.adapters.object_store_s3 import S3ObjectStore
    from snapledger.core.checksums import compute
    from snapledger.ids import new_ulid
    from snapledger.layout import snapshot_prefix
    from tests.support import kv_parquet, manifest_document, moto_ledger

    table: dict[str, dict[str, float]] = {}
    with mock_aws(), moto_ledger() as ledger:
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
        store = S3ObjectStore("bench", "", client=s3)
        counted: list[str] = []
        s3.meta.events.register(
            "before-send.s3.*", lambda event_name, **_: counted.append(event_name.split(".")[-1])
        )
        for lsn, files in enumerate(FILE_COUNTS, start=1):
            sid = new_ulid()
            prefix = snapshot_prefix("bench", 1, lsn, sid)
            data = kv_parquet("bench")
            entries = []
            for i in range(files):
                path = f"part-{i:05d}.parquet"
                s3.put_object(
                    Bucket="bench", Key=prefix + path, Body=data, ChecksumAlgorithm="SHA256"
                )
                entries.append(
                    {"path": path, "size": len(data), "checksum": str(compute("sha256", data))}
                )
            document = manifest_document("bench", 1, lsn, sid, {}, files_override=entries)
            store.put(prefix + "_manifest.json", json.dumps(document).encode())
            counted.clear()
            result = register_manifest(
                prefix + "_manifest.json",
                ledger=ledger,
                store=store,
                clock=SystemClock(),
                layouts=NATIVE_ONLY,
            )
            assert result.outcome is Outcome.BECAME_LATEST, result
            # the manifest, the listings (the manifest is one of the keys), a HeadObject per
            # file, and latest.json: one GET and one conditional PUT as the latest advances
            floor = 1 + -(-(files + 1) // 1_000) + files + 2
            footer_reads = files  # one ranged GetObject per file (footers under 64 KiB)
            table[str(files)] = {
                "requests": len(counted),
                "per_file": round(len(counted) / files, 3),
                "floor": floor,
                "vs_floor_with_footers": round(len(counted) / (floor + footer_reads), 3),
            }
    print("  registration S3 requests by files per manifest (checksums stated):")
    for files, row in table.items():
        print(f"    {files:>5} files: {row['requests']:>5} requests ({row['per_file']}/file),"
              f" floor {row['floor']} + {files} footer reads")  # fmt: skip
    return {
        "registration_requests_per_file": table[str(FILE_COUNTS[-1])]["per_file"],
        "registration_requests_by_files": table,
    }
