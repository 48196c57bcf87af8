"""The fluss-kv layout: a Fluss table's KV folder in the layout map, its keys placed, each
bucket snapshot's _METADATA registered with its shared SSTs as references, and every
problem named."""

from __future__ import annotations

import json

import pytest

from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layout import SnapshotLocation
from snapledger.layouts import fluss_keys
from snapledger.layouts.layout_map import layout_map
from snapledger.layouts.strategy import Placed, Refused
from snapledger.models.ledger import LineageId
from snapledger.services.queries import live_snapshots
from snapledger.services.registration import Outcome, register_manifests
from snapledger.strategies.catalog import LayoutCatalog
from snapledger.strategies.fluss_kv import FlussKvLayout
from tests.fluss.fluss_tree import PREFIX, STREAM, TABLE_ID, FlussBucket
from tests.ledger.conftest import clock, ledger, store

__all__ = ["clock", "ledger", "store"]

MAP = {PREFIX: {"layout": "fluss-kv", "stream": STREAM}}


def catalog() -> LayoutCatalog:
    return LayoutCatalog(layout_map(MAP))


def register(keys, ledger, store, clock):
    return register_manifests(keys, ledger=ledger, store=store, clock=clock, layouts=catalog())


def test_the_map_takes_a_tables_kv_folder_and_refuses_anything_else():
    (entry,) = layout_map(MAP).entries
    assert (entry.key, entry.layout, entry.stream) == (PREFIX, "fluss-kv", STREAM)
    for bad in ("fluss/kv/shop", "fluss/shop/orders-7", "kv/shop/orders", "snapshots/kv/a/b-1"):
        with pytest.raises(InvalidRequestError) as caught:
            layout_map({bad: {"layout": "fluss-kv", "stream": STREAM}})
        assert bad.split("/")[0] in str(caught.value) or "kv" in str(caught.value)
    with pytest.raises(InvalidKeyError, match=r"\{remote.data.dir\}/kv/"):
        fluss_keys.table_of_prefix("fluss/kv/shop/orders")
    table = fluss_keys.table_of_prefix("/" + PREFIX + "/")
    assert (table.database, table.table, table.table_id) == ("shop", "orders", TABLE_ID)


def test_keys_under_the_prefix_are_placed_or_refused_saying_why():
    layouts = catalog()
    placed = layouts.place(f"{PREFIX}/2/snap-7/_METADATA")
    assert isinstance(placed, Placed) and isinstance(placed.strategy, FlussKvLayout)
    assert placed.location == SnapshotLocation(STREAM, 2, 7, "snap-7")
    sst = layouts.place(f"{PREFIX}/2/shared/0b6c")
    assert isinstance(sst, Refused) and not sst.manifest
    partitioned = layouts.place(f"{PREFIX}/2024-p3/0/snap-1/_METADATA")
    assert isinstance(partitioned, Refused) and partitioned.manifest
    assert "partitioned table" in partitioned.reason
    odd = layouts.place(f"{PREFIX}/x/snap-1/_METADATA")
    assert isinstance(odd, Refused) and odd.manifest and "{bucket}/snap-{id}" in odd.reason
    strategy = placed.strategy
    assert strategy.folder(2, f"{PREFIX}/2/snap-7/").snapshot_id == "snap-7"
    assert strategy.folder(2, f"{PREFIX}/2/shared/") is None


def test_a_bucket_snapshot_registers_with_its_shared_ssts_as_references(ledger, store, clock):
    bucket = FlussBucket(store)
    a, b = bucket.new_sst(b"a" * 100), bucket.new_sst(b"b" * 50)
    first = bucket.snapshot(0, [a], log_offset=120)
    second = bucket.snapshot(1, [a, b], log_offset=300)
    answers = register([first, second], ledger, store, clock)
    assert [x.outcome for x in answers] == [Outcome.BECAME_LATEST, Outcome.BECAME_LATEST]
    records = {
        r.snapshot_id: r for r in live_snapshots(ledger, LineageId(stream=STREAM, partition=0))
    }
    assert records["snap-1"].references == tuple(sorted((f"shared/{a}", f"shared/{b}")))
    assert records["snap-1"].offsets == {"log_offset": 300}
    assert records["snap-1"].file_count == 5 and records["snap-1"].total_bytes == 150 + 406
    assert records["snap-0"].origin == f"Fluss table shop.orders (table id {TABLE_ID})"
    # The coordinator's retry writes the same _METADATA again: the same registration
    store.put(second, store.get(second))
    (again,) = register([second], ledger, store, clock)
    assert again.outcome is Outcome.DUPLICATE


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"table_id": 8}, "table_id is 8, but its key says 7"),
        ({"bucket_id": 1}, "bucket_id is 1, but its key says 0"),
        ({"snapshot_id": 4}, "snapshot_id is 4, but its key says 3"),
        ({"log_offset": -1}, "log_offset is -1"),
        ({"snapshot_location": "/elsewhere/snap-3"}, "snapshot_location is '/elsewhere/snap-3'"),
    ],
)
def test_a_metadata_whose_ids_or_offset_disagree_with_its_key_is_rejected_naming_them(
    ledger, store, clock, change, named
):
    bucket = FlussBucket(store)
    key = bucket.snapshot(3, [bucket.new_sst(b"x")], **({"log_offset": 10} | change))
    (answer,) = register([key], ledger, store, clock)
    assert answer.outcome is Outcome.REJECTED and named in answer.reason


