"""The deployed functions' runtime and the local runtime decide alike for every layout
(DESIGN invariant 19; issue 43 item 2, issue 44 item 1).

Both are built from the same ``SNAPLEDGER_*`` environment, as each process reads it: the
functions' ``runtime()`` (``snapledger.runtime``'s cold start) and ``LocalRuntime`` (what
``snapledger local up``, every ``--local`` command, the demos and the benches start). Each
is given the same snapshots of every layout (native, restate, kafka-streams), a valid and
an invalid one of each and a history GC decides on, delivered to the register function;
what each registered or rejected, and why, and GC's dry-run plan (kept and deleted with
their reasons, unrestorable marks) must be equal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.local.aws_events import s3_object_created
from snapledger.local.clients import local_dynamodb_client
from snapledger.local.handlers import invoke
from snapledger.local.runtime import LocalRuntime, ensure_table
from snapledger.ports import ObjectStore
from snapledger.runtime import DECIDED, build_runtime, replaced, reset_runtime, runtime, use_runtime
from snapledger.settings import (
    ENV_DYNAMODB_ENDPOINT,
    ENV_LAYOUTS,
    ENV_ROOT,
    ENV_TABLE,
    LedgerSettings,
    settings_from_env,
)
from tests.functions.support import POWERTOOLS_ENV
from tests.gc.test_kafka_streams_layout import SST, TOPIC
from tests.restate.fixtures import PREFIX, STREAM, write_restate_snapshot
from tests.support import FakeRunner, kv_parquet, write_snapshot

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
#: The changelog's delete.retention.ms: longer than the two days GC is moved on.
RETENTION_MS = 30 * 86_400_000
#: What both runtimes are given: one layout map (a Restate cluster's prefix, a Kafka Streams
#: changelog) and a default retention policy other than GC's own default (min_count 3).
SETTINGS_ENV = {
    ENV_LAYOUTS: json.dumps(
        {PREFIX: {"layout": "restate", "stream": STREAM}, TOPIC: {"layout": "kafka-streams"}}
    ),
    "SNAPLEDGER_DEFAULT_MIN_COUNT": "2",
}


def _sid(n: int) -> str:
    return f"01JD{n:022d}"


def kafka_streams_snapshot(
    store: ObjectStore, partition: int, lsn: int, *, topic: str = TOPIC, **overrides: Any
) -> str:
    """A RocksDB store folder of ``topic``'s ``partition`` at changelog offset ``lsn``,
    valid for the kafka-streams layout unless ``overrides`` say otherwise."""
    fields: dict[str, Any] = {
        "format": "opaque",
        "offsets": {f"{topic}-{partition}": lsn},
        "created_at": "2026-11-27T12:00:00Z",
        "changelog": {
            "log_start_offset": 0,
            "end_offset": lsn + 1,
            "delete_retention_ms": RETENTION_MS,
        },
    }
    fields.update(overrides)
    files = {"000012.sst": SST, "CURRENT": b"MANIFEST-5\n"}
    sid = _sid(partition * 1000 + lsn)
    return write_snapshot(store, topic, partition, lsn, snapshot_id=sid, files=files, **fields)


def write_every_layout(store: ObjectStore) -> dict[str, str]:
    """A valid and an invalid snapshot of each layout, and a history for GC: name -> key."""
    keys: dict[str, str] = {}
    for lsn in (100, 200, 300, 400):  # native: two more than the default policy's min_count
        sid = _sid(lsn)
        files = {"part-00000.parquet": kv_parquet(sid)}
        keys[f"native {lsn}"] = write_snapshot(
            store, "orders", 0, lsn, snapshot_id=sid, files=files
        )
    keys["native, not kv-parquet"] = write_snapshot(
        store, "orders", 1, 100, snapshot_id=_sid(1), files={"part-00000.parquet": b"no"}
    )
    # kafka-streams: four, the newest read a log start past what the two oldest need
    for lsn, start in ((10, 0), (20, 0), (30, 0), (50, 31)):
        changelog = {
            "log_start_offset": start,
            "end_offset": lsn + 1,
            "delete_retention_ms": RETENTION_MS,
        }
        keys[f"kafka-streams {lsn}"] = kafka_streams_snapshot(store, 2, lsn, changelog=changelog)
    keys["kafka-streams, offsets not its own"] = kafka_streams_snapshot(
        store, 3, 41, offsets={f"{TOPIC}-3": 40}
    )
    for lsn in (1435, 1500):
        keys[f"restate {lsn}"] = write_restate_snapshot(store, lsn).location.metadata_key
    damaged = write_restate_snapshot(store, 1600, partition=1)
    store.put(damaged.sst_keys[0], b"not the file metadata.json names")
    keys["restate, a file of another size"] = damaged.location.metadata_key
    return keys


def decisions(store: ObjectStore, clock: ManualClock) -> dict[str, Any]:
    """What the runtime in use decides for every layout's snapshots: each registration's
    answer (as the S3 event delivers it), then GC's dry-run plan two days later."""
    registered = {}
    for name, key in write_every_layout(store).items():
        info = store.head(key)
        assert info is not None, key
        answer = invoke("register", s3_object_created(key, info.size))
        registered[name] = [_decided(record) for record in answer.get("records", [answer])]
    clock.advance(timedelta(days=2))
    answer = invoke("gc", {"dry_run": True})
    assert answer.get("ok"), answer
    plan = {k: v for k, v in answer["report"].items() if k != "run_id"}  # new per run
    return {"registered": registered, "gc": plan}


