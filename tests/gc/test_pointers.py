"""Issue 27 row 4: GC never deletes what a pointer object names, and repairs a lagging one.

While registration's write of ``latest.json`` keeps failing, the pointer names the previous
latest, which the ledger no longer protects as latest. GC keeps it (reason
``named_by_latest_json``), publishes the ledger's latest over the pointer, and deletes the
old snapshot on a later run, once nothing names it. ``generation.json`` likewise.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from snapledger.errors import StoreUnavailableError
from snapledger.gc_settings import GcConfig
from snapledger.layout import latest_pointer_key
from snapledger.models.pointer import LatestPointer
from snapledger.services import generations
from snapledger.services.gc import run_gc
from snapledger.services.policies import set_policy
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.gc.support import (
    assert_ledger_and_store_agree,
    gc_deps,
    records,
    stream_log,
    write_snapshot,
)

DAY = timedelta(days=1)
CONFIG = GcConfig(default_min_count=1, default_min_age_hours=1)
POINTER = latest_pointer_key("orders", 3)


class PointerWritesFail:
    """The file store, refusing every write of ``latest.json`` (S3 failing that PUT)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def _refuse(self, key: str) -> None:
        if key.endswith("/latest.json"):
            raise StoreUnavailableError(f"PutObject {key}: service unavailable")

    def create(self, key, data):
        self._refuse(key)
        return self.inner.create(key, data)

    def replace(self, key, data, *, if_match):
        self._refuse(key)
        return self.inner.replace(key, data, if_match=if_match)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def register_at(ledger, store, clock, lsn: int) -> str:
    key = write_snapshot(store, "orders", 3, lsn)
    return register_manifest(
        key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    ).snapshot_id


def pointer_names(store) -> tuple[int, str]:
    pointer = LatestPointer.model_validate_json(store.get(POINTER))
    return pointer.lsn, pointer.snapshot_id


@pytest.fixture
def stuck(ledger, store, clock):
    """orders/3 with snapshots at 10, 20, 30; the pointer write of 30 failed, so
    latest.json still names 20 while the ledger's latest is 30. Two days old."""
    register_at(ledger, store, clock, 10)
    previous = register_at(ledger, store, clock, 20)
    key = write_snapshot(store, "orders", 3, 30)
    with pytest.raises(StoreUnavailableError):  # committed, then the pointer write failed
        register_manifest(
            key, ledger=ledger, store=PointerWritesFail(store), clock=clock, layouts=NATIVE_ONLY
        )
    clock.advance(2 * DAY)
    latest = records(ledger)[30].snapshot_id
    assert pointer_names(store) == (20, previous)
    return previous, latest


def test_the_snapshot_a_lagging_latest_json_names_is_kept_and_the_pointer_repaired(
    ledger, store, clock, stuck
):
    _, latest = stuck
    # When GC runs (min_count 1: the ledger protects only 30)
    report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    # Then the snapshot latest.json named is kept, with the pointer as its reason
    [lineage] = report.to_dict()["lineages"]
    kept = {k["lsn"]: k["reasons"] for k in lineage["kept"]}
    assert kept[20] == ["named_by_latest_json"]
    assert {lsn: r.status.value for lsn, r in records(ledger).items()} == {
        10: "DELETED",
        20: "REGISTERED",
        30: "REGISTERED",
    }
    assert store.get(records(ledger)[20].manifest_key)  # a reader following it finds it
    # and the pointer was repaired to the ledger's latest
    assert lineage["pointer"]["state"] == "lagging"
    assert lineage["pointer"]["action"] == "repaired"
    assert pointer_names(store) == (30, latest)
    assert report.counts()["pointers_repaired"] == 1 and not report.failed
    # And once nothing names it, the next run deletes it
    again = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    assert records(ledger)[20].status.value == "DELETED"
    assert again.lineages[0].pointer is not None and again.lineages[0].pointer.state == "current"
    assert_ledger_and_store_agree(ledger, store)


def test_a_dry_run_shows_the_pointer_as_the_reason_and_writes_nothing(ledger, store, clock, stuck):
    before = store.get(POINTER)
    report = run_gc(gc_deps(ledger, store, clock), dry_run=True, config=CONFIG)
    [lineage] = report.to_dict()["lineages"]
    assert {k["lsn"]: k["reasons"] for k in lineage["kept"]}[20] == ["named_by_latest_json"]
    assert [d["lsn"] for d in lineage["deleted"]] == [10]
    assert lineage["pointer"]["action"] == "would_repair"
    assert store.get(POINTER) == before


