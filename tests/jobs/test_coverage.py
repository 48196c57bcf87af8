"""Planning a partition's changelog range from segment names alone (no Spark)."""

from __future__ import annotations

import pytest

from jobs.coverage import EMPTY_STATE_LSN, Segment, plan_partition
from jobs.errors import ChangelogError
from jobs.layout import segment_name


def seg(first: int, last: int) -> Segment:
    return Segment(first, last, f"changelog/s/0/{segment_name(first, last)}")


def plan(segments, base=EMPTY_STATE_LSN, target=None):
    return plan_partition(0, segments, base, target, "changelog/s/0/")


def test_reads_only_the_segments_that_hold_the_range() -> None:
    segments = [seg(0, 9), seg(10, 19), seg(20, 29), seg(30, 39)]
    chosen = plan(segments, base=12, target=25)
    assert [s.first_lsn for s in chosen.segments] == [10, 20]
    assert (chosen.base_lsn, chosen.target_lsn) == (12, 25)


def test_records_at_most_counts_the_lsns_the_plan_applies() -> None:
    segments = [seg(0, 9), seg(10, 19), seg(20, 29), seg(30, 39)]
    assert plan(segments, base=12, target=25).records_at_most == 13  # LSNs 13..25
    assert plan(segments).records_at_most == 40
    assert plan([seg(0, 9)], base=9).records_at_most == 0


def test_latest_available_ends_at_the_contiguous_end() -> None:
    assert plan([seg(0, 9), seg(10, 19)]).target_lsn == 19
    # a later segment after a gap is not reachable yet
    assert plan([seg(0, 9), seg(20, 29)]).target_lsn == 9


def test_a_base_at_the_end_of_the_changelog_is_the_state() -> None:
    chosen = plan([seg(0, 9)], base=9)
    assert (chosen.target_lsn, chosen.segments) == (9, ())


@pytest.mark.parametrize(
    ("segments", "base", "target", "message"),
    [
        ([seg(0, 9), seg(5, 14)], -1, None, "overlaps"),
        ([seg(0, 9), seg(11, 19)], -1, 15, "LSNs 10..10 are missing"),
        ([seg(5, 9)], -1, None, "LSNs 0..4 are missing"),
        ([seg(10, 19)], 4, 15, "LSNs 5..9 are missing"),
        ([seg(0, 9)], -1, 12, "ends at LSN 9 but the target is 12"),
        ([seg(0, 9)], 9, 12, "no segment holds LSNs 10..12"),
        ([seg(0, 9)], 5, 3, "target LSN 3 is below the base snapshot's LSN 5"),
        ([], -1, None, "no changelog segments"),
    ],
)
def test_bad_coverage_is_refused_with_the_file_and_range(segments, base, target, message) -> None:
    with pytest.raises(ChangelogError, match=message.replace(".", r"\.").replace("(", r"\(")):
        plan(segments, base=base, target=target)
