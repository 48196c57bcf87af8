"""GC of a Fluss table's KV snapshots (the fluss-kv layout) composes with Fluss's own
retention: snapledger's policy decides, ZooKeeper's node of an expired snapshot is dropped
before any of its files, ZooKeeper's latest is kept, the files of a snapshot ZooKeeper lists
that the ledger has not registered are neither deleted nor swept, and Fluss's own drops are
recorded. ZooKeeper here is the in-memory FlussSnapshotNodes; tests/fluss runs the real one."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from snapledger.gc_settings import GcConfig
from snapledger.layouts.layout_map import layout_map
from snapledger.services.gc import run_gc
from snapledger.services.registration import Outcome, register_manifests
from snapledger.strategies.catalog import LayoutCatalog
from tests.fluss.fluss_tree import PREFIX, STREAM, TABLE_ID, FlussBucket, MemoryNodes
from tests.gc.support import age_objects, events_of, gc_deps, records, statuses
from tests.ledger.conftest import clock, ledger, store

__all__ = ["clock", "ledger", "store"]

CONFIG = GcConfig(default_min_count=1, default_min_age_hours=1)
MAP = layout_map({PREFIX: {"layout": "fluss-kv", "stream": STREAM}})


class Logged:
    """The store, every delete written into the nodes' call log (one order for both)."""

    def __init__(self, inner, log: list) -> None:
        self.inner, self.log = inner, log

    def delete_many(self, keys):
        self.log += [("delete", key) for key in keys]
        return self.inner.delete_many(keys)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def chain(store, nodes: MemoryNodes, count: int) -> tuple[FlussBucket, list[str], list[str]]:
    """``count`` snapshots of bucket 0, each adding one SST to the one before's (the first
    two SSTs of snap-0 are merged away by snap-2: compaction): the SSTs and the keys."""
    bucket = FlussBucket(store)
    ssts = [bucket.new_sst(f"sst {i}".encode() * 10) for i in range(count + 1)]
    keys = []
    for n in range(count):
        used = ssts[: n + 2] if n < 2 else ssts[2 : n + 2]
        keys.append(bucket.snapshot(n, used, log_offset=100 * (n + 1)))
        nodes.add(TABLE_ID, 0, n)
    return bucket, ssts, keys


def aged_chain(ledger, store, clock, count: int):
    """``chain`` registered, then two days old."""
    nodes = MemoryNodes()
    bucket, ssts, keys = chain(store, nodes, count)
    answers = register(keys, ledger, store, clock)
    assert {a.outcome for a in answers} == {Outcome.BECAME_LATEST}
    clock.advance(timedelta(days=2))
    age_objects(store, bucket.root, clock.now() - timedelta(days=2))
    return nodes, bucket, ssts


def collect(ledger, store, clock, nodes, log=None):
    layouts = LayoutCatalog(MAP, {"fluss-kv": {"nodes": nodes}})
    deps = replace(
        gc_deps(ledger, Logged(store, log if log is not None else []), clock), layouts=layouts
    )
    return run_gc(deps, config=CONFIG)


def register(keys, ledger, store, clock):
    layouts = LayoutCatalog(MAP)
    return register_manifests(keys, ledger=ledger, store=store, clock=clock, layouts=layouts)


def present(store, bucket: FlussBucket) -> set[str]:
    return {info.key.removeprefix(bucket.root) for info in store.list(bucket.root)}


def test_gc_drops_each_expired_snapshots_node_before_its_files_and_keeps_what_the_rest_use(
    ledger, store, clock
):
    # Given 4 registered bucket snapshots sharing SSTs, all listed in ZooKeeper, 2 days old
    nodes, bucket, ssts = aged_chain(ledger, store, clock, 4)

    # When GC runs with min count 1
    log = nodes.calls
    report = collect(ledger, store, clock, nodes, log)

    # Then snap-0..2 are deleted, their nodes dropped before any of their files
    assert not report.failed, report.to_dict()
    assert statuses(ledger, STREAM, 0) == {
        0: "DELETED",
        1: "DELETED",
        2: "DELETED",
        3: "REGISTERED",
    }
    assert sorted(nodes.nodes[(TABLE_ID, 0)]) == [3]
    first_delete = next(i for i, call in enumerate(log) if call[0] == "delete")
    drops = [i for i, call in enumerate(log) if call[0] == "drop"]
    assert [log[i][2] for i in drops] == [0, 1, 2] and max(drops) < first_delete
    # and snap-3's files all stay: its own, and the shared SSTs it uses (2..4); 0 and 1 go
    left = present(store, bucket)
    assert {f"shared/{s}" for s in ssts[2:5]} <= left
    assert not {f"shared/{s}" for s in ssts[:2]} & left
    assert {k for k in left if k.startswith("snap-")} == {
        k for k in left if k.startswith("snap-3/")
    }