def test_a_pointer_gc_cannot_repair_is_kept_and_fails_the_run(ledger, store, clock, stuck):
    # When GC runs while the pointer's writes still fail
    report = run_gc(gc_deps(ledger, PointerWritesFail(store), clock), config=CONFIG)
    # Then what it names is kept, and the run says it failed (the alarm's signal)
    assert records(ledger)[20].status.value == "REGISTERED"
    assert records(ledger)[10].status.value == "DELETED"
    assert report.lineages[0].pointer is not None
    assert report.lineages[0].pointer.action == "unrepaired"
    assert report.counts()["pointers_unrepaired"] == 1 and report.failed
    assert report.to_dict()["failed"] is True


def test_an_expiring_snapshot_a_pointer_names_keeps_its_files(ledger, store, clock, stuck):
    # Given 20 already EXPIRING (a run before this fix, or one that read an older pointer)
    from snapledger.models.gc_commands import ExpireSnapshots, ExpiryTarget
    from snapledger.services.commands import execute

    record = records(ledger)[20]
    expire = ExpireSnapshots(
        stream="orders",
        partition=3,
        run_id="earlier",
        targets=(ExpiryTarget(sort_key=record.sort_key, cause="unprotected"),),
        witnesses=(records(ledger)[30].sort_key,),
        policy=CONFIG.default_policy(),
        grace_hours=CONFIG.orphan_grace_hours,
    )
    execute(ledger, expire, clock.now(), snapshot_keys=expire.snapshot_keys)
    assert records(ledger)[20].status.value == "EXPIRING"
    # When GC runs while the pointer cannot be repaired
    run_gc(gc_deps(ledger, PointerWritesFail(store), clock), config=CONFIG)
    # Then its files stay (it stays EXPIRING), and go once the pointer moved
    assert records(ledger)[20].status.value == "EXPIRING"
    assert store.get(record.manifest_key)
    run_gc(gc_deps(ledger, store, clock), config=CONFIG)  # repairs; still kept this run
    run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    assert records(ledger)[20].status.value == "DELETED"
    assert_ledger_and_store_agree(ledger, store)


def test_a_pointer_copied_from_another_lineage_protects_nothing_here_and_is_replaced(
    ledger, store, clock
):
    register_at(ledger, store, clock, 10)
    latest = register_at(ledger, store, clock, 20)
    foreign = json.loads(store.get(POINTER))
    foreign |= {"stream": "payments", "partition": 9}
    store.put(POINTER, json.dumps(foreign).encode())
    clock.advance(2 * DAY)
    report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    assert records(ledger)[10].status.value == "DELETED"
    assert report.lineages[0].pointer is not None
    assert report.lineages[0].pointer.state == "foreign"
    assert pointer_names(store) == (20, latest)


def test_the_member_generation_json_names_is_kept(ledger, store, clock):
    # Given a stream snapshot of orders/3 alone (generation.json names its member at 10),
    # later snapshots, and a policy that keeps no generation's members for their own sake
    streams = stream_log(ledger)
    default = CONFIG.default_policy()
    set_policy(streams, "orders", {"min_generations": 0}, default=default, clock=clock)
    number = generations.request_stream_snapshot(streams, "orders", [3], clock=clock)
    key = write_snapshot(store, "orders", 3, 10, generation=number.generation.generation)
    member = register_manifest(
        key, ledger=ledger, store=store, clock=clock, streams=streams, layouts=NATIVE_ONLY
    )
    assert member.generation_completed
    register_at(ledger, store, clock, 20)
    register_at(ledger, store, clock, 30)
    clock.advance(2 * DAY)
    # When GC runs
    report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    # Then the member is kept because generation.json names it; 20 goes
    [lineage] = report.to_dict()["lineages"]
    assert {k["lsn"]: k["reasons"] for k in lineage["kept"]}[10] == ["named_by_generation_json"]
    assert {lsn: r.status.value for lsn, r in records(ledger).items()} == {
        10: "REGISTERED",
        20: "DELETED",
        30: "REGISTERED",
    }
