"""Registration records a digest of a Restate snapshot's files' S3 ETags; heal finds a file
written again since with the same size and footer (other content), which the size and
footer checks alone cannot see. On S3 (moto); the file store has no ETags to compare."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest

from snapledger.adapters.object_store import open_object_store
from snapledger.clock import ManualClock
from snapledger.errors import InvalidRequestError
from snapledger.models.ledger import LineageId
from snapledger.services.registration import register_manifest
from snapledger.services.restate_heal import HEALED, HEALTHY, heal_partition, restore_from_chosen
from snapledger.strategies.catalog import LayoutCatalog
from tests.restate.fixtures import PREFIX, STREAM, write_latest, write_restate_snapshot
from tests.support import moto_ledger

LAYOUTS = LayoutCatalog.of({PREFIX: STREAM})
LAYOUT = LAYOUTS.restate_for(STREAM)
LINEAGE = LineageId(stream=STREAM, partition=0)


@pytest.fixture
def world() -> Iterator[tuple[object, object, ManualClock]]:
    with moto_ledger() as ledger:
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="tags")
        yield ledger, open_object_store("s3://tags", s3_client=s3), ManualClock()


def two_registered(world):
    """Snapshots at LSN 1000 and 2000, registered; latest.json names 2000, retains both."""
    ledger, store, clock = world
    written = [write_restate_snapshot(store, lsn) for lsn in (1000, 2000)]
    for w in written:
        register_manifest(
            w.location.metadata_key, ledger=ledger, store=store, clock=clock, layouts=LAYOUTS
        )
    write_latest(store, written[1], list(reversed(written)))
    return written


def rewrite_same_size(store, key: str) -> None:
    """Other content of the same size, ending with the same footer."""
    body = store.get(key)
    store.put(key, bytes(b ^ 0xFF for b in body[:10]) + body[10:])


def test_a_file_rewritten_since_registration_is_found_and_healed(world):
    ledger, store, clock = world
    written = two_registered(world)
    record = ledger.find_snapshot(LINEAGE, written[1].location.snapshot_id)
    assert record.files_digest and record.files_digest.startswith("sha256:")
    assert heal_partition(ledger, store, clock, LAYOUT, 0).state == HEALTHY

    rewrite_same_size(store, written[1].sst_keys[0])
    outcome = heal_partition(ledger, store, clock, LAYOUT, 0)
    assert outcome.state == HEALED and "written again since registration" in outcome.problems[0]
    assert json.loads(store.get(f"{PREFIX}/0/latest.json"))["snapshot_id"] == (
        written[0].location.snapshot_id
    )


def test_restore_refuses_a_snapshot_whose_file_was_rewritten(world):
    ledger, store, clock = world
    written = two_registered(world)
    rewrite_same_size(store, written[0].sst_keys[1])
    with pytest.raises(InvalidRequestError, match="written again since registration"):
        restore_from_chosen(
            ledger,
            store,
            clock,
            LAYOUT,
            0,
            snapshot_id=written[0].location.snapshot_id,
            request_id="r",
            by="ops",
        )


def test_a_rewritten_sst_with_a_zeroed_footer_is_named_and_no_unrun_check_is_claimed(world):
    # Given the latest's first SST written again with the same size, its footer zeros
    ledger, store, clock = world
    written = two_registered(world)
    victim = written[1].sst_keys[0]
    body = store.get(victim)
    store.put(victim, body[:-8] + bytes(8))
    # When heal checks it
    outcome = heal_partition(ledger, store, clock, LAYOUT, 0)
    # Then the SST is named with the footer check it failed, and the ETag line says what
    # it cannot tell (which file) and which files were read and found fine
    assert outcome.state == HEALED
    footer, etags = outcome.problems
    assert footer.startswith(f"{victim!r}: it does not end with RocksDB's block-based table")
    assert "written again since registration" in etags and "which file cannot be named" in etags
    assert "the other 1 file(s) were read (sizes, and each SST's footer)" in etags
    assert "every file's size" not in etags


def test_a_rewrite_seen_only_in_the_etags_says_every_size_and_footer_was_read(world):
    ledger, store, clock = world
    written = two_registered(world)
    rewrite_same_size(store, written[1].sst_keys[0])
    [etags] = heal_partition(ledger, store, clock, LAYOUT, 0).problems
    assert "every file's size and each of the 2 SST footer(s) were read" in etags
