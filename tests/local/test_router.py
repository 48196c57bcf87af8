"""The local router behaves like S3's notifications: complete objects only, every PUT."""

from __future__ import annotations

import json
import threading
import time

import boto3
import pytest

from snapledger.adapters.object_store import open_object_store
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.local.handlers import HANDLERS
from snapledger.local.router import Router
from snapledger.models.ledger import LineageId
from snapledger.runtime import runtime_override
from tests.functions.support import POWERTOOLS_ENV
from tests.support import make_runtime, moto_ledger, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)


@pytest.fixture
def rt(tmp_path, monkeypatch):
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)
    with moto_ledger() as ledger:
        runtime = make_runtime(ledger, FileObjectStore(tmp_path / "root"), ManualClock())
        with runtime_override(runtime):
            yield runtime


def outcomes(answers) -> list[tuple[str, str]]:
    return [(r["key"], r["outcome"]) for a in answers for r in a["records"]]


def manifest_in_chunks(rt, count: int) -> tuple[str, list[bytes]]:
    """A valid snapshot's data files, and its manifest's key and bytes cut in ``count``."""
    key = write_snapshot(rt.store, "orders", 3, 100)
    raw = rt.store.get(key)
    (rt.store.root / key).unlink()
    size = -(-len(raw) // count)
    return key, [raw[i : i + size] for i in range(0, len(raw), size)]


def test_a_manifest_written_in_chunks_is_delivered_only_once_complete(rt):
    router = Router(rt.store, HANDLERS)
    key, chunks = manifest_in_chunks(rt, 4)
    # Given a writer that writes the manifest in place, a chunk between two polls
    with (rt.store.root / key).open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
            handle.flush()
            # Then no poll delivers it while it grows
            assert router.scan() == []
    # And once it has stopped changing for one poll it is delivered, and registered
    assert outcomes(router.scan()) == [(key, "became_latest")]
    head = rt.ledger.get_head(ORDERS_3)
    assert (head.latest_lsn, head.rejected_count) == (100, 0)


def test_a_slow_writer_racing_the_poller_never_gets_its_manifest_rejected(rt):
    router = Router(rt.store, HANDLERS)
    key, chunks = manifest_in_chunks(rt, 20)

    def write_slowly() -> None:
        with (rt.store.root / key).open("wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
                handle.flush()
                time.sleep(0.02)

    writer = threading.Thread(target=write_slowly)
    writer.start()
    answers = []
    deadline = time.monotonic() + 30
    while not answers and time.monotonic() < deadline:
        answers = router.scan()  # the poll of `local up`, a poll interval apart
        time.sleep(0.5)
    writer.join()
    assert outcomes(answers) == [(key, "became_latest")]
    assert rt.ledger.get_head(ORDERS_3).rejected_count == 0


def test_a_reput_is_a_new_arrival_as_s3_notifies_every_put(rt):
    router = Router(rt.store, HANDLERS)
    key = write_snapshot(rt.store, "orders", 3, 100)
    assert outcomes(router.scan(settled=True)) == [(key, "became_latest")]
    # An unchanged file is not delivered again
    assert router.scan() == [] and router.scan() == []
    # When the same bytes are put again (write-then-rename), it is a new arrival: a duplicate
    rt.store.put(key, rt.store.get(key))
    assert router.scan() == []
    assert outcomes(router.scan()) == [(key, "duplicate")]
    # And other content at the same key is delivered too: a conflict, as in AWS
    manifest = json.loads(rt.store.get(key))
    manifest["producer"] = {"name": "another-writer"}
    rt.store.put(key, json.dumps(manifest).encode())
    assert outcomes(router.scan(settled=True)) == [(key, "conflict")]


def test_a_file_rewritten_in_place_is_a_new_arrival(rt):
    router = Router(rt.store, HANDLERS)
    key = "changelog/orders/3/" + "0" * 20 + "-" + "0" * 18 + "99.parquet"
    (rt.store.root / key).parent.mkdir(parents=True)
    (rt.store.root / key).write_bytes(b"segment")
    assert outcomes(router.scan(settled=True)) == [(key, "counted")]
    (rt.store.root / key).write_bytes(b"segment, rewritten")
    assert outcomes(router.scan(settled=True)) == [(key, "duplicate")]


def test_a_changelog_file_that_is_not_a_segment_is_rejected_on_its_lineage(rt):
    router = Router(rt.store, HANDLERS)
    key = "changelog/orders/3/segment-1.parquet"
    rt.store.put(key, b"not a segment")
    [answer] = router.scan(settled=True)
    assert answer["records"][0]["outcome"] == "rejected"
    [event] = rt.ledger.list_events(ORDERS_3).items
    assert (event.type, event.segment_key) == ("ChangelogSegmentRejected", key)


def test_a_file_deleted_before_it_settled_is_forgotten(rt):
    router = Router(rt.store, HANDLERS)
    key = write_snapshot(rt.store, "orders", 3, 100)
    assert router.scan() == []
    (rt.store.root / key).unlink()
    assert router.scan() == [] and router._pending == {}


def test_an_s3_object_is_delivered_at_the_first_scan_that_lists_it(monkeypatch):
    """A Restate node evicts (num-retained) soon after the next snapshot lands: over an S3
    store (local up --s3-port), whose PUTs are whole once listed, the router does not wait
    a second poll, so a snapshot is registered if it is there at one scan."""
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)
    with moto_ledger() as ledger:
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="snapledger-local")
        bucket = open_object_store(
            "s3://snapledger-local", s3_client=boto3.client("s3", region_name="us-east-1")
        )
        with runtime_override(make_runtime(ledger, bucket, ManualClock())):
            router = Router(bucket, HANDLERS)
            key = write_snapshot(bucket, "orders", 3, 100)
            # When one scan lists the manifest, it is delivered and registered at once
            assert outcomes(router.scan()) == [(key, "became_latest")]
            # And, as before, not again while unchanged
            assert router.scan() == []