def test_a_missing_or_resized_file_or_one_outside_the_bucket_is_rejected_naming_it(
    ledger, store, clock
):
    bucket = FlussBucket(store)
    gone, resized = bucket.new_sst(b"g" * 10), bucket.new_sst(b"r" * 10)
    key = bucket.snapshot(5, [gone, resized], log_offset=10)
    store.delete_many([f"{bucket.root}shared/{gone}"])
    store.put(f"{bucket.root}shared/{resized}", b"r" * 11)
    (answer,) = register([key], ledger, store, clock)
    assert answer.outcome is Outcome.REJECTED
    assert f"shared/{gone}' is not in the store" in answer.reason
    assert f"shared/{resized}' is 11 bytes in the store but _METADATA says 10" in answer.reason

    # Bucket 1's _METADATA naming bucket 0's files (or another snapshot's) is refused
    other = FlussBucket(store, bucket=1)
    metadata = json.loads(store.get(key))
    metadata.update(
        bucket_id=1, snapshot_id=6, snapshot_location=other.absolute(f"{other.root}snap-6")
    )
    handles = metadata["kv_snapshot_handle"]["private_file_handles"]
    handles[1]["kv_file_handle"]["path"] = other.absolute(f"{other.root}snap-2/a-file")
    outside = f"{other.root}snap-6/_METADATA"
    store.put(outside, json.dumps(metadata).encode())
    (answer,) = register([outside], ledger, store, clock)
    assert answer.outcome is Outcome.REJECTED
    assert f"{bucket.root}shared/{gone}' is outside its bucket's folder" in answer.reason
    assert "snap-2/a-file' is neither in its snapshot's folder nor in the bucket's shared/" in (
        answer.reason
    )


def test_a_metadata_that_is_not_json_is_rejected_and_loses_no_other(ledger, store, clock):
    bucket = FlussBucket(store)
    good = bucket.snapshot(1, [bucket.new_sst(b"s")], log_offset=5)
    store.put(f"{bucket.root}snap-2/_METADATA", b"{not json")
    answers = register([f"{bucket.root}snap-2/_METADATA", good], ledger, store, clock)
    assert answers[0].outcome is Outcome.REJECTED and "not JSON" in answers[0].reason
    assert answers[1].outcome is Outcome.BECAME_LATEST


class Counted:
    """The store, counting the requests registration makes of it."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, []

    def get(self, key, **kwargs):
        self.calls.append(("get", key))
        return self.inner.get(key, **kwargs)

    def list(self, prefix):
        self.calls.append(("list", prefix))
        return self.inner.list(prefix)

    def __getattr__(self, name):
        self.calls.append((name, None))
        return getattr(self.inner, name)


def test_a_registration_reads_metadata_once_and_lists_two_folders(ledger, store, clock):
    bucket = FlussBucket(store)
    ssts = [bucket.new_sst(bytes([i]) * 10) for i in range(30)]
    key = bucket.snapshot(4, ssts, log_offset=9)
    counted = Counted(store)
    (answer,) = register([key], ledger, counted, clock)
    assert answer.outcome is Outcome.BECAME_LATEST
    assert counted.calls == [
        ("get", key),
        ("list", f"{bucket.root}snap-4/"),
        ("list", f"{bucket.root}shared/"),
    ]


def test_what_registration_does_not_check_a_limit_docs_fluss_md_names(ledger, store, clock):
    # Registration reads no other snapshot's record and no file's bytes: a later snapshot
    # whose log_offset is below the one before's, and an SST rewritten at its size with
    # other bytes, both register (docs/fluss.md, "Limits")
    bucket = FlussBucket(store)
    sst = bucket.new_sst(b"a" * 64)
    first = bucket.snapshot(1, [sst], log_offset=500)
    (store.root / f"{bucket.root}shared/{sst}").write_bytes(b"b" * 64)
    later = bucket.snapshot(2, [sst], log_offset=100)
    answers = register([first, later], ledger, store, clock)
    assert [a.outcome for a in answers] == [Outcome.BECAME_LATEST, Outcome.BECAME_LATEST]
