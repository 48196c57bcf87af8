"""The producer-offsets registry's purpose, for real: a writer registers its table's start
offsets in snapledger, writes to the real Fluss cluster, is killed before its first
checkpoint, and on restart undoes what it wrote from the primary-key table's changelog
before-images: the table is then equal, key for key, to the table before it started."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from snapledger.client.control import Snapledger
from snapledger.local.fluss_probe import FlussProbe
from snapledger.local.fluss_writer import FlussUndoWriter

Table = Callable[[int], tuple[FlussProbe, int]]
KEYS = (0, 1500)  # every id the table or the writer ever touches


@pytest.mark.fluss
def test_a_writer_killed_before_its_first_checkpoint_undoes_its_writes_on_restart(
    registry: Snapledger, fluss_table: Table, tmp_path: Path
):
    # Given a table of 3 buckets with rows 50..999 (0..49 deleted), as it was before the job
    probe, table_id = fluss_table(3)
    probe.upsert(0, 1000, version=1)
    probe.delete(0, 50)
    before = probe.read(*KEYS)
    assert len(before) == 950

    # When a writer registers its start offsets in snapledger...
    writer = FlussUndoWriter(registry, probe, table_id, "flink-job-undo")
    first = writer.start()
    assert first.result == "CREATED" and first.offsets == probe.offsets()
    # ...updates 500..999, inserts 1000..1199, deletes 50..299 (0..49 are already gone),
    process = writer.write(upsert=(500, 1200), delete=(0, 300), version=2, log=tmp_path / "w.log")
    during = probe.read(*KEYS)
    assert during != before and len(during) == 900 and during[700].v == 2
    # ...and is killed before its first checkpoint
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    # Then its restart finds its registration, reads its offsets and undoes every change
    restarted = writer.start()
    assert restarted.result == "ALREADY_EXISTS"
    assert restarted.offsets == first.offsets
    assert restarted.undone is not None
    assert restarted.undone["restored"] == 250 + 500  # deleted 50..299, updated 500..999
    assert restarted.undone["removed"] == 200  # inserted 1000..1199
    # and the table equals, key for key, the table before the writer started
    assert probe.read(*KEYS) == before
    # After its first checkpoint the registration is deleted
    assert writer.checkpointed() is True
    assert registry.producer_offsets("flink-job-undo")["found"] is False
