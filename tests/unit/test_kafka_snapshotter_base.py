"""Which base the Kafka Streams snapshotter continues, and at which epoch it writes (no broker:
the changelog's offsets are given; the registry is a stand-in answering ``latest`` and
``snapshot``; the base is a real snapshot in a ``file://`` store). A latest of another
incarnation of the topic is not continued: the snapshot starts from empty at the lineage's
highest epoch + 1; a latest naming no topic id (an earlier release's) is continued as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from snapledger.client.writer import SnapshotWriter, WrittenSnapshot
from snapledger.kafka_streams.changelog import Changelog, ChangelogPartition
from snapledger.kafka_streams.snapshotter import PRODUCER, StoreSnapshotter
from snapledger.kafka_streams.working_copy import WorkingCopies

APP, STORE = "app", "totals"
TOPIC = f"{APP}-{STORE}-changelog"
OLD, NEW = "mAvqbi8XSciGoHpHwTMETA", "J_a_Mo_xStyarpEDTjEqtA"


class _Registry:
    """HEAD and the latest's record, as the query function answers them."""

    def __init__(self, written: WrittenSnapshot, topic_id: str | None, max_epoch: int) -> None:
        self.written, self.topic_id, self.max_epoch = written, topic_id, max_epoch

    def latest(self, stream: str, partition: int) -> dict[str, Any]:
        w = self.written
        head = {"latest_snapshot_id": w.snapshot_id, "latest_lsn": w.lsn}
        return {"head": {**head, "max_epoch": self.max_epoch}}

    def snapshot(self, stream: str, partition: int, snapshot_id: str) -> dict[str, Any]:
        changelog = {"log_start_offset": 0, "end_offset": self.written.lsn + 1}
        if self.topic_id is not None:
            changelog["topic_id"] = self.topic_id
        record = {"manifest_key": self.written.manifest_key, "changelog": changelog}
        return {"snapshot": {**record, "offsets": {f"{TOPIC}-0": self.written.lsn}}}


@pytest.mark.parametrize(
    ("named", "continued", "epoch"),
    [(OLD, True, 3), (None, True, 3), (NEW, False, 4)],
)
def test_the_base_and_epoch_follow_the_latests_incarnation(tmp_path: Path, named, continued, epoch):
    # Given the lineage's latest at LSN 900 (its highest epoch 3), naming topic id `named`,
    # and the topic's current id OLD
    root = (tmp_path / "root").as_uri()
    (tmp_path / "root").mkdir()
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "CURRENT").write_bytes(b"MANIFEST-000005\n")
    written = SnapshotWriter(root, TOPIC, 0, producer=PRODUCER).write_files(900, 3, folder)
    snapshotter = StoreSnapshotter(_Registry(written, named, 3), root, "unused:9", APP, STORE)  # type: ignore[arg-type]
    changelog = Changelog(TOPIC, {0: ChangelogPartition(0, 0, 2_000)}, 86_400_000, OLD)
    # When the partition's base is chosen
    copies = WorkingCopies(tmp_path / "scratch", APP, STORE)
    base = snapshotter._base(0, copies, changelog)
    # Then the latest of the current incarnation (or naming none) is continued at the
    # lineage's epoch; one of another is not, and the snapshot goes at the epoch above
    assert (base.snapshot_id is not None, base.epoch) == (continued, epoch)
    assert (copies.store_dir(0) / "CURRENT").exists() is continued
    if not continued:
        assert base.note.startswith(
            f"latest {written.snapshot_id} is made from another incarnation"
        )
        assert f"from empty at epoch {epoch}" in base.note
