"""The latest protected in the bucket, on moto's S3 Object Lock (docs/deploy.md).

Registration holds every file of a valid manifest before its commit; GC releases every
version of a snapshot it deleted before it marks it DELETED. Crashes at every step of
both converge: no REGISTERED snapshot (so never the latest) is ever unheld, and once GC
has run to the end, nothing it deleted is still held.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.exceptions import ClientError

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store import object_holds
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.clock import ManualClock
from snapledger.errors import InvalidRequestError
from snapledger.gc_settings import GcConfig
from snapledger.layout import (
    LATEST_POINTER_NAME,
    lineage_snapshots_prefix,
    parse_manifest_key,
    parse_snapshot_prefix,
)
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.runtime import build_runtime
from snapledger.services.gc import run_gc
from snapledger.services.gc_deps import GcDeps
from snapledger.services.registration import Outcome, register_manifest
from snapledger.settings import ENV_PROTECT_LATEST, LedgerSettings, settings_from_env
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.gc.support import events_of, gc_deps, prefix_of, records
from tests.gc.test_crash import Crash, CrashingLedger, CrashingStore, Faults
from tests.support import kv_parquet, legal_holds, moto_ledger, write_snapshot

BUCKET = "snapledger-locked"
STREAM, PARTITION = "orders", 3
LINEAGE = LineageId(stream=STREAM, partition=PARTITION)
# Keep the newest 2; no minimum age: what GC may delete is decided by count alone.
CONFIG = GcConfig(default_min_count=2, default_min_age_hours=0)


@pytest.fixture
def ledger() -> Iterator[DynamoLedger]:
    with moto_ledger() as moto:
        yield moto


@pytest.fixture
def s3(ledger: DynamoLedger):  # inside moto_ledger's mock_aws
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET, ObjectLockEnabledForBucket=True)
    return client


@pytest.fixture
def store(s3) -> S3ObjectStore:
    return S3ObjectStore(BUCKET, client=s3)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


def versions(s3, prefix: str) -> dict[tuple[str, str], str]:
    return legal_holds(s3, BUCKET, prefix)


def write(store, lsn: int, **kw) -> str:
    files = {f"part-{i:05d}.parquet": kv_parquet(f"{lsn}-{i}") for i in range(2)}
    return write_snapshot(store, STREAM, PARTITION, lsn, files=files, **kw)


def register(key: str, ledger, store, clock, *, holds=True):
    return register_manifest(
        key,
        ledger=ledger,
        store=store,
        clock=clock,
        holds=store if holds else None,
        layouts=NATIVE_ONLY,
    )


def protected_deps(ledger, store, clock) -> GcDeps:
    deps = gc_deps(ledger, store, clock)
    return GcDeps(**{**deps.__dict__, "holds": store})


def assert_ledger_and_store_agree(ledger, store) -> None:
    """tests/gc/support.py's check, with the store-wide part from a listing of the current
    objects (moto's delimited listing still shows a prefix whose keys are delete markers)."""
    live = set()
    for record in records(ledger).values():
        keys = {info.key for info in store.list(prefix_of(record))}
        if record.status is SnapshotStatus.DELETED:
            assert not keys, f"{record.lsn} is DELETED but has objects {sorted(keys)}"
            continue
        assert record.status is not SnapshotStatus.EXPIRING, f"{record.lsn} left EXPIRING"
        live.add(prefix_of(record))
        if record.status is SnapshotStatus.REGISTERED:
            assert len(keys) == record.file_count + 1, f"{record.lsn} lost files"
    seqs = [e.seq for e in events_of(ledger)]
    assert seqs == list(range(1, len(seqs) + 1)), "the event log has gaps"
    for info in store.list(lineage_snapshots_prefix(STREAM, PARTITION)):
        if not info.key.endswith(LATEST_POINTER_NAME):
            assert info.key.rsplit("/", 1)[0] + "/" in live, f"{info.key}: no live record"


def assert_every_registered_snapshot_is_held(ledger, s3) -> None:
    for record in records(ledger).values():
        if record.status is SnapshotStatus.REGISTERED:
            found = versions(s3, prefix_of(record))
            assert len(found) == record.file_count + 1, record.lsn
            assert set(found.values()) == {"ON"}, f"{record.lsn} is registered and not held"


def assert_nothing_deleted_is_held(ledger, s3) -> None:
    for record in records(ledger).values():
        if record.status is SnapshotStatus.DELETED:
            assert "ON" not in versions(s3, prefix_of(record)).values(), record.lsn


# --- registration ---------------------------------------------------------------------


def test_registration_holds_every_file_and_the_manifest_not_latest_json(
    ledger, store, s3, clock
) -> None:
    key = write(store, 100)
    assert register(key, ledger, store, clock).outcome is Outcome.BECAME_LATEST
    held = versions(s3, lineage_snapshots_prefix(STREAM, PARTITION))
    location = parse_manifest_key(key)
    snapshot = {k: v for k, v in held.items() if k[0].startswith(location.prefix)}
    assert {k for k, _ in snapshot} == {
        location.prefix + "part-00000.parquet",
        location.prefix + "part-00001.parquet",
        key,
    }
    assert set(snapshot.values()) == {"ON"}
    pointer = {v for k, v in held.items() if k[0].endswith(LATEST_POINTER_NAME)}
    assert pointer == {"none"}  # rewritten with If-Match: never held


def test_without_the_setting_nothing_is_held(ledger, store, s3, clock) -> None:
    key = write(store, 100)
    register(key, ledger, store, clock, holds=False)
    assert set(versions(s3, parse_manifest_key(key).prefix).values()) == {"none"}


def test_an_invalid_manifest_is_not_held(ledger, store, s3, clock) -> None:
    key = write(store, 100, checksums={"part-00000.parquet": "0" * 64})
    assert register(key, ledger, store, clock).outcome is Outcome.REJECTED
    assert set(versions(s3, parse_manifest_key(key).prefix).values()) == {"none"}


def test_a_crash_after_the_holds_and_before_the_commit_leaves_it_held_and_unrecorded(
    ledger, store, s3, clock
) -> None:
    key = write(store, 100)
    with pytest.raises(Crash):
        register(key, CrashingLedger(ledger, Faults(crash_at=0)), store, clock)
    assert records(ledger) == {}  # not latest, not recorded ...
    assert set(versions(s3, parse_manifest_key(key).prefix).values()) == {"ON"}  # ... held
    # the redelivered manifest holds again (idempotent) and commits
    assert register(key, ledger, store, clock).outcome is Outcome.BECAME_LATEST
    assert_every_registered_snapshot_is_held(ledger, s3)


def test_a_failed_hold_fails_the_registration_and_nothing_is_recorded(
    ledger, store, s3, clock
) -> None:
    class RefusingHolds:
        def hold(self, key: str) -> None:
            raise InvalidRequestError(f"hold {key} refused")

        def release_holds(self, prefix: str) -> int:
            raise AssertionError("registration never releases")

    key = write(store, 100)
    with pytest.raises(InvalidRequestError):
        register_manifest(
            key, ledger=ledger, store=store, clock=clock, holds=RefusingHolds(), layouts=NATIVE_ONLY
        )
    assert records(ledger) == {}


def test_a_bucket_without_object_lock_is_named_in_the_error(ledger, s3) -> None:
    s3.create_bucket(Bucket="snapledger-unlocked")
    plain = S3ObjectStore("snapledger-unlocked", client=s3)
    plain.put("snapshots/x", b"1")
    with pytest.raises(InvalidRequestError, match=r"no Object Lock.*protectLatest"):
        plain.hold("snapshots/x")


# --- what a hold refuses ------------------------------------------------------------------


def test_a_held_version_cannot_be_deleted_a_plain_delete_only_hides_it(
    ledger, store, s3, clock
) -> None:
    key = write(store, 100)
    register(key, ledger, store, clock)
    ((data_key, version_id), _), *_ = versions(s3, parse_manifest_key(key).prefix).items()
    with pytest.raises(ClientError) as refused:
        s3.delete_object(Bucket=BUCKET, Key=data_key, VersionId=version_id)
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    answer = s3.delete_objects(
        Bucket=BUCKET, Delete={"Objects": [{"Key": data_key, "VersionId": version_id}]}
    )
    assert [e["Code"] for e in answer["Errors"]] == ["AccessDenied"]
    s3.delete_object(Bucket=BUCKET, Key=data_key)  # a delete marker: allowed, data kept
    body = s3.get_object(Bucket=BUCKET, Key=data_key, VersionId=version_id)["Body"].read()
    assert body
    # released, the version can go (what the noncurrent-version lifecycle rule then does)
    store.release_holds(parse_manifest_key(key).prefix)
    s3.delete_object(Bucket=BUCKET, Key=data_key, VersionId=version_id)


# --- GC -------------------------------------------------------------------------------------


def _four_snapshots(ledger, store, clock) -> list[str]:
    keys = [write(store, lsn) for lsn in (10, 20, 30, 40)]
    for key in keys:
        register(key, ledger, store, clock)
    clock.advance(timedelta(hours=1))
    return keys


def test_gc_releases_and_deletes_only_the_eligible(ledger, store, s3, clock) -> None:
    _four_snapshots(ledger, store, clock)
    report = run_gc(protected_deps(ledger, store, clock), config=CONFIG)
    assert report.to_dict()["counts"]["errors"] == 0, report.to_dict()
    assert {lsn: r.status.value for lsn, r in records(ledger).items()} == {
        10: "DELETED",
        20: "DELETED",
        30: "REGISTERED",
        40: "REGISTERED",
    }
    for record in records(ledger).values():
        found = versions(s3, prefix_of(record))
        assert len(found) == 3  # delete markers hide the deleted: their versions remain
        expected = {"OFF"} if record.status is SnapshotStatus.DELETED else {"ON"}
        assert set(found.values()) == expected, record.lsn
    assert_ledger_and_store_agree(ledger, store)


def test_gc_without_the_setting_leaves_deleted_versions_held_for_ever(
    ledger, store, s3, clock
) -> None:
    # What the release is for: without it, a deleted snapshot's versions stay held (the
    # noncurrent-version rule skips them) and its storage is never freed.
    _four_snapshots(ledger, store, clock)
    run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    deleted = [r for r in records(ledger).values() if r.status is SnapshotStatus.DELETED]
    assert deleted and all(set(versions(s3, prefix_of(r)).values()) == {"ON"} for r in deleted)


def test_a_version_hidden_by_another_principals_delete_is_released_too(
    ledger, store, s3, clock
) -> None:
    keys = _four_snapshots(ledger, store, clock)
    oldest = parse_manifest_key(keys[0])
    s3.delete_object(Bucket=BUCKET, Key=oldest.prefix + "part-00000.parquet")  # a marker
    run_gc(protected_deps(ledger, store, clock), config=CONFIG)
    assert records(ledger)[10].status is SnapshotStatus.DELETED
    assert set(versions(s3, oldest.prefix).values()) == {"OFF"}


class CrashingHolds:
    def __init__(self, inner, faults: Faults) -> None:
        self._inner, self._faults = inner, faults

    def hold(self, key: str) -> None:
        self._inner.hold(key)

    def release_holds(self, prefix: str) -> int:
        lsn = parse_snapshot_prefix(prefix).lsn  # (a stable name: ids change per run)
        self._faults.point(f"before release of LSN {lsn}")
        released = self._inner.release_holds(prefix)
        self._faults.point(f"after release of LSN {lsn}")
        return released


def _gc_with_faults(ledger, store, clock, faults: Faults) -> None:
    deps = GcDeps(
        **{
            **gc_deps(CrashingLedger(ledger, faults), CrashingStore(store, faults), clock).__dict__,
            "holds": CrashingHolds(store, faults),
        }
    )
    run_gc(deps, config=CONFIG)


def _points() -> list[str]:
    """Every fault point of a GC run over ``_four_snapshots``, in order."""
    with moto_ledger() as ledger:
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET, ObjectLockEnabledForBucket=True)
        store, clock = S3ObjectStore(BUCKET, client=s3), ManualClock(datetime.now(UTC))
        _four_snapshots(ledger, store, clock)
        faults = Faults()
        _gc_with_faults(ledger, store, clock, faults)
        return faults.passed


