"""GC of Restate snapshots by snapledger's policy (no server: fixtures.py).

GC deletes an expired Restate snapshot's files and metadata.json (metadata.json last) at
the batch floor, drops it from Restate's latest.json ``retained_snapshots`` by
compare-and-swap, keeps what latest.json names whatever the policy says, and sweeps a
failed upload (no metadata.json) past the grace window; latest.json is never deleted.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from snapledger.entrypoints.register import manifest_registrar
from snapledger.errors import StaleVersionError
from snapledger.gc_settings import GcConfig
from snapledger.models.ledger import LineageId
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from snapledger.services.registration import register_manifest
from snapledger.services.restate_pointer import MAX_REWRITES
from snapledger.strategies.catalog import LayoutCatalog
from tests.gc.support import age_objects, gc_deps, records, statuses
from tests.ledger.conftest import clock, ledger, store
from tests.restate.fixtures import PREFIX, STREAM, write_latest, write_restate_snapshot
from tests.support import make_runtime

__all__ = ["clock", "ledger", "store"]

LAYOUTS = LayoutCatalog.of({PREFIX: STREAM})
LINEAGE = LineageId(stream=STREAM, partition=0)
LATEST = f"{PREFIX}/0/latest.json"
CONFIG = GcConfig(default_min_count=2, default_min_age_hours=1)
DAYS_2 = timedelta(days=2)


def deps(ledger, store, clock):
    return replace(gc_deps(ledger, store, clock), layouts=LAYOUTS)


@pytest.fixture
def four(ledger, store, clock):
    """Restate snapshots at LSN 1000..4000 of partition 0, registered; latest.json names
    4000 and retains all four (Restate's num-retained=4). Two days old."""
    written = [write_restate_snapshot(store, lsn) for lsn in (1000, 2000, 3000, 4000)]
    for w in written:
        register_manifest(
            w.location.metadata_key, ledger=ledger, store=store, clock=clock, layouts=LAYOUTS
        )
    write_latest(store, written[-1], list(reversed(written)))
    clock.advance(DAYS_2)
    return written


def retained(store) -> list[str]:
    return [e["snapshot_id"] for e in json.loads(store.get(LATEST))["retained_snapshots"]]


def keys(store) -> set[str]:
    return {info.key for info in store.list(PREFIX + "/")}


def test_gc_deletes_what_the_policy_expires_and_drops_it_from_latest_json(
    ledger, store, clock, four
):
    before = json.loads(store.get(LATEST))
    report = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert not report.failed, report.to_dict()
    assert statuses(ledger, STREAM, 0) == {
        1000: "DELETED",
        2000: "DELETED",
        3000: "REGISTERED",
        4000: "REGISTERED",
    }
    left = keys(store)
    for gone in four[:2]:
        assert not any(k.startswith(gone.location.folder) for k in left)
    for kept in four[2:]:
        assert {kept.location.metadata_key, *kept.sst_keys} <= left
    assert LATEST in left
    # latest.json: the deleted ones dropped, every other field as Restate wrote it
    after = json.loads(store.get(LATEST))
    assert retained(store) == [four[3].location.snapshot_id, four[2].location.snapshot_id]
    assert {k: v for k, v in after.items() if k != "retained_snapshots"} == {
        k: v for k, v in before.items() if k != "retained_snapshots"
    }
    assert records(ledger, STREAM, 0)[1000].objects_deleted == 3  # 2 SSTs + metadata.json


def test_what_latest_json_names_is_kept_whatever_the_policy_says(ledger, store, clock, four):
    # Restate restores from 1000 (healed, or an operator's choice): kept, though the
    # policy would delete it; 2000 is not named and goes
    write_latest(store, four[0], list(reversed(four)))
    report = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert not report.failed, report.to_dict()
    assert statuses(ledger, STREAM, 0)[1000] != "DELETED"
    assert statuses(ledger, STREAM, 0)[2000] == "DELETED"
    assert four[0].location.metadata_key in keys(store)
    assert four[0].location.snapshot_id in retained(store)
    lineage = report.lineages[0].to_dict()
    assert "named_by_latest_json" in json.dumps(lineage)


def test_a_held_restate_snapshot_is_kept(ledger, store, clock, four):
    hold_snapshot(ledger, LINEAGE, four[0].location.snapshot_id, clock=clock, reason="audit")
    run_gc(deps(ledger, store, clock), config=CONFIG)
    assert statuses(ledger, STREAM, 0)[1000] == "REGISTERED"
    assert statuses(ledger, STREAM, 0)[2000] == "DELETED"
    assert four[0].location.snapshot_id in retained(store)


def test_a_lost_race_with_restate_reads_latest_json_again(ledger, store, clock, four):
    """Restate writes latest.json (a new snapshot) between GC's read and its write: the
    write's If-Match fails, GC reads Restate's version and drops from that one."""
    fifth = write_restate_snapshot(store, 5000)

    class RestateWritesFirst:
        def __init__(self, inner):
            self.inner, self.raced = inner, False

        def replace(self, key, data, *, if_match):
            if key == LATEST and not self.raced:
                self.raced = True
                write_latest(self.inner, fifth, [fifth, *reversed(four)])
            return self.inner.replace(key, data, if_match=if_match)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    racing = RestateWritesFirst(store)
    report = run_gc(deps(ledger, racing, clock), config=CONFIG)
    assert racing.raced and not report.failed, report.to_dict()
    after = json.loads(store.get(LATEST))
    assert after["snapshot_id"] == fifth.location.snapshot_id  # Restate's write stands
    assert retained(store) == [
        fifth.location.snapshot_id,
        four[3].location.snapshot_id,
        four[2].location.snapshot_id,
    ]


class LosesEveryRace:
    """The store, but every compare-and-swap of latest.json is lost (Restate wrote
    first, each time); counts the attempts."""

    def __init__(self, inner, *, lose=True):
        self.inner, self.lose, self.attempts = inner, lose, 0

    def replace(self, key, data, *, if_match):
        if key == LATEST:
            self.attempts += 1
            if self.lose:
                raise StaleVersionError(f"{key} changed (test)")
        return self.inner.replace(key, data, if_match=if_match)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_drop_that_lost_every_race_is_finished_by_the_next_run(ledger, store, clock, four):
    # Given a run whose drop from retained_snapshots loses every compare-and-swap
    losing = LosesEveryRace(store)
    first = run_gc(deps(ledger, losing, clock), config=CONFIG)
    assert losing.attempts == MAX_REWRITES
    assert statuses(ledger, STREAM, 0)[1000] == statuses(ledger, STREAM, 0)[2000] == "DELETED"
    assert any("the next run drops them" in e for e in first.lineages[0].errors)
    assert retained(store) == [w.location.snapshot_id for w in reversed(four)]  # stale
    # When the next run, which deletes nothing, runs
    counting = LosesEveryRace(store, lose=False)
    second = run_gc(deps(ledger, counting, clock), config=CONFIG)
    # Then it drops the entries snapledger deleted, in one write, and says so
    assert not second.failed and second.counts()["snapshots_deleted"] == 0, second.to_dict()
    assert counting.attempts == 1
    assert retained(store) == [four[3].location.snapshot_id, four[2].location.snapshot_id]
    (note,) = second.lineages[0].notes
    assert four[0].location.snapshot_id in note and four[1].location.snapshot_id in note
    # And a run with nothing stale writes nothing
    third = LosesEveryRace(store, lose=False)
    assert run_gc(deps(ledger, third, clock), config=CONFIG).lineages[0].notes == []
    assert third.attempts == 0


def test_entries_restate_evicted_or_the_ledger_does_not_know_are_left(ledger, store, clock, four):
    """Only an entry whose record is DELETED by snapledger is stale: one evicted by Restate
    (recorded evicted_by_producer) or one with no record stays as Restate wrote it."""
    unknown = write_restate_snapshot(store, 4500)  # Restate's newest, not registered yet
    store.delete_many([info.key for info in store.list(four[0].location.folder)])  # evicted
    write_latest(store, four[3], [unknown, *reversed(four)])
    before = store.get(LATEST)
    keep_four = GcConfig(default_min_count=4, default_min_age_hours=1)
    for _ in range(2):  # the second run reads 1000's record DELETED (evicted)
        report = run_gc(deps(ledger, store, clock), config=keep_four)
        assert not report.lineages[0].errors, report.to_dict()
        assert store.get(LATEST) == before
    assert records(ledger, STREAM, 0)[1000].expiry_cause == "evicted_by_producer"


def test_an_unreadable_latest_json_stops_the_lineages_deletions(ledger, store, clock, four):
    store.put(LATEST, b"{not json")
    report = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert report.failed
    assert set(statuses(ledger, STREAM, 0).values()) == {"REGISTERED"}
    assert all(w.location.metadata_key in keys(store) for w in four)
    assert store.get(LATEST) == b"{not json"


def test_a_failed_upload_is_swept_after_the_grace_window_and_latest_json_never(
    ledger, store, clock, four
):
    failed = write_restate_snapshot(store, 4500, metadata=False)  # SSTs, no metadata.json
    store.put(f"{PREFIX}/0/stray-not-a-snapshot.txt", b"left alone")
    age_objects(store, failed.location.folder, clock.now() - timedelta(hours=23))
    report = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert failed.sst_keys[0] in keys(store)  # within the 24 h grace window: in flight
    age_objects(store, failed.location.folder, clock.now() - timedelta(hours=25))
    report = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert not report.failed, report.to_dict()
    left = keys(store)
    assert not any(k.startswith(failed.location.folder) for k in left)
    assert {LATEST, f"{PREFIX}/0/stray-not-a-snapshot.txt"} <= left


def test_a_partition_with_no_registered_snapshot_has_its_failed_uploads_swept_too(
    ledger, store, clock
):
    """No HEAD (nothing ever registered): the unledgered sweep lists the Restate prefix."""
    # Given partition 1, never registered: an old failed upload, a recent one, an old
    # folder whose metadata.json never reached the ledger, and Restate's latest.json
    old = write_restate_snapshot(store, 10, partition=1, metadata=False)
    recent = write_restate_snapshot(store, 20, partition=1, metadata=False)
    unregistered = write_restate_snapshot(store, 30, partition=1)
    write_latest(store, unregistered, [unregistered])
    age_objects(store, f"{PREFIX}/1/", clock.now() - timedelta(hours=48))
    age_objects(store, recent.location.folder, clock.now() - timedelta(hours=1))
    runtime = make_runtime(
        ledger, store, clock, layouts={PREFIX: {"layout": "restate", "stream": STREAM}}
    )
    sweeping = replace(deps(ledger, store, clock), register=manifest_registrar(runtime))
    # When GC runs
    report = run_gc(sweeping, config=CONFIG)
    # Then only the old failed upload went; the folder with a metadata.json was registered
    assert not report.failed, report.to_dict()
    assert sorted((o.prefix, o.action) for o in report.orphans) == [
        (old.location.folder, "deleted"),
        (recent.location.folder, "in_flight"),
        (unregistered.location.folder, "registered"),
    ]
    left = keys(store)
    assert not any(k.startswith(old.location.folder) for k in left)
    assert set(recent.sst_keys) | {unregistered.location.metadata_key} <= left
    assert f"{PREFIX}/1/latest.json" in left  # never deleted
    assert statuses(ledger, STREAM, 1) == {10: "DELETED", 30: "REGISTERED"}


def test_each_gc_run_heals_a_broken_latest_before_it_plans(ledger, store, clock, four):
    """latest.json names 4000, whose SST was truncated: the run repoints it to 3000, counts
    the broken latest (the alarm's metric), and deletes nothing heal or Restate needs."""
    victim = four[3].sst_keys[0]
    store.put(victim, store.get(victim)[:-5])
    report = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert not report.failed, report.to_dict()
    (lineage,) = report.lineages
    assert lineage.heal.state == "healed" and lineage.heal.healed_to == four[2].location.snapshot_id
    assert report.counts()["latests_broken"] == 1 and report.counts()["latests_healed"] == 1
    assert json.loads(store.get(LATEST))["snapshot_id"] == four[2].location.snapshot_id
    assert statuses(ledger, STREAM, 0)[3000] == "REGISTERED"  # what latest.json now names
    assert victim in keys(store)  # nothing deleted by healing (4000 is the ledger's latest)
    again = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert again.lineages[0].heal.state == "healthy"
    assert again.counts()["latests_broken"] == 0


def test_a_broken_latest_healed_does_not_count_toward_min_count(ledger, store, clock, four):
    """min count 2, the latest (4000) broken and healed to 3000: 3000 and 2000 are the
    newest two restorable, so only 1000 goes; the dry run says so before the run."""
    victim = four[3].sst_keys[0]
    store.put(victim, store.get(victim)[:-5])
    expected = [
        (4000, ["latest", "broken_not_counted"]),
        (3000, ["newest"]),
        (2000, ["newest"]),
    ]
    (dry,) = run_gc(deps(ledger, store, clock), config=CONFIG, dry_run=True).to_dict()["lineages"]
    assert [(k["lsn"], k["reasons"]) for k in dry["kept"]] == expected
    assert [d["lsn"] for d in dry["deleted"]] == [1000]
    report = run_gc(deps(ledger, store, clock), config=CONFIG)
    assert not report.failed, report.to_dict()
    (lineage,) = report.to_dict()["lineages"]
    assert [(k["lsn"], k["reasons"]) for k in lineage["kept"]] == expected
    assert lineage["kept"][0]["broken"]  # the files at fault, as heal found them
    assert statuses(ledger, STREAM, 0) == {
        1000: "DELETED",
        2000: "REGISTERED",
        3000: "REGISTERED",
        4000: "REGISTERED",
    }
    assert retained(store) == [w.location.snapshot_id for w in reversed(four[1:])]


def test_a_snapshot_restate_evicted_itself_is_recorded_deleted_with_its_cause(
    ledger, store, clock, four
):
    """Restate (num-retained=3 here) deleted 1000's files and dropped it from latest.json;
    snapledger's policy (keep 4) wanted it: recorded DELETED, evicted_by_producer, and the
    run says to raise num-retained. Not an error."""
    store.delete_many([info.key for info in store.list(four[0].location.folder)])
    write_latest(store, four[3], list(reversed(four[1:])))
    keep_four = GcConfig(default_min_count=4, default_min_age_hours=1)
    report = run_gc(deps(ledger, store, clock), config=keep_four)
    assert not report.failed and report.counts()["errors"] == 0, report.to_dict()
    record = records(ledger, STREAM, 0)[1000]
    assert (record.status.value, record.expiry_cause) == ("DELETED", "evicted_by_producer")
    assert "Restate evicted it" in record.expiry_reason
    (note,) = report.lineages[0].notes
    assert four[0].location.snapshot_id in note and "num-retained" in note
    assert statuses(ledger, STREAM, 0) == {
        1000: "DELETED",
        2000: "REGISTERED",
        3000: "REGISTERED",
        4000: "REGISTERED",
    }
    assert run_gc(deps(ledger, store, clock), config=keep_four).lineages[0].notes == []
