"""The working copy the Kafka Streams snapshotter keeps between passes (no broker: the
registry is a stand-in answering ``latest`` and ``snapshot``; the latest is a real snapshot in
a ``file://`` store). A copy recorded as the latest, with every file as recorded, is continued
without a download; any other copy is reported and replaced by a checked download."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from snapledger.client.writer import SnapshotWriter, WrittenSnapshot
from snapledger.errors import InvalidRequestError
from snapledger.kafka_streams.changelog import Changelog, ChangelogPartition
from snapledger.kafka_streams.snapshotter import PRODUCER, StoreSnapshotter, held_ssts
from snapledger.kafka_streams.working_copy import RECORD, WorkingCopies, working_copies

APP, STORE = "app", "totals"
TOPIC = f"{APP}-{STORE}-changelog"
FILES = {"000007.sst": b"s" * 64, "CURRENT": b"MANIFEST-000005\n", "MANIFEST-000005": b"m" * 9}


class _Registry:
    def __init__(self, written: WrittenSnapshot) -> None:
        self.written = written

    def latest(self, stream: str, partition: int) -> dict[str, Any]:
        w = self.written
        return {"head": {"latest_snapshot_id": w.snapshot_id, "latest_lsn": w.lsn, "max_epoch": 1}}

    def snapshot(self, stream: str, partition: int, snapshot_id: str) -> dict[str, Any]:
        changelog = {"log_start_offset": 0, "end_offset": self.written.lsn + 1}
        record = {"manifest_key": self.written.manifest_key, "changelog": changelog}
        return {"snapshot": {**record, "offsets": {f"{TOPIC}-0": self.written.lsn}}}


@pytest.fixture
def world(tmp_path: Path) -> tuple[StoreSnapshotter, WorkingCopies, WrittenSnapshot, Path]:
    """The latest snapshot (LSN 900) written from the kept folder, recorded as its copy."""
    root = tmp_path / "root"
    root.mkdir()
    copies = WorkingCopies(tmp_path / "kept", APP, STORE)
    folder = copies.store_dir(0)
    folder.mkdir(parents=True)
    for name, data in FILES.items():
        (folder / name).write_bytes(data)
    written = SnapshotWriter(root.as_uri(), TOPIC, 0, producer=PRODUCER).write_files(900, 1, folder)
    copies.keep(0, written.snapshot_id, held_ssts(written))
    snapshotter = StoreSnapshotter(
        _Registry(written),  # type: ignore[arg-type]
        root.as_uri(),
        "unused:9",
        APP,
        STORE,
        keep_dir=tmp_path / "kept",
    )
    return snapshotter, copies, written, root


def _changelog() -> Changelog:
    return Changelog(TOPIC, {0: ChangelogPartition(0, 0, 2_000)}, 86_400_000, None)


def _damage_the_stored_sst(root: Path, written: WrittenSnapshot) -> None:
    stored = root / written.prefix / "000007.sst"
    stored.write_bytes(b"X" * len(FILES["000007.sst"]))  # same size, other bytes


def test_a_copy_recorded_as_the_latest_is_continued_without_a_download(world):
    snapshotter, copies, written, root = world
    # Given the stored SST damaged (a download would find it): only a copy can be continued
    _damage_the_stored_sst(root, written)
    # When the partition's base is chosen with the copy kept
    base = snapshotter._base(0, copies, _changelog())
    # Then the copy is the base: nothing read from the store, its SSTs referenced next
    assert base.snapshot_id == written.snapshot_id
    assert base.note == f"continues {written.snapshot_id} (its working copy); "
    assert (copies.store_dir(0) / "000007.sst").read_bytes() == FILES["000007.sst"]
    assert set(base.ssts) == {"000007.sst"}


def _changed(folder: Path) -> None:
    with (folder / "MANIFEST-000005").open("ab") as f:
        f.write(b"+")


def _added(folder: Path) -> None:
    (folder / "000009.sst").write_bytes(b"new")


def _removed(folder: Path) -> None:
    (folder / "000007.sst").unlink()


def _touched(folder: Path) -> None:
    path = folder / "000007.sst"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def _other_snapshot(folder: Path) -> None:
    record = folder.parents[1] / RECORD
    fields = json.loads(record.read_text())
    record.write_text(json.dumps({**fields, "snapshot_id": "01J0000000000000000000000X"}))


def _unrecorded(folder: Path) -> None:
    (folder.parents[1] / RECORD).unlink()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (_changed, "MANIFEST-000005 was changed since it was recorded (size or modification time)"),
        (_touched, "000007.sst was changed since it was recorded (size or modification time)"),
        (_added, "000009.sst is in the working copy but was not recorded"),
        (_removed, "000007.sst is missing from the working copy"),
        (_other_snapshot, "the working copy holds 01J0000000000000000000000X, not the latest"),
        (_unrecorded, "no working copy recorded"),
    ],
)
def test_a_copy_that_does_not_match_is_replaced_by_a_checked_download(world, damage, said):
    snapshotter, copies, written, _ = world
    damage(copies.store_dir(0))
    # When the partition's base is chosen
    base = snapshotter._base(0, copies, _changelog())
    # Then the copy is not used, why is said, and the folder holds the registered files alone
    assert base.note == (
        f"working copy not used ({said}): downloaded; continues {written.snapshot_id}; "
    )
    folder = copies.store_dir(0)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == FILES


def test_a_copy_whose_registered_ssts_differ_is_not_used(world):
    snapshotter, copies, _written, _root = world
    # Given the copy's record naming another checksum for its SST than the one registered
    record = copies.store_dir(0).parents[1] / RECORD
    fields = json.loads(record.read_text())
    fields["ssts"]["000007.sst"]["checksum"] = "sha256:" + "0" * 64
    record.write_text(json.dumps(fields))
    base = snapshotter._base(0, copies, _changelog())
    assert base.note.startswith(
        "working copy not used (the working copy's SSTs are not the latest's as registered)"
    )


def test_a_damaged_download_after_an_unusable_copy_starts_from_empty(world):
    snapshotter, copies, written, root = world
    _damage_the_stored_sst(root, written)
    _changed(copies.store_dir(0))
    base = snapshotter._base(0, copies, _changelog())
    assert base.snapshot_id is None
    assert "is damaged" in base.note
    assert not copies.store_dir(0).exists()


def test_a_released_copy_is_not_trusted_again(world):
    _snapshotter, copies, written, _ = world
    copies.release(0)  # a pass began changing it, and never recorded it again
    assert copies.problem(0, written.snapshot_id, held_ssts(written)) == "no working copy recorded"


def test_one_pass_at_a_time_uses_a_folder_of_working_copies(tmp_path: Path):
    first = working_copies(tmp_path, APP, STORE)
    with first, pytest.raises(InvalidRequestError) as refused, working_copies(tmp_path, APP, STORE):
        pass
    assert str(tmp_path) in str(refused.value)
    assert "one snapshotter per --work-dir" in str(refused.value)
    with working_copies(tmp_path, APP, STORE):  # released after the pass
        pass


def test_without_a_kept_folder_every_base_is_downloaded(world, tmp_path: Path):
    snapshotter, copies, written, _root = world
    scratch = WorkingCopies(tmp_path / "scratch", APP, STORE)
    shutil.copytree(copies.root, scratch.root)
    base = replace(snapshotter, keep_dir=None)._base(0, scratch, _changelog())
    assert base.note == f"continues {written.snapshot_id}; "