POINTS = _points()


def test_the_fault_points_cover_delete_release_and_mark() -> None:
    kinds = [point.split(" ")[0] + " " + point.split(" ")[1] for point in POINTS]
    assert kinds.index("after delete") < kinds.index("before release")
    assert kinds.index("after release") < max(
        i for i, p in enumerate(POINTS) if p.startswith("before commit SnapshotDeleted")
    )


@pytest.mark.parametrize("crash_at", range(len(POINTS)), ids=POINTS)
def test_a_crash_at_any_step_of_gc_converges(ledger, store, s3, clock, crash_at: int) -> None:
    _four_snapshots(ledger, store, clock)
    with pytest.raises(Crash):
        _gc_with_faults(ledger, store, clock, Faults(crash_at=crash_at))
    # right after the crash: nothing registered (so never the latest) is unheld
    assert_every_registered_snapshot_is_held(ledger, s3)
    # the next run finishes: what it deleted is released, nothing is left EXPIRING
    report = run_gc(protected_deps(ledger, store, clock), config=CONFIG)
    assert report.to_dict()["counts"]["errors"] == 0, report.to_dict()
    assert_ledger_and_store_agree(ledger, store)
    assert_every_registered_snapshot_is_held(ledger, s3)
    assert_nothing_deleted_is_held(ledger, s3)
    assert {r.status for r in records(ledger).values()} == {
        SnapshotStatus.REGISTERED,
        SnapshotStatus.DELETED,
    }


