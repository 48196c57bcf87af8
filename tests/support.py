"""Test support: ledger backends and snapshot writers shared by the test modules."""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import boto3
from moto import mock_aws

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.table_definition import create_table_request
from snapledger.ids import new_ulid
from snapledger.layout import segment_key, snapshot_prefix
from snapledger.local.clients import local_dynamodb_client
from snapledger.ports import ObjectStore


def create_ledger(client: Any) -> DynamoLedger:
    name = f"ledger-{uuid.uuid4().hex[:12]}"
    client.create_table(**create_table_request(name))
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1})
    return DynamoLedger(name, client=client)


@contextmanager
def moto_ledger() -> Iterator[DynamoLedger]:
    with mock_aws():
        yield create_ledger(boto3.client("dynamodb", region_name="us-east-1"))


def local_client(endpoint_url: str) -> Any:
    return local_dynamodb_client(endpoint_url)


def manifest_document(
    stream: str,
    partition: int,
    lsn: int,
    snapshot_id: str,
    files: dict[str, bytes],
    *,
    epoch: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "format_version": 1,
        "stream": stream,
        "partition": partition,
        "lsn": lsn,
        "snapshot_id": snapshot_id,
        "epoch": epoch,
        "producer": {"name": "tests", "version": "1"},
        "source": {"kind": "processor"},
        "files": [{"path": path, "size": len(data), "rows": 1} for path, data in files.items()],
    }
    if "files_override" in overrides:  # the files' entries as given (e.g. with checksums)
        document["files"] = overrides.pop("files_override")
    document.update(overrides)
    return document


