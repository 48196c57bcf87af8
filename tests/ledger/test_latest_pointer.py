"""``latest.json``: written after the latest advances, never backwards, converging to the
ledger's latest after any order of deliveries and after a crash between commit and write."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapledger.errors import StoreUnavailableError
from snapledger.layout import latest_pointer_key
from snapledger.models.ledger import LineageId, snapshot_sort_key
from snapledger.models.pointer import LatestPointer
from snapledger.services.latest_pointer import PointerOutcome, publish_latest
from snapledger.services.registration import (
    Outcome,
    RegistrationFailed,
    register_manifest,
    register_manifests,
)
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import moto_ledger, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)
POINTER = latest_pointer_key("orders", 3)
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "latest-pointer-v1.schema.json"


def pointer(store) -> LatestPointer | None:
    found = store.get_versioned(POINTER)
    return None if found is None else LatestPointer.model_validate_json(found[0])


def test_the_pointer_names_the_latest_with_its_files_and_matches_its_schema(ledger, store, clock):
    key = write_snapshot(store, lsn=100, offsets={"orders-3": 101})
    result = register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    assert result.outcome is Outcome.BECAME_LATEST

    raw = json.loads(store.get(POINTER))
    jsonschema.validate(raw, json.loads(SCHEMA.read_text()))
    written = LatestPointer.model_validate(raw)
    manifest = json.loads(store.get(key))
    assert (written.snapshot_id, written.lsn, written.epoch) == (result.snapshot_id, 100, 1)
    assert written.manifest_key == key and key.startswith(written.prefix)
    assert [f.model_dump(exclude_none=True) for f in written.files] == manifest["files"]
    assert written.offsets == {"orders-3": 101}
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(100, result.snapshot_id))
    assert written.registered_at == record.registered_at


def test_an_older_snapshot_registered_later_leaves_the_pointer(ledger, store, clock):
    newer = register_manifest(
        write_snapshot(store, lsn=200), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    older = register_manifest(
        write_snapshot(store, lsn=100), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    assert older.outcome is Outcome.RECORDED
    assert pointer(store).snapshot_id == newer.snapshot_id


def test_a_stale_publisher_never_moves_the_pointer_back(ledger, store, clock):
    first = register_manifest(
        write_snapshot(store, lsn=100), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    stale_head = ledger.get_head(ORDERS_3)
    register_manifest(
        write_snapshot(store, lsn=300), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    # A publisher that read HEAD before the second registration
    outcome = publish_latest(ORDERS_3, stale_head, ledger=ledger, store=store)
    assert outcome is PointerOutcome.CURRENT
    assert pointer(store).lsn == 300 and first.snapshot_id != pointer(store).snapshot_id


def test_an_unreadable_pointer_is_replaced(ledger, store, clock):
    store.put(POINTER, b"{not json")
    result = register_manifest(
        write_snapshot(store, lsn=100), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    assert pointer(store).snapshot_id == result.snapshot_id


class CrashingStore:
    """The file store, with pointer writes failing while ``crash`` is set, and a record of
    every pointer that was written."""

    def __init__(self, store) -> None:
        self._store = store
        self.crash = False
        self.written: list[str] = []

    def __getattr__(self, name):
        return getattr(self._store, name)

    def create(self, key, data):
        self._write(key, data, lambda: self._store.create(key, data))

    def replace(self, key, data, *, if_match):
        self._write(key, data, lambda: self._store.replace(key, data, if_match=if_match))

    def _write(self, key, data, write) -> None:
        if key == POINTER and self.crash:
            raise StoreUnavailableError("injected: the process died before the pointer write")
        write()
        if key == POINTER:
            self.written.append(LatestPointer.model_validate_json(data).sort_key)


def test_a_crash_between_commit_and_pointer_write_is_repaired_by_the_redelivery(
    ledger, store, clock
):
    crashing = CrashingStore(store)
    key = write_snapshot(store, lsn=100)
    crashing.crash = True
    [failed] = register_manifests(
        [key], ledger=ledger, store=crashing, clock=clock, layouts=NATIVE_ONLY
    )
    # The ledger committed, the pointer was not written: the message is retried
    assert isinstance(failed, RegistrationFailed)
    assert ledger.get_head(ORDERS_3).latest_lsn == 100 and pointer(store) is None
    crashing.crash = False
    [again] = register_manifests(
        [key], ledger=ledger, store=crashing, clock=clock, layouts=NATIVE_ONLY
    )
    assert again.outcome is Outcome.DUPLICATE
    assert pointer(store).lsn == 100


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    deliveries=st.lists(
        st.tuples(st.integers(min_value=0, max_value=5), st.booleans()), min_size=1, max_size=14
    )
)
def test_any_order_of_deliveries_and_crashes_converges_and_never_goes_back(
    tmp_path_factory, deliveries
):
    from snapledger.adapters.object_store_file import FileObjectStore
    from snapledger.clock import ManualClock

    # Six snapshots (LSNs 100..600) delivered in any order, any number of times, each
    # delivery possibly crashing before the pointer write; then every one delivered once
    # more without crashing (what SQS's redelivery guarantees).
    store = FileObjectStore(tmp_path_factory.mktemp("root"))
    clock = ManualClock()
    crashing = CrashingStore(store)
    with moto_ledger() as ledger:
        keys = [write_snapshot(store, lsn=100 * (n + 1)) for n in range(6)]
        for index, crash in deliveries:
            crashing.crash = crash
            register_manifests(
                [keys[index]], ledger=ledger, store=crashing, clock=clock, layouts=NATIVE_ONLY
            )
        crashing.crash = False
        for index in sorted({index for index, _ in deliveries}):
            register_manifests(
                [keys[index]], ledger=ledger, store=crashing, clock=clock, layouts=NATIVE_ONLY
            )
        head = ledger.get_head(ORDERS_3)
        final = pointer(store)
        assert final is not None
        assert final.sort_key == snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)
        assert crashing.written == sorted(crashing.written), "the pointer moved backwards"


def test_gc_and_the_orphan_sweep_leave_the_pointer(ledger, store, clock):
    from tests.gc.support import age_objects, gc_deps

    for lsn in (100, 200, 300, 400):
        register_manifest(
            write_snapshot(store, lsn=lsn),
            ledger=ledger,
            store=store,
            clock=clock,
            layouts=NATIVE_ONLY,
        )
    before = store.get(POINTER)
    from datetime import timedelta

    from snapledger.gc_settings import GcConfig
    from snapledger.services.gc import run_gc

    clock.advance(timedelta(days=30))
    age_objects(store, "snapshots/", clock.now() - timedelta(days=30))
    config = GcConfig(default_min_count=1, default_min_age_hours=1, orphan_grace_hours=1)
    report = run_gc(gc_deps(ledger, store, clock), config=config)
    assert report is not None
    assert store.get(POINTER) == before
    remaining = {info.key for info in store.list("snapshots/orders/3/")}
    assert POINTER in remaining
    assert sum(k.endswith("_manifest.json") for k in remaining) == 1


@pytest.mark.parametrize("delivered_twice", [False, True])
def test_a_redelivered_manifest_writes_no_pointer_when_it_is_current(
    ledger, store, clock, delivered_twice
):
    key = write_snapshot(store, lsn=100)
    register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    crashing = CrashingStore(store)
    if delivered_twice:
        register_manifests([key], ledger=ledger, store=crashing, clock=clock, layouts=NATIVE_ONLY)
    assert crashing.written == []


def test_concurrent_registrations_of_one_lineage_leave_the_pointer_on_the_latest(
    ledger, store, clock
):
    from concurrent.futures import ThreadPoolExecutor

    keys = [write_snapshot(store, lsn=100 * (n + 1)) for n in range(16)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(
            pool.map(
                lambda key: register_manifests(
                    [key], ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
                )[0],
                reversed(keys),
            )
        )
    assert not [r for r in results if isinstance(r, RegistrationFailed)]
    head = ledger.get_head(ORDERS_3)
    assert (head.latest_lsn, pointer(store).lsn) == (1600, 1600)


# -- planted pointers (issue 27 row 3): the ledger decides, never the pointer itself ------

MAX_LSN = 2**63 - 1


def planted(real: LatestPointer, **changes) -> bytes:
    """A pointer that looks like snapledger's but says what the planter chose."""
    fields = real.model_dump() | changes
    if "lsn" in changes or "snapshot_id" in changes:
        from snapledger.layout import snapshot_prefix

        prefix = snapshot_prefix(
            fields["stream"], fields["partition"], fields["lsn"], fields["snapshot_id"]
        )
        fields |= {"prefix": prefix, "manifest_key": prefix + "_manifest.json"}
    return LatestPointer.model_validate(fields).model_dump_json().encode()