def test_a_failed_release_keeps_it_expiring_until_a_run_releases_it(
    ledger, store, s3, clock
) -> None:
    class Refusing:
        def hold(self, key: str) -> None:
            raise AssertionError("GC never holds")

        def release_holds(self, prefix: str) -> int:
            raise InvalidRequestError("PutObjectLegalHold refused")

    _four_snapshots(ledger, store, clock)
    deps = GcDeps(**{**gc_deps(ledger, store, clock).__dict__, "holds": Refusing()})
    report = run_gc(deps, config=CONFIG)
    errors = report.to_dict()["lineages"][0]["errors"]
    assert len(errors) == 2 and all("legal holds could not be released" in e for e in errors)
    assert records(ledger)[10].status is SnapshotStatus.EXPIRING  # not marked DELETED
    run_gc(protected_deps(ledger, store, clock), config=CONFIG)
    assert records(ledger)[10].status is SnapshotStatus.DELETED
    assert_nothing_deleted_is_held(ledger, s3)


def test_fenced_garbage_is_released_after_the_grace_window(ledger, store, s3, clock) -> None:
    register(write(store, 10, epoch=2), ledger, store, clock)
    fenced = write(store, 20, epoch=1)  # a stale writer: valid files, so held, then fenced
    assert register(fenced, ledger, store, clock).outcome is Outcome.FENCED
    assert set(versions(s3, parse_manifest_key(fenced).prefix).values()) == {"ON"}
    clock.advance(timedelta(hours=CONFIG.orphan_grace_hours + 1))
    run_gc(protected_deps(ledger, store, clock), config=CONFIG)
    assert records(ledger)[20].status is SnapshotStatus.DELETED
    assert set(versions(s3, parse_manifest_key(fenced).prefix).values()) == {"OFF"}