@functools.lru_cache(maxsize=4096)
def kv_parquet(tag: str, rows: int = 1) -> bytes:
    """A small Parquet file of the kv-parquet columns (key, value, lsn), distinct per ``tag``:
    the data file registration accepts for a ``kv-parquet`` snapshot."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "key": pa.array([f"{tag}-{i}" for i in range(rows)], pa.string()),
            "value": pa.array([tag.encode()] * rows, pa.binary()),
            "lsn": pa.array([0] * rows, pa.int64()),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def write_snapshot(
    store: ObjectStore,
    stream: str = "orders",
    partition: int = 3,
    lsn: int = 100,
    *,
    epoch: int = 1,
    snapshot_id: str | None = None,
    files: dict[str, bytes] | None = None,
    manifest: dict[str, Any] | bytes | None = None,
    **overrides: Any,
) -> str:
    """Write data files, then the manifest (last, as writers must); return its key."""
    sid = snapshot_id or new_ulid()
    data = files if files is not None else {"part-00000.parquet": kv_parquet(sid)}
    prefix = snapshot_prefix(stream, partition, lsn, sid)
    for path, content in data.items():
        store.put(prefix + path, content)
    if manifest is None:
        manifest = manifest_document(stream, partition, lsn, sid, data, epoch=epoch, **overrides)
    raw = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    store.put(prefix + "_manifest.json", raw)
    return prefix + "_manifest.json"


def write_segments(
    store: ObjectStore, stream: str, partition: int, *spans: tuple[int, int]
) -> None:
    """Changelog segment objects (content is not read by the control plane)."""
    for first, last in spans:
        store.put(segment_key(stream, partition, first, last), b"segment")


class FakeRunner:
    """A job runner that records starts; the same job id starts once (like a client token)."""

    def __init__(self, refuse: str | None = None) -> None:
        self.started: dict[str, Any] = {}
        self.refuse = refuse

    def start(self, spec: Any) -> str:
        from snapledger.errors import JobStartError

        if self.refuse:
            raise JobStartError(self.refuse)
        self.started.setdefault(spec.job_id, spec)
        return f"run-{spec.job_id}"

    def size(self, spec: Any) -> Any:
        return None

    def status(self, run_id: str) -> Any:
        from snapledger.models.jobs import JobState
        from snapledger.ports import JobRunStatus

        return JobRunStatus(state=JobState.RUNNING)

    def find_run(self, job_id: str, *, created_after: Any) -> Any:
        """The run ``start`` made for ``job_id`` (in the state ``status`` says), else None."""
        from snapledger.ports import FoundJobRun

        if job_id not in self.started:
            return None
        status = self.status(f"run-{job_id}")
        return FoundJobRun(run_id=f"run-{job_id}", state=status.state, reason=status.reason)


def make_runtime(
    ledger: DynamoLedger,
    store: ObjectStore,
    clock: Any,
    runner: Any = None,
    *,
    layouts: Mapping[str, Any] | None = None,
    restate_prefixes: Mapping[str, str] | None = None,
    kafka_streams: tuple[str, ...] = (),
) -> Any:
    """A function Runtime on one ledger table (moto or DynamoDB Local) and a store, built
    by the composition root (``build_runtime``) from the settings a deployment would give
    (its layout map: ``layouts``, as ``SNAPLEDGER_LAYOUTS`` holds it; ``restate_prefixes``
    and ``kafka_streams`` are shorthands read into it), with these adapters."""
    from snapledger.adapters.dynamodb_changelog import DynamoSegmentStore
    from snapledger.adapters.dynamodb_jobs import DynamoJobStore
    from snapledger.adapters.dynamodb_lineages import DynamoLineageIndex
    from snapledger.adapters.dynamodb_policies import DynamoPolicyStore
    from snapledger.adapters.dynamodb_producer_offsets import DynamoProducerOffsets
    from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog

    table, client = ledger.table_name, ledger.client
    adapters = {
        "ledger": ledger,
        "store": store,
        "clock": clock,
        "jobs": DynamoJobStore(table, client=client),
        "runner": runner or FakeRunner(),
        "segments": DynamoSegmentStore(table, client=client),
        "lineages": DynamoLineageIndex(table, client=client),
        "policies": DynamoPolicyStore(table, client=client),
        "streams": DynamoStreamLog(table, client=client),
        "producer_offsets": DynamoProducerOffsets(table, client=client),
    }
    return _through_the_root(adapters, layouts, restate_prefixes, kafka_streams)


def deployed_with(
    rt: Any,
    *,
    layouts: Mapping[str, Any] | None = None,
    restate_prefixes: Mapping[str, str] | None = None,
    kafka_streams: tuple[str, ...] = (),
) -> Any:
    """``rt``'s adapters (ledger, store, clock, runner, ...) in a runtime the composition
    root builds as a deployment with these layouts would be: no catalog patched in."""
    from dataclasses import fields

    from snapledger.runtime import DECIDED, Runtime

    adapters = {f.name: getattr(rt, f.name) for f in fields(Runtime) if f.name not in DECIDED}
    return _through_the_root(adapters, layouts, restate_prefixes, kafka_streams)


def _through_the_root(
    adapters: dict[str, Any],
    layouts: Mapping[str, Any] | None,
    restate_prefixes: Mapping[str, str] | None,
    kafka_streams: tuple[str, ...],
) -> Any:
    from snapledger.layouts.layout_map import layout_map, legacy_entries
    from snapledger.runtime import build_runtime, replaced
    from snapledger.settings import (
        ENV_LAYOUTS,
        ENV_ROOT,
        ENV_TABLE,
        LedgerSettings,
        settings_from_env,
    )

    environ = {
        ENV_TABLE: adapters["ledger"].table_name,
        ENV_ROOT: adapters["store"].uri,
        ENV_LAYOUTS: layout_map(layouts)
        .joined(layout_map(legacy_entries(restate_prefixes, kafka_streams)), source="shorthands")
        .dumps(),
    }
    settings = settings_from_env(LedgerSettings, environ)
    # a plain Runtime (every collaborator built now): dataclasses.replace works on it
    return replaced(build_runtime(settings, environ=environ, **adapters))


def write_history(
    ledger: DynamoLedger,
    stream: str,
    partition: int,
    statuses: list[Any],
    start: Any,
    *,
    lookup_keys: bool = True,
    broken: Mapping[int, tuple[str, ...]] | None = None,
) -> list[Any]:
    """One SNAP item per status (LSN 1, 2, ..., registered a minute apart from ``start``)
    and the HEAD naming the highest REGISTERED, written in batches: a long history in
    seconds. The items are ``dynamodb_codec``'s, as a command's commit writes them;
    ``lookup_keys=False`` writes them as releases before the lookup indexes (and the TTL)
    did. ``broken``: the problems heal found, by LSN (``SnapshotRecord.broken``)."""
    from datetime import timedelta

    from snapledger.adapters import dynamodb_codec as codec
    from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus

    records = []
    for lsn, status in enumerate(statuses, start=1):
        snapshot_id = new_ulid()
        records.append(
            SnapshotRecord(
                stream=stream,
                partition=partition,
                lsn=lsn,
                snapshot_id=snapshot_id,
                status=status,
                manifest_key=snapshot_prefix(stream, partition, lsn, snapshot_id)
                + "_manifest.json",
                manifest_digest="0" * 64,
                registered_at=start + timedelta(minutes=lsn),
                version=lsn,
                broken=(broken or {}).get(lsn, ()),
            )
        )
    latest = max((r for r in records if r.status is SnapshotStatus.REGISTERED), key=lambda r: r.lsn)
    head = Head(
        stream=stream,
        partition=partition,
        version=len(records),
        latest_snapshot_id=latest.snapshot_id,
        latest_lsn=latest.lsn,
    )
    items = [codec.head_item(head)]
    for record in records:
        item = codec.snapshot_item(record)
        if not lookup_keys:
            item.pop("kind"), item.pop("registered_sk", None), item.pop("ttl", None)
        items.append(item)
    for start_at in range(0, len(items), 25):
        pending: Any = {
            ledger.table_name: [
                {"PutRequest": {"Item": i}} for i in items[start_at : start_at + 25]
            ]
        }
        while pending:
            pending = ledger.client.batch_write_item(RequestItems=pending).get("UnprocessedItems")
    return records


def long_history(length: int) -> list[Any]:
    """A long-lived lineage's statuses by LSN: old snapshots DELETED (a few REJECTED among
    them), then some EXPIRING, then the live REGISTERED ones among EXPIRING and REJECTED."""
    from snapledger.models.ledger import SnapshotStatus as S

    old = [S.REJECTED if lsn % 97 == 0 else S.DELETED for lsn in range(length - 8)]
    live = [S.EXPIRING, S.REGISTERED, S.EXPIRING, S.REGISTERED, S.REGISTERED, S.REJECTED]
    return [*old, *live, S.REGISTERED, S.REGISTERED][:length]


def legal_holds(s3: Any, bucket: str, prefix: str) -> dict[tuple[str, str], str]:
    """(key, version id) -> the legal hold of every object version under ``prefix`` in an
    Object Lock bucket: "ON", "OFF", or "none" (never held)."""
    found = {}
    for version in s3.list_object_versions(Bucket=bucket, Prefix=prefix).get("Versions", []):
        key, version_id = version["Key"], version["VersionId"]
        answer = s3.get_object_legal_hold(Bucket=bucket, Key=key, VersionId=version_id)
        found[(key, version_id)] = answer.get("LegalHold", {}).get("Status", "none")
    return found


def run_module(module: str, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` (a demo), unbuffered, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