def test_the_files_of_a_snapshot_zookeeper_lists_but_the_ledger_lacks_stay(ledger, store, clock):
    # Given snap-0..2 registered, and snap-3 committed by Fluss (its node, its _METADATA)
    # but not registered yet: it still uses snap-1's old SSTs
    nodes = MemoryNodes()
    bucket, ssts, keys = chain(store, nodes, 3)
    register(keys, ledger, store, clock)
    late = bucket.snapshot(3, ssts[:4], log_offset=400)
    nodes.add(TABLE_ID, 0, 3)
    clock.advance(timedelta(days=2))
    age_objects(store, bucket.root, clock.now() - timedelta(days=2))

    report = collect(ledger, store, clock, nodes)

    # Then snap-0 and snap-1 go, but every file snap-3 uses stays, its folder too
    assert not report.failed, report.to_dict()
    assert statuses(ledger, STREAM, 0) == {0: "DELETED", 1: "DELETED", 2: "REGISTERED"}
    left = present(store, bucket)
    assert {f"shared/{s}" for s in ssts[:4]} <= left
    assert any(k.startswith("snap-3/") for k in left)
    # and, once registered, it is the latest like any other
    (answer,) = register([late], ledger, store, clock)
    assert answer.outcome is Outcome.BECAME_LATEST


def test_a_snapshot_fluss_dropped_itself_is_recorded_and_its_node_never_touched(
    ledger, store, clock
):
    nodes = MemoryNodes()
    bucket, _, keys = chain(store, nodes, 3)
    register(keys, ledger, store, clock)
    # Fluss's own retention dropped snap-0: its node, then its folder
    nodes.drop(TABLE_ID, 0, 0)
    store.delete_many([info.key for info in store.list(f"{bucket.root}snap-0/")])
    nodes.calls.clear()

    report = collect(ledger, store, clock, nodes)  # everything is young: nothing expires

    assert not report.failed, report.to_dict()
    assert statuses(ledger, STREAM, 0)[0] == "DELETED"
    assert "snap-0 was dropped by Fluss though snapledger's policy keeps it (too_young)" in str(
        report.to_dict()
    )
    assert "SnapshotEvicted" in [e.type for e in events_of(ledger, STREAM, 0)]
    assert not [call for call in nodes.calls if call[0] == "drop"]


def test_without_zookeeper_nothing_of_a_fluss_table_is_collected_and_the_run_says_why(
    ledger, store, clock
):
    _, bucket, _ = aged_chain(ledger, store, clock, 3)
    before = present(store, bucket)

    deps = replace(gc_deps(ledger, store, clock), layouts=LayoutCatalog(MAP))
    report = run_gc(deps, config=CONFIG)

    assert "SNAPLEDGER_FLUSS_ZOOKEEPER" in str(report.to_dict())
    assert present(store, bucket) == before
    assert set(statuses(ledger, STREAM, 0).values()) == {"REGISTERED"}


def test_a_dry_run_drops_no_node_and_deletes_nothing(ledger, store, clock):
    nodes, bucket, _ = aged_chain(ledger, store, clock, 3)
    before = present(store, bucket)

    layouts = LayoutCatalog(MAP, {"fluss-kv": {"nodes": nodes}})
    report = run_gc(
        replace(gc_deps(ledger, store, clock), layouts=layouts), config=CONFIG, dry_run=True
    )

    assert not report.failed, report.to_dict()
    assert sorted(nodes.nodes[(TABLE_ID, 0)]) == [0, 1, 2]
    assert present(store, bucket) == before
    assert "a run drops the ZooKeeper nodes of snap-0, snap-1" in str(report.to_dict())