def exact_pointer(ledger, store) -> LatestPointer:
    """What the ledger says latest.json must be, built from its record and manifest."""
    from snapledger.services.latest_pointer import read_pointer

    head = ledger.get_head(ORDERS_3)
    sort_key = snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)
    return read_pointer(ORDERS_3, sort_key, ledger=ledger, store=store)


class RecordingStore:
    """The file store, recording how the pointer was written (create, replace + If-Match)."""

    def __init__(self, store) -> None:
        self._store = store
        self.writes: list[tuple[str, str | None]] = []

    def __getattr__(self, name):
        return getattr(self._store, name)

    def put(self, key, data):
        assert key != POINTER, "latest.json written without a condition"
        self._store.put(key, data)

    def create(self, key, data):
        if key == POINTER:
            self.writes.append(("create", None))
        self._store.create(key, data)

    def replace(self, key, data, *, if_match):
        if key == POINTER:
            self.writes.append(("replace", if_match))
        self._store.replace(key, data, if_match=if_match)


@pytest.mark.parametrize("how", ["next_registration", "redelivery"])
def test_a_planted_huge_lsn_pointer_is_replaced_conditionally(ledger, store, clock, how):
    first = write_snapshot(store, lsn=100)
    register_manifest(first, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    store.put(POINTER, planted(pointer(store), lsn=MAX_LSN))
    _, planted_tag = store.get_versioned(POINTER)
    recording = RecordingStore(store)
    key = write_snapshot(store, lsn=200) if how == "next_registration" else first
    [result] = register_manifests(
        [key], ledger=ledger, store=recording, clock=clock, layouts=NATIVE_ONLY
    )
    assert result.outcome is (
        Outcome.BECAME_LATEST if how == "next_registration" else Outcome.DUPLICATE
    )
    assert pointer(store) == exact_pointer(ledger, store)
    assert pointer(store).lsn == (200 if how == "next_registration" else 100)
    assert recording.writes == [("replace", planted_tag)]


def test_a_pointer_copied_from_another_lineage_is_replaced(ledger, store, clock):
    payments = write_snapshot(store, "payments", 9, lsn=900)
    register_manifest(payments, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    mine = write_snapshot(store, lsn=100)
    register_manifest(mine, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    store.put(POINTER, store.get(latest_pointer_key("payments", 9)))  # copied over
    assert pointer(store).stream == "payments"
    [again] = register_manifests(
        [mine], ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    assert again.outcome is Outcome.DUPLICATE
    assert pointer(store) == exact_pointer(ledger, store)
    assert (pointer(store).stream, pointer(store).partition, pointer(store).lsn) == (
        "orders",
        3,
        100,
    )


@pytest.mark.parametrize(
    "change",
    [
        {"offsets": {"orders-3": 10**9}},  # right snapshot, doctored offsets
        {"epoch": 99},
        {"files": []},
        {"prefix": "snapshots/payments/9/"},  # right id and LSN, another folder
    ],
    ids=["offsets", "epoch", "files", "prefix"],
)
def test_a_pointer_naming_the_latest_but_not_exactly_is_replaced(ledger, store, clock, change):
    key = write_snapshot(store, lsn=100, offsets={"orders-3": 101})
    register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    store.put(POINTER, planted(pointer(store), **change))
    assert (
        publish_latest(ORDERS_3, ledger.get_head(ORDERS_3), ledger=ledger, store=store)
        is PointerOutcome.WRITTEN
    )
    assert pointer(store) == exact_pointer(ledger, store)


def test_a_pointer_newer_than_the_head_held_but_not_the_ledger_s_is_kept(ledger, store, clock):
    # The ledger moved past a stale publisher's HEAD: what it names is the ledger's latest
    # (checked by a consistent read of HEAD), so it is kept, and never moved back.
    register_manifest(
        write_snapshot(store, lsn=100), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    stale = ledger.get_head(ORDERS_3)
    register_manifest(
        write_snapshot(store, lsn=300), ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
    )
    current = store.get(POINTER)
    recording = RecordingStore(store)
    outcome = publish_latest(ORDERS_3, stale, ledger=ledger, store=recording)
    assert outcome is PointerOutcome.CURRENT and recording.writes == []
    assert store.get(POINTER) == current
    # ...but once the pointer is made to look past the ledger, the stale publisher
    # publishes the ledger's latest (LSN 300), not its own stale one (LSN 100).
    store.put(POINTER, planted(pointer(store), lsn=MAX_LSN))
    assert publish_latest(ORDERS_3, stale, ledger=ledger, store=store) is PointerOutcome.WRITTEN
    assert pointer(store) == exact_pointer(ledger, store) and pointer(store).lsn == 300


@pytest.mark.parametrize(
    "garbage",
    ["oversized", "deep", "not_utf8", "not_json", "huge_int"],
)
def test_a_garbage_pointer_object_is_replaced_never_raised(ledger, store, clock, garbage):
    from snapledger.limits import MAX_POINTER_BYTES

    key = write_snapshot(store, lsn=100)
    register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    exact = store.get(POINTER)
    store.put(
        POINTER,
        {
            # the exact pointer, padded past the bound: no longer a pointer snapledger wrote
            "oversized": exact[:-1] + b" " * MAX_POINTER_BYTES + b"}",
            "deep": b"[" * 300_000 + b"]" * 300_000,
            "not_utf8": b"\xff\xfe{}",
            "not_json": b"{not json",
            "huge_int": b'{"format_version": 1, "lsn": 1' + b"0" * 5000 + b"}",
        }[garbage],
    )
    _, tag = store.get_versioned(POINTER)
    recording = RecordingStore(store)
    [again] = register_manifests(
        [key], ledger=ledger, store=recording, clock=clock, layouts=NATIVE_ONLY
    )
    assert again.outcome is Outcome.DUPLICATE
    assert store.get(POINTER) == exact
    assert recording.writes == [("replace", tag)]


def test_the_pointer_is_read_no_further_than_its_bound(ledger, store, clock):
    from snapledger.limits import MAX_POINTER_BYTES

    key = write_snapshot(store, lsn=100)
    register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    store.put(POINTER, b" " * (3 * MAX_POINTER_BYTES))
    data, _ = store.get_versioned(POINTER, max_bytes=MAX_POINTER_BYTES)
    assert len(data) == MAX_POINTER_BYTES + 1
    outcome = publish_latest(ORDERS_3, ledger.get_head(ORDERS_3), ledger=ledger, store=store)
    assert outcome is PointerOutcome.WRITTEN and pointer(store) == exact_pointer(ledger, store)


# -- generation.json: the same, against the stream's log ---------------------------------


def _generation_setup(ledger, store, clock):
    from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
    from tests.ledger.test_generations import member, register, request

    streams = DynamoStreamLog(ledger.table_name, client=ledger.client)
    g = request(streams, clock, partitions=(0,))
    key = member(store, 0, 100, g)
    register(key, ledger, streams, store, clock)
    return streams, key


GENERATION_JSON = "snapshots/orders/generation.json"


@pytest.mark.parametrize(
    "planting", ["huge_generation", "other_stream", "member_elsewhere", "garbage"]
)
def test_a_planted_generation_json_is_replaced_at_the_next_publish(ledger, store, clock, planting):
    from snapledger.models.pointer import GenerationPointer
    from snapledger.services.latest_pointer import publish_generation

    streams, key = _generation_setup(ledger, store, clock)
    exact = store.get(GENERATION_JSON)
    real = GenerationPointer.model_validate_json(exact)
    if planting == "garbage":
        raw = b"[" * 100_000
    else:
        fields = real.model_dump(mode="json")
        if planting == "huge_generation":
            fields["generation"] = 10**15
        elif planting == "other_stream":
            fields["stream"] = "payments"
        else:
            fields["members"][0]["prefix"] = "snapshots/payments/9/"
        raw = json.dumps(fields).encode()
    store.put(GENERATION_JSON, raw)
    _, tag = store.get_versioned(GENERATION_JSON)
    writes = []

    class Recording(RecordingStore):
        def replace(self, key, data, *, if_match):
            writes.append((key, if_match))
            self._store.replace(key, data, if_match=if_match)

    # a redelivered member's registration publishes generation.json again
    [again] = register_manifests(
        [key],
        ledger=ledger,
        store=Recording(store),
        clock=clock,
        streams=streams,
        layouts=NATIVE_ONLY,
    )
    assert again.outcome is Outcome.DUPLICATE
    assert GenerationPointer.model_validate_json(store.get(GENERATION_JSON)) == real
    assert writes == [(GENERATION_JSON, tag)]
    assert publish_generation(streams, "orders", store=store) is PointerOutcome.CURRENT
