"""Which snapshots the Kafka Streams seed tries for a task (no broker: the changelog's
offsets are given, the registry is a stand-in answering ``list`` pages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snapledger.kafka_streams.changelog import Changelog, ChangelogPartition
from snapledger.kafka_streams.seed import LISTING_PAGE, StoreSeeder
from snapledger.kafka_streams.seed_format import TaskId

TOPIC = "app-totals-changelog"
ULID = "01J00000000000000000000000"


def _record(lsn: int, status: str) -> dict[str, Any]:
    key = f"snapshots/{TOPIC}/0/{lsn:020d}-{ULID}/_manifest.json"
    return {
        "snapshot_id": f"{ULID[:-4]}{lsn:04d}",
        "lsn": lsn,
        "status": status,
        "manifest_key": key,
    }


class _Pages:
    """The registry's ``list`` answers, a page at a time, highest LSN first."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records, self.pages = records, 0

    def snapshots(self, stream: str, partition: int, *, limit: int, cursor: str | None = None):
        start = int(cursor or 0)
        self.pages += 1
        page = self.records[start : start + limit]
        more = start + limit < len(self.records)
        return {"snapshots": page, "cursor": str(start + limit) if more else None}


def _seed(tmp_path: Path, registry: _Pages) -> Any:
    seeder = StoreSeeder(registry, (tmp_path / "root").as_uri(), "unused:9092", "app", "totals")  # type: ignore[arg-type]
    (tmp_path / "root").mkdir(exist_ok=True)
    changelog = Changelog(TOPIC, {0: ChangelogPartition(0, 0, 10_000)}, 86_400_000)
    return seeder._seed_task(tmp_path / "state" / "app", TaskId(0, 0), changelog)


def test_records_of_other_statuses_do_not_use_up_the_candidates(tmp_path):
    # Given a page and more of REJECTED records above the REGISTERED ones
    rejected = [_record(9_000 - i, "REJECTED") for i in range(LISTING_PAGE + 5)]
    registry = _Pages([*rejected, _record(500, "REGISTERED"), _record(400, "REGISTERED")])
    # When the task is seeded
    seeded = _seed(tmp_path, registry)
    # Then the listing was paged past them and the REGISTERED ones were tried, newest first
    assert registry.pages == 2
    assert [s.lsn for s in seeded.skipped] == [500, 400]


def test_a_snapshot_collected_since_it_was_listed_is_skipped_not_fatal(tmp_path):
    # Given a REGISTERED record whose manifest is gone from the store
    registry = _Pages([_record(500, "REGISTERED")])
    # When the task is seeded
    seeded = _seed(tmp_path, registry)
    # Then it is skipped as gone and the task restores from its changelog
    assert seeded.outcome == "changelog"
    [skipped] = seeded.skipped
    assert skipped.reason.startswith("gone: ")


def test_a_snapshot_whose_next_offset_is_the_log_start_is_usable_as_far_as_offsets_go(tmp_path):
    # Given the changelog starts right after a snapshot's LSN
    registry = _Pages([_record(99, "REGISTERED")])
    seeder = StoreSeeder(registry, (tmp_path / "root").as_uri(), "unused:9092", "app", "totals")  # type: ignore[arg-type]
    (tmp_path / "root").mkdir()
    changelog = Changelog(TOPIC, {0: ChangelogPartition(0, 100, 10_000)}, 86_400_000)
    # When the task is seeded
    seeded = seeder._seed_task(tmp_path / "state" / "app", TaskId(0, 0), changelog)
    # Then it is not refused for the log start (only for its missing files, here)
    [skipped] = seeded.skipped
    assert "log start" not in skipped.reason


def test_snapshots_of_another_incarnation_are_skipped_without_using_up_the_candidates(tmp_path):
    # Given the topic was recreated: a page and more of the old topic's snapshots (higher
    # LSNs, listed first) above the new topic's, and one written before topic ids were kept
    old, new = "mAvqbi8XSciGoHpHwTMETA", "J_a_Mo_xStyarpEDTjEqtA"
    stale = [
        {**_record(9_000 - i, "REGISTERED"), "changelog": {"topic_id": old}}
        for i in range(LISTING_PAGE + 5)
    ]
    current = {**_record(500, "REGISTERED"), "changelog": {"topic_id": new}}
    registry = _Pages([*stale, current, _record(400, "REGISTERED")])
    seeder = StoreSeeder(registry, (tmp_path / "root").as_uri(), "unused:9092", "app", "totals")  # type: ignore[arg-type]
    (tmp_path / "root").mkdir()
    changelog = Changelog(TOPIC, {0: ChangelogPartition(0, 0, 10_000)}, 86_400_000, new)
    # When the task is seeded
    seeded = seeder._seed_task(tmp_path / "state" / "app", TaskId(0, 0), changelog)
    # Then every old one is skipped saying why, and the current ones were still tried
    reasons = {s.lsn: s.reason for s in seeded.skipped}
    assert [s.lsn for s in seeded.skipped][-2:] == [500, 400]  # tried: their files are gone
    assert len(reasons) == len(stale) + 2
    assert all(
        reasons[r["lsn"]].startswith("made from another incarnation of the changelog")
        and old in reasons[r["lsn"]]
        and new in reasons[r["lsn"]]
        for r in stale
    )
