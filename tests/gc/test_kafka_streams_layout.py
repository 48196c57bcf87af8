"""The kafka-streams layout: what registration checks, and what retention counts.

A Kafka Streams changelog topic's snapshots (issue 38): native keys and pointer; registered
only as RocksDB store folders whose offsets name the topic-partition; counted by retention
only while the changelog can continue them (DESIGN invariant 14).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.core.gc_rules import restorable_newer
from snapledger.core.retention import plan
from snapledger.errors import InvalidRequestError
from snapledger.gc_settings import GcConfig
from snapledger.layouts.restate_keys import SST_MAGIC_BYTES
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.models.manifest import ManifestV1
from snapledger.models.policy import RetentionPolicy
from snapledger.models.snapshot import ChangelogHorizon
from snapledger.services.gc import run_gc
from snapledger.services.registration import Outcome, register_manifest
from snapledger.settings import ENV_KAFKA_STREAMS_STREAMS, LedgerSettings, settings_from_env
from snapledger.strategies.catalog import LayoutCatalog
from tests.gc.builders import T0, head_for, record
from tests.gc.support import gc_deps, statuses
from tests.support import manifest_document, moto_ledger, write_snapshot

TOPIC = "totals-app-totals-changelog"
LAYOUTS = LayoutCatalog.of(kafka_streams=[TOPIC])
SST = b"rocksdb table data" + SST_MAGIC_BYTES
DAY_MS = 86_400_000


@pytest.fixture
def store(tmp_path: Path) -> FileObjectStore:
    return FileObjectStore(tmp_path / "root")


@pytest.fixture
def ledger() -> Iterator[Any]:
    with moto_ledger() as moto:
        yield moto


def ks_snapshot(store: FileObjectStore, lsn: int = 41, **overrides: Any) -> str:
    files = overrides.pop("files", {"000012.sst": SST, "CURRENT": b"MANIFEST-5\n"})
    fields: dict[str, Any] = {
        "format": "opaque",
        "offsets": {f"{TOPIC}-2": lsn},
        "created_at": "2026-01-09T12:00:00Z",
        "changelog": {"log_start_offset": 0, "end_offset": lsn + 1, "delete_retention_ms": DAY_MS},
    }
    fields.update(overrides)
    return write_snapshot(store, TOPIC, 2, lsn, files=files, **fields)


def register(key: str, ledger: Any, store: FileObjectStore, layouts: LayoutCatalog = LAYOUTS):
    return register_manifest(key, ledger=ledger, store=store, clock=ManualClock(), layouts=layouts)


def test_a_kafka_streams_snapshot_is_registered_with_its_changelog_horizon(ledger, store):
    # Given a RocksDB store folder snapshotted at changelog offset 41
    key = ks_snapshot(store)
    # When it is registered
    result = register(key, ledger, store)
    # Then it is the latest, snapledger published latest.json, and the record keeps the
    # changelog's horizon with when it was read
    assert result.outcome is Outcome.BECAME_LATEST, result.reason
    assert store.get(f"snapshots/{TOPIC}/2/latest.json")
    record = ledger.find_snapshot(LineageId(stream=TOPIC, partition=2), result.snapshot_id)
    assert record.changelog == ChangelogHorizon(
        log_start_offset=0,
        end_offset=42,
        delete_retention_ms=DAY_MS,
        read_at=T0 - timedelta(hours=12),
    )


def test_a_snapshot_naming_its_input_offsets_is_registered_with_them(ledger, store):
    # Given a store folder whose offsets also name the input offset its state reflects (a
    # generation-capable application's position header)
    offsets = {f"{TOPIC}-2": 41, "orders-2": 7}
    # When it is registered
    result = register(ks_snapshot(store, offsets=offsets), ledger, store)
    # Then it is accepted and its record keeps both
    assert result.outcome is Outcome.BECAME_LATEST, result.reason
    record = ledger.find_snapshot(LineageId(stream=TOPIC, partition=2), result.snapshot_id)
    assert record.offsets == offsets


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"format": "kv-parquet"}, "opaque"),  # the native check refuses it first
        ({"offsets": {f"{TOPIC}-2": 40}}, "not exactly"),
        ({"offsets": {f"{TOPIC}-2": 41, f"{TOPIC}-3": 7}}, "not exactly"),
        ({"offsets": {"orders-2": 7}}, "not exactly"),
        ({"offsets": None}, "not exactly"),
        ({"files": {"1.sst": SST, "rocksdb/totals/2.sst": SST}}, "in a sub-folder"),
        ({"files": {"1.sst": b"x" * 64}}, "block-based table magic"),
        ({"files": {"1.sst": b"abc"}}, "truncated"),
        (
            {"changelog": {"log_start_offset": 0, "end_offset": 41}},
            "not below changelog.end_offset",
        ),
        ({"created_at": None}, "without created_at"),
    ],
)
def test_registration_rejects_what_is_no_kafka_streams_store_folder(
    ledger, store, overrides, reason
):
    # Given a snapshot of the topic that breaks one of the layout's rules
    key = ks_snapshot(store, **overrides)
    # When it is registered
    result = register(key, ledger, store)
    # Then it is REJECTED with the reason
    assert result.outcome is Outcome.REJECTED
    assert reason in (result.reason or "")


def test_a_kafka_streams_snapshot_references_only_other_ssts_of_its_lineage(ledger, store):
    # Given a registered snapshot whose SST a later one references instead of uploading it
    first = register(ks_snapshot(store, lsn=41), ledger, store)
    assert first.outcome is Outcome.BECAME_LATEST
    folder = f"{41:020d}-{first.snapshot_id}"
    sst = {"path": f"{folder}/000012.sst", "size": len(SST)}
    later = register(
        ks_snapshot(store, lsn=50, files={"CURRENT": b"M\n"}, references=[sst]), ledger, store
    )
    assert later.outcome is Outcome.BECAME_LATEST, later.reason
    # Then a reference that is no SST, or lands on one of its own files, is REJECTED
    store.put(f"snapshots/{TOPIC}/2/{folder}/LOG", b"log")
    log = {"path": f"{folder}/LOG", "size": 3}
    for refs, files in (([log], {"CURRENT": b"M\n"}), ([sst], {"000012.sst": SST})):
        key = ks_snapshot(store, lsn=60, files=files, references=refs)
        result = register(key, ledger, store)
        assert result.outcome is Outcome.REJECTED
        assert "its references are not the store's other SSTs" in (result.reason or "")
        store.delete_many([key])


def test_a_native_stream_is_not_held_to_the_kafka_streams_rules(ledger, store):
    # Given the same opaque store folder under a stream the catalog does not name
    key = write_snapshot(
        store, "orders", 2, 41, files={"state/1.sst": b"not an sst"}, format="opaque"
    )
    # Then it is registered as any native snapshot
    assert register(key, ledger, store).outcome is Outcome.BECAME_LATEST


def ks_record(lsn: int, *, start: int = 0, read_hours_ago: float = 1.0, age_days: float = 10):
    base = record(lsn, age=timedelta(days=age_days))
    horizon = ChangelogHorizon(
        log_start_offset=start,
        end_offset=lsn + 1,
        delete_retention_ms=7 * DAY_MS,
        read_at=T0 - timedelta(hours=read_hours_ago),
    )
    return base.model_copy(update={"changelog": horizon, "stream": TOPIC})


def unrestorable(records) -> dict[str, str]:
    strategy = LAYOUTS.for_stream(TOPIC)
    facts = strategy.facts(records)
    found = {}
    for r in records:
        why = strategy.unrestorable(r, facts, T0)
        if why is not None:
            found[r.sort_key] = why
    return found


def test_a_snapshot_below_the_newest_log_start_is_not_counted():
    # Given three snapshots; the newest read a log start of 25: 10 + 1 < 25, 30 + 1 >= 25
    records = [ks_record(10), ks_record(30), ks_record(50, start=25)]
    # When the strategy judges them
    why = unrestorable(records)
    # Then only the one the changelog cannot continue is unrestorable, and says why
    assert list(why) == [records[0].sort_key]
    assert "below the changelog's log start" in why[records[0].sort_key]
    assert "log_start_offset 25" in why[records[0].sort_key]


def test_a_snapshot_older_than_delete_retention_less_the_margin_is_not_counted():
    # Given delete.retention.ms of 7 days: the margin is 10% (16.8 h: core/changelog_horizon.py,
    # tests/unit/test_changelog_horizon.py), so 151.2 h
    edge = 7 * 24 - 16.8
    records = [ks_record(10, read_hours_ago=edge), ks_record(20, read_hours_ago=edge - 0.01)]
    # Then the one read at the window's edge is unrestorable; the one just younger is not
    why = unrestorable(records)
    assert list(why) == [records[0].sort_key]
    assert "delete.retention.ms (604,800,000 ms)" in why[records[0].sort_key]


def test_retention_does_not_count_what_the_changelog_cannot_continue():
    # Given min_count 2, and the newest snapshot's log start past the two below it
    records = [ks_record(10), ks_record(20), ks_record(30), ks_record(50, start=31)]
    policy = RetentionPolicy(min_count=2, min_age_hours=1)
    why = unrestorable(records)
    # When planned with what the strategy says
    result = plan(records, head_for(*records), policy, T0, unrestorable=why)
    # Then 50 and 30 fill the two slots; 20 and 10 fill none and go, saying why
    kept = {k.record.lsn: [r.value for r in k.reasons] for k in result.kept}
    assert kept == {50: ["latest", "newest"], 30: ["newest"]}
    assert [d.record.lsn for d in result.doomed] == [20, 10]
    assert result.witnesses == (records[3].sort_key, records[2].sort_key)
    deleted = result.to_dict()["deleted"]
    assert all("below the changelog's log start" in d["unrestorable"] for d in deleted)
    # And with only the latest restorable, a young unrestorable one is kept for its age but
    # fills no slot: the next restorable one keeps its own
    young = [ks_record(10, age_days=0.01), ks_record(40), ks_record(50, start=20)]
    result = plan(young, head_for(*young), policy, T0, unrestorable=unrestorable(young))
    kept = {k.record.lsn: [r.value for r in k.reasons] for k in result.kept}
    assert kept == {
        50: ["latest", "newest"],
        40: ["newest"],
        10: ["too_young", "unrestorable_not_counted"],
    }
    # And the commit's re-check counts alike
    snapshots = {r.sort_key: r for r in records}
    assert restorable_newer(snapshots, records[0].sort_key) == 3
    assert restorable_newer(snapshots, records[0].sort_key, tuple(why)) == 2


def test_the_changelog_horizon_is_checked_and_bounded_in_the_manifest():
    base = manifest_document(TOPIC, 2, 41, "01J00000000000000000000000", {"a": b"x"})
    ok = {"log_start_offset": 3, "end_offset": 42, "delete_retention_ms": 0}
    assert ManifestV1.model_validate({**base, "changelog": ok}).changelog is not None
    assert ManifestV1.model_validate(base).changelog is None  # optional: older manifests
    for bad, says in (
        ({**ok, "log_start_offset": 43}, "past end_offset"),
        ({**ok, "delete_retention_ms": 3_153_600_000_001}, "less than or equal"),
        ({**ok, "end_offset": -1}, "greater than or equal"),
    ):
        with pytest.raises(ValidationError, match=says):
            ManifestV1.model_validate({**base, "changelog": bad})


def test_kafka_streams_streams_are_configured_and_checked():
    environ = {"SNAPLEDGER_TABLE": "ledger", "SNAPLEDGER_ROOT": "s3://b"}
    environ[ENV_KAFKA_STREAMS_STREAMS] = json.dumps([TOPIC])
    settings = settings_from_env(LedgerSettings, environ)
    catalog = LayoutCatalog.of(settings.restate_prefixes, settings.kafka_streams_streams)
    strategy = catalog.for_stream(TOPIC)
    assert (strategy.name, strategy.owner, strategy.root(2)) == (
        "kafka-streams",
        "snapledger",
        f"snapshots/{TOPIC}/2/",
    )
    assert "snapledger.kafka_streams.seed" in strategy.boot
    for not_a_changelog in ("orders", "totals-changelog", "app--changelog"):
        with pytest.raises(InvalidRequestError, match="not a changelog topic's name"):
            LayoutCatalog.of(kafka_streams=[not_a_changelog])
    with pytest.raises(InvalidRequestError, match="entry 'a/b': field 'key'"):
        LayoutCatalog.of(kafka_streams=["a/b"])
    with pytest.raises(InvalidRequestError, match="is also entry"):
        LayoutCatalog.of({"restate/prod-1": TOPIC}, [TOPIC])
    assert LAYOUTS.for_stream("orders").name == "native"
    assert SnapshotStatus.REGISTERED  # the records above are REGISTERED ones


def test_gc_deletes_what_the_changelog_cannot_continue_and_keeps_min_count_restorable(
    ledger, store, clock
):
    # Given four snapshots of a changelog, registered two days ago; the newest read a log
    # start of 31, past the records 10 and 20 need (30 + 1 = 31 is still there)
    for lsn, start in ((10, 0), (20, 0), (30, 0), (50, 31)):
        changelog = {"log_start_offset": start, "end_offset": lsn + 1}
        key = ks_snapshot(store, lsn, offsets={f"{TOPIC}-2": lsn}, changelog=changelog)
        assert register(key, ledger, store).outcome in (Outcome.BECAME_LATEST, Outcome.RECORDED)
    clock.advance(timedelta(days=2))
    deps = replace(gc_deps(ledger, store, clock), layouts=LAYOUTS)
    # When GC runs with min_count 3 (the default policy)
    dry = run_gc(deps, dry_run=True, config=GcConfig()).to_dict()
    report = run_gc(deps, config=GcConfig())
    # Then the two the changelog cannot continue fill no slot and are deleted (the commit's
    # re-check counts as the plan did), the two restorable ones are kept
    assert statuses(ledger, TOPIC, 2) == {
        10: "DELETED",
        20: "DELETED",
        30: "REGISTERED",
        50: "REGISTERED",
    }
    assert report.counts()["snapshots_deleted"] == 2
    # And the dry run said why
    [lineage] = dry["lineages"]
    deleted = lineage["deleted"]
    assert [d["lsn"] for d in deleted] == [20, 10]
    assert all("below the changelog's log start" in d["unrestorable"] for d in deleted)
    # While the same snapshots under a native stream's catalog keep three
    assert LayoutCatalog().for_stream(TOPIC).name == "native"


OLD_TOPIC_ID, NEW_TOPIC_ID = "mAvqbi8XSciGoHpHwTMETA", "J_a_Mo_xStyarpEDTjEqtA"


def incarnation_record(lsn: int, topic_id: str | None, *, epoch: int, start: int = 0):
    r = ks_record(lsn, start=start)
    horizon = r.changelog.model_copy(update={"topic_id": topic_id})  # type: ignore[union-attr]
    return r.model_copy(update={"changelog": horizon, "epoch": epoch})


def test_after_the_topic_is_recreated_the_old_incarnation_is_unrestorable_and_collected():
    # Given the old topic's snapshots (epoch 1, LSNs 800 and 900, a log start of 700) and the
    # new topic's (epoch 2, LSNs 30 and 50: its offsets restarted, its log start is 0)
    old = [incarnation_record(lsn, OLD_TOPIC_ID, epoch=1, start=700) for lsn in (800, 900)]
    new = [incarnation_record(lsn, NEW_TOPIC_ID, epoch=2) for lsn in (30, 50)]
    records = [*old, *new]
    strategy = LAYOUTS.for_stream(TOPIC)
    # When the strategy judges them
    facts = strategy.facts(records)
    why = unrestorable(records)
    # Then the current incarnation is the new topic's (the highest epoch naming one), its
    # log start is the new topic's alone (the old 700 would make 30 and 50 look below it),
    # and only the old topic's snapshots are unrestorable, saying why
    assert (facts.topic_id, facts.log_start_offset) == (NEW_TOPIC_ID, 0)
    assert sorted(why) == sorted(r.sort_key for r in old)
    for reason in why.values():
        assert reason.startswith("made from another incarnation of the changelog")
        assert OLD_TOPIC_ID in reason and NEW_TOPIC_ID in reason
    # And retention (min_count 2, the new topic's 50 the latest) counts the new ones and
    # collects the old ones
    head = head_for(*new).model_copy(update={"stream": TOPIC})
    result = plan(
        records, head, RetentionPolicy(min_count=2, min_age_hours=1), T0, unrestorable=why
    )
    assert sorted(k.record.lsn for k in result.kept) == [30, 50]
    assert sorted(d.record.lsn for d in result.doomed) == [800, 900]


def test_snapshots_naming_no_topic_id_are_judged_as_before():
    # Given an earlier release's snapshots (no topic id) and a newer one naming the topic's
    records = [ks_record(10), incarnation_record(20, OLD_TOPIC_ID, epoch=1)]
    # Then none is of another incarnation
    assert unrestorable(records) == {}
    assert LAYOUTS.for_stream(TOPIC).facts(records[:1]).topic_id is None


def test_the_topic_id_is_kept_from_manifest_to_record_and_bounded(ledger, store):
    changelog = {"log_start_offset": 0, "end_offset": 42, "topic_id": NEW_TOPIC_ID}
    result = register(ks_snapshot(store, changelog=changelog), ledger, store)
    assert result.outcome is Outcome.BECAME_LATEST, result.reason
    record = ledger.find_snapshot(LineageId(stream=TOPIC, partition=2), result.snapshot_id)
    assert record.changelog.topic_id == NEW_TOPIC_ID
    for bad in ("J/a/Mo/xStyarpEDTjEqtA", NEW_TOPIC_ID + "A", NEW_TOPIC_ID[:-1], ""):
        key = ks_snapshot(store, 50, changelog={**changelog, "end_offset": 51, "topic_id": bad})
        result = register(key, ledger, store)
        assert result.outcome is Outcome.REJECTED
        assert "changelog.topic_id" in (result.reason or "")


def test_latest_json_follows_a_new_incarnation_back_to_its_lower_lsn(ledger, store):
    # Given the old topic's snapshot at LSN 900 (epoch 1) registered: latest.json names it
    def snapshot(lsn: int, epoch: int, topic_id: str) -> str:
        changelog = {"log_start_offset": 0, "end_offset": lsn + 1, "topic_id": topic_id}
        return ks_snapshot(store, lsn, epoch=epoch, changelog=changelog)

    def pointer() -> tuple[int, str]:
        stored = json.loads(store.get(f"snapshots/{TOPIC}/2/latest.json"))
        return stored["lsn"], stored["snapshot_id"]

    old = register(snapshot(900, 1, OLD_TOPIC_ID), ledger, store)
    assert pointer() == (900, old.snapshot_id)
    # When the recreated topic's first snapshot (LSN 40, epoch 2) registers
    new = register(snapshot(40, 2, NEW_TOPIC_ID), ledger, store)
    # Then it is the latest and latest.json, which named a higher LSN, now names it
    assert new.outcome is Outcome.BECAME_LATEST, new.reason
    assert pointer() == (40, new.snapshot_id)
    # And a late snapshot of the old topic is fenced, the pointer left on the new one
    late = register(snapshot(950, 1, OLD_TOPIC_ID), ledger, store)
    assert late.outcome is Outcome.FENCED
    assert pointer() == (40, new.snapshot_id)
