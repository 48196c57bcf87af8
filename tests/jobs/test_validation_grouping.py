"""Validation groups its scan by file size when the sizes tell the files apart, by path
otherwise; either way it finds the same problems and counts the same records."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobs_support import Record, write_segment

from jobs import changelog
from jobs.changelog import _segments_by_size, validate_changelog
from jobs.coverage import ChangelogPlan, plan_partition
from jobs.errors import ChangelogError
from jobs.storage import ObjectStore
from snapledger.layout import SegmentLocation

pytestmark = pytest.mark.spark


def puts(lsns, key="k") -> list[Record]:
    return [Record(f"{key}{n}", b"v", n, "put") for n in lsns]


def _plans(spark, root: Path, partitions, targets) -> tuple[ObjectStore, list[ChangelogPlan]]:
    store = ObjectStore(spark, root.as_uri())
    return store, [plan_partition(store, "s", p, None, targets[p]) for p in partitions]


def _sizes(plans: list[ChangelogPlan]) -> dict[str, int]:
    return {key: size for plan in plans for key, size in plan.segment_bytes.items()}


def test_segments_by_size_needs_every_size_known_and_distinct() -> None:
    first, second = (SegmentLocation("s", 0, 0, 4), SegmentLocation("s", 0, 5, 9))
    segments = {(0, s.name): (None, s) for s in (first, second)}
    assert _segments_by_size(segments, {first.key: 10, second.key: 11}) == {
        10: (0, first.name),
        11: (0, second.name),
    }
    assert _segments_by_size(segments, {first.key: 10, second.key: 10}) == {}  # equal: by path
    assert _segments_by_size(segments, {first.key: 10}) == {}  # one unknown: by path


def test_the_plan_carries_each_segments_listed_size(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 4, puts(range(5)))
    write_segment(tmp_path, "s", 0, 5, 9, puts(range(5, 10)))
    _, (plan,) = _plans(spark, tmp_path, [0], {0: 9})
    assert plan.segment_bytes == {
        s.key: (tmp_path / s.key).stat().st_size for s in plan.range.segments
    }


def test_by_size_and_by_path_find_the_same_problems_and_counts(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    write_segment(tmp_path, "s", 0, 10, 19, puts([13, 10, 19, 16]))  # sparse, unordered
    write_segment(tmp_path, "s", 1, 0, 4, puts([0, 1, 2, 3]))
    write_segment(tmp_path, "s", 2, 0, 4, [*puts(range(4)), Record(None, b"v", 4, "put")])
    store, good = _plans(spark, tmp_path, [0], {0: 14})
    sizes = _sizes(good)
    assert len(set(sizes.values())) == len(sizes)  # so the first call groups by size
    ranges = [plan.range for plan in good]
    assert validate_changelog(spark, store, ranges, sizes) == {0: 12}  # 0..9; 10, 13
    assert validate_changelog(spark, store, ranges) == {0: 12}

    store, bad = _plans(spark, tmp_path, [0, 1, 2], {0: 19, 1: 4, 2: 4})
    messages = []
    for sizes in (_sizes(bad), {}):
        with pytest.raises(ChangelogError) as raised:
            validate_changelog(spark, store, [plan.range for plan in bad], sizes)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    assert "changelog/s/2/" in messages[0] and "1 row(s) with a null key" in messages[0]


def test_a_segment_whose_size_changed_since_the_listing_fails_the_job(
    spark, tmp_path, monkeypatch
) -> None:
    write_segment(tmp_path, "s", 0, 0, 4, puts(range(5)))
    store, (plan,) = _plans(spark, tmp_path, [0], {0: 4})
    stale = {key: size + 1 for key, size in plan.segment_bytes.items()}
    with pytest.raises(ChangelogError, match="the changelog changed while the job ran"):
        validate_changelog(spark, store, [plan.range], stale)


def test_a_job_groups_its_validation_by_size(spark, tmp_path, monkeypatch) -> None:
    from jobs.args import JobArgs
    from jobs.job import run_job

    chosen = []
    original = changelog._segments_by_size
    monkeypatch.setattr(
        changelog, "_segments_by_size", lambda *a: chosen.append(original(*a)) or chosen[-1]
    )
    write_segment(tmp_path, "s", 0, 0, 4, puts(range(5)))
    write_segment(tmp_path, "s", 1, 0, 9, puts(range(10)))
    args = JobArgs(
        kind="bootstrap", root=tmp_path.as_uri(), stream="s", partitions=(0, 1), job_id="g"
    )
    result = run_job(spark, args)
    assert [p.changelog_rows for p in result.partitions] == [5, 10]
    assert len(chosen) == 1 and len(chosen[0]) == 2  # both segments, told apart by size