def damage(store, bucket: FlussBucket, sst: str) -> str:
    key = f"{bucket.root}shared/{sst}"
    store.put(key, b"torn")
    return key


def test_a_damaged_shared_sst_marks_every_snapshot_using_it_and_heal_falls_back_past_them(
    ledger, store, clock
):
    # Given 4 registered snapshots; SST 3 is used by snap-2 and snap-3 (ZooKeeper's latest)
    nodes = MemoryNodes()
    bucket, ssts, keys = chain(store, nodes, 4)
    register(keys, ledger, store, clock)
    torn = damage(store, bucket, ssts[3])

    # When GC runs
    report = collect(ledger, store, clock, nodes)

    # Then heal names the file and both snapshots it breaks, records both broken, and drops
    # their nodes so that Fluss restores from snap-1
    assert not report.failed, report.to_dict()
    (heal,) = [lineage.to_dict()["heal"] for lineage in report.lineages]
    assert heal["state"] == "healed" and heal["healed_to"] == "snap-1"
    assert heal["breaks"] == {torn: ["snap-2", "snap-3"]}
    assert heal["dropped"] == ["snap-2", "snap-3"]
    assert sorted(nodes.nodes[(TABLE_ID, 0)]) == [0, 1]
    broken = {r.snapshot_id: r.broken for r in records(ledger, STREAM, 0).values()}
    assert broken["snap-2"] and broken["snap-3"] and "4 bytes in the store" in broken["snap-3"][0]
    assert not broken["snap-1"] and not broken["snap-0"]
    assert "ProducerLatestRepointed" in [e.type for e in events_of(ledger, STREAM, 0)]
    # and a later run, two days on, keeps snap-1 (Fluss's latest now) and the broken latest
    clock.advance(timedelta(days=2))
    age_objects(store, bucket.root, clock.now() - timedelta(days=2))
    report = collect(ledger, store, clock, nodes)
    assert not report.failed, report.to_dict()
    assert statuses(ledger, STREAM, 0) == {
        0: "DELETED",
        1: "REGISTERED",
        2: "DELETED",
        3: "REGISTERED",
    }


def test_heal_refuses_a_fallback_the_log_may_no_longer_cover_and_drops_nothing(
    ledger, store, clock
):
    nodes = MemoryNodes()
    bucket, ssts, keys = chain(store, nodes, 3)
    register(keys[:2], ledger, store, clock)
    clock.advance(timedelta(days=7))  # Fluss's table.log.ttl since snap-0 and snap-1
    register(keys[2:], ledger, store, clock)
    damage(store, bucket, ssts[3])  # used by snap-2 alone

    report = collect(ledger, store, clock, nodes)

    (heal,) = [lineage.to_dict()["heal"] for lineage in report.lineages]
    assert heal["state"] == "unhealed", heal
    assert "table.log.ttl" in heal["note"] and "snap-1 was registered 7 days" in heal["note"]
    assert "dropped" not in heal and {1, 2} <= set(nodes.nodes[(TABLE_ID, 0)])
    assert records(ledger, STREAM, 0)[2].broken


def test_a_snapshot_whose_log_offset_goes_back_is_named_in_the_run_and_nothing_else_changes(
    ledger, store, clock
):
    # Given snap-0 at log_offset 500, snap-1 at 100 (not as Fluss writes), snap-2 at 600
    nodes, bucket = MemoryNodes(), FlussBucket(store)
    ssts = [bucket.new_sst(bytes([i]) * 10) for i in range(3)]
    keys = [
        bucket.snapshot(n, [ssts[n]], log_offset=offset) for n, offset in enumerate((500, 100, 600))
    ]
    for n in range(3):
        nodes.add(TABLE_ID, 0, n)
    register(keys, ledger, store, clock)
    # When GC runs
    report = collect(ledger, store, clock, nodes)
    # Then its report names snap-1 against snap-0, and only it
    notes = [n for r in report.lineages for n in r.notes if "log_offset" in n]
    assert notes == [
        "snap-1's log_offset 100 is below snap-0's 500: Fluss's log offsets only grow in a "
        "bucket, so its _METADATA is not as Fluss wrote it; check it before the bucket "
        "restores from it"
    ]
    assert not report.failed