def test_a_registration_that_never_committed_is_registered_by_the_sweep_and_stays_held(
    ledger, store, s3, clock
) -> None:
    register(write(store, 10), ledger, store, clock)
    unrecorded = write(store, 5)
    with pytest.raises(Crash):  # held, then the process died; the event is never redelivered
        register(unrecorded, CrashingLedger(ledger, Faults(crash_at=0)), store, clock)
    # the orphan sweep reads the objects' own times (moto's: now), and the grace window
    clock.advance(timedelta(hours=CONFIG.orphan_grace_hours + 1))
    deps = replace(
        protected_deps(ledger, store, clock),
        register=lambda key: register(key, ledger, store, clock).outcome.value,
    )
    run_gc(deps, config=CONFIG)
    # its manifest is well-formed: registered (issue 27), never deleted, its files held
    assert records(ledger)[5].status is SnapshotStatus.REGISTERED
    assert set(versions(s3, parse_manifest_key(unrecorded).prefix).values()) == {"ON"}
    assert_every_registered_snapshot_is_held(ledger, s3)


def test_an_orphan_held_by_an_upload_that_never_wrote_its_manifest_is_released(
    ledger, store, s3, clock
) -> None:
    register(write(store, 10), ledger, store, clock)
    orphan = write(store, 5)
    with pytest.raises(Crash):  # held, then the process died; the event is never redelivered
        register(orphan, CrashingLedger(ledger, Faults(crash_at=0)), store, clock)
    store.delete_many([orphan])  # no manifest left: an orphan proper
    clock.advance(timedelta(hours=CONFIG.orphan_grace_hours + 1))
    run_gc(protected_deps(ledger, store, clock), config=CONFIG)
    assert records(ledger)[5].status is SnapshotStatus.DELETED
    assert set(versions(s3, parse_manifest_key(orphan).prefix).values()) == {"OFF"}
    assert_every_registered_snapshot_is_held(ledger, s3)


