"""One horizon rule (issue 43, item 7): until when a changelog can continue a snapshot made
from it, decided by ``core/changelog_horizon.py`` for GC's restorable check, the seed and the
generation rewind alike. Its margin leaves a window for every ``delete.retention.ms`` > 0, and
the three give the same answer on both sides of the boundary (no broker: the changelog's
offsets are given; the seed and the rewind read a real snapshot from a ``file://`` store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from snapledger.client.reader import SnapshotReader
from snapledger.client.writer import SnapshotWriter, WrittenSnapshot
from snapledger.clock import ManualClock
from snapledger.core.changelog_horizon import horizon_margin, horizon_window, past_horizon
from snapledger.kafka_streams.changelog import Changelog, ChangelogPartition
from snapledger.kafka_streams.generation_rewind import (
    GenerationRewind,
    GenerationRewindError,
    _Member,
)
from snapledger.kafka_streams.seed import StoreSeeder
from snapledger.kafka_streams.seed_format import TaskId
from snapledger.kafka_streams.snapshotter import PRODUCER
from snapledger.models.snapshot import ChangelogHorizon
from snapledger.strategies.catalog import LayoutCatalog
from tests.gc.builders import record

APP, STORE = "app", "totals"
TOPIC = f"{APP}-{STORE}-changelog"
READ_AT = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)
MINUTE_MS, DAY_MS = 60_000, 86_400_000


@pytest.mark.parametrize(
    ("retention_ms", "margin"),
    [
        (7 * DAY_MS, timedelta(hours=16.8)),  # 10%
        (DAY_MS, timedelta(hours=2.4)),
        (10 * MINUTE_MS, timedelta(minutes=1)),  # at least a minute...
        (MINUTE_MS, timedelta(seconds=30)),  # ...at most half of it
        (1, timedelta(microseconds=500)),
        (0, timedelta(0)),
    ],
)
def test_the_margin_leaves_a_window_for_every_retention_above_zero(retention_ms, margin):
    assert horizon_margin(retention_ms) == margin
    window = horizon_window(retention_ms)
    assert window == timedelta(milliseconds=retention_ms) - margin
    assert (window > timedelta(0)) is (retention_ms > 0)
    # R = 0: compaction may drop a tombstone at once, so nothing is continuable
    assert (past_horizon(READ_AT, READ_AT, retention_ms) is None) is (retention_ms > 0)


class _Listing:
    """The registry's ``list`` answer: the one snapshot."""

    def __init__(self, written: WrittenSnapshot) -> None:
        self.written = written

    def snapshots(self, stream: str, partition: int, **_: Any) -> dict[str, Any]:
        w = self.written
        found = {"snapshot_id": w.snapshot_id, "lsn": w.lsn, "status": "REGISTERED"}
        return {"snapshots": [{**found, "manifest_key": w.manifest_key}], "cursor": None}


def _snapshot(root: str, tmp_path: Path, retention_ms: int) -> WrittenSnapshot:
    folder = tmp_path / "store"
    folder.mkdir(exist_ok=True)
    (folder / "CURRENT").write_bytes(b"MANIFEST-000005\n")
    writer = SnapshotWriter(root, TOPIC, 0, producer=PRODUCER)
    changelog = {"log_start_offset": 0, "end_offset": 6, "delete_retention_ms": retention_ms}
    return writer.write_files(5, 1, folder, created_at=READ_AT, changelog=changelog)


def _gc_says(retention_ms: int, now: datetime) -> bool:
    horizon = ChangelogHorizon(
        log_start_offset=0, end_offset=6, delete_retention_ms=retention_ms, read_at=READ_AT
    )
    snapshot = record(5).model_copy(update={"stream": TOPIC, "changelog": horizon})
    strategy = LayoutCatalog.of(kafka_streams=[TOPIC]).for_stream(TOPIC)
    return strategy.unrestorable(snapshot, strategy.facts([snapshot]), now) is None


def _seed_says(root: str, written: WrittenSnapshot, changelog: Changelog, now: datetime) -> bool:
    seeder = StoreSeeder(_Listing(written), root, "unused:9", APP, STORE, clock=ManualClock(now))  # type: ignore[arg-type]
    app_dir = Path(root.removeprefix("file://")).parent / f"state-{now.timestamp()}" / APP
    app_dir.mkdir(parents=True)
    seeded = seeder._seed_task(app_dir, TaskId(0, 0), changelog)
    if seeded.outcome == "changelog":
        [skipped] = seeded.skipped
        assert "delete.retention.ms" in skipped.reason
    return seeded.outcome == "seeded"


def _rewind_says(root: str, written: WrittenSnapshot, changelog: Changelog, now: datetime) -> bool:
    rewind = GenerationRewind(None, root, "unused:9", APP, STORE, clock=ManualClock(now))  # type: ignore[arg-type]
    opened = SnapshotReader(root).open(written.manifest_key)
    member = _Member(TaskId(0, 0), written.snapshot_id, 5, {("orders", 0): 9}, opened)
    try:
        rewind._check_continues(member, READ_AT, changelog)
    except GenerationRewindError as refused:
        assert "delete.retention.ms" in str(refused)
        return False
    return True


@pytest.mark.parametrize("retention_ms", [1_000, MINUTE_MS, 10 * MINUTE_MS, DAY_MS])
def test_gc_the_seed_and_the_rewind_agree_on_both_sides_of_the_boundary(tmp_path, retention_ms):
    # Given a snapshot whose changelog was read at READ_AT, delete.retention.ms R
    root = (tmp_path / "root").as_uri()
    (tmp_path / "root").mkdir()
    written = _snapshot(root, tmp_path, retention_ms)
    changelog = Changelog(TOPIC, {0: ChangelogPartition(0, 0, 100)}, retention_ms)
    boundary = READ_AT + horizon_window(retention_ms)
    # When each judges it a millisecond before the window ends, and as it ends
    for now, continuable in ((boundary - MS, True), (boundary, False)):
        answers = {
            "gc": _gc_says(retention_ms, now),
            "seed": _seed_says(root, written, changelog, now),
            "rewind": _rewind_says(root, written, changelog, now),
        }
        # Then all three give the rule's answer
        assert answers == dict.fromkeys(answers, continuable), (now, answers)