def _decided(record: dict[str, Any]) -> dict[str, Any]:
    """A registration's answer without how many attempts its transaction took."""
    return {k: v for k, v in record.items() if k not in ("attempts", "lost_races")}


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The layouts in this process's environment, as the functions' and ``local up``'s."""
    for name, value in {**POWERTOOLS_ENV, **SETTINGS_ENV}.items():
        monkeypatch.setenv(name, value)
    reset_runtime()
    yield SETTINGS_ENV
    reset_runtime()


def _functions_decide(
    endpoint: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The deployed functions' runtime: ``runtime()`` built from the environment at its
    first call, on DynamoDB Local and a ``file://`` root."""
    table = f"functions-{folder.name}"
    ensure_table(local_dynamodb_client(endpoint), table)
    monkeypatch.setenv(ENV_TABLE, table)
    monkeypatch.setenv(ENV_ROOT, (folder / "root").as_uri())
    monkeypatch.setenv(ENV_DYNAMODB_ENDPOINT, endpoint)
    built = runtime()
    clock = ManualClock(NOW)
    use_runtime(replaced(built, clock=clock))
    try:
        return decisions(built.store, clock)
    finally:
        reset_runtime()
        for name in (ENV_TABLE, ENV_ROOT, ENV_DYNAMODB_ENDPOINT):
            monkeypatch.delenv(name)


def _local_decides(endpoint: str, folder: Path) -> dict[str, Any]:
    """The local runtime (``LocalRuntime``, as ``local up`` and ``--local`` start it)."""
    local = LocalRuntime(home=folder, endpoint=endpoint, table=f"local-{folder.name}")
    local.runner = FakeRunner()
    with local as built:
        clock = ManualClock(NOW)
        use_runtime(replaced(built, clock=clock))
        return decisions(built.store, clock)


@pytest.mark.ddblocal
def test_the_functions_and_the_local_runtime_decide_alike_for_every_layout(
    environ, dynamodb_local, tmp_path, monkeypatch
):
    # Given the same settings (a Restate prefix, a Kafka Streams changelog) for both
    endpoint = dynamodb_local.endpoint_url
    # When each is given the same snapshots of every layout, then GC plans
    functions = _functions_decide(endpoint, tmp_path / "functions", monkeypatch)
    local = _local_decides(endpoint, tmp_path / "local")
    # Then each layout checked its own snapshots in the functions (the comparison means
    # something: every layout applied, a bad snapshot of each rejected)
    registered = functions["registered"]
    for name, records in registered.items():  # the answer says which layout checked it
        assert [r["layout"] for r in records] == [name.split(" ")[0].rstrip(",")], name
    for layout in ("native", "kafka-streams", "restate"):
        invalid = [
            r for name, rs in registered.items() if name.startswith(f"{layout},") for r in rs
        ]
        assert [r["outcome"] for r in invalid] == ["rejected"], (layout, invalid)
        valid = [r for name, rs in registered.items() if name.startswith(f"{layout} ") for r in rs]
        assert {r["outcome"] for r in valid} <= {"became_latest", "recorded"}, (layout, valid)
    unrestorable = [
        (lineage["stream"], d["lsn"])
        for lineage in functions["gc"]["lineages"]
        for d in lineage["deleted"]
        if d.get("unrestorable")
    ]
    assert unrestorable == [(TOPIC, 20), (TOPIC, 10)]
    [orders] = [
        lin
        for lin in functions["gc"]["lineages"]
        if lin["stream"] == "orders" and not lin["partition"]
    ]
    assert [d["lsn"] for d in orders["deleted"]] == [200, 100]  # SNAPLEDGER_DEFAULT_MIN_COUNT
    # And the local runtime decided exactly the same: every registration, GC's whole plan
    assert local["registered"] == registered
    assert local["gc"] == functions["gc"]


@pytest.mark.parametrize("decided", sorted(DECIDED))
def test_what_decides_cannot_be_handed_to_the_root(decided, tmp_path):
    # Given settings with a Kafka Streams changelog
    environ = {ENV_TABLE: "ledger", ENV_ROOT: tmp_path.as_uri()}
    settings = settings_from_env(LedgerSettings, {**environ, **SETTINGS_ENV})
    # When a caller hands in its own layouts (or GC config, or thresholds), it is refused,
    # naming what it may hand in instead
    with pytest.raises(TypeError, match=f"cannot be handed '{decided}': give an adapter among"):
        build_runtime(settings, **{decided: object()})
    # While adapters may be handed in, and the layouts still come from the settings
    store = FileObjectStore(tmp_path)
    built = build_runtime(settings, store=store, clock=ManualClock(NOW))
    with pytest.raises(TypeError, match=f"replaced\\(\\) cannot change \\['{decided}'\\]"):
        replaced(built, **{decided: object()})  # nor swapped in afterwards
    assert built.store is store
    assert built.layouts.for_stream(TOPIC).name == "kafka-streams"