# --- what it costs, exactly ----------------------------------------------------------------


def _counting(s3) -> dict[str, int]:
    calls: dict[str, int] = {}

    def count(event_name: str, **_: object) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        calls[operation] = calls.get(operation, 0) + 1

    s3.meta.events.register("before-call.s3.*", count)
    return calls


def test_the_requests_a_snapshot_costs(ledger, store, s3, clock) -> None:
    # F files: F + 1 holds at registration; one listing of versions and F + 1 releases
    # when GC deletes it (docs/deploy.md, "What it costs").
    calls = _counting(s3)
    register(write(store, 10), ledger, store, clock)  # 2 files
    assert calls["PutObjectLegalHold"] == 3
    for lsn in (20, 30):
        register(write(store, lsn), ledger, store, clock)
    clock.advance(timedelta(hours=1))
    calls.clear()
    run_gc(protected_deps(ledger, store, clock), config=CONFIG)  # deletes LSN 10
    assert (calls["ListObjectVersions"], calls["PutObjectLegalHold"]) == (1, 3)


def test_a_plain_delete_hides_the_latest_and_removing_the_marker_brings_it_back(
    ledger, store, s3, clock
) -> None:
    key = write(store, 10)
    register(key, ledger, store, clock)
    s3.delete_object(Bucket=BUCKET, Key=key)  # another principal, or an Expiration rule
    with pytest.raises(ClientError) as hidden:
        s3.get_object(Bucket=BUCKET, Key=key)
    assert hidden.value.response["Error"]["Code"] == "NoSuchKey"
    markers = s3.list_object_versions(Bucket=BUCKET, Prefix=key)["DeleteMarkers"]
    s3.delete_object(Bucket=BUCKET, Key=key, VersionId=markers[0]["VersionId"])
    assert store.get(key)  # back, and still held
    assert set(versions(s3, key).values()) == {"ON"}


def test_the_local_store_has_no_object_lock_and_says_so(tmp_path) -> None:
    with pytest.raises(InvalidRequestError, match="SNAPLEDGER_PROTECT_LATEST"):
        object_holds(FileObjectStore(tmp_path))


def test_the_setting_reaches_the_runtime_from_the_environment(tmp_path) -> None:
    environ = {"SNAPLEDGER_TABLE": "ledger", "SNAPLEDGER_ROOT": "s3://snapshots-bucket/team"}
    assert build_runtime(settings_from_env(LedgerSettings, environ)).holds is None
    on = {**environ, ENV_PROTECT_LATEST: "true"}
    rt = build_runtime(settings_from_env(LedgerSettings, on))
    assert rt.holds is rt.store and isinstance(rt.store, S3ObjectStore)
    local = {**on, "SNAPLEDGER_ROOT": tmp_path.as_uri()}
    with pytest.raises(InvalidRequestError, match=r"file://.*has no legal holds"):
        build_runtime(settings_from_env(LedgerSettings, local))
