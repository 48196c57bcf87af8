"""A real Restate 1.7.12 cluster managed by snapledger, unchanged: its snapshots registered
from the bucket's arrivals, retained by snapledger's policy, Restate's own evictions
noticed, a corrupt latest healed, a chosen snapshot restored from, and another cluster's
snapshot in the same prefix rejected. After each, the node's partition store is wiped and
every key must answer its last value.

The cluster writes into moto's S3 server (harness.py); the ledger is DynamoDB Local; the
arrivals reach the register function through the local router (S3 event notifications,
as the bucket sends them in AWS). The tests run in file order and build on each other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest

from snapledger.adapters.object_store import open_object_store
from snapledger.clock import ManualClock
from snapledger.gc_settings import GcConfig
from snapledger.local.handlers import HANDLERS
from snapledger.local.router import Router
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.runtime import Runtime, runtime_override
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from snapledger.services.queries import iter_snapshots
from snapledger.services.restate_heal import restore_from_chosen
from snapledger.strategies.catalog import LayoutCatalog
from tests.functions.support import POWERTOOLS_ENV
from tests.gc.support import events_of, gc_deps
from tests.restate.fixtures import write_restate_snapshot
from tests.restate.harness import BUCKET, PREFIX, RestateHarness
from tests.support import create_ledger, local_client, make_runtime

pytestmark = [pytest.mark.restate, pytest.mark.slow, pytest.mark.ddblocal]

STREAM = "payments"
LAYOUTS = LayoutCatalog.of({PREFIX: STREAM})
PARTITIONS = 2
#: Restate keeps 4 (num-retained); snapledger's policy keeps 2 newest, none younger than 1 h.
NUM_RETAINED = 4
POLICY = GcConfig(default_min_count=2, default_min_age_hours=1)
KEEP_ALL = GcConfig(default_min_count=50, default_min_age_hours=1)
KEYS = 80


@dataclass
class World:
    restate: RestateHarness
    rt: Runtime
    router: Router
    clock: ManualClock
    values: dict[str, str]
    timings: dict[str, float]

    def register_arrivals(self) -> list[tuple[str, str, str | None]]:
        """Deliver every new metadata.json as S3 would: (key, outcome, reason) each."""
        answers = self.router.scan(settled=True)
        return [(r["key"], r["outcome"], r.get("reason")) for a in answers for r in a["records"]]

    def records(self, partition: int) -> list[Any]:
        lineage = LineageId(stream=STREAM, partition=partition)
        return list(iter_snapshots(self.rt.ledger, lineage))

    def gc(self, config: GcConfig) -> Any:
        deps = replace(gc_deps(self.rt.ledger, self.rt.store, self.clock), layouts=self.rt.layouts)
        return run_gc(deps, config=config)

    def put_round(self, version: str) -> None:
        values = {f"key-{i:03d}": f"{i}-{version}" for i in range(KEYS)}
        self.restate.put_many(values)
        self.values.update(values)

    def latest(self, partition: int) -> dict[str, Any]:
        return self.restate.read_json(f"{PREFIX}/{partition}/latest.json")  # type: ignore[no-any-return]

    def restart_wiped(self) -> None:
        self.restate.restart_wiped()

    def every_key_right(self, *, within_s: float = 90) -> float:
        """Seconds until every key answers its last value (a partition that is failing
        to restore answers nothing, or times out, until it recovers)."""
        return self.restate.wait_every_key(self.values, within_s=within_s)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, dynamodb_local: Any) -> Iterator[World]:
    harness = RestateHarness(
        tmp_path_factory.mktemp("restate-e2e"),
        partitions=PARTITIONS,
        num_retained=NUM_RETAINED,
    )
    with harness, pytest.MonkeyPatch.context() as env:
        for name, value in POWERTOOLS_ENV.items():
            env.setenv(name, value)
        ledger = create_ledger(local_client(dynamodb_local.endpoint_url))
        store = open_object_store(f"s3://{BUCKET}", s3_client=harness.s3)
        clock = ManualClock()
        rt = make_runtime(
            ledger, store, clock, layouts={PREFIX: {"layout": "restate", "stream": STREAM}}
        )
        world_timings: dict[str, float] = {}
        with runtime_override(rt):
            yield World(harness, rt, Router(store, HANDLERS, rt.layouts), clock, {}, world_timings)
        print(f"\nrestate end-to-end timings (s): {harness.timings} {world_timings}")


def test_snapshots_are_registered_retained_by_policy_and_a_wiped_node_restores(world):
    # Given four rounds of writes, each followed by a snapshot of every partition
    for round_ in range(4):
        world.put_round(f"v{round_}")
        world.restate.create_snapshots()
    # When the bucket's arrivals reach the register function
    answers = world.register_arrivals()
    # Then every snapshot Restate wrote is registered, none rejected
    assert answers and {outcome for _, outcome, _ in answers} <= {"became_latest", "recorded"}
    on_bucket = {o.key for o in world.restate.list_bucket() if o.key.endswith("/metadata.json")}
    assert {key for key, _, _ in answers} == on_bucket
    for partition in range(PARTITIONS):
        registered = [r for r in world.records(partition) if r.status is SnapshotStatus.REGISTERED]
        assert len(registered) == NUM_RETAINED
        assert {r.format for r in registered} == {"restate"}
        head = world.rt.ledger.get_head(LineageId(stream=STREAM, partition=partition))
        assert head.latest_snapshot_id == world.latest(partition)["snapshot_id"]

    # Given a hold on partition 0's oldest, and the policy keeping the 2 newest
    oldest = min(world.records(0), key=lambda r: r.lsn)
    lineage0 = LineageId(stream=STREAM, partition=0)
    hold_snapshot(world.rt.ledger, lineage0, oldest.snapshot_id, clock=world.clock, by="ops")
    world.clock.advance(timedelta(hours=2))
    # When GC runs
    report = world.gc(POLICY)
    assert not report.failed, json.dumps(report.to_dict(), default=str)[:3000]
    # Then each partition keeps its 2 newest (and partition 0 its held one); the rest are
    # deleted from the bucket and dropped from Restate's latest.json
    for partition in range(PARTITIONS):
        live = sorted(
            (r for r in world.records(partition) if r.status is SnapshotStatus.REGISTERED),
            key=lambda r: r.lsn,
        )
        expected = 3 if partition == 0 else 2
        assert len(live) == expected, [(r.lsn, r.status) for r in world.records(partition)]
        retained = [e["snapshot_id"] for e in world.latest(partition)["retained_snapshots"]]
        assert sorted(retained) == sorted(r.snapshot_id for r in live)
        folders = {
            o.key.rsplit("/", 1)[0] for o in world.restate.list_bucket(f"{PREFIX}/{partition}/")
        }
        assert {r.manifest_key.rsplit("/", 1)[0] for r in live} <= folders
        deleted = [r for r in world.records(partition) if r.status is SnapshotStatus.DELETED]
        assert deleted and not any(r.manifest_key.rsplit("/", 1)[0] in folders for r in deleted)
    assert oldest.snapshot_id in [r.snapshot_id for r in world.records(0) if r.holds]

    # And a node whose partition store is wiped restores every key from what is left
    world.put_round("after-gc")  # in the log only
    world.restart_wiped()
    world.timings["restore_after_gc"] = world.every_key_right()


def test_restates_own_eviction_is_noticed_and_recorded(world):
    # Given more snapshots than Restate retains, registered as they land
    for round_ in range(NUM_RETAINED + 1):
        world.put_round(f"evict-{round_}")
        world.restate.create_snapshots()
        world.register_arrivals()
    # When GC runs under a policy that would keep them all
    report = world.gc(KEEP_ALL)
    assert not report.failed
    # Then the snapshots Restate evicted are DELETED with their cause, and the run says
    # that Restate's num-retained undercuts the policy
    for partition in range(PARTITIONS):
        evicted = [r for r in world.records(partition) if r.expiry_cause == "evicted_by_producer"]
        assert evicted, f"partition {partition}: no eviction noticed"
        assert all(r.status is SnapshotStatus.DELETED for r in evicted)
    notes = [n for lineage in report.lineages for n in lineage.notes]
    assert any("num-retained" in note for note in notes)
    assert report.counts()["errors"] == 0


def test_a_corrupt_sst_in_the_latest_is_healed_and_the_partition_recovers(world):
    # Given partition 1's latest snapshot with one SST truncated, writes after it in the
    # log, and the node wiped: partition 1 cannot restore (its processor retries)
    latest = world.latest(1)
    folder = f"{PREFIX}/1/{latest['path']}/"
    sst = next(o for o in world.restate.list_bucket(folder) if o.key.endswith(".sst"))
    body = world.restate.read_object(sst.key)
    world.restate.s3.put_object(Bucket=BUCKET, Key=sst.key, Body=body[: len(body) // 2])
    world.put_round("after-corruption")
    world.restart_wiped()
    # (Restate's own words, seen with 1.7.12: "open failed due to snapshot-related error:
    # Downloaded partition 1 snapshot snap_... component file "000031.sst" has unexpected
    # size")
    failing = f"partition 1 snapshot {latest['snapshot_id']}"
    deadline = time.monotonic() + 30
    while failing not in world.restate.server_log.read_text(errors="replace"):
        assert time.monotonic() < deadline, "partition 1 never tried the corrupt snapshot"
        time.sleep(0.5)
    # When a GC run heals it
    started = time.monotonic()
    report = world.gc(POLICY)
    (healed,) = [r.heal for r in report.lineages if r.heal and r.heal.broken]
    assert healed.state == "healed" and sst.key in healed.problems[0]
    assert report.counts()["latests_broken"] == 1  # the Gc_restate_latests_broken alarm
    assert world.latest(1)["snapshot_id"] == healed.healed_to
    # Then the partition recovers on its own, every key right
    world.timings["heal_to_serving"] = world.every_key_right() + (time.monotonic() - started)
    types = [e.type for e in events_of(world.rt.ledger, STREAM, 1)]
    assert "SnapshotFoundBroken" in types and types[-1] != "SnapshotFoundBroken"
    repointed = [
        e for e in events_of(world.rt.ledger, STREAM, 1) if e.type == "ProducerLatestRepointed"
    ]
    assert (
        repointed[-1].cause == "heal"
        and repointed[-1].previous_snapshot_id == latest["snapshot_id"]
    )


def test_a_restore_from_a_chosen_snapshot_serves_every_key(world):
    # Given partition 0's oldest snapshot Restate still retains
    retained = world.latest(0)["retained_snapshots"]
    chosen = retained[-1]["snapshot_id"]
    assert chosen != world.latest(0)["snapshot_id"]
    # When an operator restores from it
    result = restore_from_chosen(
        world.rt.ledger,
        world.rt.store,
        world.clock,
        LAYOUTS.restate_for(STREAM),
        0,
        snapshot_id=chosen,
        request_id="e2e-restore",
        by="alice",
        reason="test",
    )
    assert world.latest(0)["snapshot_id"] == chosen == result.snapshot_id
    # Then a wiped node restores partition 0 from it and replays the log: every key right
    world.put_round("after-restore-choice")
    world.restart_wiped()
    world.timings["restore_from_chosen"] = world.every_key_right()
    log = world.restate.server_log.read_text(errors="replace")
    assert chosen in log
    last = [e for e in events_of(world.rt.ledger, STREAM, 0) if e.type == "ProducerLatestRepointed"]
    assert (last[-1].cause, last[-1].by) == ("restore", "alice")


def test_another_clusters_snapshot_in_the_same_prefix_is_rejected(world):
    other = write_restate_snapshot(
        world.rt.store,
        10**12,
        partition=0,
        prefix=PREFIX,
        cluster_name="another-cluster",
        fingerprint=42,
    )
    answers = world.register_arrivals()
    assert [(key, outcome) for key, outcome, _ in answers] == [
        (other.location.metadata_key, "rejected")
    ]
    reason = answers[0][2]
    assert "another-cluster" in reason and "give each its own destination" in reason
    head = world.rt.ledger.get_head(LineageId(stream=STREAM, partition=0))
    assert head.latest_snapshot_id != other.location.snapshot_id
