"""Chaos: valid manifests interleaved with hostile ones, through the registration queue's
consumer with redeliveries and faults, then GC with the orphan sweep past the grace window.

Issue 27: every valid snapshot ends REGISTERED with its files present; every hostile one
REJECTED with its reason; nothing valid is deleted, even the one whose registration kept
failing until its message went to the failure queue (the orphan sweep registers it).
Runs on moto and on DynamoDB Local (the real engine and its limits).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import timedelta

from snapledger.entrypoints.register import FAILED, manifest_registrar, register_queued
from snapledger.entrypoints.registration_queue import QueuedMessage, lineage_group
from snapledger.errors import StoreUnavailableError
from snapledger.gc_settings import GcConfig
from snapledger.ids import new_ulid
from snapledger.layout import parse_manifest_key
from snapledger.models.ledger import SnapshotStatus
from snapledger.services.gc import run_gc
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.functions.support import POWERTOOLS_ENV
from tests.gc.support import age_objects, gc_deps
from tests.support import kv_parquet, make_runtime, manifest_document, write_snapshot

MAX_RECEIVES = 5  # the registration queue's maxReceiveCount: then the failure queue
HOUR = timedelta(hours=1)


class NoMetrics:
    def add_metric(self, **_: object) -> None:
        pass


class FlakyStore:
    """The store, failing the first read of some keys, and every read of one key while
    ``down`` is set (an outage that outlasts the queue's retries)."""

    def __init__(self, store, flaky: set[str], down: str) -> None:
        self._store = store
        self.flaky = set(flaky)
        self.down = down
        self.outage = True

    def __getattr__(self, name):
        return getattr(self._store, name)

    def get(self, key, **kwargs):
        if self.outage and key == self.down:
            raise StoreUnavailableError(f"{key}: the store did not answer (simulated outage)")
        if key in self.flaky:
            self.flaky.discard(key)
            raise StoreUnavailableError(f"{key}: the store did not answer (simulated)")
        return self._store.get(key, **kwargs)


def hostile_manifests(store, stream, partition, lsn):
    """(key, what it is) of each hostile manifest, written under its own prefix."""

    def doc(**overrides):
        sid = new_ulid()
        data = {"part-00000.parquet": kv_parquet(sid)}
        return sid, data, manifest_document(stream, partition, lsn, sid, data, **overrides)

    written = []

    def put(name, sid, data, raw):
        raw = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
        key = write_snapshot(
            store, stream, partition, lsn, snapshot_id=sid, files=data, manifest=raw
        )
        written.append((key, name))

    sid, data, _ = doc()
    put("nested past the parser", sid, data, b"[" * 300_000)
    for field in ("epoch", "row_count"):
        sid, data, d = doc()
        put(f"{field} of 39 digits", sid, data, {**d, field: 10**38 + 7})
    sid, data, d = doc()
    d["files"][0]["rows"] = 10**39
    put("files[].rows of 40 digits", sid, data, d)
    sid, data, d = doc()
    d["files"][0]["path"] = "../../payments/9/x"
    put("a path escaping its prefix", sid, data, d)
    sid, data, _ = doc()
    put("not JSON", sid, data, b"\xff\xfe not json")
    sid, data, d = doc()
    bomb = b"PAR1" + b"\0" * 64 + (100_000_000).to_bytes(4, "little") + b"PAR1"
    data = {"part-00000.parquet": bomb}
    d["files"] = [{"path": "part-00000.parquet", "size": len(bomb)}]
    put("a footer claiming 100 MB", sid, data, d)
    sid, data, d = doc()
    d["files"] = [{"path": f"p{i}", "size": 1} for i in range(10_001)]
    put("10,001 files", sid, data, d)
    sid, data, d = doc()
    d["offsets"] = {f"{'t' * 250}-{i}": i for i in range(1_000)}
    put("offsets too large for an item", sid, data, d)
    return written


def test_hostile_manifests_never_cost_a_valid_snapshot(ledger, store, clock, monkeypatch):
    for name, value in POWERTOOLS_ENV.items():  # per-stream metrics, as in AWS
        monkeypatch.setenv(name, value)
    rng = random.Random(27)
    lineages = [("orders", 3), ("orders", 4)]
    valid: list[str] = []
    hostile: list[tuple[str, str]] = []
    for round_ in range(3):
        for stream, partition in lineages:
            base = 1_000 * (round_ + 1)
            valid += [write_snapshot(store, stream, partition, base + i, epoch=1) for i in range(3)]
            if round_ == 0 or partition == 3:
                hostile += hostile_manifests(store, stream, partition, base + 500)
    down = valid[4]  # its reads fail until after the queue gave up on it
    flaky = FlakyStore(store, {valid[1], valid[7], hostile[2][0]}, down)
    rt = make_runtime(ledger, flaky, clock)
    keys = [k for k, _ in hostile] + valid
    rng.shuffle(keys)

    # The FIFO queue: messages in order per group, each redelivered until it succeeds or
    # is received MAX_RECEIVES times; S3's at-least-once delivery sends some twice.
    expected_failures = {down, valid[1], valid[7], hostile[2][0]}
    dead = _deliver(keys + rng.sample(keys, 6), rt, expected_failures)
    assert dead == [down]  # only the one whose store was down went to the failure queue

    # Every hostile manifest is REJECTED with its reason; every valid one REGISTERED
    by_key = {
        parse_manifest_key(key).snapshot_id: key for key in [*valid, *(k for k, _ in hostile)]
    }
    recorded = {
        r.snapshot_id: r
        for stream, partition in lineages
        for r in _all_records(ledger, stream, partition)
    }
    for key, what in hostile:
        record = recorded[parse_manifest_key(key).snapshot_id]
        assert record.status is SnapshotStatus.REJECTED, what
        assert record.rejection_reason, what
    for key in valid:
        sid = parse_manifest_key(key).snapshot_id
        if key == down:
            assert sid not in recorded  # lost to the failure queue, for now
        else:
            assert recorded[sid].status is SnapshotStatus.REGISTERED, key
    assert len(by_key) == len(valid) + len(hostile)

    # When the outage ends and GC runs past the grace window, retention keeping everything
    flaky.outage = False
    clock.advance(timedelta(hours=48))
    age_objects(store, "snapshots/", clock.now() - 48 * HOUR)
    deps = replace(gc_deps(ledger, flaky, clock), register=manifest_registrar(rt))
    config = GcConfig(default_min_count=50, default_min_age_hours=24 * 365)
    run_gc(deps, config=config)
    run_gc(deps, config=config)

    # Then the manifest the queue gave up on is registered, and no valid file is gone
    recorded = {
        r.snapshot_id: r
        for stream, partition in lineages
        for r in _all_records(ledger, stream, partition)
    }
    for key in valid:
        sid = parse_manifest_key(key).snapshot_id
        assert recorded[sid].status is SnapshotStatus.REGISTERED, key
        prefix = key.removesuffix("_manifest.json")
        assert store.list(prefix), f"{prefix} lost its files"
    for stream, partition in lineages:
        head = ledger.get_head(_lineage(stream, partition))
        assert head.latest_lsn == max(
            parse_manifest_key(k).lsn for k in valid if _same(k, stream, partition)
        )


def _deliver(keys, rt, expected_failures):
    """Deliver ``keys`` through the consumer, 10 a batch, redelivering each failed one
    until MAX_RECEIVES; the keys that went to the failure queue."""
    queue = [(key, 0) for key in keys]
    dead = []
    while queue:
        batch, queue = queue[:10], queue[10:]
        messages = [
            QueuedMessage(f"m{n}-{key}", lineage_group(key, layouts=NATIVE_ONLY) or "", key)
            for n, (key, _) in enumerate(batch)
        ]
        answer, retry = register_queued(messages, rt, NoMetrics())
        for record in answer.records:  # never raised; every record answered
            assert record.outcome in {"became_latest", "recorded", "duplicate", "rejected"} or (
                record.outcome == FAILED and record.key in expected_failures
            ), record
        for message, (key, receives) in zip(messages, batch, strict=True):
            if message.message_id not in retry:
                continue
            if receives + 1 >= MAX_RECEIVES:
                dead.append(key)
            else:
                queue.append((key, receives + 1))
    return dead


def _same(key, stream, partition):
    location = parse_manifest_key(key)
    return (location.stream, location.partition) == (stream, partition)


def _lineage(stream, partition):
    from snapledger.models.ledger import LineageId

    return LineageId(stream=stream, partition=partition)


def _all_records(ledger, stream, partition):
    from snapledger.services.queries import iter_snapshots

    return list(iter_snapshots(ledger, _lineage(stream, partition)))
